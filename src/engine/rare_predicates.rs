//! Whether a predicate has few links in a space that holds many: a FIND
//! that may scan that predicate's links (`compile::anchors`) is then
//! planned for its values (`engine::find::planning`).
//!
//! A generic plan estimates `predicate = $n` at the table's average
//! frequency of a predicate. Under an ORDER BY … LIMIT it then walked an
//! endpoint index of the whole space and kept the predicate's links,
//! expecting to meet them often; for a predicate with no links it read
//! every link of the space (60 ms over a million links, 240 ms from disk),
//! where the `(space, predicate)` index answers at once. A count of the
//! predicate's links, bounded, tells the two apart; it is remembered per
//! backend for a minute, so a FIND sent again pays a map lookup.

use crate::exec::{spi, Access, SqlParam};
use crate::search::word_stats;
use kip_lang::KipError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A space with fewer links (estimated) is walked whole in a few ms at
/// most: no predicate of it is worth a plan per call.
const MIN_SPACE_LINKS: f64 = 20_000.0;
/// A predicate is rare below this share of its space's links…
const RARE_SHARE: f64 = 1.0 / 50.0;
/// …and below this many links (the count reads at most this many entries).
const MAX_RARE_LINKS: i64 = 20_000;
/// How long a backend trusts a count: links come and go, but a predicate
/// rarely crosses the bound between two statements.
const TTL: Duration = Duration::from_secs(60);
/// Entries kept per backend before the memo starts over.
const MAX_ENTRIES: usize = 4_096;

thread_local! {
    /// (role, space, predicate) → (when counted, rare). Per role: under
    /// row-level security a role counts the links it sees.
    static MEMO: RefCell<HashMap<(u32, String, String), (Instant, bool)>> = RefCell::new(HashMap::new());
    /// (role, space) → (when estimated, links), for all its predicates
    /// (`space_links`).
    static SPACE_LINKS: RefCell<HashMap<(u32, String), (Instant, f64)>> = RefCell::new(HashMap::new());
}

/// Whether any of `predicates` is rare in `space`.
pub(crate) fn any_rare(space: &str, predicates: &[String]) -> Result<bool, KipError> {
    for p in predicates {
        if rare(space, p)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn rare(space: &str, predicate: &str) -> Result<bool, KipError> {
    let key = (role(), space.to_string(), predicate.to_string());
    if let Some(rare) = MEMO.with(|m| fresh(&m.borrow(), &key)) {
        return Ok(rare);
    }
    let rare = match bound(space_links(space)?) {
        None => false,
        Some(bound) => count_links_up_to(space, Some(predicate), bound)? < bound,
    };
    MEMO.with(|m| remember(&mut m.borrow_mut(), key, rare));
    Ok(rare)
}

/// An estimate of the space's links: from the planner's statistics
/// (`search::word_stats`). A role under row-level security may not read
/// them, and `word_stats` would count every link it can see; it counts the
/// space's links up to `MIN_SPACE_LINKS` instead, and takes a large space
/// for the whole table (`pg_class.reltuples`), which errs towards planning
/// for the values. Remembered per role and space for all its predicates.
fn space_links(space: &str) -> Result<f64, KipError> {
    let key = (role(), space.to_string());
    if let Some(links) = SPACE_LINKS.with(|m| fresh(&m.borrow(), &key)) {
        return Ok(links);
    }
    let rows = spi::lookup(
        "SELECT row_security_active('kip.propositions'::regclass),
                (SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = 'kip.propositions'::regclass)",
        &[],
        Access::ReadOnly,
    )?;
    let row = rows.first();
    let governed = row.and_then(|r| r.first()).and_then(|v| v.as_bool()).unwrap_or(false);
    let links = if governed {
        let table = row.and_then(|r| r.get(1)).and_then(|v| v.as_f64()).unwrap_or(0.0);
        let seen = count_links_up_to(space, None, MIN_SPACE_LINKS as i64)? as f64;
        if seen < MIN_SPACE_LINKS { seen } else { table.max(seen) }
    } else {
        word_stats::of("kip.propositions", Access::ReadOnly)?.space_rows(space)
    };
    SPACE_LINKS.with(|m| remember(&mut m.borrow_mut(), key, links));
    Ok(links)
}

/// A memo's value for `key`, unless older than `TTL`.
fn fresh<K: std::hash::Hash + Eq, V: Copy>(memo: &HashMap<K, (Instant, V)>, key: &K) -> Option<V> {
    memo.get(key).filter(|(at, _)| at.elapsed() < TTL).map(|&(_, v)| v)
}

/// Remember `value` for `key` (the memo starts over when full).
fn remember<K: std::hash::Hash + Eq, V>(memo: &mut HashMap<K, (Instant, V)>, key: K, value: V) {
    if memo.len() >= MAX_ENTRIES {
        memo.clear();
    }
    memo.insert(key, (Instant::now(), value));
}

/// The role whose view of the tables a count is: under row-level security
/// each role counts the links it may see.
fn role() -> u32 {
    u32::from(unsafe { pgrx::pg_sys::GetUserId() })
}

/// The number of links under which a predicate of a space of `links`
/// links is rare; `None` for a small space.
fn bound(links: f64) -> Option<i64> {
    (links >= MIN_SPACE_LINKS).then(|| ((links * RARE_SHARE) as i64).clamp(1, MAX_RARE_LINKS))
}

/// The space's links (of `predicate`, when given), counted up to `limit`.
fn count_links_up_to(space: &str, predicate: Option<&str>, limit: i64) -> Result<i64, KipError> {
    let rows = match predicate {
        Some(predicate) => spi::lookup(
            "SELECT count(*) FROM (SELECT 1 FROM kip.propositions WHERE space = $1 AND predicate = $2 LIMIT $3) t",
            &[SqlParam::Text(space.into()), SqlParam::Text(predicate.into()), SqlParam::Int(limit)],
            Access::ReadOnly,
        )?,
        None => spi::lookup(
            "SELECT count(*) FROM (SELECT 1 FROM kip.propositions WHERE space = $1 LIMIT $2) t",
            &[SqlParam::Text(space.into()), SqlParam::Int(limit)],
            Access::ReadOnly,
        )?,
    };
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::bound;

    #[test]
    fn only_a_large_space_has_rare_predicates() {
        assert_eq!(bound(19_999.0), None);
        assert_eq!(bound(20_000.0), Some(400));
        assert_eq!(bound(1_000_000.0), Some(20_000));
        assert_eq!(bound(50_000_000.0), Some(20_000));
    }
}
