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

use super::space_words;
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
    /// The most common keys (`space ␟ word`), and the share of the table's
    /// rows containing each (`freqs[i]` for `keys[i]`; Postgres appends
    /// three summary numbers).
    keys: Vec<String>,
    freqs: Vec<f32>,
}

impl WordStats {
    /// The most common words of `space`, and the share of the table's rows
    /// containing each.
    pub fn of_space(&self, space: &str) -> (Vec<String>, Vec<f32>) {
        let prefix = space_words::prefix(space);
        self.keys
            .iter()
            .zip(&self.freqs)
            .filter_map(|(key, freq)| Some((key.strip_prefix(&prefix)?.to_string(), *freq)))
            .unzip()
    }
}

thread_local! {
    /// Per table and role: a role under row-level security sees other numbers.
    static CACHE: RefCell<HashMap<(&'static str, u32), (Instant, Rc<WordStats>)>> = RefCell::new(HashMap::new());
}

/// The statistics of `table` (`schema.name`, a trusted identifier; its
/// keyword index is `<name>_words_idx`).
pub fn of(table: &'static str, access: Access) -> Result<Rc<WordStats>, KipError> {
    let key = (table, u32::from(unsafe { pgrx::pg_sys::GetUserId() }));
    if let Some(stats) = CACHE.with(|c| c.borrow().get(&key).filter(|(at, _)| at.elapsed() < TTL).map(|(_, s)| s.clone())) {
        return Ok(stats);
    }
    let (schema, name) = table.split_once('.').expect("a schema-qualified table");
    // A role under row-level security (governance, DESIGN §16) must not
    // learn the size of spaces it cannot read: its `rows` is the number of
    // rows it can see (pg_stats already hides the word statistics from it).
    let rows = spi::query(
        "SELECT CASE WHEN row_security_active(c.oid) THEN (SELECT count(*) FROM ONLY kip.concepts WHERE c.relname = 'concepts')
                                                          + (SELECT count(*) FROM ONLY kip.propositions WHERE c.relname = 'propositions')
                     ELSE greatest(c.reltuples, 0) END::float8,
                to_jsonb(coalesce(s.most_common_elems::text::text[], '{}')),
                to_jsonb(coalesce(s.most_common_elem_freqs, '{}'))
         FROM pg_class c
         LEFT JOIN pg_stats s ON s.schemaname = $1 AND s.tablename = $2 AND s.attname = 'space_words'
         WHERE c.oid = $3::regclass",
        &[SqlParam::Text(schema.into()), SqlParam::Text(format!("{name}_words_idx")), SqlParam::Text(table.into())],
        access,
    )?;
    let stats = Rc::new(match rows.first() {
        Some(row) => WordStats {
            rows: row[0].as_f64().unwrap_or(0.0),
            keys: strings(&row[1]),
            freqs: row[2].as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|v| v.as_f64()).map(|f| f as f32).collect()),
        },
        None => WordStats::default(),
    });
    CACHE.with(|c| c.borrow_mut().insert(key, (Instant::now(), stats.clone())));
    Ok(stats)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
}
