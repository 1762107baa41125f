//! A reply document: JSON some of whose parts are jsonb already.
//!
//! A FIND page is mostly element objects that `kip.concept_json` and
//! `kip.proposition_json` built as jsonb inside the statement. Decoding
//! each into a `serde_json::Value` only to encode it again into the
//! envelope was a twentieth of a small FIND; a `Doc` holds such a part as
//! its jsonb bytes, which `write` copies into the envelope as they are.

use pgrx::pg_sys;
use serde_json::{Map, Value};

/// The root container (an object or an array) of a jsonb value: the bytes
/// that follow the datum's varlena header, copied out of the datum.
#[derive(Clone, PartialEq, Eq)]
pub struct Jsonb(Box<[u8]>);

impl Jsonb {
    /// The root container of a jsonb datum, when it is an object or an
    /// array. `None` for a scalar, which jsonb stores as a one-element
    /// array marked raw, a form that cannot be nested as it is.
    ///
    /// # Safety
    /// `datum` must be a non-null jsonb datum.
    pub unsafe fn of_datum(datum: pg_sys::Datum) -> Option<Jsonb> {
        let p = datum.cast_mut_ptr::<pg_sys::varlena>();
        let jb = if pgrx::varlena::varatt_is_4b_u(p) { p } else { pg_sys::pg_detoast_datum(p) };
        let size = pgrx::varlena::varsize(jb);
        let bytes = std::slice::from_raw_parts(jb.cast::<u8>().add(4), size.checked_sub(4)?);
        let header = u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?);
        if header & pg_sys::JB_FSCALAR != 0 {
            return None;
        }
        Some(Jsonb(bytes.into()))
    }

    /// The container's bytes, in jsonb's layout.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The value as `exec::jsonb::to_value` reads it (`Null` past serde's
    /// depth limit, as the text path reads such a column).
    pub fn to_value(&self) -> Value {
        // A datum of its own: the container's numerics must be read at the
        // alignment they were laid out for.
        unsafe {
            let size = self.0.len() + 4;
            let p = pg_sys::palloc(size).cast::<u8>();
            std::ptr::copy_nonoverlapping(self.0.as_ptr(), p.add(4), self.0.len());
            pgrx::varlena::set_varsize_4b(p.cast(), size as i32);
            let value = super::to_value(pg_sys::Datum::from(p)).unwrap_or(Value::Null);
            pg_sys::pfree(p.cast());
            value
        }
    }
}

impl std::fmt::Debug for Jsonb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jsonb({} bytes)", self.0.len())
    }
}

/// A JSON document whose parts are values, jsonb containers, or arrays and
/// objects of further parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Doc {
    Json(Value),
    Jsonb(Jsonb),
    Array(Vec<Doc>),
    /// Members with distinct keys (jsonb orders them itself).
    Object(Vec<(String, Doc)>),
}

impl Default for Doc {
    fn default() -> Doc {
        Doc::Json(Value::Null)
    }
}

impl From<Value> for Doc {
    fn from(value: Value) -> Doc {
        Doc::Json(value)
    }
}

impl Doc {
    /// The part as a value when it is one.
    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Doc::Json(v) => Some(v),
            _ => None,
        }
    }

    /// The whole document as a value, its jsonb parts decoded.
    pub fn into_value(self) -> Value {
        match self {
            Doc::Json(v) => v,
            Doc::Jsonb(j) => j.to_value(),
            Doc::Array(items) => Value::Array(items.into_iter().map(Doc::into_value).collect()),
            Doc::Object(members) => Value::Object(members.into_iter().map(|(k, d)| (k, d.into_value())).collect::<Map<_, _>>()),
        }
    }
}
