//! `kip.concept_json`, `kip.proposition_json` and `kip.metadata_json`: the
//! KIP element object of a stored row, built in one function call.
//!
//! The same objects were SQL expressions (`compile::element` has their
//! shape): three `jsonb_build_object`s, two `||` merges and two `to_char`s
//! per element, which were two thirds of the statement of a small FIND and
//! about ten microseconds for every element of a page. Here the object is
//! pushed once into Postgres's jsonb builder, the stored `attributes` and
//! `metadata` copied in as they are.
//!
//! The result is the same jsonb value: keys are sorted by jsonb itself, a
//! reserved `_` key of the stored metadata is replaced by the engine's (as
//! `metadata || jsonb_build_object(…)` did), and timestamps are the text of
//! `to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, which
//! is still what formats one outside the years 1 to 9999 (or infinite).

use super::jsonb::{integer_value, string_value};
use pgrx::pg_sys;
use pgrx::IntoDatum;
use pgrx::pg_sys::JsonbIteratorToken::{WJB_BEGIN_OBJECT, WJB_DONE, WJB_END_OBJECT, WJB_KEY, WJB_VALUE};

const JB_CMASK: u32 = 0x0FFF_FFFF;
const JB_FOBJECT: u32 = 0x2000_0000;
const USECS_PER_DAY: i64 = 86_400_000_000;
/// Days from 1970-01-01 to 2000-01-01, Postgres's timestamp epoch.
const PG_EPOCH_DAYS: i64 = 10_957;

/// A call's arguments, read by position.
struct Args(pg_sys::FunctionCallInfo);

impl Args {
    unsafe fn datum(&self, n: usize) -> pg_sys::Datum {
        (*self.0).args.as_slice(n + 1)[n].value
    }

    unsafe fn is_null(&self, n: usize) -> bool {
        (*self.0).args.as_slice(n + 1)[n].isnull
    }

    unsafe fn int8(&self, n: usize) -> i64 {
        self.datum(n).value() as i64
    }

    unsafe fn int4(&self, n: usize) -> i64 {
        i64::from(self.datum(n).value() as i32)
    }

    /// A text argument's bytes (valid while the call runs).
    unsafe fn text(&self, n: usize) -> &[u8] {
        let t = pg_sys::pg_detoast_datum_packed(self.datum(n).cast_mut_ptr());
        std::slice::from_raw_parts(pgrx::vardata_any(t) as *const u8, pgrx::varsize_any_exhdr(t))
    }

    /// A jsonb argument's root container.
    unsafe fn jsonb(&self, n: usize) -> *mut pg_sys::JsonbContainer {
        let jb = pg_sys::pg_detoast_datum(self.datum(n).cast_mut_ptr()) as *mut pg_sys::Jsonb;
        &mut (*jb).root
    }
}

/// A jsonb object under construction. `pushJsonbValue` keeps pointers to
/// the strings it is given until `JsonbValueToJsonb` copies them, so the
/// strings made here live in `keep` until the builder is dropped.
struct Builder {
    state: *mut pg_sys::JsonbParseState,
    keep: Vec<Box<[u8]>>,
}

impl Builder {
    fn new() -> Builder {
        Builder { state: std::ptr::null_mut(), keep: Vec::new() }
    }

    unsafe fn owned(&mut self, key: &str, value: Vec<u8>) {
        let bytes = value.into_boxed_slice();
        self.key(key.as_bytes());
        let mut v = string_value(&bytes);
        pg_sys::pushJsonbValue(&mut self.state, WJB_VALUE, &mut v);
        // The boxed bytes do not move when `keep` grows.
        self.keep.push(bytes);
    }

    unsafe fn key(&mut self, key: &[u8]) {
        let mut v = string_value(key);
        pg_sys::pushJsonbValue(&mut self.state, WJB_KEY, &mut v);
    }

    unsafe fn string(&mut self, key: &str, value: &[u8]) {
        self.key(key.as_bytes());
        let mut v = string_value(value);
        pg_sys::pushJsonbValue(&mut self.state, WJB_VALUE, &mut v);
    }

    unsafe fn value(&mut self, key: &str, mut value: pg_sys::JsonbValue) {
        self.key(key.as_bytes());
        pg_sys::pushJsonbValue(&mut self.state, WJB_VALUE, &mut value);
    }

    /// A text argument as a string, or JSON null.
    unsafe fn endpoint(&mut self, key: &str, args: &Args, n: usize) {
        if args.is_null(n) {
            self.null(key);
        } else {
            self.string(key, args.text(n));
        }
    }

    unsafe fn begin(&mut self) {
        pg_sys::pushJsonbValue(&mut self.state, WJB_BEGIN_OBJECT, std::ptr::null_mut());
    }

    unsafe fn end(&mut self) -> *mut pg_sys::JsonbValue {
        pg_sys::pushJsonbValue(&mut self.state, WJB_END_OBJECT, std::ptr::null_mut())
    }

    /// `"attributes": {…}`, left out when empty.
    unsafe fn attributes(&mut self, container: *mut pg_sys::JsonbContainer) {
        if (*container).header & JB_CMASK != 0 {
            self.value("attributes", binary(container));
        }
    }

    /// `"metadata": {…stored pairs, _version, _created_at, _updated_at}`.
    unsafe fn metadata(&mut self, args: &Args, first: usize) {
        self.key(b"metadata");
        self.metadata_object(args, first);
    }

    /// The metadata object itself, from the arguments `first..first + 4`
    /// (metadata, version, created_at, updated_at).
    unsafe fn metadata_object(&mut self, args: &Args, first: usize) -> *mut pg_sys::JsonbValue {
        let stored = args.jsonb(first);
        if (*stored).header & JB_FOBJECT == 0 {
            pgrx::ereport!(
                pgrx::PgLogLevel::ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                "kip: the metadata is not a JSON object"
            );
        }
        self.begin();
        let mut it = pg_sys::JsonbIteratorInit(stored);
        let mut v: pg_sys::JsonbValue = std::mem::zeroed();
        loop {
            match pg_sys::JsonbIteratorNext(&mut it, &mut v, true) {
                WJB_DONE => break,
                token @ (WJB_KEY | WJB_VALUE) => {
                    pg_sys::pushJsonbValue(&mut self.state, token, &mut v);
                }
                _ => {}
            }
        }
        self.value("_version", integer_value(args.int4(first + 1)));
        self.timestamp("_created_at", args.datum(first + 2));
        self.timestamp("_updated_at", args.datum(first + 3));
        self.end()
    }

    unsafe fn timestamp(&mut self, key: &str, ts: pg_sys::Datum) {
        match iso_utc(ts.value() as i64).map(Vec::from).or_else(|| to_char_utc(ts).map(String::into_bytes)) {
            Some(text) => self.owned(key, text),
            None => self.null(key),
        }
    }

    unsafe fn null(&mut self, key: &str) {
        let mut null: pg_sys::JsonbValue = std::mem::zeroed();
        null.type_ = pg_sys::jbvType::jbvNull;
        self.value(key, null);
    }
}

/// A stored jsonb container, copied in by `pushJsonbValue`.
unsafe fn binary(container: *mut pg_sys::JsonbContainer) -> pg_sys::JsonbValue {
    let mut v: pg_sys::JsonbValue = std::mem::zeroed();
    v.type_ = pg_sys::jbvType::jbvBinary;
    v.val.binary.data = container;
    v.val.binary.len = 0;
    v
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` of a timestamptz (microseconds since
/// 2000-01-01 UTC), for the years 1 to 9999. Digits are placed by hand:
/// `format!` was a third of an element object's cost.
fn iso_utc(micros: i64) -> Option<[u8; 27]> {
    let days = micros.div_euclid(USECS_PER_DAY);
    let in_day = micros.rem_euclid(USECS_PER_DAY) as u64;
    let (y, m, d) = civil_from_days(days.checked_add(PG_EPOCH_DAYS)?);
    if !(1..=9999).contains(&y) {
        return None;
    }
    let secs = in_day / 1_000_000;
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    put_digits(&mut out[0..4], y as u64);
    put_digits(&mut out[5..7], u64::from(m));
    put_digits(&mut out[8..10], u64::from(d));
    put_digits(&mut out[11..13], secs / 3600);
    put_digits(&mut out[14..16], secs / 60 % 60);
    put_digits(&mut out[17..19], secs % 60);
    put_digits(&mut out[20..26], in_day % 1_000_000);
    Some(out)
}

/// `n`'s last `out.len()` decimal digits, zero-padded, into `out`.
fn put_digits(out: &mut [u8], mut n: u64) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// An element id: `prefix` and the row id in decimal.
fn element_id(prefix: &[u8], id: i64) -> Vec<u8> {
    let mut digits = [0u8; 20];
    let mut n = id.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut out = Vec::with_capacity(prefix.len() + 21);
    out.extend_from_slice(prefix);
    if id < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
    out
}

/// The proleptic Gregorian date of a count of days since 1970-01-01
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Postgres's own `to_char(ts AT TIME ZONE 'UTC', …)`; `None` for an
/// infinite timestamp.
unsafe fn to_char_utc(ts: pg_sys::Datum) -> Option<String> {
    let utc = pgrx::direct_function_call_as_datum(
        pg_sys::timestamptz_zone,
        &["UTC".into_datum(), Some(ts)],
    )?;
    let text = pgrx::direct_function_call::<String>(
        pg_sys::timestamp_to_char,
        &[Some(utc), "YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"".into_datum()],
    )?;
    Some(text)
}

unsafe fn finish(root: *mut pg_sys::JsonbValue) -> pg_sys::Datum {
    pg_sys::Datum::from(pg_sys::JsonbValueToJsonb(root))
}

/// `kip.concept_json(id, type, name, attributes, metadata, version,
/// created_at, updated_at)`: a ConceptNode object.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_concept_json(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let args = Args(fcinfo);
    let mut b = Builder::new();
    b.begin();
    b.string("_type", b"ConceptNode");
    b.owned("id", element_id(b"C:", args.int8(0)));
    b.string("type", args.text(1));
    b.string("name", args.text(2));
    b.attributes(args.jsonb(3));
    b.metadata(&args, 4);
    finish(b.end())
}

/// `kip.proposition_json(id, predicate, subject, object, attributes,
/// metadata, version, created_at, updated_at)`: a PropositionLink object;
/// `subject` and `object` are the endpoints' external ids (JSON null when
/// NULL, as `jsonb_build_object` made them). Not STRICT for that; NULL when
/// any other argument is.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_proposition_json(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let args = Args(fcinfo);
    if [0, 1, 4, 5, 6, 7, 8].iter().any(|&n| args.is_null(n)) {
        (*fcinfo).isnull = true;
        return pg_sys::Datum::from(0usize);
    }
    let predicate = args.text(1);
    let mut id = element_id(b"P:", args.int8(0));
    id.push(b':');
    id.extend_from_slice(predicate);
    let mut b = Builder::new();
    b.begin();
    b.string("_type", b"PropositionLink");
    b.string("id", &id);
    b.endpoint("subject", &args, 2);
    b.string("predicate", predicate);
    b.endpoint("object", &args, 3);
    b.attributes(args.jsonb(4));
    b.metadata(&args, 5);
    finish(b.end())
}

/// `kip.metadata_json(metadata, version, created_at, updated_at)`: the
/// metadata object with the engine's `_` fields.
#[no_mangle]
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn kip_metadata_json(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let args = Args(fcinfo);
    let mut b = Builder::new();
    finish(b.metadata_object(&args, 0))
}

crate::exec::v1_function_info!(pg_finfo_kip_concept_json, pg_finfo_kip_proposition_json, pg_finfo_kip_metadata_json);

#[cfg(test)]
mod tests {
    use super::{civil_from_days, element_id};

    fn iso_utc(micros: i64) -> Option<String> {
        super::iso_utc(micros).map(|b| String::from_utf8(b.to_vec()).unwrap())
    }

    #[test]
    fn dates_follow_the_gregorian_calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-719_162), (1, 1, 1));
        assert_eq!(civil_from_days(2_932_896), (9999, 12, 31));
    }

    #[test]
    fn timestamps_print_as_to_char_does() {
        assert_eq!(iso_utc(0).unwrap(), "2000-01-01T00:00:00.000000Z");
        assert_eq!(iso_utc(-1).unwrap(), "1999-12-31T23:59:59.999999Z");
        // 2026-11-23 12:06:56.479140 UTC
        assert_eq!(iso_utc(848_750_816_479_140).unwrap(), "2026-11-23T12:06:56.479140Z");
        assert_eq!(iso_utc(i64::MAX), None);
        assert_eq!(iso_utc(i64::MIN), None);
        // The first and last instants of the years printed here.
        assert_eq!(iso_utc(-63_082_281_600_000_000).unwrap(), "0001-01-01T00:00:00.000000Z");
        assert_eq!(iso_utc(252_455_615_999_999_999).unwrap(), "9999-12-31T23:59:59.999999Z");
        assert_eq!(iso_utc(252_455_616_000_000_000), None);
    }

    #[test]
    fn ids_print_as_decimal() {
        for id in [0, 7, 10, 1_234_567, i64::MAX, -1, i64::MIN] {
            assert_eq!(element_id(b"C:", id), format!("C:{id}").into_bytes());
        }
    }
}
