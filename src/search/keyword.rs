//! Keyword retrieval: names, aliases and descriptions, ranked with a score
//! in [0, 1).
//!
//! Fields: for concepts the `search_text` tsvector (name, `aliases`,
//! `description`) and the name itself; for propositions the predicate, the
//! link's `description`, and the `$PropositionType` definition of the
//! predicate.
//!
//! **Candidates** come only from index-backed, bounded top-k lookups, so no
//! query scores more rows than it needs, whatever the size of the memory,
//! and no source reads the posting list of a common word:
//! * exact name, case-insensitive (`(space, lower(name))` btree);
//! * exact alias, as written or lowercased (`attributes @> {"aliases":
//!   [term]}`, the attributes GIN index), however common its words;
//! * elements containing every word of a multi-word term (the space's
//!   keyword index, [`space_words`]), unless one of its words is in no
//!   element of the space;
//! * for each word that is not common in the space, up to `candidates`
//!   elements containing it: words are OR-ed, so `hiking chess` finds an
//!   element that mentions either. A word is common in the space when the
//!   planner's statistics of the keyword index (`pg_stats.most_common_elems`
//!   of `space ␟ word`) put it in `COMMON_ROWS` of the space's rows or more,
//!   or when it is in `DF_CAP` elements of the space by count. One GIN
//!   lookup per word does both: it collects the ids it counts, and a word
//!   that is not common has all its elements among them (WITH TYPE, which
//!   the count does not apply, looks its candidates up separately). The
//!   index keys each word by its space, so a word another space uses a
//!   million times is counted here from this space's own short posting list;
//! * for a common word, only when the sources above found fewer than asked
//!   (and, in hybrid, for a one-word term only): its first matches in a
//!   window of the space's `COMMON_WINDOW` × k newest elements, at least
//!   `COMMON_WINDOW_MIN`.
//!   Any handful of the thousands of elements containing it is as good as
//!   another. The window is bounded, so it is tried for every common word:
//!   statistics lag behind writes, and a word they call common may since
//!   have become rare in the space (then the window finds few and the
//!   fallback below runs), or be common here but unknown to them;
//! * trigram sources, names containing the term (3+ characters) and the
//!   20 names most similar to it (trigram GIN): always on a small database
//!   (`FUZZY_ALWAYS_BELOW` concepts), else only as keyword mode's fallback
//!   for a misspelt name ([`Role`]).
//!
//! **Score** of a candidate, the best of:
//! * 0.99 for the exact name (0.99 for the exact predicate of a link);
//! * 0.95 for an exact alias;
//! * 0.5–0.9 when the name contains the term, higher the more of it the
//!   term covers;
//! * 0.9 × trigram similarity of the name, when at least 0.3;
//! * 0.9 × a BM25-style text score: the words the element contains, each
//!   weighted by its inverse document frequency in the space (rare words
//!   count more) and by its saturating term frequency with length
//!   normalisation (k1 = 1.2, b = 0.75), divided by the total weight of the
//!   term's words, so containing every word scores highest.
//!
//! Where a word's posting list or a name's trigrams drive a lookup, the
//! space is written
//! `(space = $1) IS TRUE`: a filter on the rows the GIN index returns, never
//! a second bitmap built from the space's btree (every element of a large
//! space) and AND-ed with it, which the planner otherwise picks when it
//! cannot see how rare the word is.
//!
//! Each GIN lookup also reads the index's whole pending list (the recent
//! writes, up to `gin_pending_list_limit`), so the statement makes as few as
//! it can: one per word that is not common, one for the all-words source.
//!
//! The statement runs on its generic plan, planned once per backend and SQL
//! text (`spi::Planning::GenericIndexed`): its plan does not depend on the term,
//! and planning it for every search cost ~2 ms, more than most executions.
//! It is planned with sequential scans disabled: every source is a bounded
//! index lookup, and a generic plan, which knows no value, costed a
//! sequential scan under a LIMIT as stopping early, and read a whole table
//! when the value was rare. Sources whose gate is known to be closed before the statement runs (the
//! trigram sources on a large memory, unless keyword mode may fall back to
//! them) are left out of the SQL text.
//!
//! pg_trgm is called schema-qualified (`exec::extensions`), so keyword search
//! works whatever `search_path` is.

use super::query::{Hit, Query};
use super::space_words::{self, Lookup};
use super::word_stats::{self, WordStats};
use crate::compile::ids::ElementKind;
use crate::compile::Params;
use crate::exec::Ctx;
use crate::exec::{extensions, owner, spi, subxact, SqlParam};
use kip_lang::KipError;

/// Words of a term that are looked up (the rest are ignored).
const MAX_WORDS: usize = 16;
/// Document frequencies are counted up to this many elements: beyond it a
/// word is common, and counting further would cost more than it tells.
const DF_CAP: i64 = 200;
/// A word the planner's statistics (`pg_stats.most_common_elems` of the
/// keyword index) put in at least this many rows of the space is common
/// without being counted: counting it would read a posting list of that
/// size.
const COMMON_ROWS: i64 = 2000;
/// A common word's matches are looked for among this many elements per
/// hit asked (a short scan that stops at the first matches, not its long
/// posting list), and among at least [`COMMON_WINDOW_MIN`].
const COMMON_WINDOW: i64 = 20;
/// The smallest window: a word the statistics call common may have become
/// rare in this space since they were gathered, and its few matches here
/// older than the newest `COMMON_WINDOW` × k elements. The
/// scan stops at the first k matches, so a word common in the space costs
/// what it did; a rare one costs this many index entries and rows at most
/// (a few milliseconds), and a space of this size is searched whole.
const COMMON_WINDOW_MIN: i64 = 2_000;
/// The nearest-name source ranks at most this many similar names, the
/// first it meets in the table's order: when a space holds a hundred
/// thousand names alike (`Conversation-<n>`, `person_<n>`), a misspelling
/// of their common part is similar to each, and ranking them all rechecked
/// every one (350 ms for 100,000; 29 ms with this bound, mostly the index's
/// bitmap of their trigrams).
const SIMILAR_NAMES_RANKED: i64 = 2_000;
/// Below this many elements (all spaces), trigram matching always runs.
const FUZZY_ALWAYS_BELOW: i64 = 20_000;
/// Above `FUZZY_ALWAYS_BELOW`, typo matching is tried for terms of at most
/// this many words (a name), not for questions.
const FUZZY_MAX_WORDS: usize = 3;

/// The term as a LIKE pattern matching it anywhere, with LIKE's own
/// metacharacters escaped (computed in SQL from the bound term).
/// The expression the trigram index `concepts_name_trgm_idx` is built on:
/// the lowercased name (pg_trgm folds case anyway, so `LIKE` on it is
/// `ILIKE` on the name, and `<->` distances are the same), in the "C"
/// collation so that no equality on `name` or `lower(name)` anywhere else
/// can be planned onto this index: a trigram scan answers `name = 'x'`
/// correctly but reads much of the index (3.5 ms where the btree takes
/// 0.02 ms, with the GiST index of earlier releases), and the planner,
/// which costs both alike, picked it for FIND anchors and schema lookups.
/// The nearest-name source takes only names
/// similar to the term (`%`, pg_trgm's similarity threshold, 0.3 by default:
/// below it the trigram part of the score is 0 anyway), nearest first and
/// then by id: names at the same distance would otherwise be cut in the
/// index's order, which other spaces' rows change, and the candidates (and
/// so the average document length of the BM25 score) with it. The `%`
/// condition keeps that ordering cheap: it is computed over the similar
/// names only (at most `SIMILAR_NAMES_RANKED`), never over every name of
/// the space.
const NAME_TRGM_KEY: &str = "(lower(c.name) COLLATE \"C\")";

fn like_pattern(term: &str) -> String {
    format!("('%' || replace(replace(replace({term}, E'\\\\', E'\\\\\\\\'), '%', E'\\\\%'), '_', E'\\\\_') || '%')")
}

/// The words of the term with their inverse document frequency over the
/// space (`df` in the space's rows of `table`, `space_n` the space's size
/// estimate; `n` is the table's), as CTEs `terms`, `stats` (the table's
/// word statistics, bound as parameters), `df` (with `common`: the word
/// brings no candidates of its own) and `idf`. Both frequencies are the
/// space's: with the table's size as N, every word of a small space looked
/// rare, and the weights of its rare and common words drew together.
fn idf_ctes(table: &str, stats: &WordStats, space: &str, term: &str, params: &mut Params, ctx: &Ctx) -> String {
    let has_word = stats.lookup().has_word("x", "e");
    let (space_words, space_freqs) = stats.of_space(ctx.space.name());
    let space_x = space_filter("x", space);
    let key = space_words::key(space, "w.lexeme");
    let n = params.push(SqlParam::Float(stats.rows));
    let space_n = params.push(SqlParam::Float(stats.space_rows(ctx.space.name())));
    let words = params.push(SqlParam::TextArray(space_words));
    let freqs = params.push(SqlParam::RealArray(space_freqs));
    format!(
        "terms AS MATERIALIZED (
           SELECT w.lexeme, plainto_tsquery('simple', w.lexeme) AS tq, ARRAY[{key}] AS key
           FROM unnest(tsvector_to_array(to_tsvector('simple', {term}))) AS w(lexeme)
           LIMIT {MAX_WORDS}
         ),
         stats AS MATERIALIZED (
           SELECT {n}::float8 AS n, {space_n}::float8 AS space_n, {words}::text[] AS elems, {freqs}::real[] AS freqs
         ),
         estimated AS MATERIALIZED (
           SELECT t.lexeme, t.tq, t.key,
                  coalesce(st.freqs[array_position(st.elems, t.lexeme::text)] * st.n, 0)::float8 AS rows
           FROM terms t, stats st
         ),
         df AS MATERIALIZED (
           SELECT e.lexeme, e.tq, e.key, d.df, d.df >= {DF_CAP} AS common, l.ids
           FROM estimated e,
                LATERAL (SELECT ARRAY(SELECT x.id FROM {table} x
                                      WHERE e.rows < {COMMON_ROWS} AND {space_x} AND {has_word}
                                      LIMIT {DF_CAP}) AS ids) l,
                LATERAL (SELECT CASE WHEN e.rows >= {COMMON_ROWS} THEN e.rows
                                     ELSE cardinality(l.ids)::float8 END AS df) d
         ),
         idf AS MATERIALIZED (
           SELECT d.lexeme, d.tq, ln(1 + (n.n - d.df + 0.5) / (d.df + 0.5)) AS idf
           FROM df d,
                (SELECT greatest((SELECT space_n FROM stats), (SELECT max(df) FROM df), 1)::float8 AS n) n
         )"
    )
}

/// Whether keyword search answers alone (keyword mode, or no model) or is
/// the keyword half of hybrid, whose semantic half answers what the words
/// miss: the expensive fallbacks are only worth their cost when alone.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// Trigram sources also when the word sources found nothing for a short
    /// term (a misspelt name); common words bring candidates whenever the
    /// other sources found fewer than asked.
    Alone,
    /// Trigram sources only on a small memory; common words bring
    /// candidates only for a one-word term ("hiking"), not for the filler
    /// words of a question ("a", "who").
    HybridHalf,
}

/// Whether trigram matching runs: always on a small memory, else (as a
/// fallback) only when the word sources found nothing (`primary_cand` and
/// `common_cand` empty) for a short term. A trigram scan of a large table costs tens of
/// milliseconds when the term's trigrams are common, so there it is the
/// fallback for a partial or misspelt name, not a routine source.
///
/// `None` when the gate is closed whatever the statement finds: `rows` (the
/// table's size, as the statement's `stats` will say) is large and the role
/// or the term rules the fallback out.
fn trigram_gate(term: &str, role: Role, rows: f64) -> Option<String> {
    let short_term = term.split_whitespace().count() <= FUZZY_MAX_WORDS;
    let fallback = match role {
        Role::Alone if short_term => {
            "OR (NOT EXISTS (SELECT 1 FROM primary_cand) AND NOT EXISTS (SELECT 1 FROM common_cand))"
        }
        _ if rows >= FUZZY_ALWAYS_BELOW as f64 => return None,
        _ => "",
    };
    Some(format!("((SELECT n FROM stats) < {FUZZY_ALWAYS_BELOW} {fallback})"))
}

/// The candidates of each word that is not common: the ids its `df` row
/// collected while counting it (all of them, since it is in fewer than
/// `DF_CAP` elements), or, under WITH TYPE (which the count does not
/// apply), a lookup of its own.
fn word_source(table: &str, alias: &str, space_cond: &str, type_filter: &str, cand: &str, lookup: Lookup) -> String {
    if type_filter.is_empty() {
        format!("(SELECT u.id FROM df, LATERAL unnest(df.ids[1:{cand}]) AS u(id) WHERE NOT df.common)")
    } else {
        let has_word = lookup.has_word(alias, "df");
        format!(
            "(SELECT x.id FROM df, LATERAL (
              SELECT {alias}.id FROM {table} {alias}
              WHERE {space_cond} AND {has_word} {type_filter} LIMIT {cand}) x
            WHERE NOT df.common)"
        )
    }
}

/// The CTE `common_cand`: each common word's first `limit` matches among
/// the space's `window` newest elements of `table`, read backwards from
/// the `(space, id)` btree and stopping at those matches, never the word's
/// posting list (`IS TRUE` keeps the planner off GIN); only when the
/// sources of `primary_cand` found fewer than `limit`, and, as hybrid's
/// keyword half, only for a one-word term ("hiking"), not for the filler
/// words of a question ("a", "who"), which the semantic half answers
/// better. `type_filter` is written on `alias`.
///
/// The space is a range of one value, ordered on: written as an equality,
/// it made `space` a constant of the order, and the generic plan read the
/// primary key backwards filtering on the space instead, through every
/// newer element of the other spaces (15 ms for 5 hits in a space older
/// than the others).
fn common_cand(table: &str, alias: &str, space: &str, type_filter: &str, window: &str, limit: &str, role: Role) -> String {
    let gate = match role {
        Role::Alone => "true",
        Role::HybridHalf => "(SELECT count(*) FROM terms) = 1",
    };
    format!(
        "common_cand AS MATERIALIZED (
           SELECT x.id FROM df, LATERAL (
             SELECT w.id FROM (
               SELECT {alias}.id, {alias}.search_text FROM {table} {alias}
               WHERE {alias}.space >= {space} AND {alias}.space <= {space} {type_filter}
               ORDER BY {alias}.space DESC, {alias}.id DESC LIMIT {window}) w
             WHERE (w.search_text @@ df.tq) IS TRUE LIMIT {limit}) x
           WHERE df.common AND {gate} AND (SELECT count(*) FROM primary_cand) < {limit}
         )"
    )
}

/// The space condition of a lookup driven by a word's posting list: a
/// filter on the rows the GIN index returns (see the module comment), never
/// a bitmap of the whole space AND-ed with it.
fn space_filter(alias: &str, space: &str) -> String {
    format!("({alias}.space = {space}) IS TRUE")
}

/// The BM25-style text score of the row `d` (with `d.search_text` and its
/// length `d.dl`), against `idf` and the candidates' mean length `avgdl`.
fn text_score() -> &'static str {
    "coalesce((
        SELECT sum(i.idf * (0.5 + 0.5 * (m.tf * 2.2) / (m.tf + 1.2 * (0.25 + 0.75 * d.dl / (SELECT v FROM avgdl))) / 2.2))
        FROM idf i
        JOIN LATERAL (SELECT coalesce(array_length(u.positions, 1), 1)::float8 AS tf
                      FROM unnest(d.search_text) u WHERE u.lexeme = i.lexeme) m ON true
     ) / nullif((SELECT sum(idf) FROM idf), 0), 0)"
}

/// The `k` best keyword hits, best first.
pub fn search(q: &Query, k: i64, role: Role, ctx: &Ctx) -> Result<Vec<Hit>, KipError> {
    let (sql, params) = match q.kind {
        ElementKind::Concept => concepts_sql(q, k, role, ctx)?,
        ElementKind::Proposition => propositions_sql(q, k, role, ctx)?,
    };
    // The similar-name source's `%` reads pg_trgm's threshold from the
    // session; kip's ranking assumes pg_trgm's default (a name scores when
    // its similarity reaches 0.3), and an application that tunes pg_trgm
    // for its own queries must not change what SEARCH finds.
    // As the owner of kip's tables (`exec::owner`): the sources' index
    // lookups use operators row-level security keeps from an index.
    // `to_tsvector` of the term sends a NOTICE for each word over 2,047
    // bytes (never indexed, so it matches nothing): not the caller's
    // business, as `client_min_messages = warning` keeps it.
    let settings = [(c"pg_trgm.similarity_threshold", c"0.3"), (c"client_min_messages", c"warning")];
    let rows = subxact::with_pinned_settings(&settings, || {
        owner::as_tables_owner(|| spi::query_planned(&sql, params.values(), ctx.access, spi::Planning::GenericIndexed))
    })?;
    Ok(rows
        .iter()
        .filter_map(|r| Some(Hit { id: r[0].as_i64()?, score: r[1].as_f64()?, unembedded: r[2].as_bool()? }))
        .collect())
}

/// Candidates per source: enough for the asked k, bounded.
fn candidates(k: i64) -> i64 {
    (k * 5).clamp(50, 2000)
}

fn concepts_sql(q: &Query, k: i64, role: Role, ctx: &Ctx) -> Result<(String, Params), KipError> {
    let mut params = Params::new();
    let stats = word_stats::of("kip.concepts", ctx.access)?;
    let lookup = stats.lookup();
    let space = params.text(ctx.space.name());
    let term = params.text(q.term);
    let type_filter = match q.with_type {
        Some(t) => format!("AND c.type = {}", params.text(t)),
        None => String::new(),
    };
    let cand = params.int(candidates(k));
    let limit = params.int(k.max(1));
    let window = params.int((k.max(1) * COMMON_WINDOW).max(COMMON_WINDOW_MIN));
    let common_cand = common_cand("kip.concepts", "c", &space, &type_filter, &window, &limit, role);
    let like = like_pattern(&term);
    let lower_like = like_pattern(&format!("lower({term})"));
    let idf = idf_ctes("kip.concepts", &stats, &space, &term, &mut params, ctx);
    let knn = extensions::trgm_op("<->")?;
    let similar = extensions::trgm_op("%")?;
    let similarity = extensions::trgm_fn("similarity")?;
    let text = text_score();
    let space_c = space_filter("c", &space);
    let has_all = lookup.has_all("c", &term);
    let word_source = word_source("kip.concepts", "c", &space_c, &type_filter, &cand, lookup);
    // The trigram sources are left out of the statement when their gate is
    // known to be closed (a large memory, and no fallback for this role and
    // term): less to plan.
    let trigram_sources = match trigram_gate(q.term, role, stats.rows) {
        None => String::new(),
        Some(trigram) => format!(
            "UNION
           (SELECT c.id FROM kip.concepts c
            WHERE {trigram} AND length({term}) >= 3
              AND {space_c} AND {NAME_TRGM_KEY} LIKE {lower_like} {type_filter} LIMIT {cand})
           UNION
           (SELECT s.id FROM (
              SELECT c.id, {NAME_TRGM_KEY} AS key FROM kip.concepts c
              WHERE {trigram} AND {space_c} AND {NAME_TRGM_KEY} {similar} lower({term}) {type_filter}
              LIMIT {SIMILAR_NAMES_RANKED}) s
            ORDER BY s.key {knn} lower({term}), s.id LIMIT 20)"
        ),
    };
    let sql = format!(
        "WITH {idf},
         -- An exact alias, as written or lowercased: probes of the
         -- attributes GIN index (jsonb containment), whatever the frequency
         -- of its words. A CTE of its own, planned for all its rows: under
         -- a LIMIT the planner expected matches early in a sequential scan
         -- (containment's default selectivity), and a term no alias holds
         -- read the whole table (200 ms a probe at 1.2 million concepts).
         alias_cand AS MATERIALIZED (
           SELECT c.id FROM kip.concepts c
           WHERE {space_c} {type_filter}
             AND (c.attributes @> jsonb_build_object('aliases', jsonb_build_array({term}::text))
                  OR c.attributes @> jsonb_build_object('aliases', jsonb_build_array(lower({term}::text))))
         ),
         primary_cand AS MATERIALIZED (
           (SELECT c.id FROM kip.concepts c
            WHERE c.space = {space} AND lower(c.name) = lower({term}) {type_filter} LIMIT 20)
           UNION
           (SELECT c.id FROM kip.concepts c
            WHERE (SELECT count(*) FROM terms) > 1 AND NOT EXISTS (SELECT 1 FROM df WHERE df.df = 0)
              AND {space_c} AND {has_all} {type_filter} LIMIT {cand})
           UNION
           (SELECT id FROM alias_cand LIMIT 40)
           UNION
           {word_source}
         ),
         -- A common word's candidates, only when the sources above found
         -- fewer than asked: the first matches in a bounded window of the
         -- space's newest elements, read backwards from the (space, id)
         -- btree, never the word's whole posting list (`IS TRUE` keeps the
         -- planner off GIN). Newest first: the recent memories, and never
         -- the bootstrap's schema nodes, which a window in name order
         -- filled on a young space.
         {common_cand},
         cand AS (
           SELECT id FROM primary_cand
           UNION
           SELECT id FROM common_cand
           {trigram_sources}
         ),
         -- Each candidate's row by its id: a lateral lookup (its LIMIT
         -- keeps it from being flattened into a join), since the planner,
         -- which cannot count the candidates, may join them by hash to a
         -- scan of the whole table (a million rows read for fifty).
         docs AS MATERIALIZED (
           SELECT c.id, c.name, c.attributes, c.search_text, length(c.search_text)::float8 AS dl,
                  c.unembedded, {similarity}(c.name, {term}) AS sim
           FROM cand, LATERAL (
             SELECT r.id, r.name, r.attributes, r.search_text, r.embedding IS NULL AS unembedded
             FROM kip.concepts r WHERE r.id = cand.id LIMIT 1) c
         ),
         avgdl AS (SELECT greatest(avg(dl), 1) AS v FROM docs),
         scored AS (
           SELECT d.id, d.name, d.unembedded, greatest(
               CASE WHEN lower(d.name) = lower({term}) THEN 0.99 ELSE 0 END,
               CASE WHEN jsonb_typeof(d.attributes -> 'aliases') = 'array'
                     AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(d.attributes -> 'aliases') a(alias)
                                 WHERE lower(a.alias) = lower({term})) THEN 0.95 ELSE 0 END,
               CASE WHEN length({term}) >= 3 AND d.name ILIKE {like}
                    THEN 0.5 + 0.4 * length({term})::float8 / greatest(length(d.name), 1) ELSE 0 END,
               CASE WHEN d.sim >= 0.3 THEN 0.9 * d.sim ELSE 0 END,
               0.9 * {text}
             )::float8 AS score
           FROM docs d
         )
         SELECT s.id, s.score, s.unembedded FROM scored s WHERE s.score > 0
         ORDER BY s.score DESC, s.name COLLATE \"C\", s.id
         LIMIT {limit}"
    );
    Ok((sql, params))
}

fn propositions_sql(q: &Query, k: i64, role: Role, ctx: &Ctx) -> Result<(String, Params), KipError> {
    let mut params = Params::new();
    let stats = word_stats::of("kip.propositions", ctx.access)?;
    let lookup = stats.lookup();
    let space = params.text(ctx.space.name());
    let term = params.text(q.term);
    let type_filter = match q.with_type {
        Some(t) => format!("AND l.predicate = {}", params.text(t)),
        None => String::new(),
    };
    let cand = params.int(candidates(k));
    let limit = params.int(k.max(1));
    let window = params.int((k.max(1) * COMMON_WINDOW).max(COMMON_WINDOW_MIN));
    let common_cand = common_cand("kip.propositions", "l", &space, &type_filter, &window, &limit, role);
    let like = like_pattern(&term);
    let space_l = space_filter("l", &space);
    let has_all = lookup.has_all("l", &term);
    let word_source = word_source("kip.propositions", "l", &space_l, &type_filter, &cand, lookup);
    let idf = idf_ctes("kip.propositions", &stats, &space, &term, &mut params, ctx);
    let similarity = extensions::trgm_fn("similarity")?;
    let text = text_score();
    // A predicate matches by its name (words, exact, contained) or by the
    // description of its $PropositionType definition; its links then rank
    // by how well the definition matched.
    let sql = format!(
        "WITH {idf},
         preds AS MATERIALIZED (
           SELECT p.name AS predicate, greatest(
               CASE WHEN lower(p.name) IN (lower({term}), lower(replace({term}, ' ', '_'))) THEN 0.99 ELSE 0 END,
               CASE WHEN length({term}) >= 3 AND p.name ILIKE {like}
                    THEN 0.5 + 0.4 * length({term})::float8 / greatest(length(p.name), 1) ELSE 0 END,
               0.85 * coalesce((SELECT sum(i.idf) FILTER (WHERE p.search_text @@ i.tq) FROM idf i)
                               / nullif((SELECT sum(idf) FROM idf), 0), 0)
             )::float8 AS score
           FROM kip.concepts p
           WHERE p.space = {space} AND p.type = '$PropositionType'
             AND (lower(p.name) IN (lower({term}), lower(replace({term}, ' ', '_')))
                  OR (length({term}) >= 3 AND p.name ILIKE {like})
                  OR EXISTS (SELECT 1 FROM idf i WHERE p.search_text @@ i.tq))
           -- The best 50: an exact name must not lose its place to other
           -- definitions that merely share a word with the term.
           ORDER BY score DESC, p.name COLLATE \"C\"
           LIMIT 50
         ),
         primary_cand AS MATERIALIZED (
           -- Links containing every word: for a term of several words (the
           -- GIN fast scan makes the rarest drive it), or of one word that is
           -- not common. A common word alone would read its posting list
           -- (73 ms for a predicate name in 900,000 links); its links come
           -- from their predicate's definition (`preds`), and from the
           -- first matches among the space's newest links (`common_cand`).
           (SELECT l.id FROM kip.propositions l
            WHERE NOT EXISTS (SELECT 1 FROM df WHERE df.df = 0)
              AND ((SELECT count(*) FROM terms) > 1 OR NOT EXISTS (SELECT 1 FROM df WHERE df.common))
              AND {space_l} AND {has_all} {type_filter} LIMIT {cand})
           UNION
           {word_source}
           UNION
           (SELECT x.id FROM preds, LATERAL (
              SELECT l.id FROM kip.propositions l
              WHERE l.space = {space} AND l.predicate = preds.predicate {type_filter} LIMIT {cand}) x)
         ),
         -- A common word's links, when the sources above found fewer than
         -- asked, as for concepts.
         {common_cand},
         cand AS (
           SELECT id FROM primary_cand
           UNION
           SELECT id FROM common_cand
         ),
         -- Each candidate's row by its id (see the concepts' statement).
         docs AS MATERIALIZED (
           SELECT l.id, l.predicate, l.search_text, length(l.search_text)::float8 AS dl,
                  l.unembedded, {similarity}(l.predicate, {term}) AS sim
           FROM cand, LATERAL (
             SELECT r.id, r.predicate, r.search_text, r.embedding IS NULL AS unembedded
             FROM kip.propositions r WHERE r.id = cand.id LIMIT 1) l
         ),
         avgdl AS (SELECT greatest(avg(dl), 1) AS v FROM docs),
         scored AS (
           SELECT d.id, d.unembedded, greatest(
               coalesce((SELECT pr.score FROM preds pr WHERE pr.predicate = d.predicate), 0),
               CASE WHEN d.sim >= 0.3 THEN 0.9 * d.sim ELSE 0 END,
               0.9 * {text}
             )::float8 AS score
           FROM docs d
         )
         SELECT s.id, s.score, s.unembedded FROM scored s WHERE s.score > 0
         ORDER BY s.score DESC, s.id
         LIMIT {limit}"
    );
    Ok((sql, params))
}
