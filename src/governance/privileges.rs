//! Which spaces the current role may use: `kip.is_admin()` and
//! `kip.granted_spaces(text[])`, the two functions every row-level security
//! policy calls, and the grant check of every `kip_execute` call.
//!
//! They were SQL functions over the `pg_roles` view with a `SET
//! search_path`. Postgres never inlines such a function, so every statement
//! on a table with row-level security planned their bodies again (a query
//! on `pg_roles`, and one on `kip.space_grants` joined to `pg_roles` with a
//! `pg_has_role` per row), and the call's grant check ran one more of the
//! same: for a role that is not a superuser a FIND by id took 0.36–0.42 ms,
//! against 0.12 ms for a superuser.
//!
//! Here a role's membership is Postgres's own cached check,
//! `has_privs_of_role` (what `pg_has_role(role, 'USAGE')` asks), and the
//! grants are read by one statement on a plan saved per backend, on the
//! caller's snapshot and with the caller's privileges, as the SQL functions
//! read them: only the grants of the caller's roles, so a database with a
//! grant per agent for thousands of agents costs each statement what one
//! with four does. The statements name every object with its schema, so no
//! `search_path` can change what they read. The answers are those of the
//! SQL definitions they replace (a `pg_test` compares them for roles with
//! direct, inherited, non-inherited and no grants).

use crate::exec::spi;
use kip_lang::KipError;
use pgrx::pg_sys;
use pgrx::IntoDatum;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::ffi::CString;

/// Whether the current role has the privileges of `role` (a superuser has
/// every role's); `false` for a role that does not exist.
pub fn holds_role(role: &str) -> bool {
    let Ok(name) = CString::new(role) else { return false };
    // SAFETY: catalog lookups through the syscache; `missing_ok` keeps a
    // dropped role from raising an error.
    unsafe {
        let oid = pg_sys::get_role_oid(name.as_ptr(), true);
        oid != pg_sys::InvalidOid && pg_sys::has_privs_of_role(pg_sys::GetUserId(), oid)
    }
}

/// Whether the current role is a kip administrator (a member of
/// `kip_admin`, or a superuser when that role exists).
pub fn is_admin() -> bool {
    holds_role("kip_admin")
}

/// A grant: `(space, role, privilege)`.
type GrantRow = (String, String, String);

/// The snapshot grants are read on.
#[derive(Clone, Copy)]
enum GrantSnapshot {
    /// The calling statement's: a policy's function reads what that
    /// statement sees, as the STABLE SQL function it replaced did.
    Caller,
    /// A fresh one, which sees a grant made earlier in the transaction (the
    /// call's own check).
    Fresh,
    /// One taken now, in the current command: an answer to remember must
    /// hold for later statements.
    Latest,
}

const ALL_GRANTS: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g";
const GRANTS_OF_ROLES: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g \
                               WHERE g.role OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.name[])";
const GRANTS_ON_SPACE: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g \
                               WHERE g.space OPERATOR(pg_catalog.=) $1";

/// The grants one of the statements above returns, read on `snapshot`.
fn read_grants(sql: &str, params: &[spi::SqlParam], snapshot: GrantSnapshot) -> Result<Vec<GrantRow>, KipError> {
    let rows = match snapshot {
        GrantSnapshot::Caller => spi::lookup_in_caller_snapshot(sql, params)?,
        GrantSnapshot::Fresh => spi::lookup(sql, params, spi::Access::ReadOnly)?,
        GrantSnapshot::Latest => spi::lookup_in_latest_snapshot(sql, params)?,
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Ok(rows.iter().map(|r| (text(&r[0]), text(&r[1]), text(&r[2]))).collect())
}

/// The grants that may count for the current role `user`: those to the
/// roles whose privileges it has, read by the index on `role` (a database
/// of many agents, each with its own role and space, holds many grants, and
/// every statement under row-level security asks); every grant for a
/// superuser, who has every role's privileges.
fn candidate_grants(user: pg_sys::Oid, snapshot: GrantSnapshot) -> Result<Vec<GrantRow>, KipError> {
    // SAFETY: reads the role catalog caches.
    if unsafe { pg_sys::superuser() } {
        return read_grants(ALL_GRANTS, &[], snapshot);
    }
    let roles: Vec<String> = unsafe { member_roles(user) }
        .into_iter()
        .filter(|&role| unsafe { pg_sys::has_privs_of_role(user, role) })
        .filter_map(role_name)
        .collect();
    read_grants(GRANTS_OF_ROLES, &[spi::SqlParam::TextArray(roles)], snapshot)
}

/// The spaces on which `grants` give the current role one of `privileges`;
/// sorted, distinct. Grants to a role dropped since match nobody.
fn spaces_with(grants: &[GrantRow], privileges: &[&str]) -> Vec<String> {
    let mut spaces = BTreeSet::new();
    for (space, role, privilege) in grants {
        if privileges.contains(&privilege.as_str()) && !spaces.contains(space) && holds_role(role) {
            spaces.insert(space.clone());
        }
    }
    spaces.into_iter().collect()
}

/// The spaces on which the current role holds one of `privileges`,
/// directly or through a role whose privileges it has; sorted, distinct
/// (`kip.granted_spaces`, which every row-level security policy asks).
pub fn granted_spaces(privileges: &[&str]) -> Result<Vec<String>, KipError> {
    // SAFETY: reads the session's user.
    let user = unsafe { pg_sys::GetUserId() };
    match answers(user, &[privileges])? {
        Some(mut found) => Ok(found.swap_remove(0)),
        None => Ok(spaces_with(&candidate_grants(user, GrantSnapshot::Caller)?, privileges)),
    }
}

/// The answers of [`granted_spaces`] for each of `sets`: remembered, or
/// read from one read of the grants and remembered together. `None` where
/// nothing is remembered (see [`Remembered`]): the caller reads on its own
/// snapshot.
fn answers(user: pg_sys::Oid, sets: &[&[&str]]) -> Result<Option<Vec<Vec<String>>>, KipError> {
    if crate::exec::known::per_transaction_snapshot() {
        return Ok(None);
    }
    if let Some(found) = remembered_answers(user, sets) {
        return Ok(Some(found));
    }
    // A policy's function may run inside a parallel query (it is PARALLEL
    // SAFE), where no new snapshot may be taken: it reads on the query's
    // snapshot and remembers nothing.
    // SAFETY: reads the transaction state.
    if unsafe { pg_sys::IsInParallelMode() } || !watched()?.trigger {
        return Ok(None);
    }
    let generation = GENERATION.with(Cell::get);
    let grants = candidate_grants(user, GrantSnapshot::Latest)?;
    let found: Vec<Vec<String>> = sets.iter().map(|privileges| spaces_with(&grants, privileges)).collect();
    // An invalidation processed during the read may be of a change the
    // read's snapshot predates: those answers are not remembered.
    if GENERATION.with(Cell::get) == generation {
        for (privileges, spaces) in sets.iter().zip(&found) {
            remember(user, privileges, spaces);
        }
    }
    Ok(Some(found))
}

/// The remembered answers for each of `sets`, after processing the
/// invalidations other sessions' commits sent (as any lock acquisition
/// does; cheap when there are none); `None` unless all are remembered.
fn remembered_answers(user: pg_sys::Oid, sets: &[&[&str]]) -> Option<Vec<Vec<String>>> {
    // SAFETY: processes this backend's pending invalidation messages.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    sets.iter().map(|privileges| remembered(user, privileges)).collect()
}

/// Answers of [`granted_spaces`] a backend remembers: every statement on a
/// table with row-level security asks it once per policy it checks (an
/// `INSERT … ON CONFLICT DO UPDATE` up to four times), and each answer was a
/// query on `kip.space_grants`: a fifth of a Formation capsule's time for a
/// role that is not a superuser (`benches/WRITE-BENCH.md`).
///
/// An answer depends on the grants and on the role's memberships, and
/// nothing else; it is forgotten when either changes:
/// * a row trigger on `kip.space_grants` (`space_grants_changed`, fired by
///   every write and COPY, also by a logical replication subscriber's apply,
///   which fires no statement trigger but TRUNCATE's; `space_grants_truncated`
///   for TRUNCATE) registers a
///   relcache invalidation of the table. Every call first processes the
///   invalidations other sessions' commits sent, so another session's grant
///   or revoke holds from the first policy check after its commit; this
///   transaction's own, from its next statement, and its rollback too;
/// * a change of a role or of a membership invalidates the role caches
///   (`AUTHOID`, `AUTHMEMMEMROLE`, `AUTHMEMROLEMEM`).
///
/// A remembered answer is read on a snapshot taken at the time (it must hold
/// for later statements), and is not kept when an invalidation arrived
/// during the read; inside a parallel query, where no snapshot may be
/// taken, a missing answer is read on the query's snapshot and not kept. Under REPEATABLE READ and SERIALIZABLE a policy reads
/// the grants on the transaction's snapshot, as the SQL definition did, and
/// nothing is remembered; nor until the trigger is in place (a database whose
/// schema predates it, before `ALTER EXTENSION kip UPDATE`).
struct Remembered {
    user: pg_sys::Oid,
    privileges: Vec<String>,
    spaces: Vec<String>,
}

/// Answers kept; the memo starts afresh when full.
const MAX_REMEMBERED: usize = 16;

/// Whether `kip.space_grants` has its invalidation trigger: `None` until
/// looked up (again after each invalidation of the table).
#[derive(Clone, Copy)]
struct Watched {
    relid: pg_sys::Oid,
    trigger: bool,
}

thread_local! {
    static REMEMBERED: RefCell<Vec<Remembered>> = const { RefCell::new(Vec::new()) };
    static WATCHED: Cell<Option<Watched>> = const { Cell::new(None) };
    /// Counts the invalidations that reached the memo.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
}

fn remembered(user: pg_sys::Oid, privileges: &[&str]) -> Option<Vec<String>> {
    REMEMBERED.with(|r| {
        r.try_borrow().ok()?.iter().find(|e| e.user == user && e.privileges.iter().eq(privileges)).map(|e| e.spaces.clone())
    })
}

fn remember(user: pg_sys::Oid, privileges: &[&str], spaces: &[String]) {
    REMEMBERED.with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            if r.len() >= MAX_REMEMBERED {
                r.clear();
            }
            r.push(Remembered { user, privileges: privileges.iter().map(|p| p.to_string()).collect(), spaces: spaces.to_vec() });
        }
    });
}

/// `kip.space_grants` and whether its invalidation trigger is in place
/// (enabled ALWAYS), read once per backend and after each invalidation.
fn watched() -> Result<Watched, KipError> {
    if let Some(w) = WATCHED.with(Cell::get) {
        return Ok(w);
    }
    const SQL: &str = "SELECT c.oid::pg_catalog.int8, (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger t \
                         WHERE t.tgrelid OPERATOR(pg_catalog.=) c.oid \
                         AND t.tgname OPERATOR(pg_catalog.=) ANY ('{space_grants_changed,space_grants_truncated}'::pg_catalog.name[]) \
                         AND t.tgenabled OPERATOR(pg_catalog.=) 'A') OPERATOR(pg_catalog.=) 2 \
                       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                       WHERE n.nspname OPERATOR(pg_catalog.=) 'kip' AND c.relname OPERATOR(pg_catalog.=) 'space_grants'";
    let rows = spi::lookup_in_latest_snapshot(SQL, &[])?;
    let row = rows.into_iter().next().unwrap_or_default();
    let relid = row.first().and_then(Value::as_u64).unwrap_or(0) as u32;
    let watched = Watched { relid: pg_sys::Oid::from(relid), trigger: row.get(1) == Some(&Value::Bool(true)) };
    WATCHED.with(|w| w.set(Some(watched)));
    Ok(watched)
}

/// Forget every answer (and, for a change of the table, its trigger state).
fn forget(table_too: bool) {
    GENERATION.with(|g| g.set(g.get().wrapping_add(1)));
    REMEMBERED.with(|r| match r.try_borrow_mut() {
        Ok(mut r) => r.clear(),
        // The memo is never borrowed across a call that could process
        // invalidations; an overlap would be a bug here.
        Err(_) => pgrx::warning!("kip: the grant memo was busy during an invalidation"),
    });
    if table_too {
        WATCHED.with(|w| w.set(None));
    }
}

/// Postgres's relcache callback: `relid` is the relation invalidated, or
/// `InvalidOid` for all of them (a cache reset).
unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    let ours = WATCHED.with(Cell::get).map(|w| w.relid);
    if relid == pg_sys::InvalidOid || ours.map_or(true, |o| o == relid) {
        forget(true);
    }
}

/// Postgres's syscache callback for the role caches.
unsafe extern "C-unwind" fn on_role_invalidation(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
    forget(false);
}

/// Register the invalidation callbacks; called once per process from `_PG_init`.
pub fn register() {
    use pg_sys::SysCacheIdentifier::{AUTHMEMMEMROLE, AUTHMEMROLEMEM, AUTHOID};
    // SAFETY: registers plain function pointers for this process.
    unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_invalidation), pg_sys::Datum::from(0usize));
        for cache in [AUTHOID, AUTHMEMMEMROLE, AUTHMEMROLEMEM] {
            pg_sys::CacheRegisterSyscacheCallback(cache as i32, Some(on_role_invalidation), pg_sys::Datum::from(0usize));
        }
    }
}

/// `kip.grants_changed()`: the triggers on `kip.space_grants` that
/// registers the table's relcache invalidation (see [`Remembered`]).
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_grants_changed(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    crate::exec::invalidate_trigger_table(fcinfo, "kip.grants_changed")
}

/// A role's name; `None` for a role dropped meanwhile.
fn role_name(role: pg_sys::Oid) -> Option<String> {
    // SAFETY: `noerr` makes a missing role a NULL, not an error.
    let name = unsafe { pg_sys::GetUserNameFromId(role, true) };
    (!name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

/// A row of `pg_auth_members` (`catalog/pg_auth_members.h`), whose layout
/// changed in Postgres 16.
#[cfg(feature = "pg15")]
#[repr(C)]
struct AuthMember {
    roleid: pg_sys::Oid,
    member: pg_sys::Oid,
}
#[cfg(not(feature = "pg15"))]
#[repr(C)]
struct AuthMember {
    oid: pg_sys::Oid,
    roleid: pg_sys::Oid,
    member: pg_sys::Oid,
}

/// `user` and every role it is a member of, directly or through other
/// roles, from the membership catalog's cache (as Postgres's own
/// `roles_is_member_of` walks it). A superset of the roles whose
/// privileges it has: `has_privs_of_role` decides (INHERIT).
unsafe fn member_roles(user: pg_sys::Oid) -> Vec<pg_sys::Oid> {
    let mut roles = vec![user];
    let mut next = 0;
    while next < roles.len() {
        let member = roles[next];
        next += 1;
        let list = pg_sys::SearchSysCacheList(
            pg_sys::SysCacheIdentifier::AUTHMEMMEMROLE as i32,
            1,
            pg_sys::Datum::from(member.to_u32()),
            pg_sys::Datum::from(0usize),
            pg_sys::Datum::from(0usize),
        );
        for i in 0..usize::try_from((*list).n_members).unwrap_or(0) {
            let entry = *(*list).members.as_ptr().add(i);
            let row = pg_sys::heap_tuple_get_struct::<AuthMember>(&mut (*entry).tuple);
            let role = (*row).roleid;
            if !roles.contains(&role) {
                roles.push(role);
            }
        }
        pg_sys::ReleaseCatCacheList(list);
    }
    roles
}

/// The privilege levels, strongest first, and the privileges each policy
/// function asks [`granted_spaces`] about for it, in the order
/// `kip.administered_spaces()`, `kip.writable_spaces()` and
/// `kip.readable_spaces()` pass them (the memo's key).
const LEVELS: [&str; 3] = ["admin", "write", "read"];
const LEVEL_PRIVILEGES: [&[&str]; 3] = [&["admin"], &["write", "admin"], &["read", "write", "admin"]];

/// The strongest level whose answer in `levels` (one per [`LEVELS`])
/// holds `space`.
fn strongest(levels: &[Vec<String>], space: &str) -> Option<&'static str> {
    LEVELS.iter().zip(levels).find(|(_, spaces)| spaces.iter().any(|s| s == space)).map(|(level, _)| *level)
}


/// [`granted_privilege`] from remembered answers alone, without a query:
/// `None` when one of them is not remembered (or under REPEATABLE READ and
/// SERIALIZABLE, where nothing is).
pub fn remembered_privilege(space: &str) -> Option<Option<&'static str>> {
    if crate::exec::known::per_transaction_snapshot() {
        return None;
    }
    // SAFETY: reads the session's user.
    let user = unsafe { pg_sys::GetUserId() };
    Some(strongest(&remembered_answers(user, &LEVEL_PRIVILEGES)?, space))
}

/// The strongest privilege the current role holds on `space` through its
/// grants (`"admin"`, `"write"` or `"read"`), not counting `kip_admin`:
/// from the answers of every level, remembered or read together (and then
/// remembered for later calls and statements); where nothing is remembered,
/// from the space's grants on a fresh snapshot.
pub fn granted_privilege(space: &str) -> Result<Option<&'static str>, KipError> {
    // SAFETY: reads the session's user.
    let user = unsafe { pg_sys::GetUserId() };
    let levels = match answers(user, &LEVEL_PRIVILEGES)? {
        Some(levels) => levels,
        None => {
            let grants = read_grants(GRANTS_ON_SPACE, &[spi::SqlParam::Text(space.to_string())], GrantSnapshot::Fresh)?;
            LEVEL_PRIVILEGES.iter().map(|privileges| spaces_with(&grants, privileges)).collect()
        }
    };
    Ok(strongest(&levels, space))
}

/// `kip.is_admin()`.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_is_admin(_fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    pg_sys::Datum::from(is_admin())
}

/// `kip.granted_spaces(privileges text[])`: a NULL array (or NULL
/// elements) matches nothing, as `privilege = ANY (NULL)` did.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_granted_spaces(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let arg = (*fcinfo).args.as_slice(1)[0];
    let privileges: Vec<String> = if arg.isnull {
        Vec::new()
    } else {
        <Vec<Option<String>> as pgrx::FromDatum>::from_datum(arg.value, false).unwrap_or_default().into_iter().flatten().collect()
    };
    let privileges: Vec<&str> = privileges.iter().map(String::as_str).collect();
    match granted_spaces(&privileges) {
        Ok(spaces) => spaces.into_datum().unwrap_or(pg_sys::Datum::from(0usize)),
        Err(e) => pgrx::error!("kip: {}", e.message),
    }
}

crate::exec::v1_function_info!(pg_finfo_kip_is_admin, pg_finfo_kip_granted_spaces, pg_finfo_kip_grants_changed);
