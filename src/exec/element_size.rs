//! `kip.max_element_size`: the most bytes of attributes and metadata a KML
//! command may leave on one element.
//!
//! Every read of an element's attribute or metadata key decompresses the
//! whole jsonb object again, and the copy lives until the solution's row is
//! done: a FIND whose FILTER, ORDER BY and projections read one element's
//! keys a few hundred times holds a few hundred copies at once. Bounding
//! the objects bounds that memory (one oversized element and a FIND of 200
//! ORDER BY keys once took a backend to 24 GB, and the kernel's OOM killer
//! restarted every session of the cluster).
//!
//! The check runs in the row triggers every insert and update already
//! passes (`kip.check_element_id`, the version triggers), and only while a
//! KML command runs in this transaction: plain SQL and `pg_restore` load
//! what they are given.

use pgrx::pg_sys;
use std::cell::Cell;

thread_local! {
    /// The local transaction in which a KML command is running, if any.
    static KML_RUNNING: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Mark the start (`true`) or the end (`false`) of a KML command; returns
/// the mark it replaced, for [`restore_kml_running`].
pub fn kml_running(running: bool) -> Option<u32> {
    KML_RUNNING.with(|slot| slot.replace(running.then(local_transaction)))
}

/// Put back the mark [`kml_running`] replaced (an outer KML command's,
/// when a trigger it fired ran another KIP command).
pub fn restore_kml_running(mark: Option<u32>) {
    KML_RUNNING.with(|slot| slot.set(mark));
}

fn enforced() -> bool {
    KML_RUNNING.with(|slot| slot.get() == Some(local_transaction()))
}

/// This backend's local transaction id: a mark a command leaves for the
/// rest of its transaction (here, the history's command tag) and that a
/// transaction ending without clearing it must not pass to the next one
/// compares with it.
pub(crate) fn local_transaction() -> u32 {
    // SAFETY: MyProc is this backend's own PGPROC, set for its lifetime.
    unsafe { (*pg_sys::MyProc).lxid }
}

/// The limit in bytes.
pub fn limit_bytes() -> usize {
    (crate::guc::MAX_ELEMENT_SIZE.get().max(1) as usize).saturating_mul(1024)
}

/// How the refusal starts its message (`pg_error` maps it to `KIP_2002`).
pub const REFUSAL: &str = "the element's attributes and metadata are";

/// Refuse the row about to be written when a KML command runs and its
/// attributes and metadata together exceed `kip.max_element_size`,
/// uncompressed. Reads only the values' headers: a compressed or toasted
/// value says its raw size without being expanded.
///
/// # Safety
/// `row` must be a tuple of `desc`, a table with jsonb `attributes` and
/// `metadata` columns (`what` names the trigger in errors).
pub(crate) unsafe fn check(row: pg_sys::HeapTuple, desc: pg_sys::TupleDesc, what: &str) {
    if !enforced() {
        return;
    }
    let mut size = 0usize;
    for column in [c"attributes", c"metadata"] {
        let attnum = super::trigger::typed_column(desc, column, pg_sys::JSONBOID, what);
        let (datum, null) = super::trigger::value(row, desc, attnum);
        if !null {
            size = size.saturating_add(pg_sys::toast_raw_datum_size(datum));
        }
    }
    let limit = limit_bytes();
    if size > limit {
        pgrx::ereport!(
            pgrx::PgLogLevel::ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("{REFUSAL} {size} bytes; kip.max_element_size is {} kB", limit / 1024),
            "Keep long text outside memory elements or split it over several concepts, or raise kip.max_element_size."
        );
    }
}
