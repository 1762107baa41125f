//! Execution of UPSERT statements (RC10 §4.1).
//!
//! One statement runs as: static preflight (reserved keys, handles, naming)
//! → one registry query for every type and predicate it uses → its blocks,
//! top to bottom, each a match-or-create with shallow merges. Any error
//! aborts the statement; the engine runs every command in a subtransaction,
//! so an aborted statement (e.g. a stale `EXPECT VERSION`) leaves no trace.

mod preflight;
mod resolve;
mod write;

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::bound::optional_object;
use crate::resolve::registry;
use kip_lang::ast::{Command, UpsertItem};
use kip_lang::{ErrorCode, KipError};
use serde_json::json;

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
    for item in &upsert.items {
        match item {
            UpsertItem::Concept(block) => {
                let id = write::concept_block(ctx, &mut handles, block, &statement_meta)?;
                concepts.push(format!("C:{id}"));
            }
            UpsertItem::Proposition(block) => {
                let (id, predicate) = write::proposition_block(ctx, &mut handles, block, &statement_meta)?;
                links.push(format!("P:{id}:{predicate}"));
            }
        }
    }
    Ok(Outcome::new(json!({
        "blocks": 1,
        "upsert_concept_nodes": concepts,
        "upsert_proposition_links": links,
    })))
}
