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

/// `(space, role, privilege)` of every grant, read on the calling
/// statement's snapshot (as a policy's function reads); or of one space's,
/// on a fresh snapshot (as the call's check reads, seeing a grant made
/// earlier in its transaction).
const ALL_GRANTS: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g";

fn grants(space: Option<&str>) -> Result<Vec<(String, String, String)>, KipError> {
    const ONE: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g \
                       WHERE g.space OPERATOR(pg_catalog.=) $1";
    let rows = match space {
        None => spi::lookup_in_caller_snapshot(ALL_GRANTS, &[])?,
        Some(s) => spi::lookup(ONE, &[spi::SqlParam::Text(s.to_string())], spi::Access::ReadOnly)?,
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Ok(rows.iter().map(|r| (text(&r[0]), text(&r[1]), text(&r[2]))).collect())
}

/// The spaces on which the current role holds one of `privileges`,
/// directly or through a role whose privileges it has; sorted, distinct.
/// Grants to a role dropped since match nobody.
///
/// Only the grants of the roles whose privileges the current role has are
/// read (by the index on `role`): a database of many agents, each with its
/// own role and space, holds many grants, and every statement under
/// row-level security asks this. A superuser has every role's privileges
/// and reads them all.
pub fn granted_spaces(privileges: &[String]) -> Result<Vec<String>, KipError> {
    // SAFETY: reads the session's user.
    let user = unsafe { pg_sys::GetUserId() };
    if per_transaction_snapshot() {
        // The transaction's snapshot decides, as in the SQL definition.
        return read_granted_spaces(user, privileges, GrantSnapshot::Caller);
    }
    // SAFETY: processes the invalidations other sessions' commits sent, as
    // any lock acquisition does; cheap when there are none.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    if let Some(spaces) = remembered(user, privileges) {
        return Ok(spaces);
    }
    let watched = watched()?;
    let generation = GENERATION.with(Cell::get);
    let spaces = read_granted_spaces(user, privileges, GrantSnapshot::Latest)?;
    // An invalidation processed during the read may be of a change the
    // read's snapshot predates: that answer is not remembered.
    if watched.trigger && GENERATION.with(Cell::get) == generation {
        remember(user, privileges, &spaces);
    }
    Ok(spaces)
}

/// The snapshot [`granted_spaces`] reads the grants on.
#[derive(Clone, Copy)]
enum GrantSnapshot {
    /// The calling statement's.
    Caller,
    /// One taken now (a remembered answer must hold for later statements).
    Latest,
}

/// [`granted_spaces`] read from `kip.space_grants`.
fn read_granted_spaces(user: pg_sys::Oid, privileges: &[String], snapshot: GrantSnapshot) -> Result<Vec<String>, KipError> {
    // SAFETY: reads the role catalog caches.
    let superuser = unsafe { pg_sys::superuser() };
    let rows = if superuser {
        all_grants(snapshot)?
    } else {
        let roles: Vec<String> = unsafe { member_roles(user) }
            .into_iter()
            .filter(|&role| unsafe { pg_sys::has_privs_of_role(user, role) })
            .filter_map(role_name)
            .collect();
        grants_of(roles, snapshot)?
    };
    let mut spaces = BTreeSet::new();
    for (space, role, privilege) in rows {
        if privileges.contains(&privilege) && !spaces.contains(&space) && holds_role(&role) {
            spaces.insert(space);
        }
    }
    Ok(spaces.into_iter().collect())
}

/// Answers of [`granted_spaces`] a backend remembers: every statement on a
/// table with row-level security asks it once per policy it checks (an
/// `INSERT … ON CONFLICT DO UPDATE` up to four times), and each answer was a
/// query on `kip.space_grants`: a fifth of a Formation capsule's time for a
/// role that is not a superuser (`benches/WRITE-BENCH.md`).
///
/// An answer depends on the grants and on the role's memberships, and
/// nothing else; it is forgotten when either changes:
/// * a statement trigger on `kip.space_grants` (`space_grants_changed`,
///   fired by every write, TRUNCATE and COPY, also on a replica) registers a
///   relcache invalidation of the table. Every call first processes the
///   invalidations other sessions' commits sent, so another session's grant
///   or revoke holds from the first policy check after its commit; this
///   transaction's own, from its next statement, and its rollback too;
/// * a change of a role or of a membership invalidates the role caches
///   (`AUTHOID`, `AUTHMEMMEMROLE`, `AUTHMEMROLEMEM`).
///
/// A remembered answer is read on a snapshot taken at the time (it must hold
/// for later statements), and is not kept when an invalidation arrived
/// during the read. Under REPEATABLE READ and SERIALIZABLE a policy reads
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

fn remembered(user: pg_sys::Oid, privileges: &[String]) -> Option<Vec<String>> {
    REMEMBERED.with(|r| {
        r.try_borrow().ok()?.iter().find(|e| e.user == user && e.privileges == privileges).map(|e| e.spaces.clone())
    })
}

fn remember(user: pg_sys::Oid, privileges: &[String], spaces: &[String]) {
    REMEMBERED.with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            if r.len() >= MAX_REMEMBERED {
                r.clear();
            }
            r.push(Remembered { user, privileges: privileges.to_vec(), spaces: spaces.to_vec() });
        }
    });
}

/// `kip.space_grants` and whether its invalidation trigger is in place
/// (enabled ALWAYS), read once per backend and after each invalidation.
fn watched() -> Result<Watched, KipError> {
    if let Some(w) = WATCHED.with(Cell::get) {
        return Ok(w);
    }
    const SQL: &str = "SELECT c.oid::pg_catalog.int8, EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t \
                         WHERE t.tgrelid OPERATOR(pg_catalog.=) c.oid AND t.tgname OPERATOR(pg_catalog.=) 'space_grants_changed' \
                         AND t.tgenabled OPERATOR(pg_catalog.=) 'A') \
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

/// `kip.grants_changed()`: the statement trigger on `kip.space_grants` that
/// registers the table's relcache invalidation (see [`Remembered`]).
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_grants_changed(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let trigger = (*fcinfo).context as *const pg_sys::TriggerData;
    if trigger.is_null() || (*trigger).type_ != pg_sys::NodeTag::T_TriggerData {
        pgrx::error!("kip.grants_changed() must be called as a trigger");
    }
    pg_sys::CacheInvalidateRelcacheByRelid((*(*trigger).tg_relation).rd_id);
    pg_sys::Datum::from(0usize)
}

/// Every grant, for a superuser, who has every role's privileges.
fn all_grants(snapshot: GrantSnapshot) -> Result<Vec<(String, String, String)>, KipError> {
    match snapshot {
        GrantSnapshot::Caller => grants(None),
        GrantSnapshot::Latest => {
            let rows = spi::lookup_in_latest_snapshot(ALL_GRANTS, &[])?;
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            Ok(rows.iter().map(|r| (text(&r[0]), text(&r[1]), text(&r[2]))).collect())
        }
    }
}

/// `(space, role, privilege)` of the grants to `roles`.
fn grants_of(roles: Vec<String>, snapshot: GrantSnapshot) -> Result<Vec<(String, String, String)>, KipError> {
    const OF_ROLES: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g \
                            WHERE g.role OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.name[])";
    let params = [spi::SqlParam::TextArray(roles)];
    let rows = match snapshot {
        GrantSnapshot::Caller => spi::lookup_in_caller_snapshot(OF_ROLES, &params)?,
        GrantSnapshot::Latest => spi::lookup_in_latest_snapshot(OF_ROLES, &params)?,
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Ok(rows.iter().map(|r| (text(&r[0]), text(&r[1]), text(&r[2]))).collect())
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

/// The privileges each policy function asks [`granted_spaces`] about, in
/// the order `kip.administered_spaces()`, `kip.writable_spaces()` and
/// `kip.readable_spaces()` pass them (the memo's key).
const LEVELS: [(&str, &[&str]); 3] = [("admin", &["admin"]), ("write", &["write", "admin"]), ("read", &["read", "write", "admin"])];

fn level_privileges(privileges: &[&str]) -> Vec<String> {
    privileges.iter().map(|p| p.to_string()).collect()
}

fn per_transaction_snapshot() -> bool {
    // SAFETY: reads the transaction's isolation level, a backend global.
    unsafe { pg_sys::XactIsoLevel >= pg_sys::XACT_REPEATABLE_READ as i32 }
}

/// [`granted_privilege`] from remembered answers alone, without a query:
/// `None` when one of them is not remembered (or under REPEATABLE READ and
/// SERIALIZABLE, where nothing is).
pub fn remembered_privilege(space: &str) -> Option<Option<&'static str>> {
    if per_transaction_snapshot() {
        return None;
    }
    // SAFETY: as in `granted_spaces`.
    let user = unsafe {
        pg_sys::AcceptInvalidationMessages();
        pg_sys::GetUserId()
    };
    let mut held = None;
    for (level, privileges) in LEVELS {
        let spaces = remembered(user, &level_privileges(privileges))?;
        if held.is_none() && spaces.iter().any(|s| s == space) {
            held = Some(level);
        }
    }
    Some(held)
}

/// The strongest privilege the current role holds on `space` through its
/// grants (`"admin"`, `"write"` or `"read"`), not counting `kip_admin`.
/// Under READ COMMITTED from [`granted_spaces`]' answers, which later calls
/// and statements then find remembered; otherwise (or before the memo's
/// trigger exists) one query on the space's grants.
pub fn granted_privilege(space: &str) -> Result<Option<&'static str>, KipError> {
    if !per_transaction_snapshot() && watched()?.trigger {
        for (level, privileges) in LEVELS {
            if granted_spaces(&level_privileges(privileges))?.iter().any(|s| s == space) {
                return Ok(Some(level));
            }
        }
        return Ok(None);
    }
    let mut best: Option<&'static str> = None;
    let rank = |p: Option<&str>| match p {
        Some("admin") => 3,
        Some("write") => 2,
        Some("read") => 1,
        _ => 0,
    };
    for (_, role, privilege) in grants(Some(space))? {
        let privilege = match privilege.as_str() {
            "admin" => "admin",
            "write" => "write",
            "read" => "read",
            _ => continue,
        };
        if rank(Some(privilege)) > rank(best) && holds_role(&role) {
            best = Some(privilege);
        }
    }
    Ok(best)
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
    match granted_spaces(&privileges) {
        Ok(spaces) => spaces.into_datum().unwrap_or(pg_sys::Datum::from(0usize)),
        Err(e) => pgrx::error!("kip: {}", e.message),
    }
}

crate::exec::v1_function_info!(pg_finfo_kip_is_admin, pg_finfo_kip_granted_spaces, pg_finfo_kip_grants_changed);
