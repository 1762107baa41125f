//! The version triggers `kip.touch_concept()` and `kip.touch_proposition()`:
//! `BEFORE UPDATE` row triggers that own an element's `version`,
//! `created_at` and `updated_at`, whoever writes the row (KIP, plain SQL,
//! maintenance).
//!
//! An update that changes the element's content (identity, endpoints,
//! attributes, metadata) bumps the version by one and stamps `updated_at`
//! with the clock; one that changes nothing else leaves both as they were.
//! A writer cannot set any of the three: the old values are put back.
//! Nor can an update change the element's id (see `governance::element_ids`).
//! Content is compared column by column with each type's equality operator,
//! as `IS DISTINCT FROM` does (so `{"x": 1.0}` written over `{"x": 1}` is no
//! change, as jsonb equality says), never the vector or the tsvector.
//!
//! They were PL/pgSQL. A capsule's statements update the concepts it names
//! (its Domain, its Persons) on every write, and each of those rows ran the
//! PL/pgSQL interpreter: expanding both rows into records, evaluating the
//! row comparison and building a new tuple. Here the new tuple is the
//! incoming one with three columns replaced.

use super::trigger::{self, value};
use pgrx::pg_sys;
use std::ffi::CStr;

/// The content columns of a concept: a change to any of them is a new version.
const CONCEPT_CONTENT: &[&CStr] = &[c"id", c"space", c"type", c"name", c"attributes", c"metadata"];

/// The content columns of a proposition.
const PROPOSITION_CONTENT: &[&CStr] = &[
    c"id",
    c"space",
    c"subject_concept",
    c"subject_link",
    c"predicate",
    c"object_concept",
    c"object_link",
    c"attributes",
    c"metadata",
];

/// How the shared trigger helpers name these functions in errors.
const WHAT: &str = "version trigger";

/// A content column's number (see `trigger::column`).
unsafe fn column(desc: pg_sys::TupleDesc, name: &CStr) -> i32 {
    trigger::column(desc, name, WHAT)
}

/// Whether column `attnum` differs between the rows, as `IS DISTINCT FROM`
/// says: by the type's default equality operator under the column's collation.
unsafe fn differs(desc: pg_sys::TupleDesc, old: pg_sys::HeapTuple, new: pg_sys::HeapTuple, attnum: i32) -> bool {
    let (a, old_null) = value(old, desc, attnum);
    let (b, new_null) = value(new, desc, attnum);
    if old_null || new_null {
        return old_null != new_null;
    }
    let attr = (*desc).attrs.as_ptr().add(attnum as usize - 1);
    // The same datum (a pass-by-value type, or the very same bytes) is equal.
    if a == b {
        return false;
    }
    let entry = pg_sys::lookup_type_cache((*attr).atttypid, pg_sys::TYPECACHE_EQ_OPR_FINFO as i32);
    if (*entry).eq_opr_finfo.fn_oid == pg_sys::InvalidOid {
        pgrx::error!("kip: the version trigger found no equality operator for a content column");
    }
    let equal = pg_sys::FunctionCall2Coll(&mut (*entry).eq_opr_finfo, (*attr).attcollation, a, b);
    equal.value() == 0
}

unsafe fn touch(fcinfo: pg_sys::FunctionCallInfo, name: &str, content: &[&CStr]) -> pg_sys::Datum {
    let trigger = trigger::trigger_data(fcinfo, name);
    if !trigger::fired_before_row(trigger, pg_sys::TRIGGER_EVENT_UPDATE) {
        pgrx::error!("{name}() must be a BEFORE UPDATE ... FOR EACH ROW trigger");
    }
    let desc = (*(*trigger).tg_relation).rd_att;
    let old = (*trigger).tg_trigtuple;
    let new = (*trigger).tg_newtuple;
    let changed = content.iter().any(|c| differs(desc, old, new, column(desc, c)));
    if changed {
        super::element_size::check(new, desc, WHAT);
    }
    // Ids are kip's to issue (governance/element_ids.rs): an update moves
    // no element to another id, except a superuser's or a restore's
    // (`row_security` off, as a role that may bypass it).
    if changed
        && differs(desc, old, new, column(desc, c"id"))
        && !pg_sys::superuser()
        && !super::trigger::restoring((*trigger).tg_relation)
    {
        pgrx::ereport!(
            pgrx::PgLogLevel::ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "kip: an element's id cannot be changed",
            "Ids are issued by kip once and name the element in its history and its external id (C:<n>, P:<n>)."
        );
    }

    // The three columns written back are built as an int4 and two
    // timestamptz datums: checked to be of those types.
    let version = trigger::typed_column(desc, c"version", pg_sys::INT4OID, WHAT);
    let created_at = trigger::typed_column(desc, c"created_at", pg_sys::TIMESTAMPTZOID, WHAT);
    let updated_at = trigger::typed_column(desc, c"updated_at", pg_sys::TIMESTAMPTZOID, WHAT);
    let (old_version, version_null) = value(old, desc, version);
    let (old_created, created_null) = value(old, desc, created_at);
    let (old_updated, updated_null) = value(old, desc, updated_at);
    let (new_version, new_updated, new_updated_null) = if changed {
        // version is NOT NULL; a NULL (a table altered by hand) stays NULL, as `NULL + 1` does.
        let bumped = if version_null { old_version } else { pg_sys::Datum::from((old_version.value() as i32).saturating_add(1)) };
        (bumped, pg_sys::Datum::from(pg_sys::GetCurrentTimestamp()), false)
    } else {
        (old_version, old_updated, updated_null)
    };
    let mut columns = [version, created_at, updated_at];
    let mut values = [new_version, old_created, new_updated];
    let mut nulls = [version_null, created_null, new_updated_null];
    let tuple = pg_sys::heap_modify_tuple_by_cols(
        new,
        desc,
        columns.len() as i32,
        columns.as_mut_ptr(),
        values.as_mut_ptr(),
        nulls.as_mut_ptr(),
    );
    pg_sys::Datum::from(tuple)
}

/// `kip.touch_concept()`.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_touch_concept(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    touch(fcinfo, "kip.touch_concept", CONCEPT_CONTENT)
}

/// `kip.touch_proposition()`.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_touch_proposition(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    touch(fcinfo, "kip.touch_proposition", PROPOSITION_CONTENT)
}

crate::exec::v1_function_info!(pg_finfo_kip_touch_concept, pg_finfo_kip_touch_proposition);
