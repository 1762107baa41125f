//! Execution of FIND: compile to one SQL statement, run it read-only, shape
//! the columnar result, and issue `next_cursor` when more rows exist.

use super::Ctx;
use crate::api::envelope::Outcome;
use crate::compile::find::{compile_find, Out};
use crate::exec::{cursor, spi, Access};
use kip_lang::ast::{Command, FindQuery, Script};
use kip_lang::{ErrorCode, KipError};
use serde_json::Value;

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Find(q) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "FIND executor called with another command"));
    };
    run(q, ctx)
}

/// The effective page size: LIMIT (capped at `kip.max_limit`) or `kip.default_limit`.
pub(crate) fn page_size(limit: Option<u64>) -> u64 {
    let max = crate::guc::MAX_LIMIT.get().max(1) as u64;
    let default = crate::guc::DEFAULT_LIMIT.get().max(1) as u64;
    limit.unwrap_or(default).min(max)
}

/// The identity of a query for its cursor tokens: its canonical text
/// without LIMIT and CURSOR (parameters are already bound into it), plus
/// the memory space.
pub(crate) fn query_shape(q: &FindQuery, ctx: &Ctx) -> String {
    let mut bare = q.clone();
    bare.limit = None;
    bare.cursor = None;
    let text = kip_lang::print(&Script { commands: vec![Command::Find(bare)] });
    format!("{}\u{0}{}", ctx.space.name(), text)
}

pub(crate) fn literal<T: Clone>(arg: &Option<kip_lang::ast::Bindable<T>>) -> Result<Option<T>, KipError> {
    match arg {
        None => Ok(None),
        Some(kip_lang::ast::Bindable::Lit(v)) => Ok(Some(v.clone())),
        Some(kip_lang::ast::Bindable::Param(p)) => Err(KipError::new(ErrorCode::InvalidSyntax, format!("parameter :{p} has no value"))
            .with_hint(format!("Pass \"{p}\" in the request's parameters."))),
    }
}

/// A top-level `?x {type: "T", name: "n"}` clause names one concept: when it
/// does not exist the query is `KIP_3002`, as the reference engines answer
/// (kip-conformance: "the deleted concept is gone"). Partial selectors
/// (`{type}`, `{name}`) and clauses inside OPTIONAL / NOT / UNION just match
/// nothing.
fn require_named_concepts(q: &FindQuery, ctx: &Ctx) -> Result<(), KipError> {
    use kip_lang::ast::{Bindable, ConceptSelector, WhereClause};
    for clause in &q.where_clauses {
        let WhereClause::Concept { selector: ConceptSelector::TypeName { type_name: Bindable::Lit(t), name: Bindable::Lit(n) }, .. } = clause else {
            continue;
        };
        let found = spi::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3)",
            &[ctx.space.param(), crate::exec::SqlParam::Text(t.clone()), crate::exec::SqlParam::Text(n.clone())],
            Access::ReadOnly,
        )?;
        if found != Value::Bool(true) {
            return Err(KipError::new(ErrorCode::NotFound, format!("concept {{type: {t:?}, name: {n:?}}} does not exist in this memory space"))
                .with_hint("It may have been deleted or never created; use SEARCH CONCEPT to find similar names."));
        }
    }
    Ok(())
}

pub(crate) fn run(q: &FindQuery, ctx: &Ctx) -> Result<Outcome, KipError> {
    require_named_concepts(q, ctx)?;
    let limit = page_size(literal(&q.limit)?);
    let shape = query_shape(q, ctx);
    let offset = match literal(&q.cursor)? {
        Some(token) => cursor::decode(&shape, &token)?,
        None => 0,
    };
    let plan = compile_find(q, ctx, limit, offset)?;
    let row = spi::query(&plan.sql, plan.params.values(), Access::ReadOnly)?
        .into_iter()
        .next()
        .unwrap_or_default();
    let more = plan
        .count_col
        .and_then(|c| row.get(c))
        .and_then(Value::as_u64)
        .is_some_and(|n| n > limit)
        && limit > 0;
    let mut entries = Vec::with_capacity(plan.shape.len());
    for out in &plan.shape {
        entries.push(match *out {
            Out::Column(i) => {
                let mut col = row.get(i).cloned().unwrap_or(Value::Array(vec![]));
                if more {
                    if let Value::Array(a) = &mut col {
                        a.truncate(limit as usize);
                    }
                }
                col
            }
            Out::Scalar(i) => row.get(i).cloned().unwrap_or(Value::Null),
        });
    }
    let result = if entries.len() == 1 { entries.pop().unwrap() } else { Value::Array(entries) };
    Ok(Outcome { result, next_cursor: more.then(|| cursor::encode(&shape, offset + limit)) })
}
