//! Execution of UPDATE commands (RC10 §4.3): pattern-matched bulk mutation
//! that never creates. One statement selects the targets, checks the
//! protection rules and rewrites both tables; its patch expressions read
//! each row's own state (see `compile::kml_update`, `compile::kml_bulk`).

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::bound::lit_u64;
use crate::compile::kml_bulk::BulkAction;
use crate::engine::targets;
use crate::resolve::protection::{BulkRules, CORE_DIRECTIVES};
use crate::schema::reserved;
use kip_lang::ast::Command;
use kip_lang::{ErrorCode, KipError};
use serde_json::json;

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Update(update) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "UPDATE executor called with another command"));
    };
    reserved::check_update_fields(update.set_metadata.as_deref())?;
    let limit = update.limit.as_ref().map(lit_u64).transpose()?;
    let sets_directives = update.set_attributes.iter().flatten().any(|f| f.key == CORE_DIRECTIVES);
    let rules = BulkRules { structure: true, directives: sets_directives, anchoring: true, ..BulkRules::default() };
    let action = BulkAction::Update { attributes: update.set_attributes.as_deref(), metadata: update.set_metadata.as_deref() };
    let counts = targets::run(&update.where_clauses, ctx, &update.target, limit, rules, action)?.map_err(|r| r.error("UPDATE"))?;
    Ok(Outcome::new(json!({ "updated": counts.first + counts.second, "matched": counts.matched })))
}
