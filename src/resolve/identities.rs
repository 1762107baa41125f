//! Named concepts a command must find. A full `{type, name}` in the
//! mandatory pattern names one concept: when it does not exist, FIND answers
//! `KIP_3002` (as the reference engines do, kip-conformance: "the deleted
//! concept is gone"; FIND's statement checks that itself, see
//! `compile::find::Guard`), and a KML command whose pattern matched nothing
//! says which name was absent instead of reporting an empty success.

use super::collect;
use super::registry;
use crate::compile::find::Guard;
use crate::exec::{spi, Access, SqlParam};
use serde_json::Value;
use crate::space::Space;
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};

/// The first of `named` (in order) that names no concept, with one query:
/// the check a FIND makes (`compile::find::Guard`), run on its own.
fn first_missing(space: &Space, named: Vec<(String, String)>, access: Access) -> Result<Option<(String, String)>, KipError> {
    if named.is_empty() {
        return Ok(None);
    }
    let guard = Guard { named, concept_ids: Vec::new(), always: false };
    let (sql, params) = guard.standalone(space.name());
    let position = spi::lookup_scalar(&sql, params.values(), access)?;
    Ok(position.as_u64().and_then(|i| guard.named.get(usize::try_from(i).ok()?.checked_sub(1)?).cloned()))
}

/// The ids of the named concepts of `named` that exist, with one query.
pub fn ids_of(space: &Space, named: &[(String, String)]) -> Result<Vec<((String, String), i64)>, KipError> {
    if named.is_empty() {
        return Ok(Vec::new());
    }
    let (types, names): (Vec<String>, Vec<String>) = named.iter().cloned().unzip();
    // A probe of the unique index per name (`OFFSET 0` keeps the subquery
    // from being flattened into a join the generic plan may hash over the
    // whole space: see `compile::find::guard_sql`).
    let rows = spi::lookup(
        "SELECT x.t, x.n, c.id FROM unnest($2::text[], $3::text[]) AS x(t, n) \
         CROSS JOIN LATERAL (SELECT c.id FROM kip.concepts c WHERE c.space = $1 AND c.type = x.t AND c.name = x.n OFFSET 0) c",
        &[space.param(), SqlParam::TextArray(types), SqlParam::TextArray(names)],
        Access::ReadOnly,
    )?;
    Ok(rows
        .iter()
        .filter_map(|row| match (row.first(), row.get(1), row.get(2).and_then(Value::as_i64)) {
            (Some(Value::String(t)), Some(Value::String(n)), Some(id)) => Some(((t.clone(), n.clone()), id)),
            _ => None,
        })
        .collect())
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
        Some((t, n)) => Err(KipError::new(ErrorCode::NotFound, format!("concept {{type: {}, name: {}}} does not exist", kip_lang::quoted(&t), kip_lang::quoted(&n)))
            .with_hint("Nothing was changed. Check the type and name (case-sensitive) with SEARCH or FIND.")),
    }
}
