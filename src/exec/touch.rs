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

/// The column's number in the table, by name: looked up on every call, so
/// a table whose columns were dropped or added by an upgrade is read right.
unsafe fn column(desc: pg_sys::TupleDesc, name: &CStr) -> i32 {
    let attnum = pg_sys::SPI_fnumber(desc, name.as_ptr());
    if attnum <= 0 {
        pgrx::error!("kip: the version trigger's table has no column {}", name.to_string_lossy());
    }
    attnum
}

/// The column's number, checked to be of `type_oid`: the three columns the
/// trigger writes are built as an int4 and two timestamptz datums, and a
/// table of another shape (the function attached to a table of the user's)
/// gets an error instead of a datum of the wrong type.
unsafe fn typed_column(desc: pg_sys::TupleDesc, name: &CStr, type_oid: pg_sys::Oid) -> i32 {
    let attnum = column(desc, name);
    let attr = (*desc).attrs.as_ptr().add(attnum as usize - 1);
    if (*attr).atttypid != type_oid {
        pgrx::error!("kip: the version trigger's column {} is not of the type kip's tables give it", name.to_string_lossy());
    }
    attnum
}

/// Column `attnum` of `tuple`, and whether it is NULL.
unsafe fn value(tuple: pg_sys::HeapTuple, desc: pg_sys::TupleDesc, attnum: i32) -> (pg_sys::Datum, bool) {
    let mut null = false;
    let datum = pg_sys::SPI_getbinval(tuple, desc, attnum, &mut null);
    (datum, null)
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
    let trigger = super::trigger_data(fcinfo, name);
    let event = (*trigger).tg_event;
    let before_row_update = event & pg_sys::TRIGGER_EVENT_OPMASK == pg_sys::TRIGGER_EVENT_UPDATE
        && event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE
        && event & pg_sys::TRIGGER_EVENT_ROW != 0;
    if !before_row_update {
        pgrx::error!("{name}() must be a BEFORE UPDATE ... FOR EACH ROW trigger");
    }
    let desc = (*(*trigger).tg_relation).rd_att;
    let old = (*trigger).tg_trigtuple;
    let new = (*trigger).tg_newtuple;
    let changed = content.iter().any(|c| differs(desc, old, new, column(desc, c)));
    // Ids are kip's to issue (governance/element_ids.rs): an update moves
    // no element to another id, except a superuser's or a restore's
    // (`row_security` off).
    if changed && differs(desc, old, new, column(desc, c"id")) && !pg_sys::superuser() && pg_sys::row_security {
        pgrx::ereport!(
            pgrx::PgLogLevel::ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "kip: an element's id cannot be changed",
            "Ids are issued by kip once and name the element in its history and its external id (C:<n>, P:<n>)."
        );
    }

    let version = typed_column(desc, c"version", pg_sys::INT4OID);
    let created_at = typed_column(desc, c"created_at", pg_sys::TIMESTAMPTZOID);
    let updated_at = typed_column(desc, c"updated_at", pg_sys::TIMESTAMPTZOID);
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
