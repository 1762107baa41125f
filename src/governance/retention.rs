//! Pruning `kip.history` older than `kip.history_retention`, in bounded
//! batches: by the background worker after each maintenance cycle (a
//! transaction per batch), or by `kip_prune_history()`.

use super::settings;
use crate::exec::{spi, subxact, Access, SqlParam};
use kip_lang::{ErrorCode, KipError};
use pgrx::bgworkers::BackgroundWorker;
use pgrx::prelude::*;

/// History rows deleted per batch (one statement, one transaction in the worker).
pub const BATCH: i64 = 10_000;
/// Batches per worker cycle; the rest waits for the next cycle.
const MAX_BATCHES: usize = 100;

/// Delete at most `max` history rows older than the retention, oldest
/// first; returns how many. Nothing when the retention is off.
pub fn prune(max: i64) -> Result<i64, KipError> {
    let Some(retention) = settings::retention() else {
        return Ok(0);
    };
    // The setting is text, checked here rather than when it is set: a
    // value that is no interval is named as such (it surfaced as an
    // internal datetime error of the DELETE below).
    // The cut itself is checked: a negative interval put it in the future
    // and deleted the whole history (so does '-1 year 361 days', which an
    // interval comparison, counting a month as 30 days, takes for
    // positive); one so large that the cut is before any timestamp failed
    // as an internal datetime overflow.
    let valid = subxact::run_isolated(|| {
        spi::query_scalar(
            "SELECT now() - $1::interval < now() AND now() - $1::interval > '-infinity'::timestamptz",
            &[SqlParam::Text(retention.clone())],
            Access::ReadOnly,
        )
    });
    let hint = "Set it to a positive interval such as '90 days', or to '' or 0 to keep the history for ever.";
    match valid {
        Err(_) => {
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("kip.history_retention = {retention:?} is not an interval, or one too large"))
                .with_hint(hint))
        }
        Ok(serde_json::Value::Bool(true)) => {}
        Ok(_) => {
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("kip.history_retention = {retention:?} is not a positive interval"))
                .with_hint(hint))
        }
    }
    let n = spi::query_scalar(
        "WITH doomed AS (
             SELECT id FROM kip.history
             WHERE changed_at < now() - $1::interval
             ORDER BY changed_at
             LIMIT $2),
         gone AS (DELETE FROM kip.history h USING doomed d WHERE h.id = d.id RETURNING 1)
         SELECT count(*) FROM gone",
        &[SqlParam::Text(retention), SqlParam::Int(max)],
        Access::ReadWrite,
    )?;
    Ok(n.as_i64().unwrap_or(0))
}

fn history_exists() -> Result<bool, KipError> {
    let v = spi::query_scalar("SELECT to_regclass('kip.history') IS NOT NULL", &[], Access::ReadOnly)?;
    Ok(v == serde_json::Value::Bool(true))
}

/// The worker's pruning: batch after batch, each committed, until a batch
/// finds fewer rows than it may delete (or `MAX_BATCHES`, or SIGTERM).
pub fn prune_in_worker() {
    for _ in 0..MAX_BATCHES {
        let deleted = BackgroundWorker::transaction(|| {
            subxact::run_isolated(|| if history_exists()? { prune(BATCH) } else { Ok(0) })
        });
        match deleted {
            Ok(n) if n >= BATCH && !BackgroundWorker::sigterm_received() => continue,
            Ok(_) => return,
            Err(e) => {
                warning!("kip worker: pruning the history failed: {e}");
                return;
            }
        }
    }
}

/// Delete history older than `kip.history_retention`, at most `max` rows
/// (default 10,000); returns the number deleted. For the extension's owner
/// and superusers (the history is otherwise append-only).
#[pg_extern(volatile)]
fn kip_prune_history(max: default!(Option<i64>, "NULL")) -> i64 {
    let max = max.unwrap_or(BATCH);
    let result = subxact::run_isolated(|| {
        let allowed = spi::query_scalar("SELECT has_table_privilege('kip.history', 'DELETE')", &[], Access::ReadOnly)?;
        if allowed != serde_json::Value::Bool(true) {
            return Err(KipError::new(ErrorCode::ImmutableTarget, "access denied: the history is pruned by the extension's owner and superusers only")
                .with_hint("The background worker prunes it after each maintenance cycle (kip.history_retention)."));
        }
        if max < 1 {
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("max {max} is out of range")).with_hint("Pass a positive number of rows."));
        }
        prune(max)
    });
    result.unwrap_or_else(|e| crate::exec::pg_error::raise(e))
}
