//! Embedding the backlog: every element whose `embedding` is NULL (new, or
//! stale since its grounding text changed) gets a vector from the
//! in-database model, in batches of `kip.embedding_batch` texts.
//!
//! Nothing is locked while the model runs. A vector is written only if the
//! element is still waiting and its grounding text is still the text that
//! was embedded, so a write that lands meanwhile is never overwritten with a
//! vector of the old text: it simply stays in the backlog for the next pass.
//! A row another transaction holds is skipped the same way, rather than
//! waited for.

use super::{runtime, settings, DIMENSIONS};
use crate::exec::{extensions, spi, Access, SqlParam};
use crate::compile::ids::ElementKind;
use kip_lang::KipError;

/// Model batches read from the backlog at once (then sorted by length).
const READ_BATCHES: usize = 8;

/// The two kinds of element, with the SQL that reads their backlog and
/// writes their vectors.
#[derive(Clone, Copy)]
enum Kind {
    Concept,
    Proposition,
}

impl Kind {
    fn pending_sql(self) -> &'static str {
        match self {
            Kind::Concept => {
                "SELECT c.id, kip.concept_grounding_text(c.type, c.name, c.attributes)
                 FROM kip.concepts c WHERE c.embedding IS NULL AND c.id > $1 AND ($3::text IS NULL OR c.space = $3)
                   AND ($4 OR c.space = ANY ($5::text[]))
                 ORDER BY c.id LIMIT $2"
            }
            Kind::Proposition => {
                "SELECT p.id, kip.proposition_grounding_text(p.space, p.subject, p.predicate, p.object, p.attributes)
                 FROM kip.propositions p WHERE p.embedding IS NULL AND p.id > $1 AND ($3::text IS NULL OR p.space = $3)
                   AND ($4 OR p.space = ANY ($5::text[]))
                 ORDER BY p.id LIMIT $2"
            }
        }
    }

    /// One statement stores the vectors of a whole model batch: `$1` the
    /// ids, `$2` the texts that were embedded, `$3` the vectors end to end
    /// (`DIMENSIONS` floats each, in the order of the ids). A row is written
    /// only if it still waits and its grounding text is still `$2`, and
    /// only if no other transaction holds it: a row being written is
    /// skipped (it stays in the backlog for the next pass), so the backfill
    /// never waits for a writer, and never joins a deadlock with writers
    /// (it locked the batch's rows in its own order, theirs in another).
    /// `IS TRUE` keeps the planner off the partial index of waiting rows:
    /// right after a batch of writes its statistics say the backlog is
    /// empty, and a plan that scans it (computing every waiting row's
    /// grounding text) instead of looking up the batch's ids by primary key
    /// took seconds per batch with a backlog of 20,000.
    fn store_sql(self, vector: &str) -> String {
        let (table, alias, grounding) = match self {
            Kind::Concept => ("kip.concepts", "c", grounding_sql(ElementKind::Concept)),
            Kind::Proposition => ("kip.propositions", "p", grounding_sql(ElementKind::Proposition)),
        };
        format!(
            "UPDATE {table} {alias}
             SET embedding = ($3::real[])[(b.ord - 1) * {DIMENSIONS} + 1 : b.ord * {DIMENSIONS}]::{vector}
             FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS b(id, text, ord)
             WHERE {alias}.id = b.id AND ({alias}.embedding IS NULL) IS TRUE AND {grounding} = b.text
               AND {alias}.id IN (SELECT l.id FROM {table} l WHERE l.id = ANY($1::bigint[]) FOR NO KEY UPDATE SKIP LOCKED)"
        )
    }
}

/// The SQL of an element's grounding text, the text its vector is computed
/// from, over a row of `kip.concepts` named `c` or of `kip.propositions`
/// named `p`.
pub fn grounding_sql(kind: ElementKind) -> &'static str {
    match kind {
        ElementKind::Concept => "kip.concept_grounding_text(c.type, c.name, c.attributes)",
        ElementKind::Proposition => "kip.proposition_grounding_text(p.space, p.subject, p.predicate, p.object, p.attributes)",
    }
}

/// Whether any element is waiting for a vector (cheap: a partial index).
pub fn has_pending() -> Result<bool, KipError> {
    let v = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE embedding IS NULL)
             OR EXISTS (SELECT 1 FROM kip.propositions WHERE embedding IS NULL)",
        &[],
        Access::ReadOnly,
    )?;
    Ok(v == serde_json::Value::Bool(true))
}

/// Embed up to `max` waiting elements (all of them with `None`) of one
/// space (every space with `None`); returns how many vectors were stored.
/// Concepts first, then propositions, in id order. Only the spaces the
/// caller may write are read: an element it may read but not update would
/// take a place of `max` and be run through the model for nothing, every
/// call. Fails when the model cannot run.
pub fn embed_pending(max: Option<i64>, space: Option<&str>) -> Result<i64, KipError> {
    runtime::ensure_loaded().map_err(super::model_error)?;
    let writable = crate::governance::access::writable_spaces()?;
    let every_space = writable.is_none();
    let writable = writable.unwrap_or_default();
    let vector = extensions::vector_type()?;
    let mut budget = max.unwrap_or(i64::MAX).max(0);
    let mut stored = 0;
    for kind in [Kind::Concept, Kind::Proposition] {
        let store = kind.store_sql(&vector);
        let mut after = 0i64;
        while budget > 0 {
            pgrx::check_for_interrupts!();
            // Read several model batches at once and group texts of similar
            // length, so a batch pads its texts to about the same length.
            let batch_size = settings::batch();
            let take = budget.min((batch_size * READ_BATCHES) as i64);
            let rows = spi::query(
                kind.pending_sql(),
                &[
                    SqlParam::Int(after),
                    SqlParam::Int(take),
                    space.map_or(SqlParam::NullText, |s| SqlParam::Text(s.to_string())),
                    SqlParam::Bool(every_space),
                    SqlParam::TextArray(writable.clone()),
                ],
                Access::ReadOnly,
            )?;
            if rows.is_empty() {
                break;
            }
            let mut pending: Vec<(i64, String)> = rows
                .iter()
                .filter_map(|r| Some((r[0].as_i64()?, r[1].as_str().unwrap_or_default().to_string())))
                .collect();
            after = pending.iter().map(|(id, _)| *id).max().unwrap_or(after);
            budget -= pending.len() as i64;
            pending.sort_by_key(|(_, text)| text.len());
            for batch in pending.chunks(batch_size) {
                pgrx::check_for_interrupts!();
                let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
                let vectors = runtime::embed(&texts).map_err(super::model_error)?;
                // One UPDATE per batch, not one per row.
                let ids: Vec<i64> = batch.iter().map(|(id, _)| *id).collect();
                let texts: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
                let flat: Vec<f32> = vectors.into_iter().flatten().collect();
                stored += spi::execute(
                    &store,
                    &[SqlParam::IntArray(ids), SqlParam::TextArray(texts), SqlParam::RealArray(flat)],
                    Access::ReadWrite,
                )? as i64;
            }
            if (rows.len() as i64) < take {
                break;
            }
        }
    }
    Ok(stored)
}
