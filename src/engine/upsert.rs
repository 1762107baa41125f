//! Execution of UPSERT statements (RC10 §4.1).
//!
//! One statement runs as: static preflight (reserved keys, handles, naming)
//! → one registry query for every type and predicate it uses → its blocks,
//! top to bottom, each a match-or-create with shallow merges. Consecutive
//! ordinary concept blocks share one write statement (`plain_run`), with
//! the same result as one by one: a Formation capsule's Domain, Person and
//! Event blocks cost one executor start-up and one firing of the history
//! triggers instead of three. Any error
//! aborts the statement; the engine runs every command in a subtransaction,
//! so an aborted statement (e.g. a stale `EXPECT VERSION`) leaves no trace.

mod preflight;
mod resolve;
mod write;

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::bound::optional_object;
use crate::engine::store::JsonMap;
use crate::resolve::registry;
use kip_lang::ast::{Command, UpsertItem};
use kip_lang::{ErrorCode, KipError};
use serde_json::json;

/// The checks of an UPSERT that need no database (reserved metadata keys,
/// handles defined before use, names of new definitions): what a dry run
/// can validate beyond the syntax (RC10 §6.1).
pub fn check_statically(command: &Command) -> Result<(), KipError> {
    if let Command::Upsert(upsert) = command {
        preflight::check(upsert)?;
    }
    Ok(())
}

/// The types and predicates the UPSERTs of `commands` use and do not
/// define themselves, read as one walk: a definition in an earlier
/// statement of a text counts for the later ones, as it does when they run.
pub fn requirements(commands: &[Command]) -> Result<Vec<registry::Requirement>, KipError> {
    let upserts: Vec<&kip_lang::ast::Upsert> = commands
        .iter()
        .filter_map(|c| match c {
            Command::Upsert(u) => Some(u),
            _ => None,
        })
        .collect();
    preflight::check_all(&upserts)
}

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Upsert(upsert) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "UPSERT executor called with another command"));
    };
    let needed = preflight::check(upsert)?;
    registry::require_all(&ctx.space, &needed)?;
    let statement_meta = optional_object(upsert.metadata.as_deref())?;
    let mut handles = resolve::Handles::default();
    let mut concepts = Vec::new();
    let mut links = Vec::new();
    let mut i = 0;
    while i < upsert.items.len() {
        let run = plain_run(&upsert.items[i..], &statement_meta);
        if run.len() >= 2 {
            i += run.len();
            for id in write::concept_run(ctx, &mut handles, &run)? {
                concepts.push(format!("C:{id}"));
            }
            continue;
        }
        match &upsert.items[i] {
            UpsertItem::Concept(block) => {
                let id = write::concept_block(ctx, &mut handles, block, &statement_meta)?;
                concepts.push(format!("C:{id}"));
            }
            UpsertItem::Proposition(block) => {
                let (id, predicate) = write::proposition_block(ctx, &mut handles, block, &statement_meta)?;
                links.push(format!("P:{id}:{predicate}"));
            }
        }
        i += 1;
    }
    Ok(Outcome::new(json!({
        "blocks": 1,
        "upsert_concept_nodes": concepts,
        "upsert_proposition_links": links,
    })))
}

/// The plain concept blocks at the start of `items` that can be written in
/// one statement (`write::concept_run`): each is plain (`write::Plain`), its
/// identity is not one of the run's earlier blocks, and no earlier block's
/// links name it (they must not see it before the blocks one by one would
/// have created it).
///
/// A block whose values are in error ends the run: the blocks one by one
/// report it, after the errors of the blocks before it.
fn plain_run<'a>(items: &'a [UpsertItem], statement_meta: &JsonMap) -> Vec<write::Plain<'a>> {
    let mut run: Vec<write::Plain<'a>> = Vec::new();
    for item in items {
        let UpsertItem::Concept(block) = item else { break };
        let Ok(Some(plain)) = write::Plain::of(block, statement_meta) else { break };
        let clash = run
            .iter()
            .any(|p| (p.type_name, p.name) == (plain.type_name, plain.name) || p.mentions(plain.type_name, plain.name));
        if clash {
            break;
        }
        run.push(plain);
    }
    run
}
