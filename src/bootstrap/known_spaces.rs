//! The spaces this backend knows to be ready: created, bootstrapped and at
//! the current capsule level, by a committed transaction.
//!
//! Every `kip_execute` call checks its space before running anything
//! (`spaces::ensure` / `spaces::exists`). Without this memo that check is a
//! query per call, a fifth of a small read's time in kip. With it, a ready
//! space costs a hash lookup.
//!
//! A memo is only as good as its invalidation. A space stops being ready
//! when its row in `kip.spaces` is updated, deleted or truncated, by any
//! session, through kip or plain SQL. A statement-level trigger on
//! `kip.spaces` (`kip.spaces_changed`, below) registers a relcache
//! invalidation of the table for every such statement. Postgres delivers it
//! to this backend at the statement's command boundary, and to every other
//! backend when its transaction commits. The callback registered in
//! `_PG_init` then forgets every space. The memo is checked only after
//! `AcceptInvalidationMessages`, so a change committed before the call is
//! always seen.
//!
//! Two more rules keep the memo from claiming what the database does not:
//! * a row written by the current transaction is never remembered: that
//!   transaction may still roll back (a space created and bootstrapped in a
//!   transaction that aborts must be created again next time);
//! * on a schema without the trigger (the library is newer than the SQL
//!   objects, before `ALTER EXTENSION kip UPDATE`), or with the trigger
//!   not enabled `ALWAYS` (it must fire in every session, a logical
//!   replication subscriber's included), nothing is remembered.
//!   Whether the trigger exists is itself remembered, and forgotten with the
//!   rest when the update creates the trigger (a relcache invalidation of
//!   `kip.spaces`).

use crate::exec::{spi, Access};
use crate::space::Space;
use kip_lang::KipError;
use pgrx::pg_sys;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashSet;

/// What the backend knows about `kip.spaces`.
#[derive(Default)]
struct Known {
    /// `kip.spaces`'s OID and whether its invalidation trigger exists;
    /// `None` until read.
    table: Option<Table>,
    /// Spaces known to be ready.
    ready: HashSet<String>,
}

#[derive(Clone, Copy)]
struct Table {
    oid: u32,
    invalidates: bool,
}

thread_local! {
    static KNOWN: RefCell<Known> = RefCell::new(Known::default());
}

/// Whether `space` is known to be ready. Processes pending invalidations
/// first, so a committed change to `kip.spaces` is never missed.
pub fn is_ready(space: &Space) -> bool {
    // SAFETY: reads the shared invalidation queue; may run the callback below.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    KNOWN.with(|k| k.borrow().ready.contains(space.name()))
}

/// Remember that `space` is ready, as its row read `row_xmin`: unless the
/// current transaction wrote that row, or no trigger would tell us when the
/// row changes.
pub fn remember(space: &Space, row_xmin: Option<&str>) -> Result<(), KipError> {
    let Some(xmin) = row_xmin.and_then(|x| x.parse::<u32>().ok()) else {
        return Ok(());
    };
    // SAFETY: a plain lookup in the transaction state of this backend.
    if unsafe { pg_sys::TransactionIdIsCurrentTransactionId(pg_sys::TransactionId::from(xmin)) } {
        return Ok(());
    }
    if !table()?.invalidates {
        return Ok(());
    }
    KNOWN.with(|k| k.borrow_mut().ready.insert(space.name().to_string()));
    Ok(())
}

/// `kip.spaces`'s OID and whether it has the trigger, read once.
fn table() -> Result<Table, KipError> {
    if let Some(t) = KNOWN.with(|k| k.borrow().table) {
        return Ok(t);
    }
    let rows = spi::lookup(
        "SELECT c.oid::bigint, EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t \
         WHERE t.tgrelid = c.oid AND t.tgname = 'spaces_changed' AND t.tgenabled = 'A') \
         FROM pg_catalog.pg_class c WHERE c.oid = 'kip.spaces'::regclass",
        &[],
        Access::ReadOnly,
    )?;
    let row = rows.into_iter().next().unwrap_or_default();
    let t = Table {
        oid: row.first().and_then(Value::as_u64).unwrap_or(0) as u32,
        invalidates: row.get(1) == Some(&Value::Bool(true)),
    };
    KNOWN.with(|k| k.borrow_mut().table = Some(t));
    Ok(t)
}

/// Forget everything: the relcache callback's action for `kip.spaces`.
fn forget() {
    KNOWN.with(|k| match k.try_borrow_mut() {
        Ok(mut k) => *k = Known::default(),
        // Invalidations are only processed outside the borrows above, which
        // hold no lock and call nothing; an overlap would be a bug here.
        Err(_) => pgrx::warning!("kip: the known-spaces memo was busy during an invalidation"),
    });
}

/// Postgres's relcache callback: `relid` is the relation whose cache entry
/// is invalidated, or `InvalidOid` for all of them (a cache reset).
unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    let ours = KNOWN.with(|k| k.try_borrow().map(|k| k.table.map(|t| t.oid)).unwrap_or(None));
    if relid == pg_sys::InvalidOid || ours.is_none() || ours == Some(relid.to_u32()) {
        forget();
    }
}

/// Register the invalidation callback; called once per process from `_PG_init`.
pub fn register() {
    // SAFETY: registers a plain function pointer for this process.
    unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_invalidation), pg_sys::Datum::from(0usize)) };
}

/// `kip.spaces_changed()`: the statement-level trigger on `kip.spaces` that
/// registers the table's relcache invalidation (see the module comment).
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_spaces_changed(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let trigger = (*fcinfo).context as *const pg_sys::TriggerData;
    if trigger.is_null() || (*trigger).type_ != pg_sys::NodeTag::T_TriggerData {
        pgrx::error!("kip.spaces_changed() must be called as a trigger");
    }
    pg_sys::CacheInvalidateRelcacheByRelid((*(*trigger).tg_relation).rd_id);
    pg_sys::Datum::from(0usize)
}

#[no_mangle]
pub extern "C" fn pg_finfo_kip_spaces_changed() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}
