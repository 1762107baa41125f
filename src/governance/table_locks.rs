//! `LOCK TABLE` on kip's tables in a mode that stops other agents' writes
//! (`SHARE` or stronger) is reserved to superusers and `kip_admin` members.
//!
//! Every space shares `kip.concepts` and `kip.propositions`, and Postgres
//! lets any role that may update or delete rows of a table lock the whole
//! table in any mode: a `kip_writer` agent holding `ACCESS EXCLUSIVE` on
//! `kip.concepts` stalled every other space, readers included, until its
//! transaction ended. The weaker modes (`ACCESS SHARE` to `SHARE UPDATE
//! EXCLUSIVE`) block no reader or writer and stay allowed.
//!
//! A `ProcessUtility` hook, installed when the library loads: in every
//! session when kip is in `shared_preload_libraries` (as the background
//! worker needs), otherwise from a session's first call of kip on.

use pgrx::pg_sys;
use pgrx::{ereport, PgLogLevel, PgSqlErrorCode};
use std::cell::Cell;

thread_local! {
    static PREVIOUS: Cell<pg_sys::ProcessUtility_hook_type> = const { Cell::new(None) };
}

/// Install the hook (once per process, from `_PG_init`).
pub fn register() {
    // SAFETY: `_PG_init` runs once per process, before any statement; the
    // previous hook is kept and called after ours.
    unsafe {
        PREVIOUS.with(|p| p.set(pg_sys::ProcessUtility_hook));
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    let statement = (*pstmt).utilityStmt;
    if !statement.is_null() && (*statement).type_ == pg_sys::NodeTag::T_LockStmt {
        check_lock(statement as *mut pg_sys::LockStmt);
    }
    match PREVIOUS.with(Cell::get) {
        Some(previous) => previous(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc),
        None => pg_sys::standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc),
    }
}

/// Refuse `stmt` when it locks one of kip's tables in `SHARE` mode or a
/// stronger one and the current role is neither a kip administrator nor
/// the table's owner.
unsafe fn check_lock(stmt: *mut pg_sys::LockStmt) {
    if (*stmt).mode < pg_sys::ShareLock as i32 || pg_sys::superuser() {
        return;
    }
    let kip = pg_sys::get_namespace_oid(c"kip".as_ptr(), true);
    if kip == pg_sys::InvalidOid {
        return;
    }
    let relations = pgrx::PgList::<pg_sys::RangeVar>::from_pg((*stmt).relations);
    for range_var in relations.iter_ptr() {
        let relid = pg_sys::RangeVarGetRelidExtended(range_var, pg_sys::NoLock as i32, pg_sys::RVROption::RVR_MISSING_OK, None, std::ptr::null_mut());
        if relid == pg_sys::InvalidOid || pg_sys::get_rel_namespace(relid) != kip {
            continue;
        }
        if super::privileges::is_admin() || pg_sys::pg_class_ownercheck(relid, pg_sys::GetUserId()) {
            return;
        }
        let name = std::ffi::CStr::from_ptr(pg_sys::get_rel_name(relid)).to_string_lossy().into_owned();
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("kip: LOCK TABLE kip.{name} in a mode that blocks other spaces' writes is reserved to kip_admin"),
            "Every memory space shares kip's tables. Lock rows instead (SELECT … FOR UPDATE), or ask a kip_admin member."
        );
    }
}
