//! The targets of UPDATE / DELETE / MERGE: resolve the pattern's literals,
//! compile the selection (`compile::kml_match`), run it, and when nothing
//! matched, say why if the pattern names something absent.

use crate::compile::env::Env;
use crate::compile::ids::{ElementKind, ElementRef};
use crate::compile::kml_match::targets_sql;
use crate::exec::{spi, Access, Ctx};
use crate::resolve::{self, identities};
use kip_lang::ast::WhereClause;
use kip_lang::KipError;
use serde_json::Value;

/// One distinct element bound to the target variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub element: ElementRef,
    /// Type and name (concepts only).
    pub identity: Option<(String, String)>,
}

/// The distinct elements bound to `?var` by `clauses`, at most `limit`.
pub fn targets(clauses: &[WhereClause], ctx: &Ctx, var: &str, limit: Option<u64>) -> Result<Vec<Target>, KipError> {
    let facts = resolve::pattern_facts(&ctx.space, clauses, Access::ReadWrite)?;
    let env = Env { space: ctx.space.name(), limits: resolve::limits(), facts: &facts };
    let compiled = targets_sql(clauses, env, var, limit)?;
    let rows = spi::query(&compiled.sql, compiled.params.values(), Access::ReadWrite)?;
    let found: Vec<Target> = rows
        .into_iter()
        .map(|r| {
            let id = r.first().and_then(Value::as_i64).unwrap_or_default();
            match (r.get(1).and_then(Value::as_str), r.get(2).and_then(Value::as_str)) {
                (Some(t), Some(n)) => Target { element: ElementRef::concept(id), identity: Some((t.to_string(), n.to_string())) },
                _ => Target { element: ElementRef { kind: ElementKind::Proposition, id }, identity: None },
            }
        })
        .collect();
    if found.is_empty() {
        identities::explain_empty_match(&ctx.space, clauses)?;
    }
    Ok(found)
}

/// Split targets into concept and proposition row ids.
pub fn split(targets: &[Target]) -> (Vec<i64>, Vec<i64>) {
    let concepts = targets.iter().filter(|t| t.element.is_concept()).map(|t| t.element.id).collect();
    let links = targets.iter().filter(|t| !t.element.is_concept()).map(|t| t.element.id).collect();
    (concepts, links)
}
