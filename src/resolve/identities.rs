//! Named concepts a command must find. A full `{type, name}` in the
//! mandatory pattern names one concept: when it does not exist, FIND answers
//! `KIP_3002` (as the reference engines do, kip-conformance: "the deleted
//! concept is gone"; FIND's statement checks that itself, see
//! `compile::find::Guard`), and a KML command whose pattern matched nothing
//! says which name was absent instead of reporting an empty success.

use super::collect;
use super::registry;
use crate::exec::{spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};
use serde_json::Value;

/// The first of `named` (in order) that names no concept, with one query.
fn first_missing(space: &Space, named: Vec<(String, String)>, access: Access) -> Result<Option<(String, String)>, KipError> {
    if named.is_empty() {
        return Ok(None);
    }
    let (types, names): (Vec<String>, Vec<String>) = named.into_iter().unzip();
    let missing = spi::lookup(
        "SELECT x.t, x.n FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS x(t, n, i) \
         WHERE NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = $1 AND c.type = x.t AND c.name = x.n) \
         ORDER BY x.i LIMIT 1",
        &[space.param(), SqlParam::TextArray(types), SqlParam::TextArray(names)],
        access,
    )?;
    Ok(missing.first().map(|row| {
        let text = |i: usize| row.get(i).and_then(Value::as_str).unwrap_or_default().to_string();
        (text(0), text(1))
    }))
}

/// UPDATE / DELETE / MERGE matched nothing: explain why when the pattern
/// names something absent. An unregistered type or predicate is `KIP_2001`
/// (with a "did you mean" hint); a named concept that does not exist is
/// `KIP_3002`. Only top-level clauses are considered. `Ok` means the
/// pattern is sound and simply matched nothing.
pub fn explain_empty_match(space: &Space, clauses: &[WhereClause]) -> Result<(), KipError> {
    registry::require_all(space, &collect::schema_names(clauses))?;
    match first_missing(space, collect::named_concepts(clauses), Access::ReadWrite)? {
        None => Ok(()),
        Some((t, n)) => Err(KipError::new(ErrorCode::NotFound, format!("concept {{type: {t:?}, name: {n:?}}} does not exist"))
            .with_hint("Nothing was changed. Check the type and name (case-sensitive) with SEARCH or FIND.")),
    }
}
