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
use super::privileges;
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

thread_local! {
    /// Whether this backend has seen the governance objects: once they exist
    /// they stay (an extension is never downgraded), so the catalog lookup
    /// runs until it first answers yes and never again.
    static GOVERNED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the governance objects exist (schema 0.3.0 or later).
fn governed() -> Result<bool, KipError> {
    if GOVERNED.with(|g| g.get()) {
        return Ok(true);
    }
    let v = spi::query_scalar(
        "SELECT to_regprocedure('kip.space_access(pg_catalog.text)') IS NOT NULL",
        &[],
        Access::ReadOnly,
    )?;
    let governed = v == serde_json::Value::Bool(true);
    GOVERNED.with(|g| g.set(governed));
    Ok(governed)
}

/// The current role's privilege on one space, looked up once per call and
/// passed along, so a command checks it without another query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// `None`: no access at all.
    pub privilege: Option<Privilege>,
    role: String,
    space: Space,
}

impl Grant {
    /// The grant of a caller that holds every privilege (a superuser, a
    /// schema older than governance), or of a dry run, which executes nothing.
    pub fn full(space: &Space) -> Grant {
        Grant { privilege: Some(Privilege::Admin), role: String::new(), space: space.clone() }
    }

    /// Fail with `KIP_3004` unless this grant includes `needed`.
    pub fn require(&self, needed: Privilege) -> Result<(), KipError> {
        match self.privilege {
            Some(held) if held >= needed => Ok(()),
            _ => Err(denied(&self.role, needed, &self.space)),
        }
    }

    /// The mode in which `kip_execute` prepares the space: a role that may
    /// only read it never creates, bootstraps or upgrades it (read-only
    /// preparation); a role without access is refused.
    pub fn space_mode(&self, mode: Mode) -> Result<Mode, KipError> {
        match self.privilege {
            None => Err(denied(&self.role, Privilege::Read, &self.space)),
            Some(Privilege::Read) => Ok(Mode::ReadOnly),
            Some(_) => Ok(mode),
        }
    }
}

/// The current role's grant on `space`: `kip.space_access($1)`'s rule
/// (`governance::privileges`, no query for a superuser, who holds every
/// privilege, and one on a saved plan otherwise). A pg_test checks that
/// both answer alike.
pub fn grant(space: &Space) -> Result<Grant, KipError> {
    // SAFETY: reads the session's current user id; no side effects.
    if unsafe { pgrx::pg_sys::superuser() } || !governed()? {
        return Ok(Grant::full(space));
    }
    if privileges::is_admin() {
        return Ok(admin_grant(space));
    }
    let privilege = privileges::granted_privilege(space.name())?.and_then(privilege_named);
    Ok(Grant { privilege, role: current_role_name(), space: space.clone() })
}

/// The spaces the current role may write, `None` when it may write every
/// space (a superuser, a `kip_admin` member, or a database without the
/// governance objects).
pub fn writable_spaces() -> Result<Option<Vec<String>>, KipError> {
    // SAFETY: reads the session's current user id; no side effects.
    if unsafe { pgrx::pg_sys::superuser() } || !governed()? || privileges::is_admin() {
        return Ok(None);
    }
    Ok(Some(privileges::granted_spaces(&["write", "admin"])?))
}

/// [`grant`]'s answer when it takes no query: a superuser's, a
/// `kip_admin`'s once the governance objects are known to exist, or a
/// granted role's from the answers the backend remembers
/// (`privileges::remembered_privilege`). `None`: ask [`grant`] (also for a
/// role without access, whose refusal [`grant`]'s caller words).
pub fn grant_without_query(space: &Space) -> Option<Grant> {
    // SAFETY: reads the session's current user id; no side effects.
    if unsafe { pgrx::pg_sys::superuser() } {
        return Some(Grant::full(space));
    }
    if !GOVERNED.with(|g| g.get()) {
        return None;
    }
    if privileges::is_admin() {
        return Some(admin_grant(space));
    }
    let privilege = privileges::remembered_privilege(space.name())?.and_then(privilege_named)?;
    Some(Grant { privilege: Some(privilege), role: current_role_name(), space: space.clone() })
}

/// The privilege of a grant's level name (`governance::privileges`).
fn privilege_named(level: &str) -> Option<Privilege> {
    match level {
        "admin" => Some(Privilege::Admin),
        "write" => Some(Privilege::Write),
        "read" => Some(Privilege::Read),
        _ => None,
    }
}

fn admin_grant(space: &Space) -> Grant {
    Grant { privilege: Some(Privilege::Admin), role: current_role_name(), space: space.clone() }
}

fn current_role_name() -> String {
    // SAFETY: the name of the current user id, which exists.
    unsafe { std::ffi::CStr::from_ptr(pgrx::pg_sys::GetUserNameFromId(pgrx::pg_sys::GetUserId(), false)) }
        .to_string_lossy()
        .into_owned()
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
    grant(space)?.require(needed)
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
