//! A whole FIND → one SQL statement returning one row: each result column
//! as a jsonb array (assembled with `jsonb_agg` in the page's order), the
//! page's row count, and each scalar aggregation.
//!
//! ```text
//! WITH s AS (<pattern>)                        -- one row per solution (+ ord)
//!      d AS (SELECT <key vars>, min(ord) …)    -- solution dedup on projected vars
//!   page AS (SELECT <values>, <sort keys> FROM d LEFT JOIN <rows> ORDER BY … LIMIT n+1 OFFSET o)
//! SELECT (SELECT jsonb_agg(j1 ORDER BY …) FROM page), …, (SELECT count(*) FROM page), <scalars>
//! ```
//!
//! With grouped aggregations `d` is replaced by the groups of the plain
//! values, and each aggregation by a CTE over its deduplicated inputs.
//! Rows are ordered by the ORDER BY keys (nulls last in both directions),
//! then by UNION branch, then by the projected variables' ids (first
//! appearance), so pages are stable and the natural order is creation order.

use crate::compile::distinct::{has_optional, has_union, solutions_are_distinct};
use crate::compile::filter::unbound;
use crate::compile::pattern::{compile_block, has_independent_parts, Carry, Cx, Scope, VarBinding, VarKind};
use crate::compile::projection::{self, agg_inputs, agg_sql, json_sort, path_column, path_json, path_sort, Item, SolutionAccess};
use crate::compile::Params;
use crate::compile::env::{Env, Facts};
use crate::compile::pattern::ground;
use crate::compile::SqlParam;
use kip_lang::ast::{DotPath, FindQuery, PathField, Projection, SortDirection, WhereClause};
use kip_lang::{ErrorCode, KipError};
use std::fmt::Write;

/// Where an entry of the result comes from in the SQL output row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Out {
    /// Output column `i`: a jsonb array, one entry per row of the page.
    Column(usize),
    /// Output column `i`: a scalar aggregation.
    Scalar(usize),
}

#[derive(Debug, PartialEq)]
pub(crate) struct FindSql {
    pub sql: String,
    pub params: Params,
    pub shape: Vec<Out>,
    pub layout: Layout,
    /// The existence checks the statement makes itself (`InStatement`).
    pub guard: Option<Guard>,
    /// When the page streams in its natural order from distinct solutions:
    /// the positions, in each row, of the ids the next page continues after
    /// (`exec::cursor::Resume::after`).
    pub keyset: Option<Vec<usize>>,
    /// When the page is ordered and its solutions' key ids (the projected
    /// and ordering variables') are never null: their positions in each
    /// row, from which an ordered walk's ranking is read
    /// (`engine::find_walk`).
    pub ranking: Option<Vec<usize>>,
    /// Whether the statement's good plan depends on its values (`Cx::value_dependent`):
    /// it is then planned for each call's values rather than run on one
    /// generic plan (`engine::find::planning`).
    pub plan_per_call: bool,
    /// The literal predicates of link clauses no named concept or id
    /// reaches (`compile::anchors`): a predicate with few links among many
    /// is planned for (`engine::find::planning`).
    pub scanned_predicates: Vec<String>,
    /// The literal types of its concept clauses that select by type alone
    /// and that no anchor reaches (`compile::anchors::scanned_types`), for
    /// a FIND without aggregations (one with them reads every solution).
    pub scanned_types: Vec<String>,
    /// Every type and predicate the query names
    /// (`compile::anchors::schema_names`).
    pub schema_names: Vec<String>,
}

/// Keyset cursors carry at most this many ids (one per projected variable).
const MAX_KEYSET_IDS: usize = 8;

/// How the statement returns its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One SQL row per row of the page, in the page's order (up to one row
    /// more than the page, to tell whether another page exists): when every
    /// entry of the result is a column of the page. `Out::Column(i)` is the
    /// `i`-th value of each row. No `jsonb_agg` over a materialised page, so
    /// the statement is as lean as the hand-written query.
    Rows,
    /// One SQL row: each result column as a jsonb array in the page's order,
    /// each scalar aggregation, and the page's row count in `count_col`
    /// (None: no row columns).
    OneRow { count_col: Option<usize> },
}

/// The page of a FIND with row columns: its SELECT (ordered, LIMIT n+1 and
/// OFFSET), the ORDER BY list over its columns, and the column holding each
/// result entry (`None`: a scalar aggregation over all solutions).
struct Page {
    sql: String,
    order: String,
    columns: Vec<Option<String>>,
}

/// The elements a FIND's mandatory pattern requires (`InStatement`): its
/// named concepts, then its literal concept ids in the order the pattern
/// names them. When one is missing a connected pattern has no solution, so
/// an answer that shows a solution proves them all: a page with rows, a
/// count above zero, an aggregation with a value. The engine checks them
/// ([`Guard::standalone`], one lookup) only when the answer shows none, or
/// `always` when the pattern has independent clause groups or a UNION (a
/// group or branch that matches nothing leaves the others' solutions). The
/// error is the one a lookup before the statement would have raised.
#[derive(Debug, PartialEq)]
pub(crate) struct Guard {
    pub named: Vec<(String, String)>,
    /// (row id, the id as written).
    pub concept_ids: Vec<(i64, String)>,
    /// Checked even when the answer shows a solution.
    pub always: bool,
}

impl Guard {
    /// The `KIP_3002` of a guard value (a position from 1, or NULL when
    /// every required element exists).
    pub fn failure(&self, value: Option<&serde_json::Value>) -> Option<KipError> {
        let i = usize::try_from(value?.as_i64()?).ok()?.checked_sub(1)?;
        match self.named.get(i) {
            Some((t, n)) => Some(missing_named_concept(t, n)),
            None => self.concept_ids.get(i - self.named.len()).map(|(_, id)| ground::not_found("concept", id)),
        }
    }

    /// The guard as a statement of its own, returning the position of the
    /// first missing element (or NULL): what the engine runs when a `Rows`
    /// page comes back empty.
    pub fn standalone(&self, space: &str) -> (String, Params) {
        let mut params = Params::new();
        let space = params.text(space);
        let sql = format!("SELECT {}", guard_sql(&mut params, &space, &self.named, &self.concept_ids));
        (sql, params)
    }
}

/// A `{type, name}` of FIND's mandatory pattern that names no concept.
fn missing_named_concept(type_name: &str, name: &str) -> KipError {
    KipError::new(ErrorCode::NotFound, format!("concept {{type: {}, name: {}}} does not exist in this memory space", kip_lang::quoted(type_name), kip_lang::quoted(name)))
        .with_hint("It may have been deleted or never created; use SEARCH CONCEPT to find similar names.")
}

/// The guard's SQL (see [`Guard`]): a scalar subquery with its values
/// bound into `params`, `space` the placeholder of the space name.
fn guard_sql(params: &mut Params, space: &str, named: &[(String, String)], concept_ids: &[(i64, String)]) -> String {
    let mut parts = Vec::new();
    if !named.is_empty() {
        let types = params.push(SqlParam::TextArray(named.iter().map(|(t, _)| t.clone()).collect()));
        let names = params.push(SqlParam::TextArray(named.iter().map(|(_, n)| n.clone()).collect()));
        // `OFFSET 0` keeps each NOT EXISTS a probe of the unique index per
        // name: pulled up into an anti join, a generic plan estimating a
        // space's rows from the whole table (a few dozen with thousands of
        // small spaces) hashed every concept of a large space instead, on
        // each call (15 ms for a space of 28,000 concepts, not 0.07 ms).
        parts.push(format!(
            "SELECT x.i FROM unnest({types}::text[], {names}::text[]) WITH ORDINALITY AS x(t, n, i)
             WHERE NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = {space} AND c.type = x.t AND c.name = x.n OFFSET 0)"
        ));
    }
    if !concept_ids.is_empty() {
        let ids = params.push(SqlParam::IntArray(concept_ids.iter().map(|(n, _)| *n).collect()));
        parts.push(format!(
            "SELECT {} + y.i FROM unnest({ids}::bigint[]) WITH ORDINALITY AS y(id, i)
             WHERE NOT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.id = y.id AND c.space = {space} OFFSET 0)",
            named.len()
        ));
    }
    format!("(SELECT min(g.i) FROM ({}) AS g(i))", parts.join(" UNION ALL "))
}

struct SortKey {
    exprs: Vec<String>,
    desc: bool,
}

fn order_clause(keys: &[SortKey], tail: &[String]) -> String {
    let mut parts = Vec::new();
    for k in keys {
        for e in &k.exprs {
            parts.push(format!("{e} {} NULLS LAST", if k.desc { "DESC" } else { "ASC" }));
        }
    }
    for t in tail {
        parts.push(format!("{t} ASC NULLS LAST"));
    }
    parts.join(", ")
}

fn check_bound(path: &DotPath, vars: &[VarBinding]) -> Result<(), KipError> {
    if vars.iter().any(|v| v.name == path.var) {
        Ok(())
    } else {
        Err(unbound(&path.var))
    }
}

/// Compile a FIND for the page `[offset, offset + limit)`, or, when `after`
/// holds the last ids of the previous page and the page streams (see
/// `FindSql::keyset`), for the `limit` rows after them; the SQL fetches one
/// extra row so the caller knows whether more exist.
pub(crate) fn compile_find(q: &FindQuery, env: Env, limit: u64, offset: u64, after: Option<&[i64]>) -> Result<FindSql, KipError> {
    let plan = compile_page(q, env, limit, offset, after, None)?;
    if !plan.plan_per_call || env.facts.per_call {
        return Ok(plan);
    }
    // Planned for its values: compiled again for such a plan (`Facts::per_call`).
    let facts = Facts { per_call: true, ..env.facts.clone() };
    compile_page(q, Env { facts: &facts, ..env }, limit, offset, after, None)
}

/// Compile the page of an ordered walk whose solutions are those with the
/// key ids `ranked` (one row of ids per solution, in `FindSql::ranking`'s
/// order), in that order: the pattern runs only for those ids (each key
/// variable `= ANY` of its ids), so the page reads its own rows, and a
/// solution that no longer matches is left out. `None` when the query's
/// pages have no ranking.
pub(crate) fn compile_find_ranked(q: &FindQuery, env: Env, ranked: &[Vec<i64>]) -> Result<Option<FindSql>, KipError> {
    let plan = compile_page(q, env, ranked.len() as u64, 0, None, Some(ranked))?;
    Ok(plan.ranking.is_some().then_some(plan))
}

fn compile_page(
    q: &FindQuery,
    env: Env,
    limit: u64,
    offset: u64,
    after: Option<&[i64]>,
    ranked: Option<&[Vec<i64>]>,
) -> Result<FindSql, KipError> {
    let mut params = Params::new();
    let mut cx = Cx::new(env, &mut params);
    let items = projection::items(&q.projections, &q.where_clauses);
    cx.carry_rows = carries_rows(q, &items);
    let rel = compile_block(&q.where_clauses, &Scope::default(), &mut cx, true)?;
    for p in q.projections.iter().chain(q.order_by.iter().map(|k| &k.expr)) {
        match p {
            Projection::Path(path) => check_bound(path, &rel.vars)?,
            Projection::Aggregate(a) => check_bound(&a.arg, &rel.vars)?,
        }
    }
    let grouped = items.iter().any(|i| matches!(i, Item::Agg { grouped: true, .. }));
    let mut ctes = vec![format!("s AS ({})", rel.sql)];
    let mut outputs: Vec<String> = Vec::new();
    let mut shape = Vec::new();
    let has_rows = items.iter().any(|i| matches!(i, Item::Column(_) | Item::Agg { grouped: true, .. }));
    let lim = cx.params.int(limit as i64 + 1);
    let off = cx.params.int(offset as i64);
    let mut ranking = None;
    let (page, keyset) = if has_rows && !grouped {
        let window = Window { lim: &lim, off: &off, after, ranked };
        let (page, keyset, ranks) = plain_plan(&mut cx, &rel.vars, q, &items, &mut ctes, window)?;
        ranking = ranks;
        (Some(page), keyset)
    } else if has_rows {
        (Some(grouped_plan(&mut cx, &rel.vars, q, &items, &mut ctes, &lim, &off)?), None)
    } else {
        for item in &items {
            if let Item::Agg { agg, .. } = item {
                outputs.push(global_agg(&mut cx, &rel.vars, &q.where_clauses, agg)?);
                shape.push(Out::Scalar(outputs.len() - 1));
            }
        }
        (None, None)
    };
    let named = cx.env.facts.verified_in_statement.as_ref().map(|v| v.named_concepts.clone()).unwrap_or_default();
    let concept_ids = cx.unverified_concept_ids.take();
    let always = has_independent_parts(&q.where_clauses);
    let guard = (!named.is_empty() || !concept_ids.is_empty()).then(|| Guard { named, concept_ids, always });
    let (sql, layout) = match page {
        // Every entry is a column of the page: the statement returns the
        // page's rows themselves.
        Some(page) if page.columns.iter().all(Option::is_some) => {
            shape = (0..items.len()).map(Out::Column).collect();
            (format!("WITH {} {}", ctes.join(", "), page.sql), Layout::Rows)
        }
        page => {
            if let Some(page) = page {
                ctes.push(format!("page AS ({})", page.sql));
                for (item, column) in items.iter().zip(&page.columns) {
                    match (item, column) {
                        (_, Some(j)) => outputs.push(format!(
                            "(SELECT coalesce(jsonb_agg({j} ORDER BY {}), '[]'::jsonb) FROM page)",
                            page.order
                        )),
                        (Item::Agg { agg, .. }, None) => outputs.push(global_agg(&mut cx, &rel.vars, &q.where_clauses, agg)?),
                        (Item::Column(_), None) => unreachable!("every column item has a page column"),
                    }
                    shape.push(if column.is_some() { Out::Column(outputs.len() - 1) } else { Out::Scalar(outputs.len() - 1) });
                }
            }
            let count_col = has_rows.then(|| {
                outputs.push("(SELECT count(*) FROM page)".into());
                outputs.len() - 1
            });
            (format!("WITH {} SELECT {}", ctes.join(", "), outputs.join(", ")), Layout::OneRow { count_col })
        }
    };
    let plan_per_call = cx.value_dependent;
    drop(cx);
    let keyset = keyset.filter(|_| layout == Layout::Rows);
    let ranking = ranking.filter(|_| layout == Layout::Rows);
    let scanned_predicates = crate::compile::anchors::scanned_predicates(&q.where_clauses);
    // A type's size matters to a plan that may stop early, under the
    // page's LIMIT; one with an aggregation reads every solution whatever
    // it is, and its generic plan, which takes a type for an average one,
    // read a rare type's hub links with a hash join where the plan that
    // knew the type's 14 members looked up each one's 7,000 links and
    // sorted them (the Brain's domain sizes, 28 → 50-80 ms).
    let aggregates = items.iter().any(|i| matches!(i, Item::Agg { .. }));
    let scanned_types = if aggregates { Vec::new() } else { crate::compile::anchors::scanned_types(&q.where_clauses) };
    let schema_names = crate::compile::anchors::schema_names(&q.where_clauses);
    Ok(FindSql { sql, params, shape, layout, guard, keyset, ranking, plan_per_call, scanned_predicates, scanned_types, schema_names })
}

/// Which rows of the solutions a page holds: `LIMIT`/`OFFSET` (the
/// placeholders), after the keyset ids `after`, or exactly the ranked
/// solutions `ranked` of an ordered walk.
struct Window<'a> {
    lim: &'a str,
    off: &'a str,
    after: Option<&'a [i64]>,
    ranked: Option<&'a [Vec<i64>]>,
}

/// The page of a FIND without grouped aggregations: solutions deduplicated
/// on the projected and ordering variables (`d`), unless they are distinct
/// already, then ordered and cut. Also the positions of the keyset ids in
/// each row when the page streams (see `FindSql::keyset`), and those of the
/// key ids when the page has a ranking (`FindSql::ranking`).
fn plain_plan(
    cx: &mut Cx,
    vars: &[VarBinding],
    q: &FindQuery,
    items: &[Item],
    ctes: &mut Vec<String>,
    window: Window,
) -> Result<(Page, Option<Vec<usize>>, Option<Vec<usize>>), KipError> {
    let Window { lim, off, after, ranked } = window;
    let mut keyset = None;
    // Solution dedup on the projected (and ordering) variables.
    let keys = page_keys(q, items).ok_or_else(|| {
        KipError::new(ErrorCode::InvalidSyntax, "ORDER BY an aggregation needs a grouped FIND")
            .with_hint("Order by an aggregation only together with the plain expressions it is grouped by.")
    })?;
    let key_vars: Vec<VarBinding> = keys.iter().filter_map(|k| vars.iter().find(|v| &v.name == k).cloned()).collect();
    let cols: Vec<String> = key_vars.iter().map(|v| format!("s.{}", v.column)).collect();
    let key_cols: String = cols.iter().map(|c| format!("{c}, ")).collect();
    let distinct = solutions_are_distinct(&q.where_clauses, &keys);
    // `ord` numbers the UNION branches of the top block; without one it is
    // 0 in every solution, and a constant in an ORDER BY only costs: the
    // planner cannot see that `min(ord)` of a GROUP BY is constant, and
    // sorted the grouped solutions again for it (the 2-hop FIND's second
    // sort). It is then left out of every order below.
    let ord_varies = has_union(&q.where_clauses);
    // An ordered page whose key ids are never null (no OPTIONAL, no UNION
    // branch or independent group leaving a variable unbound; ids, not
    // predicate names) can be ranked: an ordered walk keeps the ranking of
    // its solutions and reads each later page by those ids.
    let rankable = !q.order_by.is_empty()
        && !has_optional(&q.where_clauses)
        && !has_independent_parts(&q.where_clauses)
        && !key_vars.is_empty()
        && key_vars.len() <= MAX_KEYSET_IDS
        && key_vars.iter().all(|v| v.kind != VarKind::Predicate);
    let ranked = ranked.filter(|_| rankable);
    // The ranked solutions: one array of ids per key variable, which the
    // pattern is restricted to and the page is ordered by.
    let mut only_ranked = String::new();
    if let Some(rows) = ranked {
        let arrays: Vec<String> = (0..key_vars.len())
            .map(|i| cx.params.push(SqlParam::IntArray(rows.iter().map(|r| r.get(i).copied().unwrap_or_default()).collect())))
            .collect();
        let tests: Vec<String> = cols.iter().zip(&arrays).map(|(c, a)| format!("{c} = ANY({a}::bigint[])")).collect();
        only_ranked = format!(" WHERE {}", tests.join(" AND "));
        let unnested: Vec<String> = arrays.iter().map(|a| format!("{a}::bigint[]")).collect();
        let names: Vec<String> = (0..arrays.len()).map(|i| format!("i{i}")).collect();
        ctes.push(format!("rk AS (SELECT * FROM unnest({}) WITH ORDINALITY AS rk({}, pos))", unnested.join(", "), names.join(", ")));
    }
    ctes.push(if distinct {
        // No GROUP BY, which would read every solution before the first
        // row: the page can stream from an index in its order and stop
        // at LIMIT (`FIND(?x) WHERE { ?x {type: "T"} } LIMIT 10` over a
        // type of a million members reads about ten index entries).
        let mut carried = String::new();
        for v in &key_vars {
            for (suffix, _, _) in v.carried_columns() {
                let _ = write!(carried, "s.{}{suffix}, ", v.column);
            }
        }
        format!("d AS (SELECT {key_cols}{carried}s.ord AS ord FROM s{only_ranked})")
    } else {
        format!(
            "d AS (SELECT {key_cols}{} AS ord FROM s{only_ranked}{})",
            if ord_varies { "min(s.ord)" } else { "0" },
            if cols.is_empty() { String::new() } else { format!(" GROUP BY {}", cols.join(", ")) }
        )
    });
    let mut acc = SolutionAccess::new("d", &key_vars);
    if q.order_by.is_empty() && distinct {
        // The page streams: the first solutions in their natural order,
        // possibly of millions, of which only the page's rows need their
        // element rows. (Grouped solutions are few after an anchor, and
        // a plain join is cheaper for them: 0.155 against 0.173 ms for
        // a 1-hop FIND.)
        acc = acc.per_row();
    }
    let mut select = Vec::new();
    let mut ncol = 0;
    for item in items {
        if let Item::Column(paths) = item {
            let v = match paths.as_slice() {
                [one] => path_column(&mut acc, cx, one)?,
                _ => {
                    let vals = paths.iter().map(|p| path_json(&mut acc, cx, p)).collect::<Result<Vec<_>, _>>()?;
                    format!("jsonb_build_array({})", vals.join(", "))
                }
            };
            ncol += 1;
            select.push(format!("{v} AS j{ncol}"));
        }
    }
    let mut sort = Vec::new();
    let typed = crate::compile::filter::typed_paths(&q.where_clauses);
    for (i, k) in q.order_by.iter().enumerate() {
        if let Projection::Path(p) = &k.expr {
            let known = typed.iter().find(|(typed, _)| typed == p).map(|(_, t)| *t);
            let exprs = path_sort(&mut acc, cx, p, known)?;
            let names: Vec<String> = exprs.iter().enumerate().map(|(j, _)| format!("k{i}_{j}")).collect();
            for (e, n) in exprs.iter().zip(&names) {
                select.push(format!("{e} AS {n}"));
            }
            sort.push(SortKey { exprs: names, desc: k.direction == SortDirection::Desc });
        }
    }
    // Streaming solutions (one branch, so `ord` is constant, and ids that
    // are never null) continue after the previous page's last ids instead
    // of skipping: keyset pagination.
    let streams = q.order_by.is_empty()
        && distinct
        && !has_optional(&q.where_clauses)
        && !key_vars.is_empty()
        && key_vars.len() <= MAX_KEYSET_IDS;
    // A constant `ord` is left out of the page's order: the planner drops
    // it from the window's order, and would then sort the page again to
    // match an outer order that names it.
    // (An order needs a term: `ord` stays when nothing else is left.)
    let ord_needed = ord_varies || (sort.is_empty() && key_vars.is_empty());
    let mut tail = if streams || !ord_needed { vec![] } else { vec!["ord".to_string()] };
    let first_key = select.len();
    let ranking = rankable.then(|| (first_key..first_key + key_vars.len()).collect::<Vec<usize>>());
    for (i, v) in key_vars.iter().enumerate() {
        select.push(format!("d.{} AS t{i}", v.column));
        tail.push(format!("t{i}"));
    }
    select.push("d.ord AS ord".into());
    let order = order_clause(&sort, &tail);
    let mut c = 0;
    let columns = items
        .iter()
        .map(|item| {
            matches!(item, Item::Column(_)).then(|| {
                c += 1;
                format!("j{c}")
            })
        })
        .collect();
    // A pattern determined by constants alone (ids, `{type, name}`) has at
    // most one solution: it needs no order, and the planner, which cannot
    // see that the page's key is a constant, would sort it.
    let single = solutions_are_distinct(&q.where_clauses, &[]);
    let sql = if ranked.is_some() {
        let on: Vec<String> = key_vars.iter().enumerate().map(|(i, v)| format!("d.{} = rk.i{i}", v.column)).collect();
        let select = select.join(", ");
        let joins = acc.joins_sql_for(&select);
        format!("SELECT {select} FROM d JOIN rk ON {} {joins} ORDER BY rk.pos", on.join(" AND "))
    } else if single {
        if streams {
            keyset = Some((0..key_vars.len()).map(|i| ncol + i).collect());
        }
        let select = select.join(", ");
        let joins = acc.joins_sql_for(&select);
        format!("SELECT {select} FROM d {joins} LIMIT {lim} OFFSET {off}")
    } else if q.order_by.is_empty() {
        // The natural order is d's own columns: the page is cut from d
        // before any element row is read, so the rows an OFFSET skips
        // cost an index entry each, not a lookup each.
        let key_ids: Vec<String> = key_vars.iter().map(|v| format!("d.{}", v.column)).collect();
        let ord = if ord_needed { vec!["d.ord".to_string()] } else { vec![] };
        // A first key variable whose space is written `= ANY` is ordered by
        // its space too (one value: the same order), which only the space's
        // own indexes give (`Cx::space_ordered`).
        let space_key: Vec<String> = match key_vars.first() {
            Some(v) if v.carried == Carry::Concept && !ord_needed && cx.space_ordered.contains(&v.name) => {
                vec![format!("d.{}_space", v.column)]
            }
            _ => vec![],
        };
        let natural = order_clause(&[], &[ord, space_key, key_ids.clone()].concat());
        if streams {
            // Each row is the result columns, then (no ORDER BY keys
            // here) the key ids `t0…`, then `ord`.
            keyset = Some((0..key_vars.len()).map(|i| ncol + i).collect());
        }
        let window = match after {
            Some(ids) if streams && ids.len() == key_vars.len() => {
                let values: Vec<String> = ids.iter().map(|id| cx.params.int(*id)).collect();
                format!("WHERE ({}) > ({}) ORDER BY {natural} LIMIT {lim}", key_ids.join(", "), values.join(", "))
            }
            _ => format!("ORDER BY {natural} LIMIT {lim} OFFSET {off}"),
        };
        let select = select.join(", ");
        let joins = acc.joins_sql_for(&select);
        format!("SELECT {select} FROM (SELECT * FROM d {window}) d {joins} ORDER BY {order}")
    } else if !window_first(q, items) {
        let select = select.join(", ");
        let joins = acc.joins_sql_for(&select);
        format!("SELECT {select} FROM d {joins} ORDER BY {order} LIMIT {lim} OFFSET {off}")
    } else {
        // The page's window first, over the solutions with their sort keys
        // and ids, then its columns for the window's rows alone: a column
        // that builds a value (an element's JSON, an array of paths) was
        // built for every solution the sort read, 56,513 arrays for a page
        // of 50 (a third of the statement).
        // After the columns: the sort keys and the key ids, then `ord`,
        // which is among d's columns already.
        let (columns_sql, keys) = select.split_at(ncol);
        let window_keys = &keys[..keys.len() - 1];
        let names = sort.iter().flat_map(|k| k.exprs.iter().cloned()).chain((0..key_vars.len()).map(|i| format!("t{i}")));
        let names: Vec<String> = names.chain(std::iter::once("ord".to_string())).collect();
        let window_joins = acc.joins_sql_for(&window_keys.join(", "));
        let window_select = std::iter::once("d.*").chain(window_keys.iter().map(String::as_str)).collect::<Vec<_>>().join(", ");
        let outer_keys = names.iter().map(|n| format!("d.{n} AS {n}"));
        let select = columns_sql.iter().cloned().chain(outer_keys).collect::<Vec<_>>().join(", ");
        let joins = acc.joins_sql_for(&columns_sql.join(", "));
        format!(
            "SELECT {select} FROM (SELECT {window_select} FROM d {window_joins} ORDER BY {order} LIMIT {lim} OFFSET {off}) d {joins} ORDER BY {order}"
        )
    };
    Ok((Page { sql, order, columns }, keyset, ranking))
}

/// Whether an ordered page is cut from its solutions before its columns
/// are computed (`plain_plan`): when it projects a whole element, whose
/// JSON costs microseconds a row, or when a variable no anchor reaches may
/// bring a type's or a predicate's every member. The two-level statement
/// costs ~5 µs more to start, which a few solutions around an anchor (a
/// 1-hop's ten) do not win back.
fn window_first(q: &FindQuery, items: &[Item]) -> bool {
    let whole = items.iter().any(|i| matches!(i, Item::Column(paths) if paths.iter().any(|p| p.field == PathField::Whole)));
    whole || crate::compile::anchors::has_unanchored_variable(&q.where_clauses)
}

/// Whether the solutions of `q` carry the rows the pattern joined
/// (`Cx::carry_rows`): when its page is every solution's own row, without
/// a GROUP BY (distinct solutions, no aggregation); and when it groups
/// solutions for aggregations (`grouped_plan`), whose group values are
/// read from each solution. The scan that finds a solution, or the FILTER
/// that reads its row, has read it already, and reading it again by
/// primary key for the projection doubled the cost of an attribute FILTER;
/// in a grouped count it was a third of the statement (`FIND(?d.name,
/// COUNT(?n))` over a space's domains and their 250,000 members looked the
/// domain up again for every member). Not for a page deduplicated by a
/// GROUP BY of its own, which would have to group on every carried column.
fn carries_rows(q: &FindQuery, items: &[Item]) -> bool {
    let aggregates_groups = items.iter().any(|i| matches!(i, Item::Agg { grouped: true, .. }));
    aggregates_groups
        || (items.iter().all(|i| matches!(i, Item::Column(_)))
            && page_keys(q, items).is_some_and(|keys| solutions_are_distinct(&q.where_clauses, &keys)))
}

/// The variables a plain page is deduplicated on: the projected ones, then
/// those of the ORDER BY keys; `None` when a key is an aggregation.
fn page_keys(q: &FindQuery, items: &[Item]) -> Option<Vec<String>> {
    let mut keys: Vec<String> = projection::plain_vars(items);
    for k in &q.order_by {
        let Projection::Path(p) = &k.expr else { return None };
        if !keys.contains(&p.var) {
            keys.push(p.var.clone());
        }
    }
    Some(keys)
}

/// A scalar aggregation over all solutions, each element counted once:
/// deduplicated on (element, value), unless the solutions are distinct on
/// the aggregated variable already (`COUNT(?s)` of the subjects linking to
/// one anchor), when the DISTINCT would only sort them.
fn global_agg(cx: &mut Cx, vars: &[VarBinding], clauses: &[kip_lang::ast::WhereClause], agg: &kip_lang::ast::Aggregate) -> Result<String, KipError> {
    let mut acc = SolutionAccess::new("s", vars);
    let (k, x) = agg_inputs(&mut acc, cx, agg)?;
    let joins = acc.joins_sql_for(&format!("{k} {x}"));
    let distinct = if solutions_are_distinct(clauses, std::slice::from_ref(&agg.arg.var)) { "" } else { "DISTINCT " };
    Ok(format!("(SELECT {} FROM (SELECT {distinct}{k} AS k, {x} AS x FROM s {joins}) t)", agg_sql(agg)))
}

/// Implicit GROUP BY: groups of the plain values, aggregations per group.
fn grouped_plan(cx: &mut Cx, vars: &[VarBinding], q: &FindQuery, items: &[Item], ctes: &mut Vec<String>, lim: &str, off: &str) -> Result<Page, KipError> {
    // b: solutions with the group values g_i and each aggregation's inputs,
    // or, grouped by an element's id (`keyed_group`), that id alone.
    let keyed = keyed_group(vars, &q.where_clauses, items);
    let mut acc = SolutionAccess::new("s", vars);
    let mut b_select = vec!["s.ord AS ord".to_string()];
    let mut group_paths: Vec<DotPath> = Vec::new();
    let mut gexprs = Vec::new();
    for item in items {
        if let Item::Column(paths) = item {
            for p in paths {
                group_paths.push(p.clone());
                if keyed.is_none() {
                    gexprs.push(path_json(&mut acc, cx, p)?);
                }
            }
        }
    }
    // First-appearance order of groups: by the ids of the projected variables.
    let plain = projection::plain_vars(items);
    let mut id_cols = Vec::new();
    for (i, name) in plain.iter().enumerate() {
        if let Some(c) = acc.column(name) {
            b_select.push(format!("{c} AS i{i}"));
            id_cols.push(format!("i{i}"));
        }
    }
    let mut aggs = Vec::new();
    for (n, item) in items.iter().enumerate() {
        if let Item::Agg { agg, grouped: true } = item {
            let (k, x) = agg_inputs(&mut acc, cx, agg)?;
            b_select.push(format!("{k} AS ak{n}, {x} AS ax{n}"));
            aggs.push(n);
        }
    }
    // The group's key: its values as one jsonb array, or the element's id
    // (0 for an unbound variable, so that its group still joins its
    // aggregations). The groups are the keys' and their values are read
    // back from them: an absent value (SQL NULL) and a stored JSON null are
    // one value in the array, and grouping on the values beside it split
    // such a group in two, each joined to the whole group's aggregations.
    let gk = match &keyed {
        Some(v) => format!("coalesce(s.{}, 0)", v.column),
        None => format!("jsonb_build_array({})", gexprs.join(", ")),
    };
    let b_select = format!("{}, {gk} AS gk", b_select.join(", "));
    ctes.push(format!("b AS (SELECT {b_select} FROM s {})", acc.joins_sql_for(&b_select)));
    // An aggregation reads each (group, element, value) once. When the
    // group is its element's id and the solutions are distinct on that
    // element and the aggregated one, they are once each already: no
    // DISTINCT, which hashed all 100,000 of the domain count's rows.
    let once_each = |agg: &kip_lang::ast::Aggregate| {
        keyed.as_ref().is_some_and(|v| solutions_are_distinct(&q.where_clauses, &[v.name.clone(), agg.arg.var.clone()]))
    };
    let min_ids: String = id_cols.iter().map(|c| format!(", min({c}) AS {c}")).collect();
    // One such aggregation is computed in the grouping itself, which then
    // reads the solutions once (two readers would materialise them).
    let merged = match aggs.as_slice() {
        [n] => match &items[*n] {
            Item::Agg { agg, .. } if once_each(agg) => Some((*n, agg)),
            _ => None,
        },
        _ => None,
    };
    if let Some((n, agg)) = merged {
        let ids: String = id_cols.iter().map(|c| format!(", {c}")).collect();
        ctes.push(format!(
            "grp AS (SELECT t.gk, min(t.ord) AS ord{min_ids}, {} AS val FROM (SELECT gk, ord{ids}, ak{n} AS k, ax{n} AS x FROM b) t GROUP BY t.gk)",
            agg_sql(agg)
        ));
    } else {
        ctes.push(format!("grp AS (SELECT gk, min(ord) AS ord{min_ids} FROM b GROUP BY gk)"));
    }
    // A keyed group's values, read from its element's row once per group,
    // by a lookup of its id (a join was planned for the generic estimate of
    // 20,000 groups as a merge join along the whole primary key, 150 ms
    // for 14 domains).
    let mut group_access = keyed.as_ref().map(|v| {
        SolutionAccess::new("grp", &[VarBinding { column: "i0".into(), carried: Carry::No, ..v.clone() }]).per_row()
    });
    let mut gvals = Vec::new();
    for (i, p) in group_paths.iter().enumerate() {
        gvals.push(match group_access.as_mut() {
            Some(access) => path_json(access, cx, p)?,
            None => format!("(grp.gk -> {i})"),
        });
    }
    for n in aggs.iter().filter(|n| merged.is_none_or(|(m, _)| m != **n)) {
        let Item::Agg { agg, .. } = &items[*n] else { unreachable!() };
        ctes.push(format!(
            "a{n} AS (SELECT t.gk, {} AS val FROM (SELECT {}gk, ak{n} AS k, ax{n} AS x FROM b) t GROUP BY t.gk)",
            agg_sql(agg),
            if once_each(agg) { "" } else { "DISTINCT " }
        ));
    }
    // page: one row per group, values of each result column, sort keys.
    let mut select = Vec::new();
    let mut col_of_item = Vec::new();
    let mut gi = 0;
    for (n, item) in items.iter().enumerate() {
        match item {
            Item::Column(paths) => {
                let vals: Vec<String> = gvals[gi..gi + paths.len()].to_vec();
                gi += paths.len();
                let v = if vals.len() == 1 { vals[0].clone() } else { format!("jsonb_build_array({})", vals.join(", ")) };
                select.push(format!("{v} AS j{n}"));
                col_of_item.push(Some(n));
            }
            Item::Agg { grouped: true, .. } => {
                select.push(format!("{} AS j{n}", group_agg_value(n, item)));
                col_of_item.push(Some(n));
            }
            Item::Agg { .. } => col_of_item.push(None),
        }
    }
    let mut sort = Vec::new();
    for (i, k) in q.order_by.iter().enumerate() {
        let source = match &k.expr {
            Projection::Path(p) => group_paths.iter().position(|g| g == p).map(|g| gvals[g].clone()),
            Projection::Aggregate(a) => items.iter().enumerate().find_map(|(n, it)| match it {
                Item::Agg { agg, grouped: true } if agg == a => Some(group_agg_value(n, it)),
                _ => None,
            }),
        };
        let Some(source) = source else {
            let key = kip_lang::printer::projection_text(&k.expr);
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("ORDER BY {key}: in a grouped FIND, ORDER BY must use one of the FIND expressions"))
                .with_hint(format!("Add {key} to FIND(…), or order by an expression that appears in it.")));
        };
        let names: Vec<String> = json_sort(&source).iter().enumerate().map(|(j, e)| {
            select.push(format!("{e} AS k{i}_{j}"));
            format!("k{i}_{j}")
        }).collect();
        sort.push(SortKey { exprs: names, desc: k.direction == SortDirection::Desc });
    }
    let mut tail = vec!["ord".to_string()];
    select.push("grp.ord AS ord".into());
    for c in &id_cols {
        select.push(format!("grp.{c} AS {c}"));
        tail.push(c.clone());
    }
    // Groups with equal first ids (a keyed group's id is its own) are
    // ordered by their values' text.
    if keyed.is_none() {
        select.push("grp.gk #>> '{}' AS gtext".into());
        tail.push("gtext".into());
    }
    // The aggregation computed in the grouping is read from the group's own
    // row (a lateral projection, which the planner flattens): joined back
    // to the grouping as a CTE of its own, both estimated at one row on the
    // generic plan, it was a nested loop over every pair of groups (3 s for
    // 10,000 groups). The others join on the group key.
    let mut joins: String = aggs
        .iter()
        .map(|n| match merged {
            Some((m, _)) if m == *n => format!(" LEFT JOIN LATERAL (SELECT grp.val AS val) a{n} ON true"),
            _ => format!(" LEFT JOIN a{n} ON a{n}.gk = grp.gk"),
        })
        .collect();
    let select = select.join(", ");
    if let Some(access) = &group_access {
        joins = format!(" {}{joins}", access.joins_sql_for(&select));
    }
    let order = order_clause(&sort, &tail);
    Ok(Page {
        sql: format!("SELECT {select} FROM grp{joins} ORDER BY {order} LIMIT {lim} OFFSET {off}"),
        order,
        columns: col_of_item.iter().map(|c| c.map(|n| format!("j{n}"))).collect(),
    })
}

/// The one variable whose element every group value is read from, when
/// its id alone tells the groups apart: each value is the element itself,
/// its id, or (a concept whose type a clause of the mandatory pattern
/// fixes) its name, unique within the type. Grouping by that bigint
/// instead of the values' jsonb spared building and hashing a jsonb array
/// per solution: the Brain's count of each domain's members built one for
/// each of 100,000 solutions.
fn keyed_group(vars: &[VarBinding], clauses: &[WhereClause], items: &[Item]) -> Option<VarBinding> {
    let paths: Vec<&DotPath> = items
        .iter()
        .filter_map(|i| match i {
            Item::Column(paths) => Some(paths.iter()),
            _ => None,
        })
        .flatten()
        .collect();
    let name = &paths.first()?.var;
    let var = vars.iter().find(|v| &v.name == name)?;
    // Only a clause every solution satisfies fixes the type: one before a
    // UNION holds for the solutions of that side alone, and the branch may
    // bind the variable to a concept of another type, with the same name.
    let type_fixed = || kip_lang::ast::fixed_type(clauses, name).is_some();
    let determined = |p: &&DotPath| match p.field {
        PathField::Whole | PathField::Id => var.kind != VarKind::Predicate,
        PathField::Name => var.kind == VarKind::Concept && type_fixed(),
        _ => false,
    };
    (paths.iter().all(|p| &p.var == name) && paths.iter().all(determined)).then(|| var.clone())
}

/// The value of grouped aggregation `n` for a group (`a<n>` joined to
/// `grp`); a group the aggregation saw no input for counts 0.
fn group_agg_value(n: usize, item: &Item) -> String {
    format!("coalesce(a{n}.val, CASE WHEN {} THEN to_jsonb(0) END)", is_count(item))
}

/// SQL boolean literal: whether a missing group value of this aggregation is 0.
fn is_count(item: &Item) -> &'static str {
    match item {
        Item::Agg { agg, .. } if agg.func == kip_lang::ast::AggFunc::Count => "true",
        _ => "false",
    }
}
