//! Memory spaces: independent memories inside one database.
//!
//! `SET kip.space = 'alice'` selects a space for the session (default
//! `default`). A space is created, and bootstrapped with the Genesis and core
//! capsules, the first time `kip_execute` runs in it; `kip_create_space` does
//! the same explicitly. Read-only entry points never create a space.

use crate::exec::{spi, Access, SqlParam};
use kip_lang::{ErrorCode, KipError};

/// A validated space name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space(String);

impl Space {
    pub fn name(&self) -> &str {
        &self.0
    }

    pub fn param(&self) -> SqlParam {
        SqlParam::Text(self.0.clone())
    }
}

/// Space names: 1–63 characters, letters, digits, `_`, `.` and `-`, not
/// starting with `.` or `-`. The same rule is a CHECK constraint on
/// `kip.spaces`.
pub fn validate(name: &str) -> Result<Space, KipError> {
    let ok_len = !name.is_empty() && name.len() <= 63;
    let mut chars = name.chars();
    let ok_first = chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let ok_rest = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok_len && ok_first && ok_rest {
        Ok(Space(name.to_string()))
    } else {
        Err(KipError::new(
            ErrorCode::InvalidIdentifier,
            format!("invalid memory space name {name:?}"),
        )
        .with_hint(
            "A space name has 1 to 63 characters: letters, digits, '_', '.' or '-', starting with a letter, digit or '_'. Example: SET kip.space = 'alice';",
        ))
    }
}

/// The session's current space (from `kip.space`), validated.
pub fn current() -> Result<Space, KipError> {
    validate(&crate::guc::space_setting())
}

/// Whether the space exists already.
pub fn exists(space: &Space) -> Result<bool, KipError> {
    let v = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.spaces WHERE name = $1)",
        &[space.param()],
        Access::ReadOnly,
    )?;
    Ok(v == serde_json::Value::Bool(true))
}

/// Create the space if needed and make sure it is bootstrapped. Concurrent
/// first uses are serialized on the space's row, so the bootstrap runs once.
pub fn ensure(space: &Space) -> Result<(), KipError> {
    // Fast path, taken by every call after the first: no insert attempt and
    // no row lock, so concurrent writers of one space never queue here.
    let ready = spi::query_scalar(
        "SELECT bootstrapped_at IS NOT NULL FROM kip.spaces WHERE name = $1",
        &[space.param()],
        Access::ReadWrite,
    )?;
    if ready == serde_json::Value::Bool(true) {
        return Ok(());
    }
    spi::execute(
        "INSERT INTO kip.spaces (name) VALUES ($1) ON CONFLICT (name) DO NOTHING",
        &[space.param()],
        Access::ReadWrite,
    )?;
    let bootstrapped = spi::query_scalar(
        "SELECT bootstrapped_at IS NOT NULL FROM kip.spaces WHERE name = $1 FOR UPDATE",
        &[space.param()],
        Access::ReadWrite,
    )?;
    if bootstrapped != serde_json::Value::Bool(true) {
        crate::bootstrap::run(space)?;
        spi::execute(
            "UPDATE kip.spaces SET bootstrapped_at = now() WHERE name = $1",
            &[space.param()],
            Access::ReadWrite,
        )?;
    }
    Ok(())
}
