//! What this backend knows of the catalog without asking again: the spaces
//! that are ready (created, bootstrapped and at the current capsule level),
//! and the registered concept types and predicates of each space, as
//! committed transactions left them.
//!
//! Every `kip_execute` call checks its space before running anything
//! (`bootstrap::spaces::ensure` / `exists`), and every UPSERT checks that
//! its types and predicates are registered (`resolve::registry`). Without
//! this memo each is a query per call: the space check was a fifth of a
//! small read's time in kip, the registry check a twentieth of a capsule's.
//! With it, each costs a hash lookup.
//!
//! A memo is only as good as its invalidation. A space stops being ready
//! when its row in `kip.spaces` is updated, deleted or truncated; a name
//! stops being registered when its `$ConceptType` / `$PropositionType` row
//! in `kip.concepts` is deleted, renamed or moved, or the table truncated:
//! by any session, through kip or plain SQL (cascades included). Triggers
//! (`kip.spaces_changed` on `kip.spaces`; `kip.registry_changed` on
//! `kip.concepts`, a row trigger whose `WHEN` lets only those definition
//! rows through) register a relcache invalidation of `kip.spaces` for every
//! such change. Postgres delivers it to this backend at the statement's
//! command boundary, and to every other backend when its transaction
//! commits; the callback registered in `_PG_init` then forgets everything.
//! The memo is consulted only after `AcceptInvalidationMessages`, so a
//! change committed before the call is always seen. (`kip.spaces` carries
//! the invalidation for both: an invalidation of `kip.concepts` itself
//! would make every backend re-plan every statement on it.)
//!
//! Two more rules keep the memo from claiming what the database does not:
//! * a row written by the current transaction is never remembered: that
//!   transaction may still roll back (a space created and bootstrapped, or
//!   a type defined, in a transaction that aborts is gone);
//! * nothing is remembered on a schema without the triggers (the library is
//!   newer than the SQL objects, before `ALTER EXTENSION kip UPDATE`) or
//!   with a trigger not enabled `ALWAYS` (they must fire in every session, a
//!   logical replication subscriber's included). What the catalog says of
//!   the triggers is itself remembered, and forgotten on any relcache
//!   invalidation of `kip.spaces` or `kip.concepts` (which `ALTER TABLE …
//!   TRIGGER` and the extension update send).

use crate::exec::{spi, Access};
use crate::space::Space;
use kip_lang::KipError;
use pgrx::pg_sys;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// What the backend knows.
#[derive(Default)]
struct Known {
    /// The tables and their triggers; `None` until read.
    tables: Option<Tables>,
    /// Spaces known to be ready.
    ready: HashSet<String>,
    /// Per space, `(meta-type, name)` of definitions known to exist.
    registered: HashMap<String, HashSet<(String, String)>>,
}

#[derive(Clone, Copy)]
struct Tables {
    spaces: u32,
    concepts: u32,
    /// `kip.spaces_changed` and `kip.spaces_truncated` exist and are enabled ALWAYS.
    spaces_trigger: bool,
    /// `kip.registry_changed` and `kip.registry_truncated` exist and are
    /// enabled ALWAYS.
    registry_triggers: bool,
    /// The installed SQL objects against this library's version.
    schema: SchemaAge,
}

/// The installed SQL objects (`pg_extension.extversion`) against this
/// library's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaAge {
    Current,
    /// Older: waiting for `ALTER EXTENSION kip UPDATE`.
    Older,
    /// Newer: updated by a newer library than the one this backend loaded
    /// (a server that preloads kip and was not restarted after the
    /// install), or a version this library cannot read.
    Newer,
}

impl SchemaAge {
    fn of(installed: &str) -> SchemaAge {
        fn parse(v: &str) -> Option<Vec<u32>> {
            v.split('.').map(|p| p.parse().ok()).collect()
        }
        match (parse(installed), parse(env!("CARGO_PKG_VERSION"))) {
            (Some(a), Some(b)) if a == b => SchemaAge::Current,
            (Some(a), Some(b)) if a < b => SchemaAge::Older,
            _ => SchemaAge::Newer,
        }
    }
}

thread_local! {
    static KNOWN: RefCell<Known> = RefCell::new(Known::default());
}

/// Process pending invalidations: a committed change is never missed.
fn catch_up() {
    // SAFETY: reads the shared invalidation queue; may run the callback below.
    unsafe { pg_sys::AcceptInvalidationMessages() };
}

/// Whether `space` is known to be ready.
pub fn is_ready(space: &Space) -> bool {
    catch_up();
    KNOWN.with(|k| k.borrow().ready.contains(space.name()))
}

/// Remember that `space` is ready, as its row read `row_xmin`: unless the
/// current transaction wrote that row, or no trigger would tell us when the
/// row changes.
pub fn remember(space: &Space, row_xmin: Option<&str>) -> Result<(), KipError> {
    if !rememberable(row_xmin) || !tables()?.spaces_trigger {
        return Ok(());
    }
    KNOWN.with(|k| k.borrow_mut().ready.insert(space.name().to_string()));
    Ok(())
}

/// Which of the `(meta-type, name)` definitions are known to exist in `space`.
pub fn registered(space: &Space, pairs: &[(String, String)]) -> Vec<bool> {
    catch_up();
    KNOWN.with(|k| {
        let k = k.borrow();
        let known = k.registered.get(space.name());
        pairs.iter().map(|pair| known.is_some_and(|set| set.contains(pair))).collect()
    })
}

/// Remember a definition read with `row_xmin` (see [`remember`]).
pub fn remember_registered(space: &Space, meta_type: &str, name: &str, row_xmin: Option<&str>) -> Result<(), KipError> {
    if !rememberable(row_xmin) || !tables()?.registry_triggers {
        return Ok(());
    }
    KNOWN.with(|k| {
        k.borrow_mut()
            .registered
            .entry(space.name().to_string())
            .or_default()
            .insert((meta_type.to_string(), name.to_string()))
    });
    Ok(())
}

/// Whether the transaction reads one snapshot throughout (REPEATABLE READ,
/// SERIALIZABLE): what it reads may have changed since, and the
/// invalidation that said so was processed before the read, so no later
/// one would take back an answer remembered from it.
pub(crate) fn per_transaction_snapshot() -> bool {
    // SAFETY: reads the transaction's isolation level, a backend global.
    unsafe { pg_sys::XactIsoLevel >= pg_sys::XACT_REPEATABLE_READ as i32 }
}

/// Whether a row with this `xmin` was written by an earlier transaction
/// (not the current one or its subtransactions), and read on a snapshot
/// taken for the statement: only then may it be remembered. Under
/// REPEATABLE READ a space another session dropped since the snapshot was
/// still read as ready, and remembered for the rest of the connection.
fn rememberable(row_xmin: Option<&str>) -> bool {
    if per_transaction_snapshot() {
        return false;
    }
    let Some(xmin) = row_xmin.and_then(|x| x.parse::<u32>().ok()) else {
        return false;
    };
    // SAFETY: a plain lookup in the transaction state of this backend.
    !unsafe { pg_sys::TransactionIdIsCurrentTransactionId(pg_sys::TransactionId::from(xmin)) }
}

/// The tables' OIDs and whether their triggers are in place, read once.
fn tables() -> Result<Tables, KipError> {
    if let Some(t) = KNOWN.with(|k| k.borrow().tables) {
        return Ok(t);
    }
    let always = |table: &str, trigger: &str| {
        format!(
            "EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgrelid = '{table}'::regclass \
             AND t.tgname = '{trigger}' AND t.tgenabled = 'A')"
        )
    };
    let sql = format!(
        "SELECT 'kip.spaces'::regclass::oid::bigint, 'kip.concepts'::regclass::oid::bigint, {} AND {}, {} AND {}, \
                (SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname = 'kip')",
        always("kip.spaces", "spaces_changed"),
        always("kip.spaces", "spaces_truncated"),
        always("kip.concepts", "registry_changed"),
        always("kip.concepts", "registry_truncated"),
    );
    let rows = spi::lookup(&sql, &[], Access::ReadOnly)?;
    let row = rows.into_iter().next().unwrap_or_default();
    let oid = |i: usize| row.get(i).and_then(Value::as_u64).unwrap_or(0) as u32;
    let t = Tables {
        spaces: oid(0),
        concepts: oid(1),
        spaces_trigger: row.get(2) == Some(&Value::Bool(true)),
        registry_triggers: row.get(3) == Some(&Value::Bool(true)),
        schema: SchemaAge::of(row.get(4).and_then(Value::as_str).unwrap_or("")),
    };
    // The current schema has these triggers ENABLE ALWAYS; a restore with
    // `pg_dump --disable-triggers` leaves them enabled as ordinary ones,
    // and every backend then works without the memos, a third slower,
    // without a word. Said once a backend.
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if t.schema == SchemaAge::Current
        && !(t.spaces_trigger && t.registry_triggers)
        && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        pgrx::warning!(
            "kip: its triggers spaces_changed, spaces_truncated, registry_changed and registry_truncated are not ENABLE ALWAYS \
             (a restore with pg_dump --disable-triggers?), so kip works without its memos of spaces and definitions; \
             as their owner: ALTER TABLE kip.spaces ENABLE ALWAYS TRIGGER spaces_changed; \
             ALTER TABLE kip.spaces ENABLE ALWAYS TRIGGER spaces_truncated; \
             ALTER TABLE kip.concepts ENABLE ALWAYS TRIGGER registry_changed; \
             ALTER TABLE kip.concepts ENABLE ALWAYS TRIGGER registry_truncated; \
             ALTER TABLE kip.space_grants ENABLE ALWAYS TRIGGER space_grants_changed; \
             ALTER TABLE kip.space_grants ENABLE ALWAYS TRIGGER space_grants_truncated"
        );
    }
    KNOWN.with(|k| k.borrow_mut().tables = Some(t));
    Ok(t)
}

/// Whether the installed SQL objects are this library's version: kip's
/// statements then run under a pinned `search_path` (`exec::subxact`). An
/// older schema's triggers may still name operators through the caller's
/// path (0.1.0's staleness trigger compared vectors with `=`), so until
/// `ALTER EXTENSION kip UPDATE` they keep it.
pub fn schema_is_current() -> bool {
    tables().map(|t| t.schema == SchemaAge::Current).unwrap_or(false)
}

/// Whether the installed SQL objects are known to be older than this
/// library's (an error reading them is no such knowledge).
pub fn schema_is_older() -> bool {
    matches!(tables(), Ok(t) if t.schema == SchemaAge::Older)
}

/// The installed SQL objects' age, when known without a query: for code
/// that may not query (an error's classification, inside the failed
/// subtransaction).
pub fn schema_age_known() -> Option<SchemaAge> {
    KNOWN.with(|k| k.try_borrow().ok().and_then(|k| k.tables).map(|t| t.schema))
}

/// Forget everything: the relcache callback's action for our tables.
fn forget() {
    KNOWN.with(|k| match k.try_borrow_mut() {
        Ok(mut k) => *k = Known::default(),
        // Invalidations are only processed outside the borrows above, which
        // hold no lock and call nothing; an overlap would be a bug here.
        Err(_) => pgrx::warning!("kip: the catalog memo was busy during an invalidation"),
    });
}

/// Postgres's relcache callback: `relid` is the relation whose cache entry
/// is invalidated, or `InvalidOid` for all of them (a cache reset).
unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    let ours = KNOWN.with(|k| k.try_borrow().map(|k| k.tables.map(|t| (t.spaces, t.concepts))).unwrap_or(None));
    let relid = relid.to_u32();
    let affected = match ours {
        None => true,
        Some((spaces, concepts)) => relid == 0 || relid == spaces || relid == concepts,
    };
    if affected {
        forget();
    }
}

/// Register the invalidation callback; called once per process from `_PG_init`.
pub fn register() {
    // SAFETY: registers a plain function pointer for this process.
    unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_invalidation), pg_sys::Datum::from(0usize)) };
}

/// `kip.spaces_changed()`: the triggers on `kip.spaces` that
/// registers the table's relcache invalidation (see the module comment).
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_spaces_changed(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    super::invalidate_trigger_table(fcinfo, "kip.spaces_changed")
}

/// `kip.registry_changed()`: the triggers on `kip.concepts` for changed
/// definition rows and TRUNCATE; the invalidation goes to `kip.spaces`.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_registry_changed(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let trigger = super::trigger_data(fcinfo, "kip.registry_changed");
    let namespace = pg_sys::get_rel_namespace((*(*trigger).tg_relation).rd_id);
    let spaces = pg_sys::get_relname_relid(c"spaces".as_ptr(), namespace);
    if spaces != pg_sys::InvalidOid {
        pg_sys::CacheInvalidateRelcacheByRelid(spaces);
    }
    // A row trigger's AFTER result is ignored; NULL is the convention.
    pg_sys::Datum::from(0usize)
}

crate::exec::v1_function_info!(pg_finfo_kip_spaces_changed, pg_finfo_kip_registry_changed);

/// SQL that answers whether kip's concepts in this database are an enabled
/// logical replication subscription's target: there the publisher's worker embeds
/// and maintains the memory, and what it writes arrives by replication
/// (`maintenance::worker`, `kip_embedding_status`).
pub const KIP_TABLES_SUBSCRIBED: &str = "EXISTS (SELECT 1 FROM pg_catalog.pg_subscription_rel r
    JOIN pg_catalog.pg_subscription s ON s.oid = r.srsubid
    WHERE s.subenabled AND r.srrelid = pg_catalog.to_regclass('kip.concepts'))";

#[cfg(test)]
mod tests {
    use super::SchemaAge;

    #[test]
    fn the_schema_age_compares_versions_as_numbers() {
        let library = env!("CARGO_PKG_VERSION");
        assert_eq!(SchemaAge::of(library), SchemaAge::Current);
        assert_eq!(SchemaAge::of("0.1.0"), SchemaAge::Older);
        assert_eq!(SchemaAge::of("0.9.0"), SchemaAge::Older, "0.9.0 is older than 0.12.0, though it sorts after it as text");
        assert_eq!(SchemaAge::of("99.0.0"), SchemaAge::Newer);
        assert_eq!(SchemaAge::of(""), SchemaAge::Newer, "no extension: not a schema to update");
    }
}

