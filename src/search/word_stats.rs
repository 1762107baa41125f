//! How common each word is in each space, from the planner's statistics of
//! the keyword indexes' expression (`kip.space_words`, whose elements are
//! `space ␟ word`: `pg_stats.most_common_elems` of the index, gathered by
//! ANALYZE and autovacuum), and the table's size estimate.
//!
//! Keyword search uses them to tell a common word from a rare one before
//! touching its posting list. They are read once per backend and table
//! every `TTL`, and handed to the search statement as parameters: planning
//! the `pg_stats` view inside every search statement cost ~2.5 ms, more
//! than the rest of a typical search.

use super::space_words::{self, Lookup};
use crate::exec::{spi, Access, SqlParam};
use kip_lang::KipError;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long a backend reuses what it read (statistics change when the table
/// is analyzed, not per statement).
const TTL: Duration = Duration::from_secs(60);

/// A table's word statistics.
#[derive(Debug, Default)]
pub struct WordStats {
    /// `pg_class.reltuples`, 0 when the table was never analyzed.
    pub rows: f64,
    /// Whether the table has its keyword index keyed by space (kip 0.11.0's
    /// schema). A database whose `ALTER EXTENSION kip UPDATE` has not run
    /// yet has the GIN index on `search_text` of earlier releases instead,
    /// and its statistics are the table's: `keys` are then plain words.
    keyed: bool,
    /// The most common keys (`space ␟ word`), and the share of the table's
    /// rows containing each (`freqs[i]` for `keys[i]`; Postgres appends
    /// three summary numbers).
    keys: Vec<String>,
    freqs: Vec<f32>,
    /// The most common spaces, the share of the table's rows each holds,
    /// and the number of distinct spaces (`pg_stats` of `space`; negative:
    /// a share of the rows).
    spaces: Vec<String>,
    space_freqs: Vec<f32>,
    n_distinct: f64,
}

impl WordStats {
    /// How the table's keyword statements look a word up.
    pub fn lookup(&self) -> Lookup {
        Lookup { keyed: self.keyed }
    }

    /// The most common words of `space`, and the share of the table's rows
    /// containing each (without a keyed index, the table's words).
    pub fn of_space(&self, space: &str) -> (Vec<String>, Vec<f32>) {
        let prefix = if self.keyed { space_words::prefix(space) } else { String::new() };
        self.keys
            .iter()
            .zip(&self.freqs)
            .filter_map(|(key, freq)| Some((key.strip_prefix(&prefix)?.to_string(), *freq)))
            .unzip()
    }

    /// An estimate of the number of rows of `space`, from the statistics of
    /// `space` as the planner makes it (a common space's share, else the
    /// rest spread over the other spaces); the table's rows when there are
    /// none (never analyzed, or hidden from a role under row-level
    /// security, whose `rows` are the rows it sees).
    pub fn space_rows(&self, space: &str) -> f64 {
        if let Some(i) = self.spaces.iter().position(|s| s == space) {
            return f64::from(self.space_freqs.get(i).copied().unwrap_or(1.0)) * self.rows;
        }
        let distinct = if self.n_distinct < 0.0 { -self.n_distinct * self.rows } else { self.n_distinct };
        let others = distinct - self.spaces.len() as f64;
        if self.spaces.is_empty() || others < 1.0 {
            return self.rows;
        }
        let rest: f64 = 1.0 - self.space_freqs.iter().map(|&f| f64::from(f)).sum::<f64>();
        rest.max(0.0) * self.rows / others
    }
}

thread_local! {
    /// Per table and role: a role under row-level security sees other numbers.
    static CACHE: RefCell<HashMap<(&'static str, u32), (Instant, Rc<WordStats>)>> = RefCell::new(HashMap::new());
}

/// Whether the index `schema.index` exists, from the catalog caches (no
/// query).
fn index_exists(schema: &str, index: &str) -> bool {
    let (Ok(schema), Ok(index)) = (std::ffi::CString::new(schema), std::ffi::CString::new(index)) else { return false };
    // SAFETY: catalog-cache lookups by name, in a transaction.
    unsafe {
        let namespace = pgrx::pg_sys::get_namespace_oid(schema.as_ptr(), true);
        namespace != pgrx::pg_sys::InvalidOid && pgrx::pg_sys::get_relname_relid(index.as_ptr(), namespace) != pgrx::pg_sys::InvalidOid
    }
}

/// The statistics of `table` (`schema.name`, a trusted identifier; its
/// keyword index is `<name>_words_idx`).
pub fn of(table: &'static str, access: Access) -> Result<Rc<WordStats>, KipError> {
    let key = (table, u32::from(unsafe { pgrx::pg_sys::GetUserId() }));
    let (schema, name) = table.split_once('.').expect("a schema-qualified table");
    // Remembered statistics whose keyword index is no longer (or not yet)
    // keyed by space describe another schema: a session that searched
    // inside an `ALTER EXTENSION kip UPDATE` it then rolled back built
    // statements for the index that was gone, for a minute.
    let keyed_now = || index_exists(schema, &format!("{name}_words_idx"));
    if let Some(stats) = CACHE.with(|c| {
        c.borrow().get(&key).filter(|(at, s)| at.elapsed() < TTL && s.keyed == keyed_now()).map(|(_, s)| s.clone())
    }) {
        return Ok(stats);
    }
    // A role under row-level security (governance, DESIGN §16) must not
    // learn the size of spaces it cannot read: its `rows` is the number of
    // rows it can see (pg_stats already hides the word statistics from it).
    // Counted in its readable spaces by the space index (the policies' own
    // condition, with its `is_admin() OR`, can only filter a scan of the
    // whole table: 140 ms at 1.3 million concepts); a `kip_admin` member
    // sees every row.
    let rows = spi::query(
        "SELECT CASE WHEN NOT row_security_active(c.oid) THEN greatest(c.reltuples, 0)
                     WHEN kip.is_admin() THEN (SELECT count(*) FROM ONLY kip.concepts WHERE c.relname = 'concepts')
                                            + (SELECT count(*) FROM ONLY kip.propositions WHERE c.relname = 'propositions')
                     ELSE (SELECT count(*) FROM ONLY kip.concepts x
                           WHERE c.relname = 'concepts' AND x.space = ANY (kip.readable_spaces()))
                        + (SELECT count(*) FROM ONLY kip.propositions x
                           WHERE c.relname = 'propositions' AND x.space = ANY (kip.readable_spaces()))
                END::float8,
                to_jsonb(coalesce(s.most_common_elems::text::text[], '{}')),
                to_jsonb(coalesce(s.most_common_elem_freqs, '{}')),
                to_jsonb(coalesce(sp.most_common_vals::text::text[], '{}')),
                to_jsonb(coalesce(sp.most_common_freqs, '{}')),
                coalesce(sp.n_distinct, 0)::float8,
                k.keyed
         FROM pg_class c
         CROSS JOIN LATERAL (SELECT to_regclass($4) IS NOT NULL AS keyed) k
         LEFT JOIN pg_stats s ON s.schemaname = $1
                             AND CASE WHEN k.keyed THEN s.tablename = $2 AND s.attname = 'space_words'
                                      ELSE s.tablename = c.relname AND s.attname = 'search_text' END
         LEFT JOIN pg_stats sp ON sp.schemaname = $1 AND sp.tablename = c.relname AND sp.attname = 'space'
         WHERE c.oid = $3::regclass",
        &[
            SqlParam::Text(schema.into()),
            SqlParam::Text(format!("{name}_words_idx")),
            SqlParam::Text(table.into()),
            SqlParam::Text(format!("{schema}.{name}_words_idx")),
        ],
        access,
    )?;
    let stats = Rc::new(match rows.first() {
        Some(row) => WordStats {
            rows: row[0].as_f64().unwrap_or(0.0),
            keys: strings(&row[1]),
            freqs: reals(&row[2]),
            spaces: strings(&row[3]),
            space_freqs: reals(&row[4]),
            n_distinct: row[5].as_f64().unwrap_or(0.0),
            keyed: row[6].as_bool().unwrap_or(false),
        },
        None => WordStats::default(),
    });
    CACHE.with(|c| c.borrow_mut().insert(key, (Instant::now(), stats.clone())));
    Ok(stats)
}

fn reals(v: &Value) -> Vec<f32> {
    v.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|v| v.as_f64()).map(|f| f as f32).collect())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
}

#[cfg(test)]
mod tests {
    use super::WordStats;

    fn stats(spaces: &[&str], freqs: &[f32], n_distinct: f64) -> WordStats {
        WordStats {
            rows: 10_000.0,
            spaces: spaces.iter().map(|s| s.to_string()).collect(),
            space_freqs: freqs.to_vec(),
            n_distinct,
            ..WordStats::default()
        }
    }

    #[test]
    fn a_space_size_comes_from_the_space_statistics() {
        let s = stats(&["big", "mid"], &[0.7, 0.2], 12.0);
        assert_eq!(s.space_rows("big").round(), 7_000.0);
        assert_eq!(s.space_rows("mid").round(), 2_000.0);
        // The other tenth of the rows, over the 10 other spaces.
        assert_eq!(s.space_rows("small").round(), 100.0);
        // n_distinct as a share of the rows (negative): 0.001 x 10,000 = 10.
        assert_eq!(stats(&["big"], &[0.5], -0.001).space_rows("x").round(), (5_000.0_f64 / 9.0).round());
        // No statistics: the table's rows.
        assert_eq!(stats(&[], &[], 0.0).space_rows("any"), 10_000.0);
        // Every space is a common one: an unknown one is the table's size.
        assert_eq!(stats(&["a", "b"], &[0.5, 0.5], 2.0).space_rows("c"), 10_000.0);
    }

    #[test]
    fn a_space_reads_only_its_own_words() {
        let s = WordStats {
            keyed: true,
            keys: vec!["a\u{1f}tea".into(), "b\u{1f}tea".into(), "a\u{1f}cup".into(), "ab\u{1f}x".into()],
            freqs: vec![0.1, 0.2, 0.3, 0.4],
            ..WordStats::default()
        };
        assert_eq!(s.of_space("a"), (vec!["tea".to_string(), "cup".to_string()], vec![0.1, 0.3]));
        assert_eq!(s.of_space("b"), (vec!["tea".to_string()], vec![0.2]));
    }
}
