//! Execution of DELETE commands (RC10 §4.2).
//!
//! The WHERE block selects the targets through the shared pattern compiler;
//! protection (`KIP_3004`) and reserved keys (`KIP_2002`) are checked before
//! anything is removed. `DELETE CONCEPT … DETACH` and `DELETE PROPOSITIONS`
//! rely on the storage's cascading foreign keys to remove every link that
//! (transitively, through higher-order links) references a deleted element;
//! the same closure is counted beforehand for the `deleted_propositions`
//! audit figure.

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::bound::lit_str;
use crate::engine::targets::{self, Target};
use crate::exec::{spi, Access, SqlParam};
use crate::resolve::protection::{self, Protection, CORE_DIRECTIVES};
use crate::schema::reserved;
use kip_lang::ast::{Command, Delete, StrArg};
use kip_lang::{ErrorCode, KipError};
use serde_json::{json, Value};

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Delete(delete) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "DELETE executor called with another command"));
    };
    let result = match delete {
        Delete::Attributes { keys, target, where_clauses } => {
            let targets = targets::targets(where_clauses, ctx, target, None)?;
            delete_keys(ctx, &targets, keys, Column::Attributes)?
        }
        Delete::Metadata { keys, target, where_clauses } => {
            reserved::check_deleted_keys(keys)?;
            let targets = targets::targets(where_clauses, ctx, target, None)?;
            delete_keys(ctx, &targets, keys, Column::Metadata)?
        }
        Delete::Propositions { target, where_clauses } => {
            let targets = targets::targets(where_clauses, ctx, target, None)?;
            delete_propositions(ctx, target, &targets)?
        }
        Delete::Concept { target, where_clauses } => {
            let targets = targets::targets(where_clauses, ctx, target, None)?;
            delete_concepts(ctx, target, &targets)?
        }
    };
    Ok(Outcome::new(result))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Column {
    Attributes,
    Metadata,
}

/// `DELETE ATTRIBUTES` / `DELETE METADATA`: remove keys; elements that had
/// none of them are not mutated and not counted.
fn delete_keys(ctx: &Ctx, targets: &[Target], keys: &[StrArg], column: Column) -> Result<Value, KipError> {
    let keys: Vec<String> = keys.iter().map(|k| lit_str(k).map(str::to_string)).collect::<Result<_, _>>()?;
    for t in targets {
        let Some((type_name, name)) = &t.identity else { continue };
        match protection::classify(type_name, name) {
            Protection::Structure => return Err(protection::refused("delete keys of", type_name, name)),
            Protection::SystemActor if column == Column::Attributes && keys.iter().any(|k| k == CORE_DIRECTIVES) => {
                return Err(protection::directives_refused(name));
            }
            _ => {}
        }
    }
    let (concepts, links) = targets::split(targets);
    protection::refuse_anchoring_links(&ctx.space, &links, "delete keys of")?;
    let (concept_sql, link_sql) = match column {
        Column::Attributes => (
            "UPDATE kip.concepts SET attributes = attributes - $2::text[] WHERE space = $1 AND id = ANY($3) AND attributes ?| $2::text[]",
            "UPDATE kip.propositions SET attributes = attributes - $2::text[] WHERE space = $1 AND id = ANY($3) AND attributes ?| $2::text[]",
        ),
        Column::Metadata => (
            "UPDATE kip.concepts SET metadata = metadata - $2::text[] WHERE space = $1 AND id = ANY($3) AND metadata ?| $2::text[]",
            "UPDATE kip.propositions SET metadata = metadata - $2::text[] WHERE space = $1 AND id = ANY($3) AND metadata ?| $2::text[]",
        ),
    };
    let run = |sql: &str, ids: Vec<i64>| -> Result<u64, KipError> {
        if ids.is_empty() || keys.is_empty() {
            return Ok(0);
        }
        spi::execute(sql, &[ctx.space.param(), SqlParam::TextArray(keys.clone()), SqlParam::IntArray(ids)], Access::ReadWrite)
    };
    let updated_concepts = run(concept_sql, concepts)?;
    let updated_propositions = run(link_sql, links)?;
    Ok(json!({ "updated_concepts": updated_concepts, "updated_propositions": updated_propositions }))
}

/// `DELETE PROPOSITIONS ?l`: the links, and every higher-order link that
/// references them (counted).
fn delete_propositions(ctx: &Ctx, var: &str, targets: &[Target]) -> Result<Value, KipError> {
    let (concepts, links) = targets::split(targets);
    if !concepts.is_empty() {
        return Err(KipError::syntax(format!("?{var} binds concept nodes; DELETE PROPOSITIONS removes proposition links"))
            .with_hint(format!("Use DELETE CONCEPT ?{var} DETACH WHERE {{ … }} to delete concepts, or bind ?{var} to a link: ?{var} (?s, \"p\", ?o).")));
    }
    if links.is_empty() {
        return Ok(json!({ "deleted_propositions": 0 }));
    }
    protection::refuse_anchoring_links(&ctx.space, &links, "delete")?;
    let rows = spi::query(
        "WITH RECURSIVE doomed(id) AS ( \
             SELECT p.id FROM kip.propositions p WHERE p.space = $1 AND p.id = ANY($2) \
             UNION \
             SELECT p.id FROM kip.propositions p JOIN doomed d ON p.subject_link = d.id OR p.object_link = d.id \
         ), gone AS (DELETE FROM kip.propositions WHERE space = $1 AND id = ANY($2) RETURNING id) \
         SELECT (SELECT count(*) FROM doomed), (SELECT count(*) FROM gone)",
        &[ctx.space.param(), SqlParam::IntArray(links)],
        Access::ReadWrite,
    )?;
    Ok(json!({ "deleted_propositions": count(&rows, 0) }))
}

/// `DELETE CONCEPT ?c DETACH`: the concepts, their links, and every
/// higher-order link that references those links, transitively.
fn delete_concepts(ctx: &Ctx, var: &str, targets: &[Target]) -> Result<Value, KipError> {
    for t in targets {
        match &t.identity {
            Some((type_name, name)) if protection::is_protected_node(type_name, name) => {
                return Err(protection::refused("delete", type_name, name));
            }
            None => {
                return Err(KipError::syntax(format!("?{var} binds proposition links; DELETE CONCEPT removes concept nodes"))
                    .with_hint(format!("Use DELETE PROPOSITIONS ?{var} WHERE {{ … }} to delete links.")));
            }
            _ => {}
        }
    }
    let (concepts, _) = targets::split(targets);
    if concepts.is_empty() {
        return Ok(json!({ "deleted_concepts": 0, "deleted_propositions": 0 }));
    }
    let rows = spi::query(
        "WITH RECURSIVE doomed(id) AS ( \
             SELECT p.id FROM kip.propositions p WHERE p.subject_concept = ANY($2) OR p.object_concept = ANY($2) \
             UNION \
             SELECT p.id FROM kip.propositions p JOIN doomed d ON p.subject_link = d.id OR p.object_link = d.id \
         ), gone AS (DELETE FROM kip.concepts WHERE space = $1 AND id = ANY($2) RETURNING id) \
         SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM doomed)",
        &[ctx.space.param(), SqlParam::IntArray(concepts)],
        Access::ReadWrite,
    )?;
    Ok(json!({ "deleted_concepts": count(&rows, 0), "deleted_propositions": count(&rows, 1) }))
}

fn count(rows: &spi::Rows, col: usize) -> i64 {
    rows.first().and_then(|r| r.get(col)).and_then(Value::as_i64).unwrap_or_default()
}
