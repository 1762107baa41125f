//! Keyword retrieval with a normalized `_score` in [0, 1].
//!
//! Grounding fields: for concepts the `name`, `attributes.aliases` and
//! `attributes.description` (the `search_text` tsvector, GIN-indexed) plus
//! trigram similarity on the name (GIN `gin_trgm_ops`); for propositions the
//! predicate name, the link's `attributes.description` and the description of
//! the predicate's `$PropositionType` definition.
//!
//! Score: the best of
//! * 1.0 for an exact (case-insensitive) name or predicate match,
//! * 0.95 for an exact alias match,
//! * 0.5–0.95 for a substring match of the name (longer coverage scores higher),
//! * trigram similarity of the name,
//! * 0.9 × the full-text rank normalized by `rank / (rank + 1)`.
//!
//! Candidates come only from index-backed conditions (full-text match,
//! trigram similarity, substring via the trigram index), so a search never
//! scans a whole space.

use crate::compile::element::{concept_json, proposition_json};
use crate::compile::Params;
use crate::engine::Ctx;
use crate::exec::spi;
use kip_lang::KipError;
use serde_json::Value;

pub struct Query<'a> {
    pub term: &'a str,
    pub with_type: Option<&'a str>,
    pub threshold: f64,
    pub limit: i64,
}

/// The term as a LIKE pattern matching it anywhere, with LIKE's own
/// metacharacters escaped (computed in SQL from the bound term).
fn like_pattern(term: &str) -> String {
    format!("('%' || replace(replace(replace({term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')")
}

/// The bound pieces both searches share: placeholders for the space, the
/// term, the type restriction (on `type_column`), threshold and limit.
struct Bound {
    params: Params,
    space: String,
    term: String,
    like: String,
    type_filter: String,
    threshold: String,
    limit: String,
}

fn bind(q: &Query, ctx: &Ctx, type_column: &str) -> Bound {
    let mut params = Params::new();
    let space = params.text(ctx.space.name());
    let term = params.text(q.term);
    let type_filter = match q.with_type {
        Some(t) => format!("AND {type_column} = {}", params.text(t)),
        None => String::new(),
    };
    let threshold = params.push(crate::exec::SqlParam::Float(q.threshold));
    let limit = params.int(q.limit);
    let like = like_pattern(&term);
    Bound { params, space, term, like, type_filter, threshold, limit }
}

fn run(sql: &str, params: &Params, ctx: &Ctx) -> Result<Vec<Value>, KipError> {
    Ok(spi::query(sql, params.values(), ctx.access)?.into_iter().filter_map(|mut r| r.pop()).collect())
}

pub fn concepts(q: &Query, ctx: &Ctx) -> Result<Vec<Value>, KipError> {
    let Bound { params, space, term, like, type_filter, threshold, limit } = bind(q, ctx, "c.type");
    let sql = format!(
        "WITH q AS (SELECT plainto_tsquery('simple', {term}) AS ts),
         hits AS (
           SELECT c.*, greatest(
               CASE WHEN lower(c.name) = lower({term}) THEN 1.0 ELSE 0 END,
               CASE WHEN jsonb_typeof(c.attributes -> 'aliases') = 'array'
                     AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(c.attributes -> 'aliases') a(alias)
                                 WHERE lower(a.alias) = lower({term})) THEN 0.95 ELSE 0 END,
               CASE WHEN c.name ILIKE {like} THEN 0.5 + 0.45 * length({term})::float8 / greatest(length(c.name), 1) ELSE 0 END,
               similarity(c.name, {term}),
               0.9 * ts_rank_cd(c.search_text, q.ts, 32)
             )::float8 AS score
           FROM kip.concepts c, q
           WHERE c.space = {space} {type_filter}
             AND (c.search_text @@ q.ts OR c.name % {term} OR c.name ILIKE {like})
         )
         SELECT {json} || jsonb_build_object('metadata', ({json}) -> 'metadata' || jsonb_build_object('_score', round(h.score::numeric, 4)))
         FROM hits h
         WHERE h.score >= {threshold} AND h.score > 0
         ORDER BY h.score DESC, h.name, h.id
         LIMIT {limit}",
        json = concept_json("h"),
    );
    run(&sql, &params, ctx)
}

pub fn propositions(q: &Query, ctx: &Ctx) -> Result<Vec<Value>, KipError> {
    let Bound { params, space, term, like, type_filter, threshold, limit } = bind(q, ctx, "l.predicate");
    let sql = format!(
        "WITH q AS (SELECT plainto_tsquery('simple', {term}) AS ts),
         preds AS (
           SELECT d.name AS predicate, ts_rank_cd(d.search_text, q.ts, 32) AS rank
           FROM kip.concepts d, q
           WHERE d.space = {space} AND d.type = '$PropositionType'
             AND (d.search_text @@ q.ts OR d.name % {term} OR d.name ILIKE {like} OR lower(d.name) = lower(replace({term}, ' ', '_')))
         ),
         hits AS (
           SELECT l.*, greatest(
               CASE WHEN lower(l.predicate) IN (lower({term}), lower(replace({term}, ' ', '_'))) THEN 1.0 ELSE 0 END,
               CASE WHEN l.predicate ILIKE {like} THEN 0.5 + 0.45 * length({term})::float8 / greatest(length(l.predicate), 1) ELSE 0 END,
               similarity(l.predicate, {term}),
               0.9 * ts_rank_cd(l.search_text, q.ts, 32),
               0.85 * coalesce((SELECT max(pr.rank) FROM preds pr WHERE pr.predicate = l.predicate), 0)
             )::float8 AS score
           FROM kip.propositions l, q
           WHERE l.space = {space} {type_filter}
             AND (l.search_text @@ q.ts OR l.predicate IN (SELECT predicate FROM preds))
         )
         SELECT {json} || jsonb_build_object('metadata', ({json}) -> 'metadata' || jsonb_build_object('_score', round(h.score::numeric, 4)))
         FROM hits h
         WHERE h.score >= {threshold} AND h.score > 0
         ORDER BY h.score DESC, h.id
         LIMIT {limit}",
        json = proposition_json("h"),
    );
    run(&sql, &params, ctx)
}
