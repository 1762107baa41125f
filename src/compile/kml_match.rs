//! Selecting the targets of UPDATE / DELETE / MERGE: the WHERE block goes
//! through the shared pattern compiler (`compile::pattern`), and the distinct
//! elements bound to the target variable come back with their kind (and, for
//! concepts, type and name, which the protection rules need).

use super::element::ElementKind;
use super::kml_args::lit_str;
use super::kml_ids::ElementRef;
use super::pattern::{compile_pattern, VarKind};
use super::Params;
use crate::exec::Ctx;
use crate::exec::{spi, Access, SqlParam};
use crate::schema::registry::{self, Kind, Requirement};
use kip_lang::ast::{ConceptSelector, Endpoint, Predicate, PropPattern, StrArg, WhereClause};
use kip_lang::{ErrorCode, KipError};
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
    let mut params = Params::new();
    let pattern = compile_pattern(clauses, ctx, &mut params)?;
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
         LEFT JOIN kip.concepts c ON c.id = t.id ORDER BY t.id",
        col = binding.column,
        pattern = pattern.sql,
    );
    let rows = spi::query(&sql, params.values(), Access::ReadWrite)?;
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
        identities_exist(clauses, ctx)?;
    }
    Ok(found)
}

/// When nothing matched, explain why if the pattern names something that
/// does not exist: an unregistered type or predicate is `KIP_2001` (with a
/// "did you mean" hint), a `{type, name}` identity naming no concept is
/// `KIP_3002` — the command addressed something absent, which an empty
/// success would hide. Only top-level clauses are considered.
fn identities_exist(clauses: &[WhereClause], ctx: &Ctx) -> Result<(), KipError> {
    let mut identities = Vec::new();
    let mut needed = Vec::new();
    for clause in clauses {
        match clause {
            WhereClause::Concept { selector, .. } => {
                collect_type(selector, &mut needed)?;
                collect_selector(selector, &mut identities)?;
            }
            WhereClause::Proposition { pattern, .. } => {
                collect_schema(pattern, &mut needed)?;
                collect_pattern(pattern, &mut identities)?;
            }
            _ => {}
        }
    }
    registry::require_all(&ctx.space, &needed)?;
    for (t, n) in identities {
        let exists = spi::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3)",
            &[ctx.space.param(), SqlParam::Text(t.clone()), SqlParam::Text(n.clone())],
            Access::ReadWrite,
        )?;
        if exists != Value::Bool(true) {
            return Err(KipError::new(ErrorCode::NotFound, format!("concept {{type: {t:?}, name: {n:?}}} does not exist"))
                .with_hint("Nothing was changed. Check the type and name (case-sensitive) with SEARCH or FIND."));
        }
    }
    Ok(())
}

fn collect_type(selector: &ConceptSelector, out: &mut Vec<Requirement>) -> Result<(), KipError> {
    if let ConceptSelector::TypeName { type_name: t, .. } | ConceptSelector::Type(t) = selector {
        out.push(Requirement { kind: Kind::ConceptType, name: lit_str(t)?.to_string() });
    }
    Ok(())
}

fn collect_schema(pattern: &PropPattern, out: &mut Vec<Requirement>) -> Result<(), KipError> {
    if let PropPattern::Triple(t) = pattern {
        let predicates: Vec<&StrArg> = match &t.predicate {
            Predicate::Literal(p) => vec![p],
            Predicate::Alternatives(ps) | Predicate::Hops { predicates: ps, .. } => ps.iter().collect(),
            Predicate::Var(_) => vec![],
        };
        for p in predicates {
            out.push(Requirement { kind: Kind::Predicate, name: lit_str(p)?.to_string() });
        }
        for e in [&t.subject, &t.object] {
            match e {
                Endpoint::Concept(sel) => collect_type(sel, out)?,
                Endpoint::Proposition(p) => collect_schema(p, out)?,
                _ => {}
            }
        }
    }
    Ok(())
}

fn collect_selector(selector: &ConceptSelector, out: &mut Vec<(String, String)>) -> Result<(), KipError> {
    if let ConceptSelector::TypeName { type_name, name } = selector {
        out.push((lit_str(type_name)?.to_string(), lit_str(name)?.to_string()));
    }
    Ok(())
}

fn collect_pattern(pattern: &PropPattern, out: &mut Vec<(String, String)>) -> Result<(), KipError> {
    if let PropPattern::Triple(t) = pattern {
        for e in [&t.subject, &t.object] {
            match e {
                Endpoint::Concept(sel) => collect_selector(sel, out)?,
                Endpoint::Proposition(p) => collect_pattern(p, out)?,
                _ => {}
            }
        }
    }
    Ok(())
}

/// Split targets into concept and proposition row ids.
pub fn split(targets: &[Target]) -> (Vec<i64>, Vec<i64>) {
    let concepts = targets.iter().filter(|t| t.element.is_concept()).map(|t| t.element.id).collect();
    let links = targets.iter().filter(|t| !t.element.is_concept()).map(|t| t.element.id).collect();
    (concepts, links)
}
