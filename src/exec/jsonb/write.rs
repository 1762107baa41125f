//! Writing a jsonb datum, byte for byte as `jsonb_in` lays one out
//! (`convertToJsonb` in Postgres's `jsonb_util.c`):
//!
//! - a container is a header (its child count and kind), one `JEntry` per
//!   child (an object's keys first, then their values), then the
//!   children's data;
//! - a `JEntry` holds the child's kind and its data's length, or, for every
//!   32nd child, the end offset of its data (so a lookup need not add up
//!   every length before it);
//! - numerics and nested containers start 4-byte aligned, the padding
//!   counted in their length;
//! - an object's keys are sorted, shorter first, then bytewise;
//! - a scalar at the top is a one-element array marked raw.
//!
//! Containers are position independent once aligned, so a `Doc`'s jsonb
//! parts are copied in as they are. `pg_test`s compare this writer's bytes
//! with `jsonb_in`'s.

use super::{Doc, MAX_DEPTH};
use pgrx::pg_sys;
use serde_json::{Number, Value};
use std::ffi::CString;

const OFFLEN_MASK: u32 = pg_sys::JENTRY_OFFLENMASK;
const STRIDE: usize = pg_sys::JB_OFFSET_STRIDE as usize;
/// Postgres's largest allocation (`MaxAllocSize`).
const MAX_ALLOC: usize = 0x3fff_ffff;

/// A jsonb datum of `value`, allocated in the current memory context, or
/// `None` when the text path must decide (see the module comment of
/// `exec::jsonb`).
pub fn from_value(value: &Value) -> Option<pg_sys::Datum> {
    let mut w = Writer::new();
    match value {
        Value::Array(_) | Value::Object(_) => value.write(&mut w, 0)?,
        scalar => w.array(std::slice::from_ref(scalar), 0, true)?,
    };
    w.finish()
}

/// A jsonb datum of `doc`, its jsonb parts copied as they are; `None` as
/// for [`from_value`].
pub fn datum_of_doc(doc: &Doc) -> Option<pg_sys::Datum> {
    match doc {
        Doc::Json(value) => from_value(value),
        _ => {
            let mut w = Writer::new();
            doc.write(&mut w, 0)?;
            w.finish()
        }
    }
}

/// What can be written as a child: returns its `JEntry` (kind and length)
/// after appending its data.
trait Node {
    fn write(&self, w: &mut Writer, depth: usize) -> Option<u32>;
}

impl Node for Value {
    fn write(&self, w: &mut Writer, depth: usize) -> Option<u32> {
        match self {
            Value::Null => Some(pg_sys::JENTRY_ISNULL),
            Value::Bool(true) => Some(pg_sys::JENTRY_ISBOOL_TRUE),
            Value::Bool(false) => Some(pg_sys::JENTRY_ISBOOL_FALSE),
            Value::Number(n) => w.numeric(n),
            Value::String(s) => w.string(s.as_bytes()),
            Value::Array(items) => w.array(items, depth, false),
            Value::Object(map) => w.object(map.iter().map(|(k, v)| (k.as_bytes(), v)).collect(), depth),
        }
    }
}

impl Node for Doc {
    fn write(&self, w: &mut Writer, depth: usize) -> Option<u32> {
        match self {
            Doc::Json(value) => value.write(w, depth),
            Doc::Jsonb(container) => w.container(container.bytes()),
            Doc::Array(items) => w.array(items, depth, false),
            Doc::Object(members) => w.object(members.iter().map(|(k, d)| (k.as_bytes(), d)).collect(), depth),
        }
    }
}

/// The datum's bytes, its varlena header first.
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn new() -> Writer {
        // An element object alone is about 300 bytes: room for one without
        // growing (pages grow by doubling).
        let mut buf = Vec::with_capacity(1024);
        buf.extend_from_slice(&[0; 4]);
        Writer { buf }
    }

    /// Pads to a 4-byte boundary with zeros; returns the padding's length.
    fn pad(&mut self) -> u32 {
        let pad = (4 - self.buf.len() % 4) % 4;
        self.buf.extend_from_slice(&[0; 3][..pad]);
        pad as u32
    }

    /// A string's bytes: `None` for a NUL character or more bytes than a
    /// `JEntry` measures, which `jsonb_in` refuses.
    fn string(&mut self, bytes: &[u8]) -> Option<u32> {
        if bytes.len() > OFFLEN_MASK as usize || bytes.contains(&0) {
            return None;
        }
        self.buf.extend_from_slice(bytes);
        Some(pg_sys::JENTRY_ISSTRING | bytes.len() as u32)
    }

    /// A number as the numeric `numeric_in` makes of serde's text (an
    /// integer directly).
    fn numeric(&mut self, n: &Number) -> Option<u32> {
        // SAFETY: both functions return a palloc'd numeric varlena (or
        // raise an error, as `jsonb_in` would), read here and freed.
        unsafe {
            let numeric = match n.as_i64() {
                Some(i) => pg_sys::int64_to_numeric(i).cast::<pg_sys::varlena>(),
                None => numeric_in(&n.to_string())?,
            };
            let len = pgrx::varlena::varsize_any(numeric);
            let pad = self.pad();
            self.buf.extend_from_slice(std::slice::from_raw_parts(numeric.cast::<u8>(), len));
            pg_sys::pfree(numeric.cast());
            Some(pg_sys::JENTRY_ISNUMERIC | (pad + u32::try_from(len).ok()?))
        }
    }

    /// A container laid out already (a `Doc`'s jsonb part), copied aligned.
    fn container(&mut self, bytes: &[u8]) -> Option<u32> {
        let pad = self.pad();
        self.buf.extend_from_slice(bytes);
        let len = pad as usize + bytes.len();
        (len <= OFFLEN_MASK as usize).then_some(pg_sys::JENTRY_ISCONTAINER | len as u32)
    }

    fn array<N: Node>(&mut self, items: &[N], depth: usize, raw_scalar: bool) -> Option<u32> {
        let flags = pg_sys::JB_FARRAY | if raw_scalar { pg_sys::JB_FSCALAR } else { 0 };
        let (base, entries) = self.begin(items.len(), flags, items.len(), depth)?;
        let mut total = 0;
        for (i, item) in items.iter().enumerate() {
            let entry = item.write(self, depth + 1)?;
            self.set_entry(entries, i, entry, &mut total)?;
        }
        self.end(base)
    }

    /// `pairs` must have distinct keys (serde's maps and kip's envelopes do).
    fn object<N: Node>(&mut self, mut pairs: Vec<(&[u8], &N)>, depth: usize) -> Option<u32> {
        pairs.sort_unstable_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(b.0)));
        let n = pairs.len();
        let (base, entries) = self.begin(n, pg_sys::JB_FOBJECT, n.checked_mul(2)?, depth)?;
        let mut total = 0;
        for (i, (key, _)) in pairs.iter().enumerate() {
            let entry = self.string(key)?;
            self.set_entry(entries, i, entry, &mut total)?;
        }
        for (i, (_, value)) in pairs.iter().enumerate() {
            let entry = value.write(self, depth + 1)?;
            self.set_entry(entries, n + i, entry, &mut total)?;
        }
        self.end(base)
    }

    /// Starts a container of `count` children with `entries` JEntries;
    /// returns where it starts (before its padding) and where its JEntries
    /// are.
    fn begin(&mut self, count: usize, flags: u32, entries: usize, depth: usize) -> Option<(usize, usize)> {
        if depth >= MAX_DEPTH || count > pg_sys::JB_CMASK as usize {
            return None;
        }
        let base = self.buf.len();
        self.pad();
        self.buf.extend_from_slice(&(count as u32 | flags).to_ne_bytes());
        let at = self.buf.len();
        self.buf.resize(at.checked_add(entries.checked_mul(4)?)?, 0);
        Some((base, at))
    }

    /// Stores child `i`'s JEntry: its length, or at every `STRIDE`th child
    /// the end offset of its data among its siblings'.
    fn set_entry(&mut self, at: usize, i: usize, entry: u32, total: &mut usize) -> Option<()> {
        *total += (entry & OFFLEN_MASK) as usize;
        if *total > OFFLEN_MASK as usize {
            return None;
        }
        let entry = if i % STRIDE == 0 { (entry & pg_sys::JENTRY_TYPEMASK) | *total as u32 | pg_sys::JENTRY_HAS_OFF } else { entry };
        self.buf[at + 4 * i..at + 4 * i + 4].copy_from_slice(&entry.to_ne_bytes());
        Some(())
    }

    /// The JEntry of the container begun at `base`: its length, padding
    /// included.
    fn end(&self, base: usize) -> Option<u32> {
        let len = self.buf.len() - base;
        (len <= OFFLEN_MASK as usize).then_some(pg_sys::JENTRY_ISCONTAINER | len as u32)
    }

    /// The datum: the bytes copied into the current memory context.
    fn finish(self) -> Option<pg_sys::Datum> {
        let len = self.buf.len();
        if len > MAX_ALLOC {
            return None;
        }
        // SAFETY: a fresh allocation of `len` bytes, filled and headed.
        unsafe {
            let p = pg_sys::palloc(len).cast::<u8>();
            std::ptr::copy_nonoverlapping(self.buf.as_ptr(), p, len);
            pgrx::varlena::set_varsize_4b(p.cast(), len as i32);
            Some(pg_sys::Datum::from(p))
        }
    }
}

/// `numeric_in` of a number's text.
unsafe fn numeric_in(text: &str) -> Option<*mut pg_sys::varlena> {
    let c = CString::new(text).ok()?;
    let datum = pgrx::direct_function_call_as_datum(
        pg_sys::numeric_in,
        &[
            Some(pg_sys::Datum::from(c.as_ptr())),
            Some(pg_sys::Datum::from(pg_sys::InvalidOid)),
            Some(pg_sys::Datum::from(-1i32)),
        ],
    )?;
    Some(datum.cast_mut_ptr())
}
