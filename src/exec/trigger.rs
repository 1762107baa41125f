//! What kip's C trigger functions share: their call's trigger data, the
//! event they must fire on, and the columns of the row they were given,
//! found by name and checked against the type kip's tables give them (a
//! function attached to a table of another shape gets an error, never a
//! datum of the wrong type).

use pgrx::pg_sys;
use std::ffi::CStr;

/// The trigger data of a C trigger function's call; an error when the
/// function `name` was called some other way.
pub(crate) unsafe fn trigger_data(fcinfo: pg_sys::FunctionCallInfo, name: &str) -> *const pg_sys::TriggerData {
    let trigger = (*fcinfo).context as *const pg_sys::TriggerData;
    if trigger.is_null() || (*trigger).type_ != pg_sys::NodeTag::T_TriggerData {
        // As PL/pgSQL says it (feature_not_supported), not an internal error.
        pgrx::ereport!(
            pgrx::PgLogLevel::ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{name}() must be called as a trigger")
        );
    }
    trigger
}

/// Whether the trigger fired `BEFORE` the operation `op` (a
/// `TRIGGER_EVENT_*` operation), `FOR EACH ROW`.
pub(crate) unsafe fn fired_before_row(trigger: *const pg_sys::TriggerData, op: u32) -> bool {
    let event = (*trigger).tg_event;
    event & pg_sys::TRIGGER_EVENT_OPMASK == op
        && event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE
        && event & pg_sys::TRIGGER_EVENT_ROW != 0
}

/// The body of a trigger (row or statement) that tells every backend its table
/// changed: a relcache invalidation of the trigger's table, which backends
/// that remember something read from it watch (`known`, the grants of
/// `governance::privileges`).
pub(crate) unsafe fn invalidate_trigger_table(fcinfo: pg_sys::FunctionCallInfo, name: &str) -> pg_sys::Datum {
    let trigger = trigger_data(fcinfo, name);
    pg_sys::CacheInvalidateRelcacheByRelid((*(*trigger).tg_relation).rd_id);
    pg_sys::Datum::from(0usize)
}

/// The column's number in the table, by name: looked up on every call, so
/// a table whose columns were dropped or added by an upgrade is read right.
/// `what` names the trigger in the error.
pub(crate) unsafe fn column(desc: pg_sys::TupleDesc, name: &CStr, what: &str) -> i32 {
    let attnum = pg_sys::SPI_fnumber(desc, name.as_ptr());
    if attnum <= 0 {
        pgrx::error!("kip: the {what}'s table has no column {}", name.to_string_lossy());
    }
    attnum
}

/// [`column`], checked to be of `type_oid`.
pub(crate) unsafe fn typed_column(desc: pg_sys::TupleDesc, name: &CStr, type_oid: pg_sys::Oid, what: &str) -> i32 {
    let attnum = column(desc, name, what);
    if pg_sys::SPI_gettypeid(desc, attnum) != type_oid {
        pgrx::error!("kip: the {what}'s column {} is not of the type kip's tables give it", name.to_string_lossy());
    }
    attnum
}

/// Column `attnum` of `tuple`, and whether it is NULL.
pub(crate) unsafe fn value(tuple: pg_sys::HeapTuple, desc: pg_sys::TupleDesc, attnum: i32) -> (pg_sys::Datum, bool) {
    let mut null = false;
    let datum = pg_sys::SPI_getbinval(tuple, desc, attnum, &mut null);
    (datum, null)
}

/// Whether this trigger's statement runs as a session that skips
/// row-level security *by right*: `row_security` is off and the current
/// user may bypass the table's policies (a superuser, a `BYPASSRLS` role,
/// or the table's owner), as a `pg_dump`/`pg_restore` session does. The
/// setting alone is not enough: Postgres decides row-level security when
/// the statement is planned, and a function inside the statement can turn
/// `row_security` off before the rows reach the triggers; a role without
/// the right would then pass as a restore (its changes unrecorded, its ids
/// unchecked). The user asked is the one running the statement (the
/// outer user: `SET ROLE`'s, not the table owner a foreign key's cascade
/// runs as, which would let a cascade of such a statement pass).
pub(crate) unsafe fn restoring(relation: pg_sys::Relation) -> bool {
    if pg_sys::row_security {
        return false;
    }
    let user = pg_sys::GetOuterUserId();
    pg_sys::superuser_arg(user) || pg_sys::has_bypassrls_privilege(user) || owns((*relation).rd_id, user)
}

#[cfg(feature = "pg15")]
unsafe fn owns(relation: pg_sys::Oid, user: pg_sys::Oid) -> bool {
    pg_sys::pg_class_ownercheck(relation, user)
}

#[cfg(not(feature = "pg15"))]
unsafe fn owns(relation: pg_sys::Oid, user: pg_sys::Oid) -> bool {
    pg_sys::object_ownercheck(pg_sys::RelationRelationId, relation, user)
}
