//! Semantic retrieval: the elements whose grounding-text embedding is
//! nearest (cosine) to the query's embedding, through pgvector.
//!
//! Two plans, chosen per query:
//! * **exact** when the space (and type) holds at most `EXACT_MAX`
//!   elements: every vector is compared, nothing can be missed, and at that
//!   size it is as fast as the index;
//! * **HNSW** otherwise, with pgvector's iterative index scan
//!   (`hnsw.iterative_scan = relaxed_order`), so filtering by space, kind and
//!   WITH TYPE keeps scanning the graph until enough rows pass the filter
//!   instead of returning fewer; `hnsw.ef_search` is twice the depth asked
//!   (at least the role's minimum, `EF_SEARCH_MIN_*`), or the session's own
//!   `hnsw.ef_search` when larger, and the scan may visit at least
//!   `MAX_SCAN_TUPLES_MIN` index tuples before it gives up. The settings are
//!   changed for this statement only and restored after it. The scan's rows
//!   come only roughly in order, so it reads twice the depth and keeps the
//!   best.
//!
//! Elements not embedded yet (`embedding IS NULL`) are not candidates here;
//! hybrid SEARCH still finds them through its keyword half.
//!
//! Score: cosine similarity, clamped to [0, SCORE_CEILING].

use super::query::{Hit, Query};
use crate::compile::ids::ElementKind;
use crate::compile::Params;
use crate::exec::Ctx;
use crate::exec::{extensions, spi, SqlParam};
use kip_lang::KipError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Largest candidate set searched exactly.
const EXACT_MAX: i64 = 2000;

/// Scores saturate below 1: an identical text still scores under it.
pub const SCORE_CEILING: f64 = 0.9999;

/// The table, and the column WITH TYPE restricts, of each kind.
fn table(kind: ElementKind) -> (&'static str, &'static str) {
    match kind {
        ElementKind::Concept => ("kip.concepts", "type"),
        ElementKind::Proposition => ("kip.propositions", "predicate"),
    }
}

/// The `k` nearest elements to `vector`, best first.
pub fn search(q: &Query, vector: &[f32], k: i64, role: Role, ctx: &Ctx) -> Result<Vec<Hit>, KipError> {
    let (table, type_column) = table(q.kind);
    let mut params = Params::new();
    let space = params.text(ctx.space.name());
    let type_filter = match q.with_type {
        Some(t) => format!("AND e.{type_column} = {}", params.text(t)),
        None => String::new(),
    };
    let count_sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM {table} e WHERE e.space = {space} {type_filter} LIMIT {limit}) s",
        limit = EXACT_MAX + 1
    );
    let key = (q.kind == ElementKind::Concept, ctx.space.name().to_string(), q.with_type.map(str::to_string));
    let population = match large_population(&key) {
        Some(known) => known,
        None => {
            let counted = spi::query_scalar(&count_sql, params.values(), ctx.access)?.as_i64().unwrap_or(0);
            remember_population(key, counted);
            counted
        }
    };
    if population == 0 {
        return Ok(Vec::new());
    }
    let exact = population <= EXACT_MAX;
    let vector_param = format!("{}::{}", params.push(SqlParam::RealArray(vector.to_vec())), extensions::vector_type()?);
    let distance = format!("(e.embedding {} {vector_param})", extensions::vector_op("<=>")?);
    // `+ 0` hides the distance from the HNSW index: the exact plan sorts.
    let order = if exact { format!("{distance} + 0") } else { distance.clone() };
    let k = k.max(1);
    // The index scan returns its rows only roughly in order
    // (`relaxed_order`): it reads twice the depth, of which the k best stay.
    let depth = params.int(if exact { k } else { k.saturating_mul(2) });
    let limit = params.int(k);
    let sql = format!(
        "SELECT n.id, n.sim FROM (
           SELECT e.id, (1 - {distance})::float8 AS sim
           FROM {table} e
           WHERE e.space = {space} AND e.embedding IS NOT NULL {type_filter}
           ORDER BY {order}
           LIMIT {depth}
         ) n
         ORDER BY n.sim DESC, n.id
         LIMIT {limit}"
    );
    let rows = if exact {
        spi::query_planned(&sql, params.values(), ctx.access, spi::Planning::Custom)?
    } else {
        with_iterative_scan(k, role, ctx, || spi::query_planned(&sql, params.values(), ctx.access, spi::Planning::Custom))?
    };
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some(Hit { id: r[0].as_i64()?, score: r[1].as_f64().unwrap_or(0.0).clamp(0.0, SCORE_CEILING), unembedded: false })
        })
        .collect())
}

thread_local! {
    /// Populations (kind, space, WITH TYPE) found above `EXACT_MAX`, with
    /// when they were counted.
    static LARGE: RefCell<HashMap<PopulationKey, Instant>> = RefCell::new(HashMap::new());
}

/// (concepts?, space, WITH TYPE).
type PopulationKey = (bool, String, Option<String>);

/// How long a backend trusts that a population it counted is above
/// `EXACT_MAX`. Only that verdict is remembered: a small population is
/// counted at each search (cheap at that size, and it may be empty), while
/// counting a large one reads `EXACT_MAX` index entries (~0.3–0.5 ms). A
/// large population that shrank meanwhile is still searched correctly, by
/// the index.
const LARGE_TTL: Duration = Duration::from_secs(30);

fn large_population(key: &PopulationKey) -> Option<i64> {
    LARGE.with(|l| l.borrow().get(key).filter(|at| at.elapsed() < LARGE_TTL).map(|_| EXACT_MAX + 1))
}

fn remember_population(key: PopulationKey, counted: i64) {
    LARGE.with(|l| {
        let mut l = l.borrow_mut();
        if counted > EXACT_MAX {
            if l.len() >= 256 {
                l.clear();
            }
            l.insert(key, Instant::now());
        } else {
            l.remove(&key);
        }
    })
}

/// Whether the semantic ranking is the answer (semantic mode) or the
/// semantic half of a hybrid SEARCH, fused with the keyword ranking.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Alone,
    HybridHalf,
}

/// The smallest `hnsw.ef_search` (the candidate list the HNSW scan keeps,
/// from which the k nearest are returned) of each role. Measured on the
/// benchmark's 100,000 near-duplicate descriptions with an index built with
/// `ef_construction = 128` (benches/SEARCH-BENCH.md): recall@10 against an
/// exact scan, right after the build, 0.905 at 64, 0.94 at 100, 0.985 at
/// 160; after 20,000 vectors were replaced (re-embedded elements) and the
/// index vacuumed, 0.855 at 80, 0.90 at 160, 0.91 at 200, 0.965 at 240 and
/// 1.0 at 320, while the scan took ~1.9 ms at 160, ~2.1 at 240 and ~3.4 at
/// 320. Semantic mode's hits are the answer, so it keeps 240; hybrid's
/// semantic half only proposes candidates to a fusion that the keyword half
/// also feeds, so it keeps 64.
const EF_SEARCH_MIN_ALONE: i64 = 240;
const EF_SEARCH_MIN_HYBRID: i64 = 64;

/// `hnsw.ef_search` for `k` hits: twice the depth, at least the role's
/// minimum, at most 1,000.
fn ef_search(k: i64, role: Role) -> i64 {
    let min = match role {
        Role::Alone => EF_SEARCH_MIN_ALONE,
        Role::HybridHalf => EF_SEARCH_MIN_HYBRID,
    };
    (2 * k).clamp(min, 1000)
}

/// The fewest index tuples the iterative scan may visit before it stops
/// (`hnsw.max_scan_tuples`, 20,000 by default). The index holds every
/// space's vectors: a space's query scans past the other spaces' nearer
/// vectors until enough of its own pass the filter, and pgvector's default
/// stopped inside a neighbouring space of 40,000 near-duplicates, returning
/// 8 hits of 10 while the space held hundreds more. A scan that long is
/// still bounded by `kip.command_timeout`.
const MAX_SCAN_TUPLES_MIN: i64 = 1_000_000;

/// Run `body` with pgvector's iterative HNSW scan on, `ef_search` sized
/// for `k` (twice the depth, at least the role's minimum, or the session's `hnsw.ef_search`
/// when that is larger: the knob for more recall) and `max_scan_tuples` at
/// least `MAX_SCAN_TUPLES_MIN`, then put the settings back as they were.
fn with_iterative_scan<T>(k: i64, role: Role, ctx: &Ctx, body: impl FnOnce() -> Result<T, KipError>) -> Result<T, KipError> {
    let ef_search = ef_search(k, role);
    // The first columns read the old values before the later ones set the
    // new (a target list is evaluated left to right); `'[1]'::vector` makes
    // sure pgvector, and so its settings, are loaded.
    let vector = extensions::vector_type()?;
    let old = spi::query(
        &format!(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'),
                    current_setting('hnsw.max_scan_tuples'),
                    set_config('hnsw.ef_search', greatest($1, current_setting('hnsw.ef_search')::int)::text, true),
                    set_config('hnsw.iterative_scan', 'relaxed_order', true),
                    set_config('hnsw.max_scan_tuples', greatest($2, current_setting('hnsw.max_scan_tuples')::int)::text, true)
             FROM (SELECT '[1]'::{vector}) AS loaded"
        ),
        &[SqlParam::Int(ef_search), SqlParam::Int(MAX_SCAN_TUPLES_MIN)],
        ctx.access,
    )?;
    let restore = |row: &[serde_json::Value]| -> Result<(), KipError> {
        let setting = |i: usize, default: &str| row.get(i).and_then(|v| v.as_str()).unwrap_or(default).to_string();
        spi::query(
            "SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', $2, true),
                    set_config('hnsw.max_scan_tuples', $3, true)",
            &[
                SqlParam::Text(setting(0, "40")),
                SqlParam::Text(setting(1, "off")),
                SqlParam::Text(setting(2, "20000")),
            ],
            ctx.access,
        )?;
        Ok(())
    };
    let result = body();
    if let Some(row) = old.first() {
        restore(row)?;
    }
    result
}
