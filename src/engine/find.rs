//! Execution of FIND: resolve what the compiler needs, compile to one SQL
//! statement, run it read-only, shape the columnar result from its rows
//! (`Layout`), and issue `next_cursor` when more rows exist: an offset, or,
//! for a page that streams, the last row's ids.

use crate::compile::bound::opt_lit;
use crate::compile::env::Env;
use crate::compile::find::{compile_find, FindSql, Layout, Out};
use crate::engine::envelope::Outcome;
use crate::engine::find_walk;
use crate::engine::limits;
use crate::engine::rare_values;
use crate::engine::templates;
use crate::exec::jsonb::Doc;
use crate::exec::{cursor, spi, Access, Ctx, SqlParam};
use crate::resolve;
use crate::resolve::registry::{self, Requirement};
use crate::space::Space;
use kip_lang::ast::{Command, FindQuery};
use kip_lang::{ErrorCode, KipError};
use serde_json::Value;
use std::borrow::Cow;

/// How a FIND's first page is planned (`kip_explain` explains that plan),
/// and the parameters it runs with.
/// Its generic plan, planned once per statement shape: anchors, ids and
/// predicates are bound parameters whose values do not change the good
/// plan (index nested loops from the anchor), and re-planning a custom
/// plan on every call cost more than running it (0.5-1.6 ms of planning
/// for 0.1-0.6 ms of execution; benches/KQL-BENCH.md). Except a statement
/// whose good plan depends on its values:
///
/// * it holds an attribute equality the GIN index serves
///   (`FindSql::plan_per_call`): under an ORDER BY … LIMIT the generic
///   plan walked every member of the type when the value was rare. A plan
///   for each call's values, ~0.15 ms of planning.
/// * it may scan the links of a predicate that is rare in a large space,
///   or the members of a type rare there (`FindSql::scanned_predicates`,
///   `FindSql::scanned_types`, `engine::rare_values`): the generic plan
///   walked every link of the space looking for the predicate's, or the
///   whole table's primary key for the type's members. Its generic plan
///   is made for the space and every type and predicate the query names,
///   their parameters fixed (`SqlParam::Fixed`, `exec::fixed_values`): the values
///   are the same at every call of the text, so the plan that sees them is
///   made once, not at each call (~0.2 ms of planning for a statement of
///   0.08 ms).
///
/// Either may get Postgres's parallel workers (`spi::saved_plan`): a page
/// over a type's every member does. EXPORT's pages do not: planned in
/// parallel, each of a walk's pages started workers for a statement of
/// ~20 ms, and a walk of 100,000 elements took twice as long.
pub(crate) fn planning<'p>(plan: &'p FindSql, space: &Space) -> Result<(spi::Planning, Cow<'p, [SqlParam]>), KipError> {
    let params = plan.params.values();
    if plan.plan_per_call {
        return Ok((spi::Planning::CustomParallel, Cow::Borrowed(params)));
    }
    if !rare_values::any_rare(space.name(), &plan.scanned_predicates, &plan.scanned_types)? {
        return Ok((spi::Planning::GenericParallel, Cow::Borrowed(params)));
    }
    // Every text parameter holding the space or a type or predicate the
    // query names, not only the rare ones, so the planner weighs all of
    // them alike. Those are part of the query's shape, so the plans stay
    // one per text and space. Other parameters with the same text (a
    // concept's name equal to a type) are fixed too, which only narrows the
    // saved plan to that value.
    let fixed = |v: &str| v == space.name() || plan.schema_names.iter().any(|n| n == v);
    let params = params
        .iter()
        .map(|p| match p {
            SqlParam::Text(v) if fixed(v) => SqlParam::Fixed(v.clone()),
            p => p.clone(),
        })
        .collect();
    Ok((spi::Planning::GenericParallel, Cow::Owned(params)))
}

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Find(q) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "FIND executor called with another command"));
    };
    run(q, ctx)
}

pub(crate) fn run(q: &FindQuery, ctx: &Ctx) -> Result<Outcome, KipError> {
    // Named concepts and literal concept ids are not looked up before the
    // statement: an answer that shows a solution proves they exist, and
    // the guard's lookup after an answer without one tells which one is
    // missing (`compile::find::Guard`).
    let facts = resolve::find_facts(&ctx.space, &q.where_clauses)?;
    let uses = || resolve::collect::schema_names(&q.where_clauses);
    let limit = limits::page_size(opt_lit(&q.limit)?);
    // The cursor shape (the canonical text of the query) is printed only
    // when a token is read or issued: most FINDs need neither.
    let shape = || cursor::query_shape(&ctx.space, &Command::Find(q.clone()));
    let resume = match opt_lit(&q.cursor)? {
        Some(token) => cursor::decode_resume(&shape(), &token)?,
        None => cursor::Resume::default(),
    };
    let offset = resume.offset;
    let env = Env { space: ctx.space.name(), limits: resolve::limits(), facts: &facts };
    // A later page of an ordered FIND reads the walk's ranking
    // (`engine::find_walk`), unless the query has none.
    if q.cursor.is_some() && !q.order_by.is_empty() {
        if let Some(walked) = find_walk::page(q, env, limit, offset, resume.walk, &shape())? {
            // The page is the ranked solutions that still match; whether
            // more follow is the ranking's to say.
            let Answer { mut entries, .. } = rows_page(&walked.plan, walked.rows, walked.ranked, ctx, &uses)?;
            let result = if entries.len() == 1 { entries.pop().unwrap() } else { Doc::Array(entries) };
            return Ok(Outcome { result, next_cursor: walked.next_cursor });
        }
    }
    // The first page of a FIND sent as text comes from its template (one
    // compile per query shape, `engine::templates`); a page after it is
    // compiled for its offset or keyset.
    let plan = match &ctx.text {
        Some(text) if q.cursor.is_none() => templates::first_page(text, q, env, limit)?,
        _ => compile_find(q, env, limit, offset, resume.after.as_deref())?,
    };
    let page = usize::try_from(limit).unwrap_or(usize::MAX);
    // With the named concepts' ids, when its plan is made for its values.
    // Solutions found so are solutions; an answer without one is asked
    // again without the ids, which a concept deleted and created again
    // since their lookup would have left stale.
    let hinted = with_named_ids(&ctx.space, q, env, &plan, limit, offset, resume.after.as_deref())?;
    let answer = match hinted {
        Some(hinted) => match answer(&hinted, page, ctx, &uses)? {
            a if a.solutions => a,
            _ => answer(&plan, page, ctx, &uses)?,
        },
        None => answer(&plan, page, ctx, &uses)?,
    };
    outcome(answer, limit, offset, &shape)
}

/// The first page of a FIND whose call reached its template directly
/// (`engine::templates::direct`): as [`run`] answers it.
pub(crate) fn run_direct(call: &templates::DirectCall, ctx: &Ctx) -> Result<Outcome, KipError> {
    let page = usize::try_from(call.limit).unwrap_or(usize::MAX);
    let answer = answer(&call.plan, page, ctx, &|| resolve::collect::schema_names(&call.query().where_clauses))?;
    outcome(answer, call.limit, 0, &|| cursor::query_shape(&ctx.space, &Command::Find(call.query())))
}

/// The envelope's result and cursor of the page `answer` of `limit` rows
/// from `offset`; `shape` prints the query for the cursor.
fn outcome(answer: Answer, limit: u64, offset: u64, shape: &dyn Fn() -> String) -> Result<Outcome, KipError> {
    let Answer { mut entries, more, last_ids, .. } = answer;
    // With LIMIT 0 there is no page and no next page: a cursor for the same
    // offset would make a paginating client loop forever.
    let more = more && limit > 0;
    let result = if entries.len() == 1 { entries.pop().unwrap() } else { Doc::Array(entries) };
    let next_cursor = if more { cursor::encode_resume(&shape(), offset.saturating_add(limit), last_ids.as_deref())? } else { None };
    Ok(Outcome { result, next_cursor })
}

/// The statement of `plan`'s FIND with the ids of its mandatory pattern's
/// named concepts (`Facts::named_ids`), looked up now, when `plan` is
/// planned for each call's values (`FindSql::plan_per_call`): a plan made
/// for the values then knows which concept each name is. The Brain's
/// `FIND … WHERE { ?m {type: "Event"} (?m, "involves", {type: "Person",
/// name: "$self"}) FILTER(?m.attributes.event_class == "GrowthMilestone") }`
/// was planned as if `$self` had the links of an average concept (one),
/// and walked all 100,000 of them where the attribute index finds the
/// milestones. `None` when there is nothing to add.
pub(crate) fn with_named_ids(
    space: &Space,
    q: &FindQuery,
    env: Env,
    plan: &FindSql,
    limit: u64,
    offset: u64,
    after: Option<&[i64]>,
) -> Result<Option<FindSql>, KipError> {
    // Not with a UNION: the solutions of other branches would survive a
    // stale id in one.
    if !plan.plan_per_call || crate::compile::distinct::has_union(&q.where_clauses) {
        return Ok(None);
    }
    let named = env.facts.verified_in_statement.as_ref().map_or(&[][..], |v| &v.named_concepts[..]);
    let ids = resolve::identities::ids_of(space, named)?;
    if ids.is_empty() {
        return Ok(None);
    }
    // Compiled for its plan at once (`Facts::per_call`): `plan` is planned
    // for its values, so `compile_find` would find that out and compile again.
    let facts = crate::compile::env::Facts { named_ids: ids, per_call: true, ..env.facts.clone() };
    Ok(Some(compile_find(q, Env { facts: &facts, ..env }, limit, offset, after)?))
}

/// The types and predicates a FIND's top-level clauses name (asked only
/// when it found no solution: [`check_guard`]).
type SchemaUses<'a> = &'a dyn Fn() -> Vec<Requirement>;

/// The page `plan` answers (`page` rows).
fn answer(plan: &FindSql, page: usize, ctx: &Ctx, uses: SchemaUses) -> Result<Answer, KipError> {
    let (planned, params) = planning(plan, &ctx.space)?;
    let (sql, params) = (&plan.sql, &params[..]);
    Ok(match plan.layout {
        // The rows' element objects go into the envelope as the jsonb the
        // statement built (`exec::jsonb::Doc`).
        Layout::Rows => {
            // Every row's result columns; the ids a keyset cursor continues
            // after, only in the page's last row and only when a next page
            // exists (the sort keys and ids of the other rows go unread).
            let shown: Vec<usize> = plan.shape.iter().map(|&(Out::Column(i) | Out::Scalar(i))| i).collect();
            let keys = plan.keyset.as_deref().unwrap_or_default();
            let wanted = |row: usize, col: usize, rows: usize| {
                shown.contains(&col) || (rows > page && row + 1 == page && keys.contains(&col))
            };
            rows_page(plan, spi::query_docs(sql, params, Access::ReadOnly, planned, &wanted)?, page, ctx, uses)?
        }
        Layout::OneRow { count_col } => {
            one_row_page(plan, spi::query_planned(sql, params, Access::ReadOnly, planned)?, page, count_col, ctx, uses)?
        }
    })
}

/// A FIND's answer: the result's entries (one per FIND expression), whether
/// another page exists, and the ids of the page's last row when the next
/// page continues after them (keyset pagination).
struct Answer {
    entries: Vec<Doc>,
    more: bool,
    last_ids: Option<Vec<i64>>,
    /// Whether the answer shows a solution (a row, or an aggregation's value).
    solutions: bool,
}

/// `Layout::Rows`: up to `page + 1` rows, the columnar entries assembled
/// here. An empty page is where a missing required element shows: the
/// guard's lookup tells "nothing matched" from `KIP_3002`.
fn rows_page(plan: &FindSql, rows: Vec<Vec<Doc>>, page: usize, ctx: &Ctx, uses: SchemaUses) -> Result<Answer, KipError> {
    check_guard(plan, rows.is_empty(), ctx, uses)?;
    let solutions = !rows.is_empty();
    let more = rows.len() > page;
    let last_ids = plan.keyset.as_ref().filter(|_| more && page > 0).and_then(|cols| {
        let last = rows.get(page - 1)?;
        cols.iter().map(|&c| last.get(c).and_then(Doc::as_json).and_then(Value::as_i64)).collect::<Option<Vec<i64>>>()
    });
    let columns: Vec<usize> = plan.shape.iter().map(|&(Out::Column(i) | Out::Scalar(i))| i).collect();
    // Each entry's values are moved out of the rows, not copied (a page of
    // a thousand names was a fifth allocation and freeing); an entry that
    // repeats a column takes a copy.
    let mut entries: Vec<Vec<Doc>> = columns.iter().map(|_| Vec::with_capacity(rows.len().min(page))).collect();
    for mut row in rows.into_iter().take(page) {
        for (k, &i) in columns.iter().enumerate() {
            let shared = columns[k + 1..].contains(&i);
            let value = match row.get_mut(i) {
                Some(v) if shared => v.clone(),
                Some(v) => std::mem::take(v),
                None => Doc::default(),
            };
            entries[k].push(value);
        }
    }
    Ok(Answer { entries: entries.into_iter().map(Doc::Array).collect(), more, last_ids, solutions })
}

/// `KIP_3002` when the guard finds a required element missing; looked up
/// when the answer shows no solution (`no_solution`) or the guard is
/// checked always. Before it, for an answer without a solution, `KIP_2001`
/// when a concept type of the top-level clauses is not registered (RC10
/// §2.8.2: `drug` for `Drug`), with a "did you mean" hint: a FIND that
/// finds something needs no such look, and one that finds nothing tells
/// the agent why.
fn check_guard(plan: &FindSql, no_solution: bool, ctx: &Ctx, uses: SchemaUses) -> Result<(), KipError> {
    if no_solution {
        // Concept types only: an unregistered predicate matches nothing,
        // as kip-conformance's kql-optional.json requires.
        let types: Vec<Requirement> = uses().into_iter().filter(|r| r.kind == registry::Kind::ConceptType).collect();
        registry::require_all_with(&ctx.space, &types, Access::ReadOnly)?;
    }
    let Some(guard) = plan.guard.as_ref().filter(|g| no_solution || g.always) else { return Ok(()) };
    let (sql, params) = guard.standalone(ctx.space.name());
    let position = spi::lookup_scalar(&sql, params.values(), Access::ReadOnly)?;
    guard.failure(Some(&position)).map_or(Ok(()), Err)
}

/// `Layout::OneRow`: one row of jsonb arrays (one more entry than the page,
/// to tell whether another page exists), scalars and the page's count.
fn one_row_page(
    plan: &FindSql,
    rows: Vec<Vec<Value>>,
    page: usize,
    count_col: Option<usize>,
    ctx: &Ctx,
    uses: SchemaUses,
) -> Result<Answer, KipError> {
    let row = rows.into_iter().next().unwrap_or_default();
    // A solution exists when the page has rows or an aggregation has a
    // value (COUNT is 0 and the others NULL over no solution; a COUNT of 0
    // or a SUM of 0 proves nothing, and costs the lookup).
    let shows_a_solution = row.iter().any(|v| !v.is_null() && v.as_i64() != Some(0) && v.as_array().is_none_or(|a| !a.is_empty()));
    check_guard(plan, !shows_a_solution, ctx, uses)?;
    let more = count_col.and_then(|c| row.get(c)).and_then(Value::as_u64).is_some_and(|n| n > page as u64);
    let entries = plan
        .shape
        .iter()
        .map(|out| match *out {
            Out::Column(i) => {
                let mut col = row.get(i).cloned().unwrap_or(Value::Array(vec![]));
                if let Value::Array(a) = &mut col {
                    a.truncate(page);
                }
                col
            }
            Out::Scalar(i) => row.get(i).cloned().unwrap_or(Value::Null),
        })
        .map(Doc::Json)
        .collect();
    Ok(Answer { entries, more, last_ids: None, solutions: shows_a_solution })
}
