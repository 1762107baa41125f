//! From a validated request to the response envelope.
//!
//! For each command text: parse (kip-lang) → bind parameters → refuse KML in
//! read-only mode → (dry run stops here) → execute in its own subtransaction.
//! Batch rules (RC10 §6.1): the first KML execution error stops the batch;
//! syntax errors and read (KQL/META) errors are returned inline and the batch
//! goes on.

use envelope::Outcome;
use request::{CommandRequest, Request};
use crate::exec::jsonb::Doc;
use crate::exec::{budget, pg_error, subxact, Access, Ctx, Mode};
use crate::governance::access::{Grant, Privilege};
use crate::space::Space;
use kip_lang::ast::{Command, Script};
use kip_lang::{ErrorCode, KipError};
use serde_json::json;

pub mod delete;
pub mod envelope;
pub mod request;
pub mod describe;
mod dry_run;
pub mod export;
pub mod find;
mod find_walk;
pub mod limits;
pub mod merge;
mod parsed;
mod rare_values;
pub mod search;
pub mod store;
pub mod targets;
mod templates;
pub mod update;
pub mod upsert;

/// Run a validated request in `space` (prepared by the caller: created and
/// bootstrapped for read-write use, known to exist for read-only use), with
/// the caller's `grant` on it.
pub fn run_request(req: Request, mode: Mode, space: &Space, grant: &Grant) -> Doc {
    if !req.batch {
        let (response, _) = run_command(&req.commands[0], space, grant, mode, req.dry_run);
        return response;
    }
    let mut items = Vec::with_capacity(req.commands.len());
    for cmd in &req.commands {
        let (response, stop) = run_command(cmd, space, grant, mode, req.dry_run);
        items.push(response);
        if stop {
            break;
        }
    }
    envelope::batch(items)
}

/// The answer to a request that failed before any command ran (the space
/// could not be read or prepared): for a batch, a `result` array as every
/// batch gets (RC10 §6.2.3), each command answered with `error` (or with its
/// own syntax or parameter error), up to the first KML command, where a
/// run would stop.
pub fn fail_request(req: &Request, mode: Mode, error: KipError) -> Doc {
    if !req.batch {
        return envelope::single(Err(error));
    }
    let mut items = Vec::with_capacity(req.commands.len());
    for cmd in &req.commands {
        match prepare(cmd, mode) {
            Err(e) => items.push(envelope::single(Err(e))),
            Ok(script) => {
                items.push(envelope::single(Err(error.clone())));
                if script.commands.iter().any(Command::is_kml) {
                    break;
                }
            }
        }
    }
    envelope::batch(items)
}

/// Run one command text; returns its envelope and whether a batch must stop.
fn run_command(cmd: &CommandRequest, space: &Space, grant: &Grant, mode: Mode, dry_run: bool) -> (Doc, bool) {
    if let Err(e) = pg_error::statement_expired() {
        return (envelope::single(Err(e)), true);
    }
    let access = if mode == Mode::ReadOnly { Access::ReadOnly } else { Access::ReadWrite };
    // A FIND sent again goes straight to its template (`templates::direct`).
    if !dry_run {
        if let Some(call) = templates::direct(&cmd.command, &cmd.parameters, space.name()) {
            let ctx = Ctx::new(space.clone(), access);
            let outcome = run_isolated(|| find::run_direct(&call, &ctx));
            let stop = matches!(&outcome, Err(e) if pg_error::is_statement_timeout(e));
            return (envelope::single(outcome), stop);
        }
    }
    let script = match prepare(cmd, mode) {
        Ok(s) => s,
        // The command never executed: reported inline, the batch goes on.
        Err(e) => return (envelope::single(Err(e)), false),
    };
    if dry_run {
        // A KML command the checks refuse would have failed in the run, and
        // stopped the batch there: so does its dry run. Not for a type or
        // predicate found unregistered (KIP_2001): an earlier command of
        // the batch, which a dry run does not apply, may register it.
        let outcome = dry_run::outcome(&script, space);
        let stop = matches!(&outcome, Err(e) if e.code != ErrorCode::TypeMismatch) && script.commands.iter().any(Command::is_kml);
        return (envelope::single(outcome), stop);
    }
    let is_kml = script.commands.iter().any(Command::is_kml);
    let kml_marks = if is_kml {
        if let Err(e) = grant.require(Privilege::Write) {
            return (envelope::single(Err(e)), true);
        }
        // On a standby or in a read-only transaction no write can succeed:
        // said so once, up front, and the same for every KML command (an
        // UPSERT that would change nothing included, as Postgres refuses
        // an INSERT that would insert nothing).
        if let Some(e) = pg_error::write_refusal() {
            return (envelope::single(Err(e)), true);
        }
        Some(KmlMarks::set(&cmd.command))
    } else {
        None
    };
    let ctx = Ctx::for_text(space.clone(), access, &cmd.command);
    let outcome = run_isolated(|| execute_script(&script, &ctx));
    drop(kml_marks);
    // A batch stops at its first failed KML command, and where the calling
    // statement's statement_timeout expired: Postgres fires that timer
    // once, and the commands after it would run without it.
    let stop = match &outcome {
        Err(e) => is_kml || pg_error::is_statement_timeout(e),
        Ok(_) => false,
    };
    (envelope::single(outcome), stop)
}

/// The marks a KML command sets while it runs: the history's command tag
/// and the element-size check (`exec::element_size`). Both are cleared
/// when this guard goes, also when the command ends in an error Postgres
/// raises past kip (a user's cancel), which unwinds through here: the marks
/// are keyed on the top-level transaction, which outlives a `ROLLBACK TO`,
/// and plain SQL after it would be tagged as the cancelled command and
/// checked as KML.
/// The marks in place before are put back, not cleared: a trigger on
/// kip's tables that runs a KIP command of its own (nested in the one that
/// fired it) must leave the outer command tagged and checked.
struct KmlMarks {
    outer_tag: Option<crate::governance::history::CommandTag>,
    outer_kml: Option<u32>,
}

impl KmlMarks {
    fn set(command: &str) -> KmlMarks {
        let outer_tag = Some(crate::governance::history::tag_command(Some(command)));
        let outer_kml = crate::exec::element_size::kml_running(true);
        KmlMarks { outer_tag, outer_kml }
    }
}

impl Drop for KmlMarks {
    fn drop(&mut self) {
        if let Some(tag) = self.outer_tag.take() {
            crate::governance::history::restore_tag(tag);
        }
        crate::exec::element_size::restore_kml_running(self.outer_kml);
    }
}

/// Run a command's `body` in its own subtransaction, within the command's
/// time budget (`kip.command_timeout`), again when it hit a conflict that
/// rolling it back resolved.
fn run_isolated(body: impl Fn() -> Result<Outcome, KipError>) -> Result<Outcome, KipError> {
    let _budget = budget::arm();
    subxact::run_retrying(body)
}

/// Parse and bind a command text, and refuse writes in read-only mode.
pub fn prepare(cmd: &CommandRequest, mode: Mode) -> Result<Script, KipError> {
    limits::check_command_size(&cmd.command)?;
    let script = parsed::parse(&cmd.command)?;
    limits::check_clauses(&script)?;
    limits::check_find_lists(&script)?;
    let script = kip_lang::bind(script, &cmd.parameters)?;
    if script.commands.is_empty() {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "empty command")
            .with_hint("Send one KIP command, e.g. DESCRIBE PRIMER."));
    }
    if script.commands.len() > 1 && !script.commands.iter().all(|c| matches!(c, Command::Upsert(_))) {
        return Err(KipError::new(
            ErrorCode::InvalidSyntax,
            "only UPSERT statements may be combined in one command text",
        )
        .with_hint("Send other commands separately, or as elements of \"commands\"."));
    }
    if mode == Mode::ReadOnly {
        if let Some(c) = script.commands.iter().find(|c| c.is_kml()) {
            return Err(KipError::new(
                ErrorCode::InvalidSyntax,
                format!("{} is not allowed in kip_execute_readonly: it only runs FIND, DESCRIBE, SEARCH and EXPORT", c.keyword()),
            )
            .with_hint("Use kip_execute for KML (UPSERT, UPDATE, MERGE, DELETE)."));
        }
    }
    Ok(script)
}

/// Execute a parsed, bound script (one command, or several UPSERTs).
pub fn execute_script(script: &Script, ctx: &Ctx) -> Result<Outcome, KipError> {
    if script.commands.len() == 1 {
        return execute(&script.commands[0], ctx);
    }
    let mut concepts = Vec::new();
    let mut links = Vec::new();
    for command in &script.commands {
        let result = execute(command, ctx)?.result.into_value();
        if let Some(ids) = result["upsert_concept_nodes"].as_array() {
            concepts.extend(ids.iter().cloned());
        }
        if let Some(ids) = result["upsert_proposition_links"].as_array() {
            links.extend(ids.iter().cloned());
        }
    }
    Ok(Outcome::new(json!({
        "blocks": script.commands.len(),
        "upsert_concept_nodes": concepts,
        "upsert_proposition_links": links,
    })))
}

/// Dispatch one command to its executor.
pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    match command {
        Command::Find(_) => find::execute(command, ctx),
        Command::Describe(_) => describe::execute(command, ctx),
        Command::Search(_) => search::execute(command, ctx),
        Command::Export(_) => export::execute(command, ctx),
        Command::Upsert(_) => upsert::execute(command, ctx),
        Command::Update(_) => update::execute(command, ctx),
        Command::Merge(_) => merge::execute(command, ctx),
        Command::Delete(_) => delete::execute(command, ctx),
    }
}
