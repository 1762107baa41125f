//! The statement that selects the targets of UPDATE / DELETE / MERGE: the
//! WHERE block goes through the shared pattern compiler (`compile::pattern`),
//! and the distinct elements bound to the target variable come back as
//! `(id, type, name)` rows (type and name are NULL for propositions; the
//! protection rules need them for concepts), which `kml_bulk` wraps into
//! the command's one statement; and the pair of concepts MERGE joins.

use super::env::Env;
use super::pattern::{compile_pattern, VarKind};
use super::Params;
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};

/// A compiled target selection.
#[derive(Debug)]
pub struct TargetsSql {
    pub sql: String,
    pub params: Params,
}

/// The distinct elements bound to `?var` by `clauses`, at most `limit`.
/// The space is the first parameter, `$1` (the pattern pushes it first).
pub fn targets_sql(clauses: &[WhereClause], env: Env, var: &str, limit: Option<u64>) -> Result<TargetsSql, KipError> {
    let mut params = Params::new();
    let pattern = compile_pattern(clauses, env, &mut params)?;
    let binding = pattern.vars.iter().find(|v| v.name == var).ok_or_else(|| {
        KipError::new(ErrorCode::ReferenceError, format!("?{var} is not bound by the WHERE pattern"))
            .with_hint(format!("Bind ?{var} in WHERE {{ … }} with a concept clause (?{var} {{type: …, name: …}}) or a proposition clause (?{var} (…))."))
    })?;
    if binding.kind == VarKind::Predicate {
        return Err(KipError::syntax(format!("?{var} binds a predicate name, not a concept or proposition"))
            .with_hint(format!("Name the link itself: ?{var} (?s, \"predicate\", ?o).")));
    }
    let limit_sql = match limit {
        Some(n) => format!(" LIMIT {}", params.int(i64::try_from(n).unwrap_or(i64::MAX))),
        None => String::new(),
    };
    let sql = format!(
        "SELECT t.id, c.type, c.name FROM (SELECT DISTINCT m.{col} AS id FROM ({pattern}) m WHERE m.{col} IS NOT NULL{limit_sql}) t \
         LEFT JOIN kip.concepts c ON c.id = t.id",
        col = binding.column,
        pattern = pattern.sql,
    );
    Ok(TargetsSql { sql, params })
}

/// MERGE's two sides: one row with the number of distinct concepts bound to
/// `?source` and the smallest of them, then the same for `?target`.
pub fn pair_sql(clauses: &[WhereClause], env: Env, source: &str, target: &str) -> Result<TargetsSql, KipError> {
    let mut params = Params::new();
    let pattern = compile_pattern(clauses, env, &mut params)?;
    let column = |var: &str| -> Result<String, KipError> {
        let b = pattern.vars.iter().find(|v| v.name == var).ok_or_else(|| {
            KipError::new(ErrorCode::ReferenceError, format!("?{var} is not bound by the WHERE pattern"))
                .with_hint(format!("Bind it with a concept clause: ?{var} {{type: \"…\", name: \"…\"}}."))
        })?;
        if !matches!(b.kind, VarKind::Concept | VarKind::Element) {
            return Err(KipError::syntax(format!("?{var} must bind a concept node")).with_hint("MERGE CONCEPT merges two concept nodes."));
        }
        Ok(b.column.clone())
    };
    let (s, t) = (column(source)?, column(target)?);
    let sql = format!(
        "SELECT count(DISTINCT m.{s}), min(m.{s}), count(DISTINCT m.{t}), min(m.{t}) FROM ({}) m",
        pattern.sql
    );
    Ok(TargetsSql { sql, params })
}
