//! The lifecycle of a memory space's row in `kip.spaces`: created and
//! bootstrapped with the capsules on first use, and brought up to the current
//! capsule level later.

use crate::exec::known;
use crate::exec::{spi, subxact, Access, SqlParam};
use crate::space::Space;
use kip_lang::KipError;

/// Whether the space exists already.
pub fn exists(space: &Space) -> Result<bool, KipError> {
    if known::is_ready(space) {
        return Ok(true);
    }
    let Some(state) = state(space, Read::ReadOnly)? else {
        return Ok(false);
    };
    if state.bootstrapped && !state.needs_upgrade() {
        known::remember(space, state.xmin.as_deref())?;
    }
    Ok(true)
}

/// Create the space if needed and make sure it is bootstrapped at the
/// current capsule level; true when this call created the space's row.
/// Concurrent first uses are serialized on the space's row, so the
/// bootstrap, or a space's capsule upgrade, runs once.
pub fn ensure(space: &Space) -> Result<bool, KipError> {
    // Fast paths, taken by every call after the first: a space this backend
    // knows to be ready, or one whose row says so (no insert attempt and no
    // row lock, so concurrent writers of one space never queue here).
    if known::is_ready(space) {
        return Ok(false);
    }
    if let Some(state) = state(space, Read::Plain)? {
        if state.bootstrapped && !state.needs_upgrade() {
            known::remember(space, state.xmin.as_deref())?;
            return Ok(false);
        }
    }
    let created = spi::execute(
        "INSERT INTO kip.spaces (name) VALUES ($1) ON CONFLICT (name) DO NOTHING",
        &[space.param()],
        Access::ReadWrite,
    )?;
    let state = state(space, Read::Locked)?.unwrap_or_default();
    if !state.bootstrapped {
        super::run(space)?;
        spi::execute(
            "UPDATE kip.spaces SET bootstrapped_at = now() WHERE name = $1",
            &[space.param()],
            Access::ReadWrite,
        )?;
        if state.level.is_some() {
            record_level(space)?;
        }
    } else if let Some(from) = state.level.filter(|_| state.needs_upgrade()) {
        upgrade_capsules(space, from);
    }
    Ok(created > 0)
}

/// The bootstrap state of a space's row.
#[derive(Default)]
struct State {
    bootstrapped: bool,
    /// `kip.spaces.capsule_level`; `None` while the extension's SQL objects
    /// are older than the library (before `ALTER EXTENSION kip UPDATE`),
    /// when the column does not exist yet and no upgrade is attempted.
    level: Option<i32>,
    /// The row's `xmin`: which transaction wrote it (`exec::known`).
    xmin: Option<String>,
}

impl State {
    fn needs_upgrade(&self) -> bool {
        self.level.is_some_and(|level| level < super::capsules::LEVEL)
    }
}

/// How [`state`] reads the row.
#[derive(PartialEq)]
enum Read {
    /// In a read-only statement, for the read-only entry points.
    ReadOnly,
    Plain,
    /// `FOR UPDATE`: the row stays locked until the transaction ends.
    Locked,
}

/// Read through `to_jsonb(row)` so this also works on a 0.1.0 schema.
fn state(space: &Space, read: Read) -> Result<Option<State>, KipError> {
    let sql = if read == Read::Locked {
        "SELECT bootstrapped_at IS NOT NULL, to_jsonb(s) -> 'capsule_level', s.xmin::text FROM kip.spaces s WHERE name = $1 FOR UPDATE"
    } else {
        "SELECT bootstrapped_at IS NOT NULL, to_jsonb(s) -> 'capsule_level', s.xmin::text FROM kip.spaces s WHERE name = $1"
    };
    let access = if read == Read::ReadOnly { Access::ReadOnly } else { Access::ReadWrite };
    let rows = spi::lookup(sql, &[space.param()], access)?;
    Ok(rows.into_iter().next().map(|row| State {
        bootstrapped: row.first() == Some(&serde_json::Value::Bool(true)),
        level: row.get(1).and_then(|v| v.as_i64()).map(|v| v as i32),
        xmin: row.get(2).and_then(|v| v.as_str()).map(str::to_string),
    }))
}

fn record_level(space: &Space) -> Result<(), KipError> {
    spi::execute(
        "UPDATE kip.spaces SET capsule_level = $2 WHERE name = $1",
        &[space.param(), SqlParam::Int(i64::from(super::capsules::LEVEL))],
        Access::ReadWrite,
    )
    .map(|_| ())
}

/// Bring a space bootstrapped at an older capsule level up to date, in its
/// own subtransaction. A capsule that cannot be applied leaves the space as
/// it was and is reported as a WARNING naming it; the command that triggered
/// the upgrade still runs, and the next one tries again.
fn upgrade_capsules(space: &Space, from: i32) {
    let result = subxact::run_isolated(|| {
        super::upgrade(space, from)?;
        record_level(space)
    });
    if let Err(e) = result {
        pgrx::warning!("{}", e.to_json());
    }
}

/// The capsule upgrade of one space, for the maintenance cycle: `Ok(true)`
/// when it ran, `Ok(false)` when the space was already current.
pub fn upgrade_if_needed(space: &Space) -> Result<bool, KipError> {
    match state(space, Read::Locked)? {
        Some(State { bootstrapped: true, level: Some(from), .. }) if from < super::capsules::LEVEL => {
            subxact::run_isolated(|| {
                super::upgrade(space, from)?;
                record_level(space)
            })?;
            Ok(true)
        }
        _ => Ok(false),
    }
}
