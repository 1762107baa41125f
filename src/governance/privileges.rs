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
fn grants(space: Option<&str>) -> Result<Vec<(String, String, String)>, KipError> {
    const ALL: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g";
    const ONE: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g \
                       WHERE g.space OPERATOR(pg_catalog.=) $1";
    let rows = match space {
        None => spi::lookup_in_caller_snapshot(ALL, &[])?,
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
    // SAFETY: reads the session's user and the role catalog caches.
    let (user, superuser) = unsafe { (pg_sys::GetUserId(), pg_sys::superuser()) };
    let rows = if superuser {
        grants(None)?
    } else {
        let roles: Vec<String> = unsafe { member_roles(user) }
            .into_iter()
            .filter(|&role| unsafe { pg_sys::has_privs_of_role(user, role) })
            .filter_map(role_name)
            .collect();
        grants_of(roles)?
    };
    let mut spaces = BTreeSet::new();
    for (space, role, privilege) in rows {
        if privileges.contains(&privilege) && !spaces.contains(&space) && holds_role(&role) {
            spaces.insert(space);
        }
    }
    Ok(spaces.into_iter().collect())
}

/// `(space, role, privilege)` of the grants to `roles`, read on the
/// calling statement's snapshot.
fn grants_of(roles: Vec<String>) -> Result<Vec<(String, String, String)>, KipError> {
    const OF_ROLES: &str = "SELECT g.space, g.role::pg_catalog.text, g.privilege FROM kip.space_grants g \
                            WHERE g.role OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.name[])";
    let rows = spi::lookup_in_caller_snapshot(OF_ROLES, &[spi::SqlParam::TextArray(roles)])?;
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

/// The strongest privilege the current role holds on `space` through its
/// grants (`"admin"`, `"write"` or `"read"`), not counting `kip_admin`.
pub fn granted_privilege(space: &str) -> Result<Option<&'static str>, KipError> {
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

crate::exec::v1_function_info!(pg_finfo_kip_is_admin, pg_finfo_kip_granted_spaces);
