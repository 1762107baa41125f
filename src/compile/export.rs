//! The statement that selects one page of EXPORT's elements.
//!
//! Page order is `(rank, id)`: schema definitions (`$ConceptType` /
//! `$PropositionType` concepts) first, then the other concepts, then
//! propositions — so that applying the pages of a paginated export in order
//! always defines a type before its instances and a concept before the links
//! that use it. Within a rank, element ids give a stable, deterministic order.

use super::env::Env;
use super::pattern::{compile_pattern, VarKind};
use super::{Params, SqlParam};
use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};

/// A compiled page selection: one `id` column, page order, at most
/// `limit + 1` rows (the extra one tells that another page follows).
#[derive(Debug)]
pub struct PageSql {
    pub sql: String,
    pub params: Params,
}

/// The distinct elements bound to `?target` by `clauses`, skipping `offset`
/// and returning at most `limit + 1` of them.
pub fn page_sql(clauses: &[WhereClause], target: &str, env: Env, offset: u64, limit: u64) -> Result<PageSql, KipError> {
    let mut params = Params::new();
    let pattern = compile_pattern(clauses, env, &mut params)?;
    let binding = pattern.vars.iter().find(|v| v.name == target).ok_or_else(|| {
        KipError::new(ErrorCode::ReferenceError, format!("?{target} is not bound by the WHERE pattern"))
            .with_hint(format!("Bind ?{target} in WHERE {{ … }} with a concept clause (?{target} {{type: …}}) or a proposition clause (?{target} (…))."))
    })?;
    if binding.kind == VarKind::Predicate {
        return Err(KipError::syntax(format!("?{target} binds a predicate name, not a concept or proposition"))
            .with_hint(format!("Export the links themselves: ?{target} (?s, \"predicate\", ?o).")));
    }
    let schema_types = params.push(SqlParam::TextArray(vec![CONCEPT_TYPE.to_string(), PROPOSITION_TYPE.to_string()]));
    let space = params.push(SqlParam::Text(env.space.to_string()));
    let offset_sql = params.int(i64::try_from(offset).unwrap_or(i64::MAX));
    // One extra row tells whether another page follows.
    let limit_sql = params.int(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX));
    let sql = format!(
        "SELECT t.id FROM (SELECT DISTINCT m.{col} AS id FROM ({pattern}) m WHERE m.{col} IS NOT NULL) t \
         LEFT JOIN kip.concepts c ON c.id = t.id AND c.space = {space}::text \
         ORDER BY CASE WHEN c.id IS NULL THEN 2 WHEN c.type = ANY({schema_types}::text[]) THEN 0 ELSE 1 END, t.id \
         OFFSET {offset_sql} LIMIT {limit_sql}",
        col = binding.column,
        pattern = pattern.sql,
    );
    Ok(PageSql { sql, params })
}
