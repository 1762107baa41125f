//! Whether a predicate has few links, or a type few members, in a space
//! that holds many: a FIND that may scan that predicate's links or that
//! type's members (`compile::anchors`) is then planned for those values
//! (`engine::find::planning`).
//!
//! A generic plan estimates `predicate = $n` at the table's average
//! frequency of a predicate. Under an ORDER BY … LIMIT it then walked an
//! endpoint index of the whole space and kept the predicate's links,
//! expecting to meet them often; for a predicate with no links it read
//! every link of the space (60 ms over a million links, 240 ms from disk),
//! where the `(space, predicate)` index answers at once. `type = $n` alike:
//! `FIND(…) WHERE { ?n {type: :type} NOT { … } } LIMIT 100` for a type of
//! 52 members in a space of 100,000 Events walked the whole table's
//! primary key for them (165 ms), where the `(space, type, id)` index
//! reads the 52 (0.4 ms). A count of the value's rows, bounded, tells the
//! two apart; it is remembered per backend for a minute, so a FIND sent
//! again pays a map lookup.

use crate::exec::{spi, Access, SqlParam};
use crate::search::word_stats;
use kip_lang::KipError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A space with fewer rows in a table (estimated) is walked whole in a few
/// ms at most: no value of it is worth a plan of its own.
const MIN_SPACE_ROWS: f64 = 20_000.0;
/// A value is rare below this share of its space's rows…
const RARE_SHARE: f64 = 1.0 / 50.0;
/// …and below this many rows (the count reads at most this many entries).
const MAX_RARE_ROWS: i64 = 20_000;
/// How long a backend trusts a count: rows come and go, but a value
/// rarely crosses the bound between two statements.
const TTL: Duration = Duration::from_secs(60);
/// Entries kept per backend before the memo starts over.
const MAX_ENTRIES: usize = 4_096;

/// What a value selects: a predicate's links or a type's members.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Predicate,
    Type,
}

/// The table a kind of value selects rows of, and the statements that
/// count them (constant text, never user text).
struct Table {
    name: &'static str,
    /// The value's rows in space `$1` (value `$2`), counted up to `$3`.
    count_value: &'static str,
    /// The rows of space `$1`, counted up to `$2`.
    count_space: &'static str,
    /// Whether the table is under row-level security for this role, and
    /// its size from `pg_class`.
    governed: &'static str,
}

/// The [`Table`] of `table`, whose column `column` holds the values.
macro_rules! table {
    ($table:literal, $column:literal) => {
        Table {
            name: $table,
            count_value: concat!("SELECT count(*) FROM (SELECT 1 FROM ", $table, " WHERE space = $1 AND ", $column, " = $2 LIMIT $3) t"),
            count_space: concat!("SELECT count(*) FROM (SELECT 1 FROM ", $table, " WHERE space = $1 LIMIT $2) t"),
            governed: concat!(
                "SELECT row_security_active('", $table, "'::regclass), ",
                "(SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = '", $table, "'::regclass)"
            ),
        }
    };
}

const LINKS: Table = table!("kip.propositions", "predicate");
const CONCEPTS: Table = table!("kip.concepts", "type");

impl Kind {
    fn table(self) -> &'static Table {
        match self {
            Kind::Predicate => &LINKS,
            Kind::Type => &CONCEPTS,
        }
    }
}

thread_local! {
    /// (role, space, kind, value) → (when counted, rare). Per role: under
    /// row-level security a role counts the rows it sees.
    static MEMO: RefCell<HashMap<(u32, String, Kind, String), (Instant, bool)>> = RefCell::new(HashMap::new());
    /// (role, space, kind) → (when estimated, rows of the kind's table),
    /// for all its values (`space_rows`).
    static SPACE_ROWS: RefCell<HashMap<(u32, String, Kind), (Instant, f64)>> = RefCell::new(HashMap::new());
}

/// Whether any of `predicates` is rare in `space`, or any of `types`.
pub(crate) fn any_rare(space: &str, predicates: &[String], types: &[String]) -> Result<bool, KipError> {
    for p in predicates {
        if rare(space, Kind::Predicate, p)? {
            return Ok(true);
        }
    }
    for t in types {
        if rare(space, Kind::Type, t)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn rare(space: &str, kind: Kind, value: &str) -> Result<bool, KipError> {
    let key = (role(), space.to_string(), kind, value.to_string());
    if let Some(rare) = MEMO.with(|m| fresh(&m.borrow(), &key)) {
        return Ok(rare);
    }
    let rare = match bound(space_rows(space, kind)?) {
        None => false,
        Some(bound) => count_up_to(kind.table().count_value, &[SqlParam::Text(space.into()), SqlParam::Text(value.into())], bound)? < bound,
    };
    MEMO.with(|m| remember(&mut m.borrow_mut(), key, rare));
    Ok(rare)
}

/// An estimate of the space's rows in the kind's table: from the planner's
/// statistics (`search::word_stats`). A role under row-level security may
/// not read them, and `word_stats` would count every row it can see; it
/// counts the space's rows up to `MIN_SPACE_ROWS` instead, and takes a
/// large space for the whole table (`pg_class.reltuples`), which errs
/// towards planning for the values. Remembered per role and space for all
/// its values.
fn space_rows(space: &str, kind: Kind) -> Result<f64, KipError> {
    let key = (role(), space.to_string(), kind);
    if let Some(rows) = SPACE_ROWS.with(|m| fresh(&m.borrow(), &key)) {
        return Ok(rows);
    }
    let found = spi::lookup(kind.table().governed, &[], Access::ReadOnly)?;
    let row = found.first();
    let governed = row.and_then(|r| r.first()).and_then(|v| v.as_bool()).unwrap_or(false);
    let rows = if governed {
        let table = row.and_then(|r| r.get(1)).and_then(|v| v.as_f64()).unwrap_or(0.0);
        let seen = count_up_to(kind.table().count_space, &[SqlParam::Text(space.into())], MIN_SPACE_ROWS as i64)? as f64;
        if seen < MIN_SPACE_ROWS { seen } else { table.max(seen) }
    } else {
        word_stats::of(kind.table().name, Access::ReadOnly)?.space_rows(space)
    };
    SPACE_ROWS.with(|m| remember(&mut m.borrow_mut(), key, rows));
    Ok(rows)
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
/// each role counts the rows it may see.
fn role() -> u32 {
    u32::from(unsafe { pgrx::pg_sys::GetUserId() })
}

/// The number of rows under which a value of a space of `rows` rows is
/// rare; `None` for a small space.
fn bound(rows: f64) -> Option<i64> {
    (rows >= MIN_SPACE_ROWS).then(|| ((rows * RARE_SHARE) as i64).clamp(1, MAX_RARE_ROWS))
}

/// The count `sql` returns with `params` and `limit` as its last parameter.
fn count_up_to(sql: &str, params: &[SqlParam], limit: i64) -> Result<i64, KipError> {
    let mut params = params.to_vec();
    params.push(SqlParam::Int(limit));
    let rows = spi::lookup(sql, &params, Access::ReadOnly)?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::bound;

    #[test]
    fn only_a_large_space_has_rare_values() {
        assert_eq!(bound(19_999.0), None);
        assert_eq!(bound(20_000.0), Some(400));
        assert_eq!(bound(1_000_000.0), Some(20_000));
        assert_eq!(bound(50_000_000.0), Some(20_000));
    }
}
