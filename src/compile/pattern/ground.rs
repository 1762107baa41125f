//! Grounding of literal ids and the unanchored-scan guard, decided from the
//! facts `resolve` read before compilation: ids given literally in the
//! mandatory pattern must exist (`KIP_3002` otherwise, as the fixtures
//! require), and an unanchored `(?s, ?p, ?o)` scan is refused on large spaces
//! (`KIP_4002`). A FIND leaves its literal concept ids to its own statement
//! (`InStatement`): they are then recorded in `Cx::unverified_concept_ids`
//! and checked by the guard (`compile::find::Guard`).

use super::scope::Cx;
use crate::compile::ids::ElementKind;
use crate::compile::ids;
use kip_lang::{ErrorCode, KipError};

pub(crate) fn not_found(what: &str, id: &str) -> KipError {
    KipError::new(ErrorCode::NotFound, format!("{what} {} does not exist in this memory space", kip_lang::quoted(id)))
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
    let parsed = ids::parse(id)?;
    let n = match parsed.kind {
        ElementKind::Concept => concept_row(cx, id, parsed.id)?,
        ElementKind::Proposition => proposition_row(cx, id, parsed.id, parsed.predicate)?,
    };
    Ok((parsed.kind, n))
}

/// `{id: "C:…"}`: the row id of a concept. A proposition's id there is
/// `KIP_1001` wherever it is written, as in UPSERT: it names an element of
/// the other kind, never a concept that might exist.
pub(crate) fn concept_id(cx: &Cx, id: &str) -> Result<i64, KipError> {
    let parsed = ids::parse_concept(id)?;
    concept_row(cx, id, parsed.id)
}

/// `(id: "P:…")`: the row id of a proposition (a concept's id there is
/// `KIP_1001`, as above).
pub(crate) fn proposition_id(cx: &Cx, id: &str) -> Result<i64, KipError> {
    let parsed = ids::parse_proposition(id)?;
    proposition_row(cx, id, parsed.id, parsed.predicate)
}

fn concept_row(cx: &Cx, id: &str, n: Option<i64>) -> Result<i64, KipError> {
    if !cx.mandatory {
        return Ok(n.unwrap_or(NO_ELEMENT));
    }
    let Some(n) = n else { return Err(not_found("concept", id)) };
    if cx.env.facts.assume_literals_exist {
        return Ok(n);
    }
    if cx.env.facts.verified_in_statement.is_some() {
        cx.unverified_concept_ids.borrow_mut().push((n, id.to_string()));
        return Ok(n);
    }
    match cx.env.facts.concepts.get(&n) {
        Some(true) => Ok(n),
        Some(false) => Err(not_found("concept", id)),
        None => Err(unresolved(id)),
    }
}

/// "P:<n>:<predicate>": when the predicate part is given it must match too
/// (outside the mandatory pattern the caller's SQL checks only the id, so a
/// wrong predicate part is resolved here to "no element").
fn proposition_row(cx: &Cx, id: &str, n: Option<i64>, predicate: Option<String>) -> Result<i64, KipError> {
    let Some(n) = n else {
        return if cx.mandatory { Err(not_found("proposition", id)) } else { Ok(NO_ELEMENT) };
    };
    if cx.env.facts.assume_literals_exist {
        return Ok(n);
    }
    let stored = cx.env.facts.propositions.get(&n).ok_or_else(|| unresolved(id))?;
    let found = match (stored, &predicate) {
        (Some(stored), Some(wanted)) => stored == wanted,
        (Some(_), None) => true,
        (None, _) => false,
    };
    match (found, cx.mandatory) {
        (true, _) => Ok(n),
        (false, true) => Err(not_found("proposition", id)),
        (false, false) => Ok(NO_ELEMENT),
    }
}

/// A literal the resolve stage did not look up: a bug of kip, not of the
/// command.
fn unresolved(id: &str) -> KipError {
    KipError::new(ErrorCode::InternalError, format!("the id {id:?} was not resolved before compilation"))
}

/// Refuse `(?s, ?p, ?o)` with nothing bound when the space is past the cap.
pub(crate) fn check_unanchored_scan(cx: &Cx) -> Result<(), KipError> {
    let cap = cx.env.limits.unanchored_scan_cap();
    match cx.env.facts.unanchored_over_cap {
        Some(false) => Ok(()),
        Some(true) => Err(KipError::new(
            ErrorCode::ResourceExhausted,
            format!("the pattern (?s, ?p, ?o) has no anchor and would scan more than {cap} propositions"),
        )
        .with_hint("Anchor it: bind the subject or object first (by type, name or id), or use a literal predicate; shard large sweeps per predicate.")),
        None => Err(KipError::new(ErrorCode::InternalError, "the size of the space was not resolved before compiling an unanchored (?s, ?p, ?o)")),
    }
}
