//! The maintenance ("sleep") cycle, automated: the mechanical part of the
//! `$system` cycle of `reference/brain/BrainMaintenance.md`, run per space by
//! `kip_maintenance()` or by the background worker (`worker`).
//!
//! Steps, in order: the space's capsule upgrade when it is at an older
//! capsule level (`bootstrap::upgrade`), TTL reclamation (Phase 12, `ttl`),
//! review SleepTasks for TTLs outside the whitelist, memory-strength decay on
//! disuse (Phase 7, `decay`), duplicate candidates → SleepTasks
//! (`duplicates`), orphans → `Unsorted` (`orphans`). Every change is audited in `kip.maintenance_log`.
//! Each space runs in its own subtransaction: a failure in one space is
//! reported and rolls back only that space's cycle.

mod decay;
mod duplicates;
mod orphans;
pub mod settings;
mod tasks;
mod ttl;
pub mod worker;

use crate::exec::{spi, subxact, Access, SqlParam};
use crate::space::{self, Space};
use kip_lang::{ErrorCode, KipError};
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};

/// One maintenance cycle on one space (default: `kip.space`), or on every
/// bootstrapped space with `'*'` (then an array of per-space reports).
#[pg_extern(volatile)]
fn kip_maintenance(space: default!(Option<&str>, "NULL")) -> JsonB {
    let result = match space {
        Some("*") => crate::governance::access::require_kip_admin("kip_maintenance('*')").and_then(|_| run_all()),
        Some(name) => space::validate(name).and_then(|s| run_writable(&s)),
        None => space::current().and_then(|s| run_writable(&s)),
    };
    match result {
        Ok(v) => JsonB(v),
        Err(e) => crate::exec::pg_error::raise(e),
    }
}

/// Every bootstrapped space, one report each, in the caller's transaction.
pub fn run_all() -> Result<Value, KipError> {
    let mut reports = Vec::new();
    for space in bootstrapped_spaces()? {
        reports.push(run_isolated(&space));
    }
    Ok(Value::Array(reports))
}

/// The spaces the cycle runs on.
pub(crate) fn bootstrapped_spaces() -> Result<Vec<Space>, KipError> {
    let rows = spi::query(
        "SELECT name FROM kip.spaces WHERE bootstrapped_at IS NOT NULL ORDER BY name",
        &[],
        Access::ReadOnly,
    )?;
    rows.iter().map(|row| space::validate(row[0].as_str().unwrap_or_default())).collect()
}

/// A named space's cycle writes it: the caller needs the write privilege.
fn run_writable(space: &Space) -> Result<Value, KipError> {
    crate::governance::access::require(space, crate::governance::access::Privilege::Write)?;
    run_existing(space)
}

fn run_existing(space: &Space) -> Result<Value, KipError> {
    if !crate::bootstrap::spaces::exists(space)? {
        return Err(KipError::new(ErrorCode::NotFound, format!("memory space {:?} does not exist", space.name()))
            .with_hint("kip_maintenance never creates a space; pass an existing space name, or '*' for all spaces."));
    }
    Ok(run_isolated(space))
}

/// The cycle of one space in a subtransaction; an error becomes the report.
/// It runs in UTC: a time-to-live's `expires_at` written without a zone
/// is read as UTC, whoever runs the cycle (a caller's `TimeZone` of +14
/// reclaimed such memories fourteen hours early).
pub(crate) fn run_isolated(space: &Space) -> Value {
    match subxact::with_pinned_settings(&[(c"TimeZone", c"UTC")], || subxact::run_isolated(|| run_space(space))) {
        Ok(report) => report,
        Err(e) => json!({ "space": space.name(), "error": e.to_json() }),
    }
}

fn run_space(space: &Space) -> Result<Value, KipError> {
    let cap = settings::batch();
    let name = space.name();
    // A capsule that cannot be applied is reported and skipped: the rest of
    // the cycle still runs, and the upgrade is retried next time.
    let capsules = match crate::bootstrap::spaces::upgrade_if_needed(space) {
        Ok(upgraded) => json!(if upgraded { "upgraded" } else { "current" }),
        Err(e) => json!({ "error": e.to_json() }),
    };
    // Phase 12: one cap for nodes and links together.
    let expiry = ttl::Expiry::detect()?;
    let expired_deleted = ttl::delete_concepts(expiry, name, cap)?;
    let expired_links_deleted = ttl::delete_links(expiry, name, cap - expired_deleted)?;
    let expired_kept_pending = ttl::count_pending_expired(expiry, name)?;
    let mut review_tasks = 0;
    let mut errors = Vec::new();
    let mut budget = tasks::TaskBudget::new();
    for (ty, concept) in ttl::suspicious(expiry, name, cap)? {
        let task = tasks::Task {
            action: "review",
            key: format!("ttl:{ty}:{concept}"),
            target_type: &ty,
            target_name: &concept,
            reason: format!(
                "{{type: {ty:?}, name: {concept:?}}} carries an expired metadata.expires_at but its type is not on the TTL whitelist (Phase 12A.2); it was not deleted. Probably metadata pollution from a statement-level WITH METADATA: remove the key or archive the node."
            ),
            priority: 2,
        };
        match tasks::ensure(space, &task, &mut budget) {
            Ok(true) => review_tasks += 1,
            Ok(false) => {}
            Err(e) => errors.push(e.to_json()),
        }
    }
    let decayed = decay::run(name, cap)?;
    let duplicate_tasks = duplicates::run(space, cap, &mut budget, &mut errors)?;
    let orphans_assigned = orphans::run(name, cap)?;
    let mut report = json!({
        "space": name,
        "expired_deleted": expired_deleted,
        "expired_links_deleted": expired_links_deleted,
        "expired_kept_pending": expired_kept_pending,
        "review_tasks": review_tasks,
        "decayed": decayed,
        "duplicate_tasks": duplicate_tasks,
        "orphans_assigned": orphans_assigned,
        "capsules": capsules,
    });
    if !errors.is_empty() {
        report["task_errors"] = Value::Array(errors);
    }
    spi::execute(
        "INSERT INTO kip.maintenance_log (space, action, detail) VALUES ($1, 'cycle', $2)",
        &[SqlParam::Text(name.into()), SqlParam::Json(report.clone())],
        Access::ReadWrite,
    )?;
    Ok(report)
}

/// The current time as ISO-8601 UTC text, for metadata stamps.
pub(crate) const NOW_ISO: &str = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";
