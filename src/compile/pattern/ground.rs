//! Grounding checks that run before the pattern's SQL: ids given literally
//! must exist (`KIP_3002` otherwise, as the fixtures require), and an
//! unanchored `(?s, ?p, ?o)` scan is refused on large spaces (`KIP_4002`).

use super::Cx;
use crate::compile::element::{parse_ref, ElementKind};
use crate::exec::{spi, Access, SqlParam};
use kip_lang::{ErrorCode, KipError};

fn malformed(id: &str) -> KipError {
    KipError::new(ErrorCode::InvalidSyntax, format!("malformed element id {id:?}"))
        .with_hint("Concept ids look like \"C:123\", proposition ids like \"P:456:treats\".")
}

fn not_found(what: &str, id: &str) -> KipError {
    KipError::new(ErrorCode::NotFound, format!("{what} {id:?} does not exist in this memory space"))
        .with_hint("The element may have been deleted or never created; use SEARCH or FIND to locate it.")
}

/// The numeric id of an existing element named by an external id, and its kind.
pub(crate) fn element_id(cx: &Cx, id: &str) -> Result<(ElementKind, i64), KipError> {
    let (kind, n) = parse_ref(id).ok_or_else(|| malformed(id))?;
    match kind {
        ElementKind::Concept => concept_exists(cx, id, n)?,
        ElementKind::Proposition => proposition_exists(cx, id, n)?,
    }
    Ok((kind, n))
}

/// `{id: "C:…"}`: the id of an existing concept.
pub(crate) fn concept_id(cx: &Cx, id: &str) -> Result<i64, KipError> {
    match parse_ref(id).ok_or_else(|| malformed(id))? {
        (ElementKind::Concept, n) => {
            concept_exists(cx, id, n)?;
            Ok(n)
        }
        (ElementKind::Proposition, _) => Err(not_found("concept", id)
            .with_hint("{id: …} matches a concept (\"C:<n>\"); use (id: \"P:…\") for a proposition.")),
    }
}

/// `(id: "P:…")`: the id of an existing proposition.
pub(crate) fn proposition_id(cx: &Cx, id: &str) -> Result<i64, KipError> {
    match parse_ref(id).ok_or_else(|| malformed(id))? {
        (ElementKind::Proposition, n) => {
            proposition_exists(cx, id, n)?;
            Ok(n)
        }
        (ElementKind::Concept, _) => Err(not_found("proposition", id)
            .with_hint("(id: …) matches a proposition (\"P:<n>:<predicate>\"); use {id: \"C:…\"} for a concept.")),
    }
}

fn concept_exists(cx: &Cx, id: &str, n: i64) -> Result<(), KipError> {
    let found = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND id = $2)",
        &[cx.space.param(), SqlParam::Int(n)],
        Access::ReadOnly,
    )?;
    if found == serde_json::Value::Bool(true) {
        Ok(())
    } else {
        Err(not_found("concept", id))
    }
}

fn proposition_exists(cx: &Cx, id: &str, n: i64) -> Result<(), KipError> {
    // "P:<n>:<predicate>": when the predicate part is given it must match too.
    let predicate = id.splitn(3, ':').nth(2).map(str::to_string);
    let found = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.propositions WHERE space = $1 AND id = $2 AND ($3::text IS NULL OR predicate = $3))",
        &[cx.space.param(), SqlParam::Int(n), predicate.map(SqlParam::Text).unwrap_or(SqlParam::NullText)],
        Access::ReadOnly,
    )?;
    if found == serde_json::Value::Bool(true) {
        Ok(())
    } else {
        Err(not_found("proposition", id))
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
