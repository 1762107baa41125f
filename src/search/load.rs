//! The ranked hits of a SEARCH as KIP element objects, in rank order, each
//! with its `_score` in `metadata` (rounded to 4 decimals).

use super::query::Hit;
use crate::compile::element::{concept_json, proposition_json};
use crate::compile::ids::ElementKind;
use crate::exec::Ctx;
use crate::exec::{spi, SqlParam};
use kip_lang::KipError;
use serde_json::{json, Value};
use std::collections::HashMap;

pub fn elements(kind: ElementKind, hits: &[Hit], ctx: &Ctx) -> Result<Vec<Value>, KipError> {
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let (table, json) = match kind {
        ElementKind::Concept => ("kip.concepts", concept_json("e")),
        ElementKind::Proposition => ("kip.propositions", proposition_json("e")),
    };
    let sql = format!("SELECT e.id, {json} FROM {table} e WHERE e.space = $1 AND e.id = ANY($2)");
    let ids: Vec<i64> = hits.iter().map(|h| h.id).collect();
    let rows = spi::query(&sql, &[ctx.space.param(), SqlParam::IntArray(ids)], ctx.access)?;
    let mut by_id: HashMap<i64, Value> = rows
        .into_iter()
        .filter_map(|mut r| {
            let element = r.pop()?;
            Some((r.pop()?.as_i64()?, element))
        })
        .collect();
    Ok(hits
        .iter()
        .filter_map(|h| {
            let mut element = by_id.remove(&h.id)?;
            element["metadata"]["_score"] = json!(round4(h.score));
            Some(element)
        })
        .collect())
}

/// Four decimals, rounded down so a score below 1 never prints as 1.
pub(super) fn round4(score: f64) -> f64 {
    (score * 10_000.0).floor() / 10_000.0
}
