//! The stored rows of an EXPORT page's elements and of everything they
//! reference.

use crate::exec::{spi, Access, Ctx, SqlParam};
use kip_lang::{ErrorCode, KipError};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

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
