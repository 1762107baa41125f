//! Opaque, tamper-evident pagination tokens for FIND / DESCRIBE.
//!
//! A token is `base64url(offset ':' tag)`, where `tag` is a keyed SipHash
//! of the query's *shape* (the canonical text of the command without its
//! LIMIT and CURSOR, with every parameter already bound into it, plus the
//! memory space) and the offset, keyed by a random secret created with the
//! extension in this database (`kip.instance_secrets`) and the database's
//! oid (a copy made with `CREATE DATABASE … TEMPLATE` has the same secret
//! and another oid; a physical standby the same of both). A token
//! therefore only resumes the query that produced it: an edited token, a
//! token from another query, space or database, or random text is refused
//! with `KIP_1001` instead of silently restarting at page one.
//!
//! Offsets are over the query's total order (ORDER BY keys, then branch and
//! element ids), so pages neither repeat nor skip rows while the data does
//! not change.
//!
//! A FIND page that streams in its natural order (`compile::find`) also
//! carries the ids of its last row: `base64url("k2" ':' offset ':' ids ':'
//! tag)`, the tag covering the ids too. The next page then starts after
//! those ids (keyset pagination), so walking every page costs time linear
//! in the rows, where an OFFSET re-reads every row before the page.
//! EXPORT's tokens carry the rank and id of the page's last element the
//! same way (`engine::export`), and DESCRIBE's listings the last name,
//! hex-encoded: `base64url("k3" ':' offset ':' hex(name) ':' tag)`.
//! An ordered FIND's later pages come from a ranking its backend holds
//! (`engine::ranked`): `base64url("k4" ':' offset ':' walk ':' tag)`, the
//! walk's number naming the ranking; a backend that does not hold it
//! resumes at the offset.

use crate::space::Space;
use kip_lang::ast::{Command, Script};
use kip_lang::{ErrorCode, KipError};
use std::hash::Hasher;

/// The shape of a paged command: its canonical text without LIMIT and
/// CURSOR (parameters are already bound into it), plus the memory space.
pub fn query_shape(space: &Space, command: &Command) -> String {
    shape(space, &kip_lang::print(&Script { commands: vec![command.without_paging()] }))
}

/// The shape of a paged listing described by `text` in `space`.
pub fn shape(space: &Space, text: &str) -> String {
    format!("{}\u{0}{}", space.name(), text)
}

const VERSION: &str = "k1";
/// Tokens that also carry the last row's ids.
const KEYSET_VERSION: &str = "k2";
/// Tokens that also carry the last row's name.
const NAME_VERSION: &str = "k3";
/// Tokens that also name the ranking of an ordered FIND's walk.
const WALK_VERSION: &str = "k4";

/// Where a page resumes: the offset, and the ids or the name of the
/// previous page's last row when the token carries them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resume {
    pub offset: u64,
    pub after: Option<Vec<i64>>,
    pub after_name: Option<String>,
    /// The ranking an ordered FIND's walk reads its pages from.
    pub walk: Option<u64>,
}

thread_local! {
    /// The key read last, and the oid of the `kip.instance_secrets` it was
    /// read from.
    static KEY: std::cell::Cell<Option<(pgrx::pg_sys::Oid, (u64, u64))>> = const { std::cell::Cell::new(None) };
}

/// The oid of `kip.instance_secrets`, `InvalidOid` without it: two
/// syscache lookups.
fn secrets_table() -> pgrx::pg_sys::Oid {
    // SAFETY: catalog cache lookups by name; `missing_ok` keeps a missing
    // schema from raising.
    unsafe {
        let namespace = pgrx::pg_sys::get_namespace_oid(c"kip".as_ptr(), true);
        if namespace == pgrx::pg_sys::InvalidOid {
            return pgrx::pg_sys::InvalidOid;
        }
        pgrx::pg_sys::get_relname_relid(c"instance_secrets".as_ptr(), namespace)
    }
}

/// The SipHash key: this database's random cursor secret
/// (`kip.instance_secrets`, created with the extension), read once per
/// backend (a backend serves one database) and read again when the table
/// is another one: `DROP EXTENSION kip; CREATE EXTENSION kip` makes a new
/// secret, and a backend that kept the old one would issue tokens no other
/// backend accepts.
fn key() -> Result<(u64, u64), KipError> {
    let table = secrets_table();
    if let Some((read_from, k)) = KEY.get() {
        if read_from == table {
            return Ok(k);
        }
    }
    // Until `ALTER EXTENSION kip UPDATE` has created the secret (a 0.1.0
    // schema under this library), tokens use the 0.1.0 key, uncached.
    let installed = super::spi::query_scalar("SELECT to_regprocedure('kip.cursor_secret()') IS NOT NULL", &[], super::Access::ReadOnly)?;
    if installed != serde_json::Value::Bool(true) {
        return Ok(legacy_key());
    }
    let hex = super::spi::query_scalar("SELECT encode(kip.cursor_secret(), 'hex')", &[], super::Access::ReadOnly)?;
    let bytes: Vec<u8> = hex
        .as_str()
        .map(|h| (0..h.len() / 2).filter_map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok()).collect())
        .unwrap_or_default();
    if bytes.len() < 16 {
        return Err(KipError::new(ErrorCode::InternalError, "the cursor secret of this database is missing")
            .with_hint("Reinstall the extension (DROP EXTENSION kip; CREATE EXTENSION kip) or restore kip.instance_secrets."));
    }
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
    // SAFETY: this backend's database, set at connection.
    let database = u64::from(unsafe { pgrx::pg_sys::MyDatabaseId }.to_u32());
    let k = (word(0) ^ database.wrapping_mul(0x9e37_79b9_7f4a_7c15), word(8));
    KEY.set(Some((table, k)));
    Ok(k)
}

/// The key of kip 0.1.0, derived from the database oid: used only while the
/// schema is still 0.1.0's.
fn legacy_key() -> (u64, u64) {
    let db = unsafe { pgrx::pg_sys::MyDatabaseId }.to_u32() as u64;
    (0x6b69_705f_6375_7273 ^ db, 0x6f72_5f76_315f_6b65u64.rotate_left(17) ^ (db << 32))
}

/// Offsets beyond this are refused: the page arithmetic and SQL's bigint
/// OFFSET must never overflow.
const MAX_OFFSET: u64 = i64::MAX as u64 / 2;

/// The keyed SipHash of a token's version, shape, offset and, for keyset
/// tokens, the last row's ids (as written in the token).
fn tag(version: &str, shape: &str, offset: u64, ids: Option<&str>) -> Result<String, KipError> {
    let (k0, k1) = key()?;
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
    h.write(version.as_bytes());
    h.write(shape.as_bytes());
    h.write_u64(offset);
    if let Some(ids) = ids {
        h.write(ids.as_bytes());
    }
    Ok(format!("{:016x}", h.finish()))
}

/// The token resuming `shape` at `offset`; `None` when no valid token can
/// express it (the offset is past [`MAX_OFFSET`]: there is no next page).
pub fn encode(shape: &str, offset: u64) -> Result<Option<String>, KipError> {
    encode_resume(shape, offset, None)
}

/// [`encode`], resuming after the row whose ids are `after` when given (a
/// keyset token, see the module comment).
pub fn encode_resume(shape: &str, offset: u64, after: Option<&[i64]>) -> Result<Option<String>, KipError> {
    match after {
        None => token(VERSION, shape, offset, None),
        Some(ids) => token(KEYSET_VERSION, shape, offset, Some(&ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","))),
    }
}

/// [`encode`], resuming after the row named `name` (a keyset token over a
/// listing in name order); an offset token when the name is too long to
/// travel in a token.
pub fn encode_after_name(shape: &str, offset: u64, name: &str) -> Result<Option<String>, KipError> {
    if name.len() > MAX_TOKEN_NAME_BYTES {
        return encode(shape, offset);
    }
    let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    token(NAME_VERSION, shape, offset, Some(&hex))
}

/// [`encode`], naming the ranking `walk` of an ordered FIND's walk.
pub fn encode_walk(shape: &str, offset: u64, walk: u64) -> Result<Option<String>, KipError> {
    token(WALK_VERSION, shape, offset, Some(&walk.to_string()))
}

/// The token `version ':' offset [':' payload] ':' tag`, base64url; `None`
/// past [`MAX_OFFSET`].
fn token(version: &str, shape: &str, offset: u64, payload: Option<&str>) -> Result<Option<String>, KipError> {
    if offset > MAX_OFFSET {
        return Ok(None);
    }
    let tag = tag(version, shape, offset, payload)?;
    let text = match payload {
        None => format!("{version}:{offset}:{tag}"),
        Some(p) => format!("{version}:{offset}:{p}:{tag}"),
    };
    Ok(Some(b64_encode(text.as_bytes())))
}

/// Names longer than this resume by offset: the token stays below
/// [`MAX_TOKEN_CHARS`]. (kip's own limit on a name is 1,024 bytes.)
const MAX_TOKEN_NAME_BYTES: usize = 1024;
/// The longest token text read: a name token of the longest name.
const MAX_TOKEN_CHARS: usize = 3200;

pub fn invalid(token: &str) -> KipError {
    let shown: String = token.chars().take(40).collect();
    KipError::new(ErrorCode::InvalidSyntax, format!("invalid CURSOR token {shown:?}"))
        .with_hint("Pass the next_cursor value of the previous page of the same query unchanged, or omit CURSOR to start from the first page.")
}

/// Where a token issued for `shape` resumes: its offset, and the last row's
/// ids of a keyset token.
pub fn decode_resume(shape: &str, token: &str) -> Result<Resume, KipError> {
    let raw = b64_decode(token).ok_or_else(|| invalid(token))?;
    let text = String::from_utf8(raw).map_err(|_| invalid(token))?;
    let parts: Vec<&str> = text.split(':').collect();
    let (version, off, ids, t) = match parts[..] {
        [v, off, t] if v == VERSION => (v, off, None, t),
        [v, off, ids, t] if v == KEYSET_VERSION || v == NAME_VERSION || v == WALK_VERSION => (v, off, Some(ids), t),
        _ => return Err(invalid(token)),
    };
    let offset: u64 = off.parse().map_err(|_| invalid(token))?;
    if offset > MAX_OFFSET || t != tag(version, shape, offset, ids)? {
        return Err(invalid(token));
    }
    if version == NAME_VERSION {
        let hex = ids.unwrap_or_default();
        let bytes = (0..hex.len() / 2)
            .map(|i| hex.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
            .collect::<Option<Vec<u8>>>()
            .filter(|_| hex.len() % 2 == 0)
            .ok_or_else(|| invalid(token))?;
        let name = String::from_utf8(bytes).map_err(|_| invalid(token))?;
        return Ok(Resume { offset, after_name: Some(name), ..Resume::default() });
    }
    if version == WALK_VERSION {
        let walk = ids.unwrap_or_default().parse().map_err(|_| invalid(token))?;
        return Ok(Resume { offset, walk: Some(walk), ..Resume::default() });
    }
    let after = match ids {
        None => None,
        Some(ids) => Some(ids.split(',').map(str::parse).collect::<Result<Vec<i64>, _>>().map_err(|_| invalid(token))?),
    };
    Ok(Resume { offset, after, ..Resume::default() })
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn b64_decode(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() || text.len() % 4 == 1 || text.len() > MAX_TOKEN_CHARS {
        return None;
    }
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let v = ALPHABET.iter().position(|a| a == c)? as u32;
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    // Only the one canonical spelling: the last character of a short chunk
    // also carries bits no byte uses, and a token whose last character was
    // changed only there would otherwise decode to the same valid token.
    (b64_encode(&out) == text).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for s in ["", "a", "ab", "abc", "abcd", "k1:100:0123456789abcdef"] {
            if s.is_empty() {
                continue;
            }
            assert_eq!(b64_decode(&b64_encode(s.as_bytes())).unwrap(), s.as_bytes());
        }
        assert!(b64_decode("!!!not-a-cursor!!!").is_none());
        // "a" is "YQ"; "YR" differs only in bits no byte uses.
        assert_eq!(b64_decode("YQ").unwrap(), b"a");
        assert!(b64_decode("YR").is_none());
    }
}
