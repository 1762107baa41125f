//! A dry run (`"dry_run": true`, RC10 §6.1): the command is validated and
//! nothing is executed.
//!
//! Beyond the syntax and the parameters it checks what a run would refuse
//! before touching an element: the rules of an UPSERT that need no
//! database (reserved metadata keys, handles, names of new definitions),
//! the literal ids and REGEX patterns of every pattern, and, when the space
//! exists and the caller may read it, that every type and predicate an
//! UPSERT uses is registered (`KIP_2001` with its "did you mean" hint). A
//! dry run checks no privilege to refuse it: a caller that may not read the
//! space gets the checks that read nothing. What depends on the elements a
//! pattern matches (protection, a MERGE's types) is left to the run.

use super::envelope::Outcome;
use super::{limits, upsert};
use crate::exec::{known, spi, subxact, Access};
use crate::governance::access::{self, Privilege};
use crate::resolve::{self, registry};
use crate::space::Space;
use kip_lang::ast::{Command, Script};
use kip_lang::KipError;
use serde_json::json;

/// The answer of a dry run of `script` in `space`.
pub(super) fn outcome(script: &Script, space: &Space) -> Result<Outcome, KipError> {
    for command in &script.commands {
        upsert::check_statically(command)?;
        resolve::check_pattern_literals(limits::where_clauses(command))?;
    }
    let needed = upsert::requirements(&script.commands)?;
    if !needed.is_empty() {
        // The lookups run in a subtransaction of their own, as a command's do.
        subxact::run_isolated(|| {
            if may_read(space)? {
                registry::require_all(space, &needed)?;
            }
            Ok(())
        })?;
    }
    Ok(passed(script))
}

/// Whether the space exists and the caller may read it.
fn may_read(space: &Space) -> Result<bool, KipError> {
    if access::grant(space)?.require(Privilege::Read).is_err() {
        return Ok(false);
    }
    if known::is_ready(space) {
        return Ok(true);
    }
    let exists = spi::lookup_scalar("SELECT EXISTS (SELECT 1 FROM kip.spaces WHERE name = $1)", &[space.param()], Access::ReadOnly)?;
    Ok(exists == json!(true))
}

/// What a dry run that passed reports: UPSERT's report with no ids, else
/// that the command is valid.
fn passed(script: &Script) -> Outcome {
    if script.commands.iter().all(|c| matches!(c, Command::Upsert(_))) {
        return Outcome::new(json!({
            "blocks": script.commands.len(),
            "upsert_concept_nodes": [],
            "upsert_proposition_links": [],
        }));
    }
    Outcome::new(json!({ "dry_run": true, "command": script.commands[0].keyword(), "valid": true }))
}
