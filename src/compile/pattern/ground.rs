//! Grounding checks that run before the pattern's SQL: ids given literally
//! in the mandatory pattern must exist (`KIP_3002` otherwise, as the
//! fixtures require), and an
//! unanchored `(?s, ?p, ?o)` scan is refused on large spaces (`KIP_4002`).

use super::Cx;
use crate::compile::element::ElementKind;
use crate::compile::kml_ids;
use crate::exec::{spi, Access, SqlParam};
use kip_lang::{ErrorCode, KipError};

fn not_found(what: &str, id: &str) -> KipError {
    KipError::new(ErrorCode::NotFound, format!("{what} {id:?} does not exist in this memory space"))
        .with_hint("The element may have been deleted or never created; use SEARCH or FIND to locate it.")
}

/// Row id that no element has: what a literal id outside the mandatory
/// pattern compiles to when it names nothing.
const NO_ELEMENT: i64 = 0;

/// The numeric id of an element named by an external id, and its kind.
///
/// In the mandatory pattern a literal id must name an existing element
/// (`KIP_3002`). Inside `OPTIONAL`, `NOT` and `UNION` a dangling id simply
/// matches nothing, so it is not looked up. Malformed ids are `KIP_1001`
/// everywhere.
pub(crate) fn element_id(cx: &Cx, id: &str) -> Result<(ElementKind, i64), KipError> {
    let parsed = kml_ids::parse(id)?;
    let n = match parsed.kind {
        ElementKind::Concept => concept_row(cx, id, parsed.id)?,
        ElementKind::Proposition => proposition_row(cx, id, parsed.id, parsed.predicate)?,
    };
    Ok((parsed.kind, n))
}

/// `{id: "C:…"}`: the row id of a concept.
pub(crate) fn concept_id(cx: &Cx, id: &str) -> Result<i64, KipError> {
    let parsed = kml_ids::parse(id)?;
    match parsed.kind {
        ElementKind::Concept => concept_row(cx, id, parsed.id),
        ElementKind::Proposition if !cx.mandatory => Ok(NO_ELEMENT),
        ElementKind::Proposition => Err(not_found("concept", id)
            .with_hint("{id: …} matches a concept (\"C:<n>\"); use (id: \"P:…\") for a proposition.")),
    }
}

/// `(id: "P:…")`: the row id of a proposition.
pub(crate) fn proposition_id(cx: &Cx, id: &str) -> Result<i64, KipError> {
    let parsed = kml_ids::parse(id)?;
    match parsed.kind {
        ElementKind::Proposition => proposition_row(cx, id, parsed.id, parsed.predicate),
        ElementKind::Concept if !cx.mandatory => Ok(NO_ELEMENT),
        ElementKind::Concept => Err(not_found("proposition", id)
            .with_hint("(id: …) matches a proposition (\"P:<n>:<predicate>\"); use {id: \"C:…\"} for a concept.")),
    }
}

fn concept_row(cx: &Cx, id: &str, n: Option<i64>) -> Result<i64, KipError> {
    if !cx.mandatory {
        return Ok(n.unwrap_or(NO_ELEMENT));
    }
    let Some(n) = n else { return Err(not_found("concept", id)) };
    let found = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND id = $2)",
        &[cx.space.param(), SqlParam::Int(n)],
        Access::ReadOnly,
    )?;
    if found == serde_json::Value::Bool(true) {
        Ok(n)
    } else {
        Err(not_found("concept", id))
    }
}

/// "P:<n>:<predicate>": when the predicate part is given it must match too
/// (outside the mandatory pattern the caller's SQL checks only the id, so a
/// wrong predicate part is resolved here to "no element").
fn proposition_row(cx: &Cx, id: &str, n: Option<i64>, predicate: Option<String>) -> Result<i64, KipError> {
    let Some(n) = n else {
        return if cx.mandatory { Err(not_found("proposition", id)) } else { Ok(NO_ELEMENT) };
    };
    let found = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.propositions WHERE space = $1 AND id = $2 AND ($3::text IS NULL OR predicate = $3))",
        &[cx.space.param(), SqlParam::Int(n), predicate.map(SqlParam::Text).unwrap_or(SqlParam::NullText)],
        Access::ReadOnly,
    )?;
    match (found == serde_json::Value::Bool(true), cx.mandatory) {
        (true, _) => Ok(n),
        (false, true) => Err(not_found("proposition", id)),
        (false, false) => Ok(NO_ELEMENT),
    }
}

/// The largest number of propositions an unanchored `(?s, ?p, ?o)` clause may
/// scan: ten times `kip.max_limit`.
pub(crate) fn unanchored_scan_cap() -> i64 {
    i64::from(crate::guc::MAX_LIMIT.get()).saturating_mul(10)
}

/// Refuse `(?s, ?p, ?o)` with nothing bound when the space is past the cap.
pub(crate) fn check_unanchored_scan(cx: &Cx) -> Result<(), KipError> {
    let cap = unanchored_scan_cap();
    let over = spi::query_scalar(
        "SELECT count(*) > $2 FROM (SELECT 1 FROM kip.propositions WHERE space = $1 LIMIT $2 + 1) t",
        &[cx.space.param(), SqlParam::Int(cap)],
        Access::ReadOnly,
    )?;
    if over == serde_json::Value::Bool(true) {
        return Err(KipError::new(
            ErrorCode::ResourceExhausted,
            format!("the pattern (?s, ?p, ?o) has no anchor and would scan more than {cap} propositions"),
        )
        .with_hint("Anchor it: bind the subject or object first (by type, name or id), or use a literal predicate; shard large sweeps per predicate."));
    }
    Ok(())
}
