//! Execution of UPDATE commands (RC10 §4.3): pattern-matched bulk mutation
//! that never creates. The targets come from the shared pattern compiler;
//! each table is then rewritten by one UPDATE statement whose patch
//! expressions read the row's own state (see `compile::kml_update`).

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::ids::ElementKind;
use crate::compile::bound::lit_u64;
use crate::engine::targets;
use crate::compile::kml_update::patch;
use crate::compile::Params;
use crate::exec::{spi, Access, SqlParam};
use crate::resolve::protection::{self, Protection, CORE_DIRECTIVES};
use crate::schema::reserved;
use kip_lang::ast::{Command, Update};
use kip_lang::{ErrorCode, KipError};
use serde_json::json;

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Update(update) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "UPDATE executor called with another command"));
    };
    reserved::check_update_fields(update.set_metadata.as_deref())?;
    let limit = update.limit.as_ref().map(lit_u64).transpose()?;
    let targets = targets::targets(&update.where_clauses, ctx, &update.target, limit)?;
    let sets_directives = update.set_attributes.iter().flatten().any(|f| f.key == CORE_DIRECTIVES);
    for t in &targets {
        let Some((type_name, name)) = &t.identity else { continue };
        match protection::classify(type_name, name) {
            Protection::Structure => return Err(protection::refused("UPDATE", type_name, name)),
            Protection::SystemActor if sets_directives => return Err(protection::directives_refused(name)),
            _ => {}
        }
    }
    let (concepts, links) = targets::split(&targets);
    protection::refuse_anchoring_links(&ctx.space, &links, "UPDATE")?;
    let updated = rewrite(ctx, update, "kip.concepts", ElementKind::Concept, concepts)?
        + rewrite(ctx, update, "kip.propositions", ElementKind::Proposition, links)?;
    Ok(Outcome::new(json!({ "updated": updated, "matched": targets.len() })))
}

/// Apply the patches to the rows `ids` of `table`; returns how many rows got
/// at least one key (rows whose every expression was skipped are untouched).
fn rewrite(ctx: &Ctx, update: &Update, table: &str, kind: ElementKind, ids: Vec<i64>) -> Result<u64, KipError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut params = Params::new();
    let space = params.text(ctx.space.name());
    let id_list = params.push(SqlParam::IntArray(ids));
    let attrs = patch(update.set_attributes.as_deref(), "x", kind, &mut params)?;
    let meta = patch(update.set_metadata.as_deref(), "x", kind, &mut params)?;
    // `table` is one of two constants chosen above, never user text.
    let sql = format!(
        "UPDATE {table} x SET attributes = x.attributes || {attrs}, metadata = x.metadata || {meta} \
         WHERE x.space = {space} AND x.id = ANY({id_list}) AND ({attrs} <> '{{}}'::jsonb OR {meta} <> '{{}}'::jsonb)"
    );
    spi::execute(&sql, params.values(), Access::ReadWrite)
}
