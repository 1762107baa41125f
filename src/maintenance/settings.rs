//! Settings (GUCs) of the maintenance cycle and its background worker.
//!
//! | setting                    | default    | context    | meaning                                              |
//! |----------------------------|------------|------------|------------------------------------------------------|
//! | `kip.maintenance_batch`    | `500`      | user       | cap per step and cycle (deletions, decays, links…)   |
//! | `kip.maintenance_interval` | `3600`     | sighup     | seconds between worker cycles; `0` disables them     |
//! | `kip.maintenance_database` | `postgres` | postmaster | database the worker serves when `kip.worker_databases` is empty |
//! | `kip.worker_databases`     | (empty)    | postmaster | comma-separated databases, one background worker each |
//! | `kip.embedding_naptime`    | `500`      | sighup     | milliseconds between the worker's looks at the embedding backlog |
//! | `kip.memory_strength_decay` | `0.95`    | user       | factor applied to a link's memory_strength per week of disuse |

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CString;

pub static BATCH: GucSetting<i32> = GucSetting::<i32>::new(500);
pub static INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static DATABASE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"postgres"));
pub static DATABASES: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static EMBEDDING_NAPTIME: GucSetting<i32> = GucSetting::<i32>::new(500);
pub static MEMORY_STRENGTH_DECAY: GucSetting<f64> = GucSetting::<f64>::new(0.95);

/// Postgres only accepts postmaster-level settings defined while the library
/// is preloaded; a backend loading kip later (no worker exists then) defines
/// the same settings at sighup level.
fn postmaster_context() -> GucContext {
    if unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        GucContext::Postmaster
    } else {
        GucContext::Sighup
    }
}

pub fn register() {
    GucRegistry::define_int_guc(
        c"kip.maintenance_batch",
        c"Most elements one maintenance cycle deletes, decays or links per step and space.",
        c"BrainMaintenance Phase 12 caps TTL reclamation at 500 elements per cycle; the rest waits for the next cycle.",
        &BATCH,
        1,
        1_000_000,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.maintenance_interval",
        c"Seconds between two maintenance cycles of the kip background worker; 0 disables them.",
        c"",
        &INTERVAL,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_string_guc(
        c"kip.maintenance_database",
        c"Database the kip background worker serves when kip.worker_databases is empty.",
        c"The worker runs kip_maintenance('*') there when the kip extension is installed.",
        &DATABASE,
        postmaster_context(),
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"kip.worker_databases",
        c"Comma-separated databases the kip background worker serves, one worker process each.",
        c"Empty means kip.maintenance_database alone. Each worker runs the maintenance cycle and embeds the backlog of its database.",
        &DATABASES,
        postmaster_context(),
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"kip.embedding_naptime",
        c"Milliseconds between two looks of the kip background worker at the embedding backlog.",
        c"A new or changed element becomes semantically searchable about this long after its commit, plus the time to embed it.",
        &EMBEDDING_NAPTIME,
        10,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_float_guc(
        c"kip.memory_strength_decay",
        c"Factor the maintenance cycle applies to a link's metadata.memory_strength per week of disuse.",
        c"BrainMaintenance Phase 7 (KIP v1.0-RC11): disuse lowers memory_strength, never confidence. Slowly fading links lose half as much; 1 disables the decay.",
        &MEMORY_STRENGTH_DECAY,
        0.0,
        1.0,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The databases the background workers serve, in order, without repeats.
pub fn worker_databases() -> Vec<String> {
    let listed = DATABASES.get().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for name in listed.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    if out.is_empty() {
        out.push(database());
    }
    out
}

pub fn batch() -> i64 {
    i64::from(BATCH.get().max(1))
}

pub fn memory_strength_decay() -> f64 {
    MEMORY_STRENGTH_DECAY.get().clamp(0.0, 1.0)
}

pub fn database() -> String {
    DATABASE
        .get()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "postgres".to_string())
}
