//! The kip background workers: one per database of `kip.worker_databases`
//! (default: `kip.maintenance_database` alone).
//!
//! Registered only when kip is in `shared_preload_libraries` (a background
//! worker can only be registered while the postmaster loads libraries). Each
//! worker connects to its database once and, where the kip extension is
//! installed:
//! * every `kip.embedding_naptime` milliseconds, embeds the backlog of
//!   elements whose vector is missing or stale (`embed::backfill`), in
//!   batches, one transaction per batch, when the provider is the
//!   in-database model;
//! * every `kip.maintenance_interval` seconds (first cycle right after
//!   start), runs the maintenance cycle on every space.
//!
//! Where the extension is not installed (yet), the worker looks again every
//! `kip.embedding_naptime` milliseconds, and does nothing else.
//!
//! SIGHUP reloads the configuration (a new interval applies at once); SIGTERM
//! stops the worker between two steps, and the postmaster starts it again
//! 10 s later unless the server is shutting down. A failing step is logged as a WARNING
//! and retried later; the worker itself keeps running.

use super::settings;
use crate::embed;
use crate::exec::subxact;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::prelude::*;
use std::time::{Duration, Instant};

/// When the worker dies (for instance because its database does not exist
/// yet: connecting is then FATAL), the postmaster restarts it after this.
const RESTART_AFTER: Duration = Duration::from_secs(10);

/// Batches embedded in a row before the worker looks at signals and the
/// maintenance schedule again.
const BATCHES_PER_TURN: usize = 8;

pub fn register() {
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    for database in settings::worker_databases() {
        BackgroundWorkerBuilder::new(&format!("kip worker for database {database}"))
            .set_type("kip worker")
            .set_library("kip")
            .set_function("kip_maintenance_worker_main")
            .set_extra(&database)
            .enable_spi_access()
            .set_restart_time(Some(RESTART_AFTER))
            .load();
    }
}

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn kip_maintenance_worker_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let database = BackgroundWorker::get_extra().to_string();
    BackgroundWorker::connect_worker_to_spi(Some(&database), None);
    log!("kip worker started on database {database:?}");
    let mut last_cycle: Option<Instant> = None;
    // Until the extension is installed there is nothing to do but look
    // again a naptime later: the first cycle, due at once, waits for it.
    let mut installed_at_last_look = true;
    loop {
        let naptime = Duration::from_millis(settings::EMBEDDING_NAPTIME.get().max(10) as u64);
        let interval = settings::INTERVAL.get();
        let until_cycle = match (interval, last_cycle) {
            (i, _) if i <= 0 => naptime,
            (_, None) if installed_at_last_look => Duration::ZERO,
            (_, None) => naptime,
            (i, Some(at)) => (at + Duration::from_secs(i as u64)).saturating_duration_since(Instant::now()),
        };
        let wait = naptime.min(until_cycle);
        if !wait.is_zero() && !BackgroundWorker::wait_latch(Some(wait)) {
            break;
        }
        if BackgroundWorker::sighup_received() {
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        if BackgroundWorker::sigterm_received() {
            break;
        }
        installed_at_last_look = installed();
        if !installed_at_last_look {
            continue;
        }
        if embed_backlog() == Turn::Stop {
            break;
        }
        let interval = settings::INTERVAL.get();
        let due = interval > 0 && last_cycle.map_or(true, |at| at.elapsed() >= Duration::from_secs(interval as u64));
        if due {
            run_cycle();
            last_cycle = Some(Instant::now());
        }
    }
    log!("kip worker stopping");
    // Exit code 1, as Postgres's logical replication launcher does: the
    // postmaster restarts the worker after RESTART_AFTER when it was
    // terminated while the server runs (pg_terminate_backend, DROP DATABASE
    // ... WITH (FORCE)); exit code 0 would unregister it until the next
    // server start. At shutdown nothing is restarted.
    unsafe { pg_sys::proc_exit(1) };
}

/// Whether the kip extension is installed in this database (at the version
/// this library expects: its tables exist).
fn installed() -> bool {
    BackgroundWorker::transaction(|| {
        Spi::get_one::<bool>(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'kip')
                AND to_regclass('kip.maintenance_log') IS NOT NULL
                AND to_regprocedure('kip.concept_grounding_text(text, text, jsonb)') IS NOT NULL",
        )
        .ok()
        .flatten()
        .unwrap_or(false)
    })
}

#[derive(PartialEq, Eq)]
enum Turn {
    Continue,
    Stop,
}

/// Embed waiting elements, a batch per transaction, until none wait, or
/// for `BATCHES_PER_TURN` batches; `Stop` when SIGTERM arrived meanwhile.
fn embed_backlog() -> Turn {
    if !matches!(embed::settings::provider(), Ok(embed::Provider::Onnx)) {
        return Turn::Continue;
    }
    for _ in 0..BATCHES_PER_TURN {
        let batch = embed::settings::batch() as i64;
        let stored = BackgroundWorker::transaction(|| {
            subxact::run_isolated(|| {
                if !embed::backfill::has_pending()? {
                    return Ok(0);
                }
                embed::backfill::embed_pending(Some(batch), None)
            })
        });
        match stored {
            Ok(n) if n < batch => return Turn::Continue,
            Ok(_) => {}
            Err(e) => {
                // A missing model was logged once when loading failed.
                if embed::runtime::known_failure().is_none() {
                    warning!("kip worker: embedding the backlog failed: {e}");
                }
                return Turn::Continue;
            }
        }
        if BackgroundWorker::sigterm_received() {
            return Turn::Stop;
        }
    }
    Turn::Continue
}

/// One maintenance cycle over every space, each space in a transaction of
/// its own: a space's work is committed before the next one starts, and
/// subtransactions never pile up across spaces.
fn run_cycle() {
    let spaces = match BackgroundWorker::transaction(super::bootstrapped_spaces) {
        Ok(spaces) => spaces,
        Err(e) => {
            warning!("kip maintenance cycle failed: {e}");
            return;
        }
    };
    for space in &spaces {
        let report = BackgroundWorker::transaction(|| super::run_isolated(space));
        if let Some(e) = report.get("error") {
            warning!("kip maintenance of space {:?} failed: {e}", space.name());
        }
        if BackgroundWorker::sigterm_received() {
            return;
        }
    }
    log!("kip maintenance cycle done on {} space(s)", spaces.len());
    crate::governance::retention::prune_in_worker();
}
