//! A dry run (`"dry_run": true`, RC10 §6.1): the command is validated and
//! nothing is executed.
//!
//! Beyond the syntax and the parameters it checks what a run would refuse
//! before touching an element: the rules of an UPSERT that need no
//! database (reserved metadata keys, handles, names of new definitions),
//! the literal ids and REGEX patterns of every pattern; the compilation of
//! every FIND, EXPORT, UPDATE and DELETE pattern, with its literal ids taken
//! to exist (unbound variables, FILTER and ORDER BY errors, a target that
//! binds a predicate); the signature of a CURSOR token; and, when the space
//! exists and the caller may read it, that every type and predicate an
//! UPSERT uses is registered (`KIP_2001` with its "did you mean" hint). A
//! dry run checks no privilege to refuse it: a caller that may not read the
//! space gets the checks that read nothing. What depends on the elements a
//! pattern matches (protection, a MERGE's types) is left to the run.

use super::envelope::Outcome;
use super::{describe, limits, upsert};
use crate::exec::{known, spi, subxact, Access};
use crate::governance::access::{self, Privilege};
use crate::resolve::{self, registry};
use crate::space::Space;
use crate::compile::bound::opt_lit;
use crate::compile::env::Env;
use crate::compile::export;
use crate::compile::find::compile_find;
use crate::compile::kml_match::targets_sql;
use crate::exec::cursor;
use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::ast::{Bindable, Command, Delete, Describe, Script};
use kip_lang::KipError;
use serde_json::json;

/// The answer of a dry run of `script` in `space`.
pub(super) fn outcome(script: &Script, space: &Space) -> Result<Outcome, KipError> {
    for command in &script.commands {
        upsert::check_statically(command)?;
        resolve::check_pattern_literals(limits::where_clauses(command))?;
        compiles(command, space)?;
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

/// The errors compiling `command` would meet, and its CURSOR token's; no
/// element is read (`resolve::assumed_facts`).
fn compiles(command: &Command, space: &Space) -> Result<(), KipError> {
    let facts = resolve::assumed_facts();
    let env = Env { space: space.name(), limits: resolve::limits(), facts: &facts };
    let token_of = |token: &Option<Bindable<String>>, shape: &dyn Fn() -> String| -> Result<(), KipError> {
        match opt_lit(token)? {
            Some(token) => cursor::decode_resume(&shape(), &token).map(drop),
            None => Ok(()),
        }
    };
    match command {
        Command::Find(q) => {
            token_of(&q.cursor, &|| cursor::query_shape(space, command))?;
            compile_find(q, env, limits::page_size(opt_lit(&q.limit)?), 0, None).map(drop)
        }
        Command::Export(e) => {
            token_of(&e.cursor, &|| cursor::query_shape(space, command))?;
            export::page_sql(&e.where_clauses, &e.target, env, 0, limits::page_size(opt_lit(&e.limit)?)).map(drop)
        }
        Command::Update(u) => targets_sql(&u.where_clauses, env, &u.target, None).map(drop),
        Command::Delete(
            Delete::Attributes { target, where_clauses, .. }
            | Delete::Metadata { target, where_clauses, .. }
            | Delete::Propositions { target, where_clauses }
            | Delete::Concept { target, where_clauses },
        ) => targets_sql(where_clauses, env, target, None).map(drop),
        Command::Describe(Describe::ConceptTypes { cursor: token, .. }) => {
            token_of(token, &|| describe::type_listing_shape(space, CONCEPT_TYPE))
        }
        Command::Describe(Describe::PropositionTypes { cursor: token, .. }) => {
            token_of(token, &|| describe::type_listing_shape(space, PROPOSITION_TYPE))
        }
        _ => Ok(()),
    }
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
