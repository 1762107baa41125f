//! Ordered FIND walks: the later pages of a FIND with ORDER BY, read from a
//! ranking the backend keeps, so that walking every page costs time linear
//! in the result.
//!
//! An ordered page must rank every solution (no index serves the order of
//! arbitrary attribute paths), so paging by offset sorted the whole result
//! again for each page: a walk of N rows cost N²/page. Instead, the first
//! CURSOR page of a walk ranks the solutions from its offset on once, and
//! keeps their key ids (the projected and ordering variables' ids,
//! `compile::find::FindSql::ranking`) in backend memory under a new walk
//! number, which its `next_cursor` carries (`exec::cursor`, `k4` tokens).
//! Each later page runs the pattern for its own ids only
//! (`compile_find_ranked`), in the ranking's order.
//!
//! What a walk shows: the solutions as ranked when its second page was
//! asked, each page checked against the memory as it is then: a solution
//! that no longer matches is left out (the page is shorter), an element's
//! values are its current ones, and a solution that starts matching during
//! the walk is not added (as a walk by offset would not see one ranked
//! before its position). The first page is the ordinary one.
//!
//! A ranking belongs to the backend, the role and the query that made it.
//! A call on another backend (a pooled connection), or after the ranking
//! was dropped, resumes at the token's offset and ranks again there.
//! Rankings are bounded: [`MAX_RANKED_IDS`] ids each (a longer walk pages
//! by offset), [`MAX_WALKS`] per backend (the oldest is dropped), and
//! [`WALK_TTL`] of age. A query found to have no ranking (a key that may be
//! null) or too long a result is remembered as such for [`WALK_TTL`], so
//! its later pages go straight to paging by offset instead of compiling
//! the ranking, or running it over the whole result, again for each page.

use crate::compile::env::Env;
use crate::compile::find::{compile_find, compile_find_ranked, FindSql, Out};
use crate::exec::jsonb::Doc;
use crate::exec::{cursor, spi, Access};
use kip_lang::ast::FindQuery;
use kip_lang::KipError;
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// The most ids a ranking holds (8 MB): as many solutions over one key
/// variable, half as many over two. A longer walk pages by offset.
const MAX_RANKED_IDS: usize = 1_000_000;
/// Rankings kept per backend.
const MAX_WALKS: usize = 4;
/// A ranking older than this is dropped.
const WALK_TTL: Duration = Duration::from_secs(600);
/// Queries remembered as unrankable per backend (the oldest is dropped).
const MAX_UNRANKED: usize = 64;

struct Walk {
    number: u64,
    /// The role that ranked (`GetUserId`): row-level security made the
    /// ranking, so no other role reads it.
    role: u32,
    /// A hash of the query's cursor shape (its canonical text and space).
    shape: u64,
    /// The offset of the first ranked solution in the result.
    base: u64,
    /// The ranking: the key ids of each solution from `base` on, in order,
    /// `width` ids a solution, one after the other.
    ids: Vec<i64>,
    width: usize,
    made: Instant,
}

impl Walk {
    fn solutions(&self) -> usize {
        self.ids.len() / self.width.max(1)
    }
}

thread_local! {
    static WALKS: RefCell<Vec<Walk>> = const { RefCell::new(Vec::new()) };
    /// (role, shape) of the queries that have no ranking or too long a
    /// result, with when that was found.
    static UNRANKED: RefCell<Vec<((u32, u64), Instant)>> = const { RefCell::new(Vec::new()) };
    static NEXT_NUMBER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn shape_hash(shape: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    shape.hash(&mut h);
    h.finish()
}

fn role() -> u32 {
    u32::from(unsafe { pgrx::pg_sys::GetUserId() })
}

/// A walk number no other ranking of this backend had.
fn new_number() -> u64 {
    let pid = unsafe { pgrx::pg_sys::MyProcPid } as u64;
    NEXT_NUMBER.with(|n| {
        n.set(n.get() + 1);
        (pid << 32) | (n.get() & 0xffff_ffff)
    })
}

/// A page of an ordered walk: the statement that read the ranked solutions
/// `[offset, offset + limit)` and its rows (one per solution that still
/// matches, in rank order), their number at most, and the token of the
/// next page when more follow.
pub(crate) struct WalkPage {
    pub plan: FindSql,
    pub rows: Vec<Vec<Doc>>,
    pub ranked: usize,
    pub next_cursor: Option<String>,
}

/// The CURSOR page at `offset` of the ordered FIND `q`, from the ranking
/// `walk` names when this backend holds it, else from a new ranking made
/// here. `None` when the query has no ranking (its pages are not ordered,
/// or a key may be null), when its result is too long to rank, or when
/// the offset is past the end: the caller pages by offset.
pub(crate) fn page(
    q: &FindQuery,
    env: Env,
    limit: u64,
    offset: u64,
    walk: Option<u64>,
    shape: &str,
) -> Result<Option<WalkPage>, KipError> {
    if limit == 0 {
        return Ok(None);
    }
    let key = (role(), shape_hash(shape));
    let held = walk.and_then(|number| slice(number, key, offset, limit));
    let (number, ids, more) = match held {
        Some(found) => found,
        None if unranked(key) => return Ok(None),
        None => match rank(q, env, offset)? {
            Some((ids, width)) => remember(key, offset, ids, width, limit),
            None => {
                mark_unranked(key);
                return Ok(None);
            }
        },
    };
    if ids.is_empty() {
        return Ok(None);
    }
    let Some(plan) = compile_find_ranked(q, env, &ids)? else { return Ok(None) };
    let shown: Vec<usize> = plan.shape.iter().map(|&(Out::Column(i) | Out::Scalar(i))| i).collect();
    let wanted = |_row: usize, col: usize, _rows: usize| shown.contains(&col);
    // A custom plan: it sees how many ids the page holds. The generic plan
    // guessed ten, and matched the page's rows to their ranks with a
    // nested loop (36 ms for 1,000 rows instead of ~2).
    let rows = spi::query_docs(&plan.sql, plan.params.values(), Access::ReadOnly, spi::Planning::Custom, &wanted)?;
    let next_cursor = if more { cursor::encode_walk(shape, offset.saturating_add(limit), number)? } else { None };
    Ok(Some(WalkPage { plan, rows, ranked: ids.len(), next_cursor }))
}

/// The ids of the ranked solutions `[offset, offset + limit)` of the
/// walk `number` when this backend holds it for `key` and `offset`, with
/// whether more follow.
fn slice(number: u64, key: (u32, u64), offset: u64, limit: u64) -> Option<(u64, Vec<Vec<i64>>, bool)> {
    WALKS.with(|walks| {
        let walks = walks.borrow();
        let w = walks.iter().find(|w| w.number == number && (w.role, w.shape) == key && w.made.elapsed() < WALK_TTL)?;
        let start = usize::try_from(offset.checked_sub(w.base)?).ok()?;
        let total = w.solutions();
        if start > total {
            return None;
        }
        let end = start.saturating_add(usize::try_from(limit).unwrap_or(usize::MAX)).min(total);
        Some((number, solutions(&w.ids, w.width, start, end), end < total))
    })
}

/// Whether the query `key` was found unrankable within [`WALK_TTL`].
fn unranked(key: (u32, u64)) -> bool {
    UNRANKED.with(|u| u.borrow().iter().any(|(k, at)| *k == key && at.elapsed() < WALK_TTL))
}

fn mark_unranked(key: (u32, u64)) {
    UNRANKED.with(|u| {
        let mut u = u.borrow_mut();
        u.retain(|(k, at)| *k != key && at.elapsed() < WALK_TTL);
        if u.len() >= MAX_UNRANKED {
            u.remove(0);
        }
        u.push((key, Instant::now()));
    });
}

/// Solutions `[start, end)` of a ranking of `width` ids a solution.
fn solutions(ids: &[i64], width: usize, start: usize, end: usize) -> Vec<Vec<i64>> {
    (start..end).map(|i| ids[i * width..(i + 1) * width].to_vec()).collect()
}

/// Keep the ranking `ids` (`width` a solution) of the solutions from
/// `offset` on under a new walk number, dropping expired and the oldest
/// rankings; the first page's ids, and whether more follow.
fn remember(key: (u32, u64), offset: u64, ids: Vec<i64>, width: usize, limit: u64) -> (u64, Vec<Vec<i64>>, bool) {
    let number = new_number();
    let total = ids.len() / width.max(1);
    let end = usize::try_from(limit).unwrap_or(usize::MAX).min(total);
    let first = solutions(&ids, width, 0, end);
    let more = end < total;
    // A walk whose last page this is needs no ranking kept.
    if more {
        WALKS.with(|walks| {
            let mut walks = walks.borrow_mut();
            walks.retain(|w| w.made.elapsed() < WALK_TTL);
            if walks.len() >= MAX_WALKS {
                walks.remove(0);
            }
            walks.push(Walk { number, role: key.0, shape: key.1, base: offset, ids, width, made: Instant::now() });
        });
    }
    (number, first, more)
}

/// The ranking of the solutions of `q` from `offset` on, in the page
/// order: their key ids one after the other, and how many a solution has.
/// `None` when the query has no ranking or its remaining solutions have
/// more than [`MAX_RANKED_IDS`] ids.
fn rank(q: &FindQuery, env: Env, offset: u64) -> Result<Option<(Vec<i64>, usize)>, KipError> {
    let plan = compile_find(q, env, MAX_RANKED_IDS as u64, offset, None)?;
    let Some(width) = plan.ranking.as_ref().map(Vec::len).filter(|w| *w > 0) else { return Ok(None) };
    let most = MAX_RANKED_IDS / width;
    // One array of ids per key variable, aggregated in the page's order
    // (the sorted subquery's); only the key ids are read, so the planner
    // drops the projections it need not compute. One solution more than
    // kept tells the ranking would be too long.
    let arrays: Vec<String> = (0..width).map(|i| format!("array_agg(x.t{i})")).collect();
    let keys: Vec<String> = (0..width).map(|i| format!("y.t{i}")).collect();
    let sql = format!("SELECT {} FROM (SELECT {} FROM ({}) y LIMIT {}) x", arrays.join(", "), keys.join(", "), plan.sql, most + 1);
    let columns = spi::query_id_arrays(&sql, plan.params.values(), Access::ReadOnly)?;
    let count = columns.first().map_or(0, Vec::len);
    if count > most || columns.len() != width || columns.iter().any(|c| c.len() != count) {
        return Ok(None);
    }
    let mut ids = Vec::with_capacity(count * width);
    for i in 0..count {
        ids.extend(columns.iter().map(|c| c[i]));
    }
    Ok(Some((ids, width)))
}
