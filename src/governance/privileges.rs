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
//! read them. The statement names every object with its schema, so no
//! `search_path` can change what it reads. The answers are those of the SQL
//! definitions they replace (a `pg_test` compares them for roles with
//! direct, inherited and no grants).

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
pub fn granted_spaces(privileges: &[String]) -> Result<Vec<String>, KipError> {
    let mut spaces = BTreeSet::new();
    for (space, role, privilege) in grants(None)? {
        if privileges.contains(&privilege) && !spaces.contains(&space) && holds_role(&role) {
            spaces.insert(space);
        }
    }
    Ok(spaces.into_iter().collect())
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
