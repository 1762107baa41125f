//! `jsonb` ⇄ `serde_json::Value` without a text round trip.
//!
//! pgrx's `JsonB` converts through text both ways: `jsonb_out` and a serde
//! parse to read a value, a serde print and `jsonb_in` to make one. Every
//! call reads its statement's jsonb columns and returns its envelope as
//! jsonb, so that was a tenth of a small FIND and about a microsecond for
//! each row of a large page. Here values are read from the jsonb bytes
//! (`read`) and written as jsonb bytes (`write`), in the layout
//! `jsonb_in` itself produces.
//!
//! A reply can also carry parts that are jsonb already (`Doc`): the element
//! objects of a FIND page are copied from the statement's rows into the
//! envelope as they are, never decoded into Rust values and encoded again.
//!
//! The results are the same values the text path gives, numbers included:
//! a number is read from `numeric_out`'s text by serde and made by
//! `numeric_in` from serde's text. Where the text path behaves differently
//! (nesting deeper than serde's limit on the way in, a NUL character or a
//! string longer than jsonb allows on the way out) these functions return
//! `None` and the caller takes the text path, whose errors are the ones
//! users have always seen.

mod doc;
mod read;
mod write;

pub use doc::{Doc, Jsonb};
#[cfg(any(test, feature = "pg_test"))]
pub(crate) use read::{decode, iterate};
pub use read::{to_value, to_value_with, BigNumbers, Unread};
pub use write::{datum_of_doc, from_value};

use pgrx::pg_sys;
use pgrx::pg_sys::jbvType::{jbvNumeric as JBV_NUMERIC, jbvString as JBV_STRING};

/// serde_json's recursion limit: deeper values take the text path, which
/// refuses them as it always has.
const MAX_DEPTH: usize = 128;

/// A jsonb string scalar pointing at `bytes`, which must outlive the
/// value's serialisation (for Postgres's own builder, `pushJsonbValue`).
pub(crate) unsafe fn string_value(bytes: &[u8]) -> pg_sys::JsonbValue {
    let mut v: pg_sys::JsonbValue = std::mem::zeroed();
    v.type_ = JBV_STRING;
    v.val.string.val = bytes.as_ptr() as *mut std::ffi::c_char;
    v.val.string.len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
    v
}

/// A jsonb numeric scalar of an integer (for `pushJsonbValue`).
pub(crate) unsafe fn integer_value(n: i64) -> pg_sys::JsonbValue {
    let mut v: pg_sys::JsonbValue = std::mem::zeroed();
    v.type_ = JBV_NUMERIC;
    v.val.numeric = pg_sys::int64_to_numeric(n);
    v
}
