//! The caller's access to a memory space, checked before a command runs.
//!
//! Row-level security already keeps every statement inside the spaces the
//! current role may use; this check turns "no rows" or "new row violates
//! row-level security policy" into one clear KIP error, `KIP_3004`
//! (the spec's code for an operation on a protected target; kip-server
//! answers it with 403), raised before anything executes. The answer is the
//! same whether the space exists or not, so it reveals nothing about spaces
//! the caller cannot read.
//!
//! On a schema older than the library (before `ALTER EXTENSION kip UPDATE`)
//! there are no grants and every caller keeps the access it had.

use crate::exec::Mode;
use crate::exec::{spi, Access};
use crate::space::Space;
use kip_lang::{ErrorCode, KipError};

/// What a role may do in a space; ordered: each implies the ones before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Privilege {
    Read,
    Write,
    Admin,
}

impl Privilege {
    fn verb(self) -> &'static str {
        match self {
            Privilege::Read => "read",
            Privilege::Write => "write",
            Privilege::Admin => "administer",
        }
    }
}

/// Whether the governance objects exist (schema 0.3.0 or later).
fn governed() -> Result<bool, KipError> {
    let v = spi::query_scalar(
        "SELECT to_regprocedure('kip.space_access(text)') IS NOT NULL",
        &[],
        Access::ReadOnly,
    )?;
    Ok(v == serde_json::Value::Bool(true))
}

/// The current role's privilege on `space` (`None`: no access) and its name.
pub fn privilege(space: &Space) -> Result<(Option<Privilege>, String), KipError> {
    if !governed()? {
        return Ok((Some(Privilege::Admin), String::new()));
    }
    let rows = spi::query("SELECT kip.space_access($1), current_user::text", &[space.param()], Access::ReadOnly)?;
    let row = rows.into_iter().next().unwrap_or_default();
    let privilege = match row.first().and_then(|v| v.as_str()) {
        Some("admin") => Some(Privilege::Admin),
        Some("write") => Some(Privilege::Write),
        Some("read") => Some(Privilege::Read),
        _ => None,
    };
    let role = row.get(1).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    Ok((privilege, role))
}

fn denied(role: &str, needed: Privilege, space: &Space) -> KipError {
    KipError::new(
        ErrorCode::ImmutableTarget,
        format!("access denied: role {role:?} may not {} memory space {:?}", needed.verb(), space.name()),
    )
    .with_hint(format!(
        "Access to a space is granted by a kip_admin or an admin of the space: SELECT kip_grant('{}', '{role}', '{}');",
        space.name(),
        match needed {
            Privilege::Read => "read",
            Privilege::Write => "write",
            Privilege::Admin => "admin",
        }
    ))
}

/// Fail with `KIP_3004` unless the current role holds `needed` on `space`.
pub fn require(space: &Space, needed: Privilege) -> Result<(), KipError> {
    match privilege(space)? {
        (Some(held), _) if held >= needed => Ok(()),
        (_, role) => Err(denied(&role, needed, space)),
    }
}

/// The mode in which `kip_execute` prepares the space: a role that may only
/// read it never creates, bootstraps or upgrades it (read-only preparation);
/// a role without access is refused.
pub fn space_mode(space: &Space, mode: Mode) -> Result<Mode, KipError> {
    match privilege(space)? {
        (None, role) => Err(denied(&role, Privilege::Read, space)),
        (Some(Privilege::Read), _) => Ok(Mode::ReadOnly),
        (Some(_), _) => Ok(mode),
    }
}

/// `kip_maintenance('*')` is for members of kip_admin (and superusers).
pub fn require_kip_admin(what: &str) -> Result<(), KipError> {
    if !governed()? {
        return Ok(());
    }
    let rows = spi::query("SELECT kip.is_admin(), current_user::text", &[], Access::ReadOnly)?;
    let row = rows.into_iter().next().unwrap_or_default();
    if row.first() == Some(&serde_json::Value::Bool(true)) {
        return Ok(());
    }
    let role = row.get(1).and_then(|v| v.as_str()).unwrap_or_default();
    Err(KipError::new(ErrorCode::ImmutableTarget, format!("access denied: role {role:?} may not run {what}"))
        .with_hint("Only members of kip_admin (and the background worker) work on every space; name one space you may write instead."))
}
