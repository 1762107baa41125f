//! Execution of MERGE commands (RC10 §4.4): atomic entity consolidation.
//!
//! `MERGE CONCEPT ?s INTO ?t WHERE {…}`: each variable must bind exactly one
//! concept (`KIP_3002` none, `KIP_3003` several), both of the same type
//! (`KIP_2002`), neither protected (`KIP_3004`). Then, with both rows locked:
//! repoint the source's links onto the target (keeping link ids, resolving
//! `(s, p, o)` collisions), fill the target's attributes, union `aliases`,
//! extend `_merged_from`, and delete the source. A replay after success is
//! `KIP_3002` with an "already merged" hint.

mod fill;
mod repoint;

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::bound::lit_str;
use crate::compile::ids::ElementRef;
use crate::compile::env::Env;
use crate::compile::kml_match::pair_sql;
use crate::resolve;
use crate::exec::{spi, Access, SqlParam};
use crate::resolve::protection;
use kip_lang::ast::{Command, ConceptSelector, Merge, WhereClause};
use kip_lang::{ErrorCode, KipError};
use serde_json::{json, Map, Value};

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Merge(merge) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "MERGE executor called with another command"));
    };
    let (source_id, target_id) = match bind_pair(merge, ctx) {
        Ok(pair) => pair,
        Err(e) if e.code == ErrorCode::NotFound => return Err(explain_missing(merge, ctx, e)),
        Err(e) => return Err(e),
    };
    if source_id == target_id {
        return Ok(Outcome::new(report(0, 0, 0)));
    }
    let rows = lock_concepts(ctx, &[source_id, target_id])?;
    let node = |id: i64, var: &str| -> Result<Node, KipError> {
        if let Some(n) = rows.iter().find(|n| n.id == id) {
            return Ok(n.clone());
        }
        // Not a concept: a link, or a concept a concurrent command removed
        // (a MERGE of it that committed while this one waited for its lock).
        let link = spi::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM kip.propositions WHERE space = $1 AND id = $2)",
            &[ctx.space.param(), SqlParam::Int(id)],
            Access::ReadWrite,
        )?;
        Err(if link == Value::Bool(true) {
            KipError::syntax(format!("?{var} binds a proposition link; MERGE CONCEPT merges concept nodes"))
                .with_hint(format!("Bind ?{var} with a concept clause: ?{var} {{type: …, name: …}}."))
        } else {
            KipError::new(ErrorCode::NotFound, format!("the concept bound to ?{var} no longer exists"))
                .with_hint("A concurrent command deleted or merged it away; run the MERGE again to see the current state.")
        })
    };
    // A source a concurrent MERGE of the same pair took away while this
    // one waited for its lock: say it was merged, as a replay is told.
    let source = node(source_id, &merge.source).map_err(|e| match e.code {
        ErrorCode::NotFound => explain_missing(merge, ctx, e),
        _ => e,
    })?;
    let target = node(target_id, &merge.target)?;
    if source.type_name != target.type_name {
        return Err(KipError::new(
            ErrorCode::ConstraintViolation,
            format!("cannot merge a {:?} into a {:?}: MERGE needs two concepts of the same type", source.type_name, target.type_name),
        )
        .with_hint("Only duplicates of one type can be merged. Re-type one of them first (create it under the right type, then merge), or link them instead."));
    }
    for n in [&source, &target] {
        if protection::is_protected_node(&n.type_name, &n.name) {
            return Err(protection::refused("merge", &n.type_name, &n.name));
        }
    }
    // A definition merged away would leave its instances with a type that
    // no longer exists (they cannot be merged into the target's: MERGE
    // joins concepts of one type).
    protection::check_merge_source(&ctx.space, &source.type_name, &source.name)?;
    let mut counts = repoint::Counts::default();
    repoint::repoint(&ctx.space, ElementRef::concept(source.id), ElementRef::concept(target.id), &mut counts)?;
    let (attributes, filled) = fill::attributes(&target.attributes, &source.attributes, &source.name);
    let metadata = fill::metadata(&target.metadata, &source.metadata, &format!("{}:{}", source.type_name, source.name));
    spi::execute(
        "DELETE FROM kip.concepts WHERE space = $1 AND id = $2",
        &[ctx.space.param(), SqlParam::Int(source.id)],
        Access::ReadWrite,
    )?;
    spi::execute(
        "UPDATE kip.concepts SET attributes = $3, metadata = $4 WHERE space = $1 AND id = $2",
        &[ctx.space.param(), SqlParam::Int(target.id), SqlParam::Json(Value::Object(attributes)), SqlParam::Json(Value::Object(metadata))],
        Access::ReadWrite,
    )?;
    Ok(Outcome::new(report(counts.repointed(), counts.deduplicated(), filled as u64)))
}

fn report(repointed: u64, deduplicated: u64, filled: u64) -> Value {
    json!({ "merged": true, "links_repointed": repointed, "links_deduplicated": deduplicated, "attributes_filled": filled })
}

/// The single element bound to each side.
fn bind_pair(merge: &Merge, ctx: &Ctx) -> Result<(i64, i64), KipError> {
    let facts = resolve::pattern_facts(&ctx.space, &merge.where_clauses, Access::ReadWrite)?;
    let env = Env { space: ctx.space.name(), limits: resolve::limits(), facts: &facts };
    let compiled = pair_sql(&merge.where_clauses, env, &merge.source, &merge.target)?;
    let rows = spi::query(&compiled.sql, compiled.params.values(), Access::ReadWrite)?;
    let row = rows.into_iter().next().unwrap_or_default();
    let at = |i: usize| row.get(i).and_then(Value::as_i64).unwrap_or_default();
    let one = |count: i64, id: i64, var: &str| -> Result<i64, KipError> {
        match count {
            0 => Err(KipError::new(ErrorCode::NotFound, format!("?{var} matches no concept"))
                .with_hint("Check the type and name (case-sensitive) with SEARCH or FIND.")),
            1 => Ok(id),
            n => Err(KipError::new(ErrorCode::DuplicateExists, format!("?{var} matches {n} concepts; MERGE needs exactly one on each side"))
                .with_hint("Narrow the WHERE pattern, e.g. with {type: \"…\", name: \"…\"}, until each variable matches exactly one node.")),
        }
    };
    Ok((one(at(0), at(1), &merge.source)?, one(at(2), at(3), &merge.target)?))
}

/// A missing source whose identity the target's `_merged_from` records is a
/// replay of a merge that already happened: say so in the hint.
fn explain_missing(merge: &Merge, ctx: &Ctx, err: KipError) -> KipError {
    let identity = |var: &str| {
        merge.where_clauses.iter().find_map(|c| match c {
            WhereClause::Concept { var: v, selector: ConceptSelector::TypeName { type_name, name } } if v == var => {
                Some((lit_str(type_name).ok()?.to_string(), lit_str(name).ok()?.to_string()))
            }
            _ => None,
        })
    };
    let (Some((st, sn)), Some((tt, tn))) = (identity(&merge.source), identity(&merge.target)) else { return err };
    let metadata = spi::query_scalar(
        "SELECT metadata FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3",
        &[ctx.space.param(), SqlParam::Text(tt.clone()), SqlParam::Text(tn.clone())],
        Access::ReadWrite,
    );
    let source_entry = format!("{st}:{sn}");
    match metadata {
        Ok(m) if fill::records(&m, &source_entry) => KipError::new(
            ErrorCode::NotFound,
            format!("source concept {{type: {st:?}, name: {sn:?}}} does not exist: it was already merged into {{type: {tt:?}, name: {tn:?}}}"),
        )
        .with_hint(format!("The merge already happened ({tn}'s metadata._merged_from lists {source_entry:?}); treat this as success.")),
        _ => err,
    }
}

#[derive(Debug, Clone)]
struct Node {
    id: i64,
    type_name: String,
    name: String,
    attributes: Map<String, Value>,
    metadata: Map<String, Value>,
}

/// Lock the concepts (in id order, so two merges cannot deadlock) and read them.
fn lock_concepts(ctx: &Ctx, ids: &[i64]) -> Result<Vec<Node>, KipError> {
    let rows = spi::query(
        "SELECT id, type, name, attributes, metadata FROM kip.concepts WHERE space = $1 AND id = ANY($2) ORDER BY id FOR UPDATE",
        &[ctx.space.param(), SqlParam::IntArray(ids.to_vec())],
        Access::ReadWrite,
    )?;
    let object = |v: Option<&Value>| v.and_then(Value::as_object).cloned().unwrap_or_default();
    Ok(rows
        .into_iter()
        .map(|r| Node {
            id: r.first().and_then(Value::as_i64).unwrap_or_default(),
            type_name: r.get(1).and_then(Value::as_str).unwrap_or_default().to_string(),
            name: r.get(2).and_then(Value::as_str).unwrap_or_default().to_string(),
            attributes: object(r.get(3)),
            metadata: object(r.get(4)),
        })
        .collect())
}
