//! Settings (GUCs) of the maintenance cycle and its background worker.
//!
//! | setting                    | default    | context    | meaning                                              |
//! |----------------------------|------------|------------|------------------------------------------------------|
//! | `kip.maintenance_batch`    | `500`      | user       | cap per step and cycle (deletions, decays, links…)   |
//! | `kip.maintenance_interval` | `3600`     | sighup     | seconds between worker cycles; `0` disables them     |
//! | `kip.maintenance_database` | `postgres` | postmaster | database the worker connects to (once, at start)     |

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CString;

pub static BATCH: GucSetting<i32> = GucSetting::<i32>::new(500);
pub static INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static DATABASE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"postgres"));

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
        c"Database the kip maintenance background worker connects to.",
        c"The worker runs kip_maintenance('*') there when the kip extension is installed.",
        &DATABASE,
        // Postgres only accepts postmaster-level settings defined while the
        // library is preloaded; a backend loading kip later (no worker
        // exists then) defines the same setting at sighup level.
        if unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
            GucContext::Postmaster
        } else {
            GucContext::Sighup
        },
        GucFlags::default(),
    );
}

pub fn batch() -> i64 {
    i64::from(BATCH.get().max(1))
}

pub fn database() -> String {
    DATABASE
        .get()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "postgres".to_string())
}
