//! Reading a jsonb datum as a `serde_json::Value`: from its bytes, or
//! through Postgres's iterator when the bytes are unexpected.

use pgrx::pg_sys;
use serde_json::{Map, Number, Value};
use std::ffi::CStr;

use pgrx::pg_sys::jbvType::{jbvBool as JBV_BOOL, jbvNull as JBV_NULL, jbvNumeric as JBV_NUMERIC, jbvString as JBV_STRING};
use pgrx::pg_sys::JsonbIteratorToken::{
    WJB_BEGIN_ARRAY, WJB_BEGIN_OBJECT, WJB_DONE, WJB_ELEM, WJB_END_ARRAY, WJB_END_OBJECT, WJB_KEY, WJB_VALUE,
};

use super::MAX_DEPTH;

enum Frame {
    Array { items: Vec<Value>, raw_scalar: bool },
    Object { map: Map<String, Value>, key: Option<String> },
}

/// The value of a jsonb datum, or `None` when it nests deeper than
/// serde's limit (a caller reading it as text then reports what it cannot
/// read). A number beyond a double's range is read as its decimal text.
///
/// # Safety
/// `datum` must be a non-null jsonb datum.
pub unsafe fn to_value(datum: pg_sys::Datum) -> Option<Value> {
    to_value_with(datum, BigNumbers::AsText).ok()
}

/// Why a jsonb datum was not read as a value.
#[derive(Debug, PartialEq)]
pub enum Unread {
    /// It nests deeper than serde's limit, or holds something unexpected.
    Unexpected,
    /// One of its numbers is refused ([`BigNumbers::Refuse`]): why, and
    /// where (object keys and array positions, outermost first; empty for
    /// a number at the top, or one the iterator read).
    RefusedNumber { reason: String, path: Vec<String> },
}

impl Unread {
    /// The same, one level further in: `step` is the key or position of
    /// the member it was in.
    fn within(self, step: impl FnOnce() -> String) -> Unread {
        match self {
            Unread::RefusedNumber { reason, mut path } => {
                let step = step();
                if !step.is_empty() {
                    path.insert(0, step);
                }
                Unread::RefusedNumber { reason, path }
            }
            other => other,
        }
    }
}

/// `Unread::Unexpected` for a `None`: the bytes' checks below are options.
fn expected<T>(value: Option<T>) -> Result<T, Unread> {
    value.ok_or(Unread::Unexpected)
}

/// What a reader does with a number beyond a double's range.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum BigNumbers {
    /// Reads its decimal text as a string: stored data and query results,
    /// which every reader must still get.
    AsText,
    /// Gives up (`Unread::RefusedNumber`): a KIP parameter, which the
    /// caller then refuses as the same literal in a command text is refused.
    Refuse,
}

/// [`to_value`], with a choice for numbers beyond a double's range.
///
/// # Safety
/// `datum` must be a non-null jsonb datum.
pub unsafe fn to_value_with(datum: pg_sys::Datum, big: BigNumbers) -> Result<Value, Unread> {
    // A plain datum with a 4-byte header (a statement's computed column, a
    // value stored uncompressed) is read in place, without a call into
    // Postgres; a short, toasted or compressed one is first made into one.
    let p = datum.cast_mut_ptr::<pg_sys::varlena>();
    let jb = if pgrx::varlena::varatt_is_4b_u(p) { p } else { pg_sys::pg_detoast_datum(p) } as *mut pg_sys::Jsonb;
    // Its root container follows the header, 4-byte aligned.
    let size = pgrx::varlena::varsize(jb as *const pg_sys::varlena);
    match size.checked_sub(4).map(|len| decode(jb.cast::<u8>().add(4), len, 0, big)) {
        Some(Ok(value)) => Ok(value),
        Some(Err(refused @ Unread::RefusedNumber { .. })) => Err(refused),
        Some(Err(Unread::Unexpected)) | None => iterate(jb, big),
    }
}

/// The value of a jsonb container read from its bytes (`len` of them from
/// `data`, its header), as `JsonbIteratorNext` would walk it, without a
/// call into Postgres for each token: the layout of `utils/jsonb.h` (a
/// header with the count and kind, one `JEntry` per child, keys before
/// values in an object, then the children's data, numerics and nested
/// containers 4-byte aligned). Numbers are printed by `numeric_out`.
/// `Unread::Unexpected` past serde's depth limit or for anything
/// unexpected, which the iterator then decides.
pub(crate) unsafe fn decode(data: *const u8, len: usize, depth: usize, big: BigNumbers) -> Result<Value, Unread> {
    if depth >= MAX_DEPTH || len < 4 {
        return Err(Unread::Unexpected);
    }
    let header = std::ptr::read_unaligned(data as *const u32);
    let count = (header & pg_sys::JB_CMASK) as usize;
    let object = header & pg_sys::JB_FOBJECT != 0;
    let children = if object { expected(count.checked_mul(2))? } else { count };
    let base = expected(4usize.checked_add(expected(children.checked_mul(4))?))?;
    if base > len {
        return Err(Unread::Unexpected);
    }
    let scalar = header & pg_sys::JB_FSCALAR != 0;
    let mut values = Vec::with_capacity(children);
    let mut end = 0usize;
    for i in 0..children {
        let entry = std::ptr::read_unaligned(data.add(4 + 4 * i) as *const u32);
        let start = end;
        let stored = (entry & pg_sys::JENTRY_OFFLENMASK) as usize;
        end = if entry & pg_sys::JENTRY_HAS_OFF != 0 { stored } else { expected(start.checked_add(stored))? };
        if end < start || base + end > len {
            return Err(Unread::Unexpected);
        }
        let at = data.add(base + start);
        let aligned = (start + 3) & !3;
        // Where a refused number is: a value's key (decoded already, keys
        // come first), or an element's position.
        let step = || match values.get(i.wrapping_sub(count)) {
            Some(Value::String(key)) if object => serde_json::to_string(key).unwrap_or_default(),
            // A lone scalar is stored as an array of one: it is the top.
            _ if scalar => String::new(),
            _ => format!("[{i}]"),
        };
        let value = match entry & pg_sys::JENTRY_TYPEMASK {
            pg_sys::JENTRY_ISSTRING => {
                Value::String(String::from_utf8_lossy(std::slice::from_raw_parts(at, end - start)).into_owned())
            }
            pg_sys::JENTRY_ISNUMERIC if aligned < end => {
                let numeric = data.add(base + aligned);
                let text = pgrx::direct_function_call::<&CStr>(pg_sys::numeric_out, &[Some(pg_sys::Datum::from(numeric))]);
                number(expected(text.and_then(|t| t.to_str().ok()))?, big).map_err(|e| e.within(step))?
            }
            pg_sys::JENTRY_ISBOOL_FALSE => Value::Bool(false),
            pg_sys::JENTRY_ISBOOL_TRUE => Value::Bool(true),
            pg_sys::JENTRY_ISNULL => Value::Null,
            pg_sys::JENTRY_ISCONTAINER if aligned <= end => {
                decode(data.add(base + aligned), end - aligned, depth + 1, big).map_err(|e| e.within(step))?
            }
            _ => return Err(Unread::Unexpected),
        };
        values.push(value);
    }
    if scalar {
        return expected(values.into_iter().next());
    }
    if !object {
        return Ok(Value::Array(values));
    }
    let mut map = Map::with_capacity(count);
    let mut values = values.into_iter();
    let keys: Vec<Value> = values.by_ref().take(count).collect();
    for (key, value) in keys.into_iter().zip(values) {
        let Value::String(key) = key else { return Err(Unread::Unexpected) };
        map.insert(key, value);
    }
    Ok(Value::Object(map))
}

/// [`to_value`] through Postgres's jsonb iterator.
pub(crate) unsafe fn iterate(jb: *mut pg_sys::Jsonb, big: BigNumbers) -> Result<Value, Unread> {
    let mut it = pg_sys::JsonbIteratorInit(&mut (*jb).root);
    let mut v: pg_sys::JsonbValue = std::mem::zeroed();
    let mut stack: Vec<Frame> = Vec::new();
    loop {
        let token = pg_sys::JsonbIteratorNext(&mut it, &mut v, false);
        let done = match token {
            WJB_DONE => return Err(Unread::Unexpected),
            WJB_BEGIN_ARRAY => {
                if stack.len() >= MAX_DEPTH {
                    return Err(Unread::Unexpected);
                }
                let n = usize::try_from(v.val.array.nElems).unwrap_or(0);
                stack.push(Frame::Array { items: Vec::with_capacity(n), raw_scalar: v.val.array.rawScalar });
                None
            }
            WJB_BEGIN_OBJECT => {
                if stack.len() >= MAX_DEPTH {
                    return Err(Unread::Unexpected);
                }
                stack.push(Frame::Object { map: Map::new(), key: None });
                None
            }
            WJB_KEY => {
                if let Some(Frame::Object { key, .. }) = stack.last_mut() {
                    *key = Some(string_of(&v));
                }
                None
            }
            WJB_VALUE | WJB_ELEM => Some(scalar_of(&v, big)?),
            WJB_END_ARRAY => match stack.pop() {
                Some(Frame::Array { items, raw_scalar: true }) => items.into_iter().next(),
                Some(Frame::Array { items, .. }) => Some(Value::Array(items)),
                _ => return Err(Unread::Unexpected),
            },
            WJB_END_OBJECT => match stack.pop() {
                Some(Frame::Object { map, .. }) => Some(Value::Object(map)),
                _ => return Err(Unread::Unexpected),
            },
            _ => return Err(Unread::Unexpected),
        };
        if let Some(value) = done {
            match stack.last_mut() {
                None => return Ok(value),
                Some(Frame::Array { items, .. }) => items.push(value),
                Some(Frame::Object { map, key }) => {
                    map.insert(key.take().unwrap_or_default(), value);
                }
            }
        }
    }
}

unsafe fn string_of(v: &pg_sys::JsonbValue) -> String {
    let s = v.val.string;
    let bytes = std::slice::from_raw_parts(s.val as *const u8, usize::try_from(s.len).unwrap_or(0));
    String::from_utf8_lossy(bytes).into_owned()
}

/// A number printed by `numeric_out` as a JSON value; beyond a double's
/// range, its decimal text as a string (a sum that overflowed, a value
/// written by plain SQL), which JSON numbers cannot carry between programs
/// (RFC 7493 §2.2) and every reader of the element still gets; or, as
/// `big` says, refused.
fn number(text: &str, big: BigNumbers) -> Result<Value, Unread> {
    if big == BigNumbers::Refuse {
        // A parameter's number is refused as the same literal in a command
        // text would be (beyond 64 bits, beyond a double's range).
        return kip_lang::parse_number(text).map(Value::Number).map_err(|reason| Unread::RefusedNumber { reason, path: Vec::new() });
    }
    match text.parse::<Number>() {
        Ok(n) => Ok(Value::Number(n)),
        Err(_) => Ok(Value::String(text.to_owned())),
    }
}

/// A scalar as a JSON value; `Unread` for a kind jsonb does not have, or a
/// number refused by `big` (which the caller must not mistake for null).
unsafe fn scalar_of(v: &pg_sys::JsonbValue, big: BigNumbers) -> Result<Value, Unread> {
    Ok(match v.type_ {
        JBV_NULL => Value::Null,
        JBV_STRING => Value::String(string_of(v)),
        JBV_BOOL => Value::Bool(v.val.boolean),
        JBV_NUMERIC => {
            let text = pgrx::direct_function_call::<&CStr>(
                pg_sys::numeric_out,
                &[Some(pg_sys::Datum::from(v.val.numeric))],
            );
            number(expected(text.and_then(|t| t.to_str().ok()))?, big)?
        }
        _ => return Err(Unread::Unexpected),
    })
}
