//! The maintenance background worker.
//!
//! Registered only when kip is in `shared_preload_libraries` (a background
//! worker can only be registered while the postmaster loads libraries). It
//! connects once to `kip.maintenance_database` and, every
//! `kip.maintenance_interval` seconds (first cycle right after start),
//! runs the cycle on every space — if the kip extension is installed there.
//! SIGHUP reloads the configuration (a new interval applies at once); SIGTERM
//! stops the worker between cycles. A failing cycle is logged as a WARNING
//! and retried at the next interval; the worker itself keeps running.

use super::settings;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::prelude::*;
use std::time::{Duration, Instant};

/// How long the worker sleeps when cycles are disabled (interval 0) before
/// looking at the setting again; a SIGHUP wakes it earlier.
const DISABLED_POLL: Duration = Duration::from_secs(60);

/// When the worker dies (for instance because `kip.maintenance_database` does
/// not exist yet: connecting is then FATAL), the postmaster restarts it after this.
const RESTART_AFTER: Duration = Duration::from_secs(10);

pub fn register() {
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    BackgroundWorkerBuilder::new("kip maintenance worker")
        .set_type("kip maintenance")
        .set_library("kip")
        .set_function("kip_maintenance_worker_main")
        .enable_spi_access()
        .set_restart_time(Some(RESTART_AFTER))
        .load();
}

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn kip_maintenance_worker_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let database = settings::database();
    BackgroundWorker::connect_worker_to_spi(Some(&database), None);
    log!("kip maintenance worker started on database {database:?}");
    let mut last_run: Option<Instant> = None;
    loop {
        let wait = match (settings::INTERVAL.get(), last_run) {
            (i, _) if i <= 0 => DISABLED_POLL,
            (_, None) => Duration::ZERO,
            (i, Some(at)) => (at + Duration::from_secs(i as u64)).saturating_duration_since(Instant::now()),
        };
        if !wait.is_zero() && !BackgroundWorker::wait_latch(Some(wait)) {
            break;
        }
        if BackgroundWorker::sighup_received() {
            // Reload, then recompute the wait: a new interval counts from the last cycle.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
            continue;
        }
        if BackgroundWorker::sigterm_received() {
            break;
        }
        let interval = settings::INTERVAL.get();
        let due = interval > 0 && last_run.map_or(true, |at| at.elapsed() >= Duration::from_secs(interval as u64));
        if due {
            run_cycle();
            last_run = Some(Instant::now());
        }
    }
    log!("kip maintenance worker stopping");
}

/// One cycle over every space, in its own transaction.
fn run_cycle() {
    BackgroundWorker::transaction(|| {
        let installed = Spi::get_one::<bool>(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'kip') AND to_regclass('kip.maintenance_log') IS NOT NULL",
        );
        match installed {
            Ok(Some(true)) => match super::run_all() {
                Ok(reports) => log!("kip maintenance cycle done on {} space(s)", reports.as_array().map_or(0, Vec::len)),
                Err(e) => warning!("kip maintenance cycle failed: {e}"),
            },
            Ok(_) => {}
            Err(e) => warning!("kip maintenance worker: {e}"),
        }
    });
}
