//! An element's words keyed by its space: `kip.space_words(space, words)`,
//! the expression the keyword indexes `concepts_words_idx` and
//! `propositions_words_idx` are built on (`sql/schema.sql`).
//!
//! Each word of `search_text` becomes `space ␟ word` (the unit separator,
//! U+001F, which neither a space name nor a lexeme can hold), so the GIN
//! index keeps one posting list per word *and space*: a lookup reads only
//! the space's own elements containing the word, and ANALYZE's element
//! statistics of the expression (`pg_stats.most_common_elems` of the index)
//! tell how common a word is in each space. A word another space uses a
//! million times is then as cheap to look up here as any rare word, where a
//! table-wide index made it read the whole posting list, or (to avoid that)
//! treated it as common and looked for it only among the newest elements.

use pgrx::pg_sys;
use pgrx::{FromDatum, IntoDatum};

/// The indexed expression over the row `alias`, written exactly as in the
/// index definitions: the planner matches an index to the expression's
/// form.
fn of(alias: &str) -> String {
    format!("kip.space_words({alias}.space, tsvector_to_array({alias}.search_text))")
}

/// How a keyword statement asks for the rows containing a word: through
/// the keyword index keyed by space, or, in a database still on an earlier
/// release's schema (`ALTER EXTENSION kip UPDATE` not run yet), through the
/// GIN index on `search_text` that schema has. One library serves both.
#[derive(Clone, Copy, Debug)]
pub struct Lookup {
    pub keyed: bool,
}

impl Lookup {
    /// The row `alias` contains the word of `word`, a row with the word's
    /// `key` (a one-key array) and its `tq` (a tsquery).
    pub fn has_word(self, alias: &str, word: &str) -> String {
        if self.keyed {
            format!("{} @> {word}.key", of(alias))
        } else {
            format!("{alias}.search_text @@ {word}.tq")
        }
    }

    /// The row `alias` contains every word of the CTE `terms` (the words
    /// of `term`, SQL text).
    pub fn has_all(self, alias: &str, term: &str) -> String {
        if self.keyed {
            format!("{} @> (SELECT array_agg(t.key[1]) FROM terms t)", of(alias))
        } else {
            format!("{alias}.search_text @@ plainto_tsquery('simple', {term})")
        }
    }
}

/// The key of the word `lexeme` (SQL text) in the space `space` (SQL text).
pub fn key(space: &str, lexeme: &str) -> String {
    format!("({space} || chr(31) || {lexeme})")
}

/// The prefix of a space's keys, for reading its share of the statistics.
pub fn prefix(space: &str) -> String {
    format!("{space}\u{1f}")
}

/// `kip.space_words(space text, words text[]) RETURNS text[]`, immutable
/// and strict: each of `words` prefixed with the space and the separator.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_space_words(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let args = (*fcinfo).args.as_slice(2);
    let space = String::from_datum(args[0].value, args[0].isnull).unwrap_or_default();
    let words = Vec::<Option<String>>::from_datum(args[1].value, args[1].isnull).unwrap_or_default();
    let prefix = prefix(&space);
    let keys: Vec<String> = words.into_iter().flatten().map(|w| format!("{prefix}{w}")).collect();
    keys.into_datum().unwrap_or(pg_sys::Datum::from(0usize))
}

crate::exec::v1_function_info!(pg_finfo_kip_space_words);
