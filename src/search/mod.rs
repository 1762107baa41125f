//! SEARCH: grounding natural-language terms to concepts and propositions
//! (RC10 §5.2), by keyword, by meaning, or both.
//!
//! * `keyword` — names, aliases and descriptions (`keyword`): exact and
//!   fuzzy names through indexes, any-term full-text match ranked BM25-style.
//! * `semantic` — cosine similarity between the query's embedding and the
//!   elements' grounding-text embeddings, through pgvector (`semantic`).
//! * `hybrid` (the default when semantic search is available) — both
//!   rankings fused (`fusion`): Reciprocal Rank Fusion, or a weighted sum.
//!
//! Without a usable embedding model (`embed::availability`), `semantic` and
//! `hybrid` run as keyword: degraded recall beats no recall (RC10 §5.2.1).
//!
//! Every mode reports `_score` in `[0, 1)`: scores saturate below 1, so
//! `THRESHOLD 1.0` returns nothing. Hits whose `_score` is below THRESHOLD
//! are dropped and the rest ordered by `_score` descending. In hybrid mode
//! the fused ranking chooses the hits, and `_score` is each hit's evidence,
//! its keyword score or cosine similarity (`fusion::Evidence`).

pub mod fusion;
pub mod keyword;
mod load;
mod query;
pub mod semantic;
mod space_words;
pub(crate) mod word_stats;

pub use query::{Hit, Mode, Query};

use crate::embed;
use crate::exec::Ctx;
use kip_lang::KipError;
use serde_json::Value;

/// Candidates each ranking contributes to a fusion: enough that an element
/// ranked modestly by both still surfaces.
fn fusion_depth(limit: i64) -> i64 {
    (limit * 4).clamp(40, 1000)
}

/// Run a SEARCH; `mode` is the one asked for (None: the default).
pub fn run(q: &Query, mode: Option<Mode>, ctx: &Ctx) -> Result<Vec<Value>, KipError> {
    let semantic_ok = embed::availability(false).available;
    let mode = match mode {
        None if semantic_ok => Mode::Hybrid,
        None => Mode::Keyword,
        Some(m) => m,
    };
    let hits = match mode {
        Mode::Semantic => match embed::query_vector(q.term)? {
            Some(v) => threshold_and_limit(semantic::search(q, &v, q.limit, semantic::Role::Alone, ctx)?, q),
            None => keyword_alone(q, ctx)?,
        },
        Mode::Hybrid if embed::query_vector_expected()? => {
            // The keyword half runs while the model embeds the term.
            let depth = fusion_depth(q.limit);
            let (vector, kw) =
                embed::query_vector_while(q.term, || keyword::search(q, depth, keyword::Role::HybridHalf, ctx));
            match vector? {
                Some(v) => {
                    let kw = kw?;
                    let sem = semantic::search(q, &v, depth, semantic::Role::HybridHalf, ctx)?;
                    let fused = fusion::fuse(&kw, &sem, embed::settings::fusion()?);
                    // The fusion chooses the page; THRESHOLD and `_score`
                    // are the hits' evidence (a fused score is a rank).
                    let evidence = fusion::Evidence::of(&kw, &sem);
                    evidence.score(order_and_limit(evidence.keep_at_least(fused, q.threshold), q))
                }
                None => keyword_alone(q, ctx)?,
            }
        }
        // Keyword asked for, or no query vector: keyword.
        _ => keyword_alone(q, ctx)?,
    };
    load::elements(q.kind, &hits, ctx)
}

fn keyword_alone(q: &Query, ctx: &Ctx) -> Result<Vec<Hit>, KipError> {
    Ok(threshold_and_limit(keyword::search(q, q.limit, keyword::Role::Alone, ctx)?, q))
}

/// Drop hits below THRESHOLD (and zero scores), order by score, cap at LIMIT.
/// THRESHOLD applies to the score as the hit shows it (`_score`, four
/// decimals rounded down), so no hit shows a score below the THRESHOLD.
fn threshold_and_limit(mut hits: Vec<Hit>, q: &Query) -> Vec<Hit> {
    hits.retain(|h| load::round4(h.score) >= q.threshold);
    order_and_limit(hits, q)
}

/// Drop zero scores, order by score, cap at LIMIT.
fn order_and_limit(mut hits: Vec<Hit>, q: &Query) -> Vec<Hit> {
    hits.retain(|h| h.score > 0.0);
    // Stable: ties keep the order the ranking produced them in.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(q.limit.max(0) as usize);
    hits
}
