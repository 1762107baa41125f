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
//! Where the extension is not installed (yet), or where kip's tables are a
//! logical replication subscription's targets, the worker looks again every
//! `kip.embedding_naptime` milliseconds, and does nothing else.
//!
//! SIGHUP reloads the configuration (a new interval applies at once); SIGTERM
//! stops the worker between two steps, and the postmaster starts it again
//! 10 s later unless the server is shutting down. A failing step is logged as a WARNING
//! and retried later; the worker itself keeps running.
//!
//! A worker leaves its database when a session waits to drop, rename or
//! copy it (see [`database_wanted`]), and connects again 10 s later.

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

/// How often a napping worker looks whether a session waits for it to
/// leave its database: well within the 5 s such a session waits.
const LOOK_EVERY: Duration = Duration::from_secs(1);

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
    let mut said_subscribed = false;
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
        if !wait.is_zero() && stops(nap(wait), &database) {
            break;
        }
        if BackgroundWorker::sighup_received() {
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        if BackgroundWorker::sigterm_received() {
            break;
        }
        // A subscriber's tables count as not installed: nothing to do but
        // look again a naptime later.
        let look = look();
        if look == Look::Subscribed && !said_subscribed {
            log!(
                "kip worker: kip's tables in database {database:?} are logical replication targets; \
                 it leaves their embedding and maintenance to the publisher's worker"
            );
        }
        said_subscribed = look == Look::Subscribed;
        installed_at_last_look = look == Look::Ready;
        if !installed_at_last_look {
            continue;
        }
        if stops(embed_backlog(), &database) {
            break;
        }
        let interval = settings::INTERVAL.get();
        let due = interval > 0 && last_cycle.map_or(true, |at| at.elapsed() >= Duration::from_secs(interval as u64));
        if due {
            let turn = run_cycle();
            last_cycle = Some(Instant::now());
            if stops(turn, &database) {
                break;
            }
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

/// What the worker finds in its database, in one query each turn.
#[derive(PartialEq, Eq)]
enum Look {
    /// The kip extension is not installed (at the version this library
    /// expects: its tables exist).
    Absent,
    /// kip's concepts are an enabled logical replication subscription's
    /// target: the publisher's worker embeds and maintains them, and what
    /// it writes arrives here. A cycle here would decay and reclaim on its
    /// own and log under ids the publisher's log takes next, stopping the
    /// subscription at its first conflict.
    Subscribed,
    Ready,
}

fn look() -> Look {
    let sql = format!(
        "SELECT CASE WHEN NOT (EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'kip')
                               AND to_regclass('kip.maintenance_log') IS NOT NULL
                               AND to_regprocedure('kip.concept_grounding_text(text, text, jsonb)') IS NOT NULL) THEN 0
                     WHEN {} THEN 1 ELSE 2 END",
        crate::exec::known::KIP_TABLES_SUBSCRIBED
    );
    match BackgroundWorker::transaction(|| Spi::get_one::<i32>(&sql).ok().flatten()) {
        Some(2) => Look::Ready,
        Some(1) => Look::Subscribed,
        _ => Look::Absent,
    }
}

/// What the worker does after a step.
#[derive(PartialEq, Eq)]
enum Turn {
    Continue,
    /// SIGTERM arrived, or the postmaster died.
    Stop,
    /// A session waits for the worker to leave its database.
    Leave,
}

/// Whether the worker's loop ends after a step that answered `turn`; a
/// session waiting for the database makes it leave at once.
fn stops(turn: Turn, database: &str) -> bool {
    match turn {
        Turn::Continue => false,
        Turn::Stop => true,
        Turn::Leave => leave(database),
    }
}

/// What to do between two steps of a turn: stop for SIGTERM, leave for a
/// session that waits for the database, or go on.
fn between_steps() -> Turn {
    if BackgroundWorker::sigterm_received() {
        Turn::Stop
    } else if database_wanted() {
        Turn::Leave
    } else {
        Turn::Continue
    }
}

/// Wait `total` or until a signal, looking every [`LOOK_EVERY`] whether a
/// session waits for the worker to leave its database.
fn nap(total: Duration) -> Turn {
    let end = Instant::now() + total;
    loop {
        let slice_end = (Instant::now() + LOOK_EVERY).min(end);
        if !BackgroundWorker::wait_latch(Some(slice_end.saturating_duration_since(Instant::now()))) {
            return Turn::Stop;
        }
        if database_wanted() {
            return Turn::Leave;
        }
        let now = Instant::now();
        // Woken before the slice's end: a signal (SIGHUP) to act on.
        if now < slice_end || now >= end {
            return Turn::Continue;
        }
    }
}

/// Whether a session waits for this worker to leave its database.
///
/// `DROP DATABASE`, `ALTER DATABASE … RENAME` and `CREATE DATABASE …
/// TEMPLATE` lock the database object (`AccessExclusiveLock`; `ShareLock`
/// for a template), then wait up to 5 s for every other session to leave
/// it and fail with "database … is being accessed by other users". Postgres
/// asks its own autovacuum workers to leave; a kip worker notices by asking,
/// without waiting, for the lock a connecting session takes on its database
/// (`RowExclusiveLock`, which conflicts with both, granted or awaited).
/// Locks that leave connections alone (`COMMENT ON DATABASE`, `ALTER
/// DATABASE … SET`) do not conflict with it.
fn database_wanted() -> bool {
    BackgroundWorker::transaction(|| {
        // SAFETY: a lock of this backend's transaction, released at once.
        unsafe {
            let tag = pg_sys::LOCKTAG {
                locktag_field1: 0, // a shared object: no database
                locktag_field2: pg_sys::DatabaseRelationId.to_u32(),
                locktag_field3: pg_sys::MyDatabaseId.to_u32(),
                locktag_field4: 0,
                locktag_type: pg_sys::LockTagType::LOCKTAG_OBJECT as u8,
                locktag_lockmethodid: pg_sys::DEFAULT_LOCKMETHOD as u8,
            };
            let mode = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;
            if pg_sys::LockAcquire(&tag, mode, false, true) == pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL {
                return true;
            }
            pg_sys::LockRelease(&tag, mode, false);
            false
        }
    })
}

/// Leave the database for the session that waits for it: exit with code 1,
/// so the postmaster starts the worker again after `RESTART_AFTER` (by
/// then a copy is made, or the database is gone or renamed: connecting to
/// a name that no longer exists is then FATAL at each restart, until the
/// name leaves `kip.worker_databases`).
fn leave(database: &str) -> ! {
    log!(
        "kip worker leaves database {database:?}: a session waits to drop, rename or copy it \
         (DROP DATABASE, ALTER DATABASE ... RENAME, CREATE DATABASE ... TEMPLATE); it connects again in {} s",
        RESTART_AFTER.as_secs()
    );
    unsafe { pg_sys::proc_exit(1) };
}

/// Embed waiting elements, a batch per transaction, until none wait, or
/// for `BATCHES_PER_TURN` batches; `Stop` when SIGTERM arrived meanwhile,
/// `Leave` when a session waits for the database.
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
        match between_steps() {
            Turn::Continue => {}
            turn => return turn,
        }
    }
    Turn::Continue
}

/// One maintenance cycle over every space, each space in a transaction of
/// its own: a space's work is committed before the next one starts, and
/// subtransactions never pile up across spaces. Between two spaces it
/// stops for SIGTERM and leaves for a session that waits for the database.
fn run_cycle() -> Turn {
    let spaces = match BackgroundWorker::transaction(super::bootstrapped_spaces) {
        Ok(spaces) => spaces,
        Err(e) => {
            warning!("kip maintenance cycle failed: {e}");
            return Turn::Continue;
        }
    };
    for space in &spaces {
        let report = BackgroundWorker::transaction(|| super::run_isolated(space));
        if let Some(e) = report.get("error") {
            warning!("kip maintenance of space {:?} failed: {e}", space.name());
        }
        match between_steps() {
            Turn::Continue => {}
            turn => return turn,
        }
    }
    log!("kip maintenance cycle done on {} space(s)", spaces.len());
    crate::governance::retention::prune_in_worker();
    Turn::Continue
}
