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

/// The position (from 1) of the first required element that does not
/// exist: the named concepts `named` first, then the concept row ids `ids`.
/// What a FIND whose page came back empty checks (`compile::find::Guard`).
pub fn first_missing_position(space: &Space, named: &[(String, String)], ids: &[i64]) -> Result<Option<i64>, KipError> {
    let (types, names): (Vec<String>, Vec<String>) = named.iter().cloned().unzip();
    let position = spi::lookup_scalar(
        "SELECT min(g.i) FROM (
           SELECT x.i FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS x(t, n, i)
           WHERE NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = $1 AND c.type = x.t AND c.name = x.n)
           UNION ALL
           SELECT cardinality($2::text[]) + y.i FROM unnest($4::bigint[]) WITH ORDINALITY AS y(id, i)
           WHERE NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.id = y.id AND c.space = $1)
         ) AS g(i)",
        &[space.param(), SqlParam::TextArray(types), SqlParam::TextArray(names), SqlParam::IntArray(ids.to_vec())],
        Access::ReadOnly,
    )?;
    Ok(position.as_i64())
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
