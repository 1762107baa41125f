//! Memory spaces: independent memories inside one database.
//!
//! `SET kip.space = 'alice'` selects a space for the session (default
//! `default`). A space is created, and bootstrapped with the Genesis and core
//! capsules, the first time `kip_execute` runs in it; `kip_create_space` does
//! the same explicitly (`bootstrap::spaces`). Read-only entry points never
//! create a space.

use crate::params::SqlParam;
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
