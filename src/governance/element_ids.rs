//! Element ids are kip's to issue: `kip.issue_element_id()`, the
//! default of `kip.concepts.id` and `kip.propositions.id`, and the
//! `BEFORE INSERT` trigger `kip.check_element_id(kind)` that refuses a row
//! whose id the caller chose.
//!
//! Why: ids are one sequence shared by every space, and the history, the
//! external ids (`C:<n>`) and `kip_revert` all name an element by its id. A
//! writer who picked ids could take the id of an element deleted from a space
//! it cannot read (then a revert there wrote that element's content into the
//! writer's row), or insert ids ahead of the sequence, which then failed
//! every other space's writes on the primary key until it moved past them.
//!
//! The rule: a row is inserted with the id this backend was just issued by
//! the default, or with the id of an element of the same kind whose latest
//! change the caller can see is its deletion from the same space (a restore:
//! `kip_revert`, a deleted element coming back under its id). A superuser, a
//! member of `kip_admin` (who administers every space), and a session with
//! `row_security` off (`pg_dump`/`pg_restore`, which bring their own ids)
//! insert any id. Updates cannot change an id (`touch.rs`).
//!
//! The common case costs a comparison: the default remembers the id it
//! issued, and in an `INSERT` Postgres computes a row's default right before
//! that row's `BEFORE` triggers, so the row's id is the last one issued (and
//! it passes once).

use crate::exec::spi::{self, SqlParam};
use crate::exec::trigger;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::Cell;

thread_local! {
    /// The id `kip.issue_element_id` returned last in this backend.
    static LAST_ISSUED: Cell<Option<i64>> = const { Cell::new(None) };
}

/// `kip.issue_element_id()`: `nextval('kip.element_id_seq')`, remembered
/// for the insert trigger. The sequence is found by name on every call (two
/// catalog cache lookups), never taken as an argument: an id issued by
/// another sequence must not pass for one of kip's.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_issue_element_id(_fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let schema = pg_sys::get_namespace_oid(c"kip".as_ptr(), false);
    let sequence = pg_sys::get_relname_relid(c"element_id_seq".as_ptr(), schema);
    if sequence == pg_sys::InvalidOid {
        pgrx::error!("kip: the sequence kip.element_id_seq does not exist");
    }
    let Some(id) = pgrx::direct_function_call::<i64>(pg_sys::nextval_oid, &[Some(pg_sys::Datum::from(sequence))]) else {
        pgrx::error!("kip: nextval of kip.element_id_seq returned NULL");
    };
    LAST_ISSUED.with(|last| last.set(Some(id)));
    pg_sys::Datum::from(id)
}

/// `kip.check_element_id()`, `BEFORE INSERT ... FOR EACH ROW` with the
/// element kind (`concept` or `proposition`) as its argument.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_check_element_id(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let trigger = trigger::trigger_data(fcinfo, "kip.check_element_id");
    let kind = trigger_argument(trigger);
    if !trigger::fired_before_row(trigger, pg_sys::TRIGGER_EVENT_INSERT) || !matches!(kind.as_deref(), Some("concept" | "proposition")) {
        pgrx::error!("kip.check_element_id() must be a BEFORE INSERT ... FOR EACH ROW trigger with the argument 'concept' or 'proposition'");
    }
    let row = (*trigger).tg_trigtuple;
    let desc = (*(*trigger).tg_relation).rd_att;
    crate::exec::element_size::check(row, desc, WHAT);
    let id = column_i64(row, desc, c"id");
    // Each issued id passes once: a backend shared by roles (SET ROLE) never
    // lets one role insert, under its own, an id issued to another.
    if id.is_some() && id == LAST_ISSUED.with(Cell::take) {
        return pg_sys::Datum::from(row);
    }
    // Administrators of every space (a superuser, `kip_admin`) are not the
    // writers this rule keeps apart; a bulk load they run may draw ids with
    // nextval first, to reference them before inserting.
    if pg_sys::superuser() || trigger::restoring((*trigger).tg_relation) || super::privileges::is_admin() {
        return pg_sys::Datum::from(row);
    }
    let space = column_text(row, desc, c"space");
    let restore = match (id, space) {
        (Some(id), Some(space)) => is_restore(id, kind.as_deref().unwrap_or_default(), &space),
        _ => false,
    };
    if !restore {
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "kip: element ids are issued by kip: {} cannot be inserted with the id {}",
                kind.as_deref().unwrap_or("element"),
                id.map(|i| i.to_string()).unwrap_or_else(|| "NULL".into())
            ),
            "Insert without an id (the default issues one), or restore a deleted element with kip_revert()."
        );
    }
    pg_sys::Datum::from(row)
}

/// Whether the latest change to element `id` the caller can see is its
/// deletion from `space`.
fn is_restore(id: i64, kind: &str, space: &str) -> bool {
    let rows = spi::lookup_in_caller_snapshot(
        "SELECT h.operation = 'delete' AND h.space = $3 FROM kip.history h \
         WHERE h.element_id = $1 AND h.kind = $2 ORDER BY h.id DESC LIMIT 1",
        &[SqlParam::Int(id), SqlParam::Text(kind.to_string()), SqlParam::Text(space.to_string())],
    );
    match rows {
        Ok(rows) => rows.first().and_then(|r| r.first()).and_then(|v| v.as_bool()).unwrap_or(false),
        Err(e) => crate::exec::pg_error::raise(e),
    }
}

/// The trigger's one argument.
unsafe fn trigger_argument(trigger: *const pg_sys::TriggerData) -> Option<String> {
    let t = (*trigger).tg_trigger;
    if (*t).tgnargs != 1 {
        return None;
    }
    let arg = *(*t).tgargs;
    Some(std::ffi::CStr::from_ptr(arg).to_string_lossy().into_owned())
}

/// How the shared trigger helpers name this function in errors.
const WHAT: &str = "element id trigger";

unsafe fn column_i64(row: pg_sys::HeapTuple, desc: pg_sys::TupleDesc, name: &std::ffi::CStr) -> Option<i64> {
    let (datum, null) = trigger::value(row, desc, trigger::typed_column(desc, name, pg_sys::INT8OID, WHAT));
    (!null).then(|| datum.value() as i64)
}

unsafe fn column_text(row: pg_sys::HeapTuple, desc: pg_sys::TupleDesc, name: &std::ffi::CStr) -> Option<String> {
    let (datum, null) = trigger::value(row, desc, trigger::typed_column(desc, name, pg_sys::TEXTOID, WHAT));
    String::from_datum(datum, null)
}

crate::exec::v1_function_info!(pg_finfo_kip_issue_element_id, pg_finfo_kip_check_element_id);
