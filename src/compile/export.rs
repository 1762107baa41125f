//! The SQL side of EXPORT: which elements a page holds, and the stored rows
//! of those elements and of everything they reference.
//!
//! Page order is `(rank, id)`: schema definitions (`$ConceptType` /
//! `$PropositionType` concepts) first, then the other concepts, then
//! propositions — so that applying the pages of a paginated export in order
//! always defines a type before its instances and a concept before the links
//! that use it. Within a rank, element ids give a stable, deterministic order.

use super::pattern::{compile_pattern, VarKind};
use super::Params;
use crate::exec::Ctx;
use crate::exec::{spi, Access, SqlParam};
use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One page of the elements bound to the export target.
pub struct Page {
    /// Element ids of the page, in page order.
    pub ids: Vec<i64>,
    /// True when more matched elements follow this page.
    pub more: bool,
}

/// The distinct elements bound to `?target` by `clauses`, skipping `offset`
/// and returning at most `limit` of them.
pub fn select_page(clauses: &[WhereClause], target: &str, ctx: &Ctx, offset: u64, limit: u64) -> Result<Page, KipError> {
    let mut params = Params::new();
    let pattern = compile_pattern(clauses, ctx, &mut params)?;
    let binding = pattern.vars.iter().find(|v| v.name == target).ok_or_else(|| {
        KipError::new(ErrorCode::ReferenceError, format!("?{target} is not bound by the WHERE pattern"))
            .with_hint(format!("Bind ?{target} in WHERE {{ … }} with a concept clause (?{target} {{type: …}}) or a proposition clause (?{target} (…))."))
    })?;
    if binding.kind == VarKind::Predicate {
        return Err(KipError::syntax(format!("?{target} binds a predicate name, not a concept or proposition"))
            .with_hint(format!("Export the links themselves: ?{target} (?s, \"predicate\", ?o).")));
    }
    let schema_types = params.push(SqlParam::TextArray(vec![CONCEPT_TYPE.to_string(), PROPOSITION_TYPE.to_string()]));
    let space = params.push(ctx.space.param());
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
    let rows = spi::query(&sql, params.values(), Access::ReadOnly)?;
    let mut ids: Vec<i64> = rows.iter().filter_map(|r| r.first().and_then(Value::as_i64)).collect();
    let more = ids.len() as u64 > limit;
    ids.truncate(limit as usize);
    Ok(Page { ids, more })
}

/// An endpoint of a stored proposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointId {
    Concept(i64),
    Proposition(i64),
}

/// A stored element, as the capsule needs it.
#[derive(Debug, Clone)]
pub enum Stored {
    Concept {
        type_name: String,
        name: String,
        attributes: Map<String, Value>,
        metadata: Map<String, Value>,
    },
    Proposition {
        subject: EndpointId,
        predicate: String,
        object: EndpointId,
        attributes: Map<String, Value>,
        metadata: Map<String, Value>,
    },
}

const LOAD_SQL: &str = "\
SELECT c.id, c.type, c.name, NULL::bigint, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint, c.attributes, c.metadata \
  FROM kip.concepts c WHERE c.space = $1::text AND c.id = ANY($2::bigint[]) \
UNION ALL \
SELECT p.id, NULL::text, NULL::text, p.subject_concept, p.subject_link, p.predicate, p.object_concept, p.object_link, p.attributes, p.metadata \
  FROM kip.propositions p WHERE p.space = $1::text AND p.id = ANY($2::bigint[])";

fn object(v: Option<&Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    }
}

fn endpoint(concept: Option<&Value>, link: Option<&Value>) -> Option<EndpointId> {
    concept
        .and_then(Value::as_i64)
        .map(EndpointId::Concept)
        .or_else(|| link.and_then(Value::as_i64).map(EndpointId::Proposition))
}

/// Load `ids` and, transitively, every element their propositions point to
/// (an outside endpoint is referenced by its identity, which for a
/// proposition means its own endpoints, recursively).
pub fn load_closure(ctx: &Ctx, ids: &[i64]) -> Result<BTreeMap<i64, Stored>, KipError> {
    let mut loaded: BTreeMap<i64, Stored> = BTreeMap::new();
    let mut wanted: BTreeSet<i64> = ids.iter().copied().collect();
    while !wanted.is_empty() {
        pgrx::check_for_interrupts!();
        let batch: Vec<i64> = wanted.iter().copied().collect();
        let rows = spi::query(LOAD_SQL, &[ctx.space.param(), SqlParam::IntArray(batch)], Access::ReadOnly)?;
        let mut next = BTreeSet::new();
        for r in rows {
            let Some(id) = r.first().and_then(Value::as_i64) else { continue };
            let element = match (r.get(1).and_then(Value::as_str), r.get(2).and_then(Value::as_str)) {
                (Some(t), Some(n)) => Stored::Concept {
                    type_name: t.to_string(),
                    name: n.to_string(),
                    attributes: object(r.get(8)),
                    metadata: object(r.get(9)),
                },
                _ => {
                    let (Some(subject), Some(object_ref)) = (endpoint(r.get(3), r.get(4)), endpoint(r.get(6), r.get(7))) else {
                        return Err(KipError::new(ErrorCode::InternalError, format!("proposition P:{id} has no subject or object")));
                    };
                    for e in [subject, object_ref] {
                        let eid = match e {
                            EndpointId::Concept(i) | EndpointId::Proposition(i) => i,
                        };
                        if !loaded.contains_key(&eid) && !wanted.contains(&eid) {
                            next.insert(eid);
                        }
                    }
                    Stored::Proposition {
                        subject,
                        predicate: r.get(5).and_then(Value::as_str).unwrap_or_default().to_string(),
                        object: object_ref,
                        attributes: object(r.get(8)),
                        metadata: object(r.get(9)),
                    }
                }
            };
            loaded.insert(id, element);
        }
        next.retain(|i| !loaded.contains_key(i));
        wanted = next;
    }
    Ok(loaded)
}
