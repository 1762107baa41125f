//! SQL functions around embeddings.
//!
//! | function | what it does |
//! |---|---|
//! | `kip_embed(text) → real[]` | the in-database model's vector of a text |
//! | `kip_embed_pending(max integer DEFAULT NULL, space text DEFAULT NULL) → bigint` | embed the backlog now (all of it, or up to `max`; every space, or one); returns the vectors stored |
//! | `kip_set_embedding(id text, embedding real[]) → boolean` | store an application's vector for an element of the current space |
//! | `kip_search(command text, query_embedding real[], parameters jsonb DEFAULT '{}') → jsonb` | run a SEARCH with the application's query vector |
//! | `kip_embedding_status() → jsonb` | provider, model, availability and backlog size |

use super::vector_arg::VectorArg;
use crate::embed::{self, backfill, check_vector, settings};
use crate::engine::envelope;
use crate::compile::ids::ElementKind;
use crate::compile::ids;
use crate::exec::{extensions, spi, subxact, Access, SqlParam};
use crate::exec::pg_error::raise;
use crate::{engine, space};
use kip_lang::{ErrorCode, KipError};
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::json;

/// The vector the in-database model gives `text` (L2-normalised, 384 floats).
/// STABLE, so `ORDER BY embedding <=> kip_embed('…')::vector LIMIT k` is an
/// HNSW index scan with the text embedded once; parallel restricted, so
/// parallel workers never load a model of their own.
#[pg_extern(stable, parallel_restricted)]
fn kip_embed(text: &str) -> Vec<f32> {
    embed::runtime::ensure_loaded().map_err(embed::model_error).and_then(|_| embed::embed_one(text)).unwrap_or_else(|e| raise(e))
}

/// Embed waiting elements now (of every space of this database, or of one);
/// returns how many vectors were stored.
#[pg_extern(volatile, parallel_unsafe)]
fn kip_embed_pending(max: default!(Option<i32>, "NULL"), space: default!(Option<&str>, "NULL")) -> i64 {
    // Before the model runs on a batch whose vectors could not be stored.
    crate::exec::pg_error::refuse_writes_here();
    let space = space.map(|s| space::validate(s).unwrap_or_else(|e| raise(e)));
    if let Some(m) = max {
        if m < 0 {
            raise(KipError::new(ErrorCode::InvalidSyntax, format!("max = {m} is negative"))
                .with_hint("Pass NULL to embed the whole backlog, or a positive cap."));
        }
    }
    let provider = settings::provider().unwrap_or_else(|e| raise(e));
    if provider != settings::Provider::Onnx {
        raise(KipError::new(
            ErrorCode::InvalidSyntax,
            format!("kip.embedding_provider is {}: the in-database model does not embed", provider.name()),
        )
        .with_hint("With the external provider, read kip.embedding_backlog and call kip_set_embedding(id, vector)."));
    }
    subxact::with_pinned_settings(&[], || {
        // A named space the caller may not write is refused, as by
        // kip_maintenance: row-level security would store nothing, and the
        // answer 0 read as "nothing waits".
        if let Some(space) = &space {
            crate::governance::access::require(space, crate::governance::access::Privilege::Write)?;
        }
        backfill::embed_pending(max.map(i64::from), space.as_ref().map(|s| s.name()))
    })
    .unwrap_or_else(|e| raise(e))
}

/// Store an application's vector for an element of the current space.
/// Returns false when the element does not exist. Whatever the element's
/// text is now: the three-argument form is the safe one.
#[pg_extern(volatile, parallel_unsafe)]
fn kip_set_embedding(id: &str, embedding: VectorArg) -> bool {
    crate::exec::pg_error::refuse_writes_here();
    subxact::with_pinned_settings(&[], || set_embedding(id, embedding, None)).unwrap_or_else(|e| raise(e))
}

/// Store an application's vector for an element of the current space, if
/// the element's grounding text is still `grounding_text`, the text the
/// vector was computed from (as `kip.embedding_backlog` showed it).
/// Returns false when the element does not exist or its text changed
/// meanwhile: it stays in the backlog with its new text. Without the
/// check, a vector of the old text, stored after an agent changed it,
/// took the element out of the backlog for good.
#[pg_extern(name = "kip_set_embedding", volatile, parallel_unsafe)]
fn kip_set_embedding_for_text(id: &str, embedding: VectorArg, grounding_text: &str) -> bool {
    crate::exec::pg_error::refuse_writes_here();
    subxact::with_pinned_settings(&[], || set_embedding(id, embedding, Some(grounding_text))).unwrap_or_else(|e| raise(e))
}

fn set_embedding(id: &str, embedding: VectorArg, grounding_text: Option<&str>) -> Result<bool, KipError> {
    let vector = embedding.components("the embedding")?;
    check_vector(&vector, "the embedding")?;
    let parsed = ids::parse(id)?;
    let Some(row) = parsed.id else { return Ok(false) };
    let space = space::current()?;
    // Storing a vector writes the element: a reader is told so, not
    // refused by the table's privileges.
    crate::governance::access::require(&space, crate::governance::access::Privilege::Write)?;
    let vector_type = extensions::vector_type()?;
    let mut params = vec![space.param(), SqlParam::Int(row), SqlParam::RealArray(vector)];
    let mut sql = match parsed.kind {
        ElementKind::Concept => format!("UPDATE kip.concepts c SET embedding = $3::{vector_type} WHERE c.space = $1 AND c.id = $2"),
        ElementKind::Proposition => {
            params.push(parsed.predicate.map_or(SqlParam::NullText, SqlParam::Text));
            format!(
                "UPDATE kip.propositions p SET embedding = $3::{vector_type} WHERE p.space = $1 AND p.id = $2 AND ($4::text IS NULL OR p.predicate = $4)"
            )
        }
    };
    if let Some(text) = grounding_text {
        params.push(SqlParam::Text(text.to_string()));
        sql.push_str(&format!(" AND {} = ${}", backfill::grounding_sql(parsed.kind), params.len()));
    }
    Ok(spi::execute(&sql, &params, Access::ReadWrite)? > 0)
}

/// Run one SEARCH command with `query_embedding` as its query vector: for
/// applications that embed elsewhere (`kip.embedding_provider = 'external'`;
/// vectors never travel inside KIP text). Read-only; returns the envelope.
#[pg_extern(stable, parallel_unsafe)]
fn kip_search(
    command: Option<&str>,
    query_embedding: Option<VectorArg>,
    parameters: default!(Option<super::jsonb_arg::JsonbArg>, "'{}'"),
) -> JsonB {
    // NULL arguments are KIP errors in the envelope, as kip_execute's are.
    let outcome = match (command, query_embedding) {
        (None, _) => Err(KipError::new(ErrorCode::InvalidSyntax, "the command is NULL").with_hint("Pass one SEARCH command as the first argument.")),
        (_, None) => Err(KipError::new(ErrorCode::InvalidSyntax, "the query embedding is NULL")
            .with_hint("Pass the query's 384-dimensional vector as a real[].")),
        // Read as kip_execute reads its parameters (numbers, nesting).
        (Some(command), Some(vector)) => {
            parameters.map(|p| p.parse("the parameters")).transpose().and_then(|p| search_with_vector(command, vector, p))
        }
    };
    JsonB(envelope::single(outcome).into_value())
}

fn search_with_vector(
    command: &str,
    query_embedding: VectorArg,
    parameters: Option<serde_json::Value>,
) -> Result<envelope::Outcome, KipError> {
    let vector = query_embedding.components("the query embedding")?;
    check_vector(&vector, "the query embedding")?;
    let request = crate::engine::request::single(command, parameters.unwrap_or_else(|| json!({})))?;
    // Parsed as kip_execute parses, so that any command other than one
    // SEARCH (a KML one included) gets this function's own refusal.
    let script = engine::prepare(&request.commands[0], crate::exec::Mode::ReadWrite)?;
    if !matches!(script.commands.as_slice(), [kip_lang::ast::Command::Search(_)]) {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "kip_search runs exactly one SEARCH command")
            .with_hint("Use kip_execute_readonly for other commands."));
    }
    // The caller's grant and the space, as kip_execute_readonly checks them:
    // a space it may not read is refused as such (KIP_3004), a missing one
    // reported (KIP_3002).
    let (space, _grant) = super::prepare(&request, crate::exec::Mode::ReadOnly)?;
    let ctx = crate::exec::Ctx::new(space, Access::ReadOnly);
    crate::exec::pg_error::statement_expired()?;
    // Within kip.command_timeout, as every command of kip_execute.
    let _budget = crate::exec::budget::arm();
    embed::with_external_query(vector, || subxact::run_isolated(|| engine::execute_script(&script, &ctx)))
}

/// Provider, model, whether semantic search is available here (and why
/// not), how many elements wait for a vector, and whether a worker embeds
/// them.
#[pg_extern(volatile, parallel_unsafe)]
fn kip_embedding_status() -> JsonB {
    let availability = embed::availability(true);
    // The backlog drains only where a kip worker serves the database; a
    // database left out of `kip.worker_databases` keeps its backlog until
    // someone calls kip_embed_pending(), which is easy to miss.
    let status = subxact::with_pinned_settings(&[], || spi::query(
        &format!(
            "SELECT (SELECT count(*) FROM kip.concepts WHERE embedding IS NULL),
                    (SELECT count(*) FROM kip.propositions WHERE embedding IS NULL),
                    EXISTS (SELECT 1 FROM pg_stat_activity
                            WHERE backend_type = 'kip worker' AND datname = current_database()),
                    {}",
            crate::exec::known::KIP_TABLES_SUBSCRIBED
        ),
        &[],
        Access::ReadOnly,
    ))
    .unwrap_or_else(|e| raise(e));
    let row = &status[0];
    let mut v = availability.describe();
    v["available"] = json!(availability.available);
    v["pending"] = json!({ "concepts": row[0], "propositions": row[1] });
    // SAFETY: reads this backend's recovery state.
    let standby = unsafe { pgrx::pg_sys::RecoveryInProgress() };
    v["worker"] = if row[3] == json!(true) {
        // The subscriber's worker leaves replicated tables alone.
        json!("left to the publisher: kip's tables here are logical replication targets; the publisher's worker embeds, and its vectors arrive by replication")
    } else if row[2] == json!(true) {
        json!("running")
    } else if standby {
        // kip's workers start when recovery ends; meanwhile the primary's
        // worker embeds, and its vectors arrive here with the WAL.
        json!("none on a standby: the primary embeds, and its vectors reach this server by replication (kip's workers start here on promotion, where kip is in shared_preload_libraries and the database in kip.worker_databases)")
    } else {
        json!("none for this database: pending elements wait for kip_embed_pending(), or list the database in kip.worker_databases (with kip in shared_preload_libraries) and restart the server")
    };
    JsonB(v)
}
