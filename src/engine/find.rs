//! Execution of FIND: compile to one SQL statement, run it read-only, shape
//! the columnar result, and issue `next_cursor` when more rows exist.

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
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

/// A `{type: "T", name: "n"}` in the mandatory pattern names one concept:
/// when it does not exist the query is `KIP_3002`, as the reference engines
/// answer (kip-conformance: "the deleted concept is gone"). That holds for a
/// top-level concept clause and for an embedded endpoint of a top-level
/// proposition clause, at any nesting depth. Partial selectors (`{type}`,
/// `{name}`) and clauses inside OPTIONAL / NOT / UNION just match nothing.
/// All names are checked with one query.
fn require_named_concepts(q: &FindQuery, ctx: &Ctx) -> Result<(), KipError> {
    use crate::exec::SqlParam;
    let named = named_concepts(&q.where_clauses);
    if named.is_empty() {
        return Ok(());
    }
    let (types, names): (Vec<String>, Vec<String>) = named.into_iter().unzip();
    let missing = spi::query(
        "SELECT x.t, x.n FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS x(t, n, i) \
         WHERE NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = $1 AND c.type = x.t AND c.name = x.n) \
         ORDER BY x.i LIMIT 1",
        &[ctx.space.param(), SqlParam::TextArray(types), SqlParam::TextArray(names)],
        Access::ReadOnly,
    )?;
    if let Some(row) = missing.first() {
        let (t, n) = (row.first().and_then(Value::as_str).unwrap_or_default(), row.get(1).and_then(Value::as_str).unwrap_or_default());
        return Err(KipError::new(ErrorCode::NotFound, format!("concept {{type: {t:?}, name: {n:?}}} does not exist in this memory space"))
            .with_hint("It may have been deleted or never created; use SEARCH CONCEPT to find similar names."));
    }
    Ok(())
}

/// The literal `{type, name}` identities of the mandatory pattern.
fn named_concepts(clauses: &[kip_lang::ast::WhereClause]) -> Vec<(String, String)> {
    use kip_lang::ast::{Bindable, ConceptSelector, Endpoint, PropPattern, WhereClause};
    let mut out = Vec::new();
    let mut patterns: Vec<&PropPattern> = Vec::new();
    let push = |sel: &ConceptSelector, out: &mut Vec<(String, String)>| {
        if let ConceptSelector::TypeName { type_name: Bindable::Lit(t), name: Bindable::Lit(n) } = sel {
            out.push((t.clone(), n.clone()));
        }
    };
    for clause in clauses {
        match clause {
            WhereClause::Concept { selector, .. } => push(selector, &mut out),
            WhereClause::Proposition { pattern, .. } => patterns.push(pattern),
            _ => {}
        }
    }
    // Nested endpoints are walked with an explicit stack.
    while let Some(pattern) = patterns.pop() {
        let PropPattern::Triple(t) = pattern else { continue };
        for e in [&t.subject, &t.object] {
            match e {
                Endpoint::Concept(sel) => push(sel, &mut out),
                Endpoint::Proposition(p) => patterns.push(p),
                Endpoint::Var(_) | Endpoint::Id(_) => {}
            }
        }
    }
    out
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
    // With LIMIT 0 there is no page and no next page: a cursor for the same
    // offset would make a paginating client loop forever.
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
                // The page query fetches one row more than the page, to know
                // whether another page exists.
                if let Value::Array(a) = &mut col {
                    a.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
                }
                col
            }
            Out::Scalar(i) => row.get(i).cloned().unwrap_or(Value::Null),
        });
    }
    let result = if entries.len() == 1 { entries.pop().unwrap() } else { Value::Array(entries) };
    Ok(Outcome { result, next_cursor: if more { cursor::encode(&shape, offset.saturating_add(limit))? } else { None } })
}
