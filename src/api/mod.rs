//! The SQL entry points: `kip_execute` and `kip_execute_readonly`, each in a
//! text + parameters form and in the `execute_kip` request-object form.
//!
//! Every call returns the KIP envelope; bad input of any kind (malformed
//! request, syntax, schema, data) is a KIP error inside it, never a Postgres
//! exception. The session's space is prepared here (created and bootstrapped
//! on first read-write use), then `engine` runs the commands, each in its own
//! subtransaction.

mod embedding;
pub mod jsonb_arg;
pub mod jsonb_ret;
pub mod vector_arg;

use crate::bootstrap::spaces;
use crate::engine::{self, envelope, request};
use crate::exec::Mode;
use crate::exec::{known, subxact};
use crate::governance::access::{self, Grant};
use crate::space::{self, Space};
use kip_lang::{ErrorCode, KipError};
use pgrx::prelude::*;
use serde_json::{json, Value};

fn respond(request: Result<request::Request, kip_lang::KipError>, mode: Mode) -> JsonbRet {
    let value = match request {
        Err(e) => envelope::single(Err(e)),
        Ok(req) => match prepare(&req, mode) {
            Ok((space, grant)) => engine::run_request(req, mode, &space, &grant),
            Err(e) => engine::fail_request(&req, mode, e),
        },
    };
    JsonbRet(value)
}

/// The session's space and the caller's grant on it, the space validated
/// and, in read-write mode, created and bootstrapped on first use. When
/// nothing of this needs a query (a dry run; a superuser or `kip_admin` on
/// a space this backend knows to be ready) it runs without a
/// subtransaction: one is about a microsecond, a twentieth of a small
/// read's cost in kip.
fn prepare(req: &request::Request, mode: Mode) -> Result<(Space, Grant), KipError> {
    require_utf8_database()?;
    let space = space::current()?;
    if req.dry_run {
        // A dry run executes nothing, so it checks no privilege.
        return Ok((space.clone(), Grant::full(&space)));
    }
    // A ready space needs neither creating (read-write) nor a look at its
    // row (read-only), whatever the grant lets the caller do with it.
    if let Some(grant) = access::grant_without_query(&space).filter(|_| known::is_ready(&space)) {
        return Ok((space, grant));
    }
    subxact::run_isolated(|| prepare_space(space, mode))
}

/// kip reads and writes text as UTF-8 (KIP is JSON, and the library's
/// strings are Rust's): in a database of another encoding a name outside
/// ASCII failed with an SQL error, or was stored garbled. `CREATE
/// EXTENSION` refuses such a database (`sql/schema.sql`); this covers one
/// created before that check.
fn require_utf8_database() -> Result<(), KipError> {
    // SAFETY: reads the database's encoding, fixed for the session.
    if unsafe { pgrx::pg_sys::GetDatabaseEncoding() } == pgrx::pg_sys::pg_enc::PG_UTF8 as i32 {
        return Ok(());
    }
    // SAFETY: as above; the name is a static C string.
    let name = unsafe { std::ffi::CStr::from_ptr(pgrx::pg_sys::GetDatabaseEncodingName()) }.to_string_lossy().into_owned();
    Err(KipError::new(ErrorCode::InternalError, format!("kip needs a UTF8 database; this one is {name}"))
        .with_hint("Dump the memory (pg_dump), create a database with ENCODING 'UTF8' (TEMPLATE template0), and restore it there."))
}

/// Look up the caller's grant on `space` and validate the space; in
/// read-write mode create and bootstrap it on first use. The caller runs
/// this in one subtransaction, so a failure leaves nothing.
fn prepare_space(space: Space, mode: Mode) -> Result<(Space, Grant), KipError> {
    let grant = access::grant(&space)?;
    // A role that may only read the space never creates or upgrades it;
    // nor does a read-only transaction (`BEGIN READ ONLY`,
    // `default_transaction_read_only`, a standby), whose reads still run.
    // SAFETY: reads this backend's transaction state.
    let read_only_transaction = unsafe { pgrx::pg_sys::XactReadOnly };
    match grant.space_mode(mode)? {
        Mode::ReadWrite if !read_only_transaction => {
            spaces::ensure(&space)?;
        }
        _ => {
            if !spaces::exists(&space)? {
                // SAFETY: reads this backend's recovery state.
                let hint = if unsafe { pgrx::pg_sys::RecoveryInProgress() } {
                    "This server is a standby in recovery: the space is created on the primary (by a role that may write it, with its first kip_execute there or kip_create_space(name)); it appears here once replayed."
                } else if grant.privilege == Some(access::Privilege::Read) {
                    "This role may only read the space, and it does not exist yet: a role that may write it (kip_grant(space, role, 'write')) creates it with its first write, or an admin calls kip_create_space(name)."
                } else if read_only_transaction {
                    "This transaction is read-only and cannot create the space: write to it once outside it with kip_execute, or call kip_create_space(name)."
                } else {
                    "Read-only calls never create a space: write to it once with kip_execute, or call kip_create_space(name)."
                };
                return Err(KipError::new(
                    ErrorCode::NotFound,
                    format!("memory space {:?} does not exist yet", space.name()),
                )
                .with_hint(hint));
            }
        }
    }
    Ok((space, grant))
}

use jsonb_arg::JsonbArg;
use jsonb_ret::JsonbRet;

fn text_request(command: Option<&str>, parameters: Option<JsonbArg>) -> Result<request::Request, kip_lang::KipError> {
    let command = command.ok_or_else(|| {
        kip_lang::KipError::new(kip_lang::ErrorCode::InvalidSyntax, "the command is NULL")
            .with_hint("Pass the KIP command text as the first argument.")
    })?;
    let parameters = match parameters {
        Some(p) => p.parse("the parameters")?,
        None => json!({}),
    };
    request::single(command, parameters)
}

fn json_request(req: Option<JsonbArg>) -> Result<request::Request, kip_lang::KipError> {
    let value = match req {
        Some(r) => r.parse("the request")?,
        None => Value::Null,
    };
    request::from_json(&value)
}

/// Execute one KIP command (KQL, KML or META) with placeholder parameters.
#[pg_extern(name = "kip_execute", volatile, parallel_unsafe)]
fn kip_execute_text(command: Option<&str>, parameters: default!(Option<JsonbArg>, "'{}'")) -> JsonbRet {
    respond(text_request(command, parameters), Mode::ReadWrite)
}

/// Execute an `execute_kip` request object: `{command | commands, parameters?, dry_run?}`.
#[pg_extern(name = "kip_execute", volatile, parallel_unsafe)]
fn kip_execute_request(request: Option<JsonbArg>) -> JsonbRet {
    respond(json_request(request), Mode::ReadWrite)
}

/// Execute a read-only KIP command (FIND, DESCRIBE, SEARCH, EXPORT). The
/// function is STABLE and its SQL runs with SPI's read-only flag, so
/// Postgres itself refuses writes; it also works on hot standbys. It is
/// PARALLEL UNSAFE because every command runs in a subtransaction, which
/// Postgres forbids during a parallel operation: a query calling it per row
/// of a large table gets a serial plan instead of an error.
#[pg_extern(name = "kip_execute_readonly", stable, parallel_unsafe)]
fn kip_execute_readonly_text(command: Option<&str>, parameters: default!(Option<JsonbArg>, "'{}'")) -> JsonbRet {
    respond(text_request(command, parameters), Mode::ReadOnly)
}

/// Read-only form of the `execute_kip` request object.
#[pg_extern(name = "kip_execute_readonly", stable, parallel_unsafe)]
fn kip_execute_readonly_request(request: Option<JsonbArg>) -> JsonbRet {
    respond(json_request(request), Mode::ReadOnly)
}
