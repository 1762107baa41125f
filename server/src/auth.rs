//! API keys: who may call, in which memory space, with which access.
//!
//! Authentication is on when `API_KEY` or a keys file is configured. A key is
//! bound either to one space or, for the full-access `API_KEY` and keys
//! declared with `"space": "*"`, to any space the caller names with the
//! `X-KIP-Space` header. When authentication is off, every caller is
//! read-write and picks its space with `X-KIP-Space` (default `default`).
//!
//! Only headers are looked at, so the HTTP layer can authenticate before it
//! reads a body. Keys are compared in constant time and never logged: logs
//! carry the key's `name`.

use crate::envelope::Reply;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use std::path::Path;

pub const SPACE_HEADER: &str = "x-kip-space";
const DEFAULT_SPACE: &str = "default";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    ReadWrite,
    ReadOnly,
}

/// An authenticated caller: the space its requests run in and what it may do.
#[derive(Debug, Clone)]
pub struct Caller {
    pub space: String,
    pub access: Access,
    /// The key's name, for logs (`None` when authentication is off).
    pub key_name: Option<String>,
    /// A `kip-server mcp` session (no key: its access comes from `--read-only`).
    pub stdio: bool,
}

#[derive(Clone)]
enum SpaceRule {
    Fixed(String),
    /// The caller chooses with `X-KIP-Space`.
    Any,
}

#[derive(Clone)]
struct Key {
    secret: Vec<u8>,
    name: String,
    space: SpaceRule,
    access: Access,
}

/// The configured keys; empty means authentication is off.
#[derive(Clone, Default)]
pub struct Keys {
    keys: Vec<Key>,
}

/// One entry of the keys file: `{"keys": [{"key", "space", "access", "name"?}]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyEntry {
    key: String,
    space: String,
    access: Access,
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysFile {
    keys: Vec<KeyEntry>,
}

impl Keys {
    /// Keys from `API_KEY` and the keys file. Errors name the problem, never a key.
    pub fn load(api_key: Option<&str>, file: Option<&Path>) -> Result<Keys, String> {
        // Keys that were asked for but are empty must not quietly mean
        // "no authentication".
        let mut keys = Vec::new();
        if let Some(k) = api_key {
            if k.trim().is_empty() {
                return Err("API_KEY is set but empty: unset it to run without authentication, or give it a key".into());
            }
            check_secret(k).map_err(|why| format!("API_KEY {why}"))?;
            keys.push(Key { secret: k.as_bytes().to_vec(), name: "API_KEY".into(), space: SpaceRule::Any, access: Access::ReadWrite });
        }
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the keys file {}: {e}", path.display()))?;
            let parsed: KeysFile =
                serde_json::from_str(&text).map_err(|e| format!("invalid keys file {}: {e}", path.display()))?;
            if parsed.keys.is_empty() {
                return Err(format!(
                    "keys file {} lists no key: remove the setting to run without authentication, or add a key",
                    path.display()
                ));
            }
            for (i, entry) in parsed.keys.into_iter().enumerate() {
                check_secret(&entry.key).map_err(|why| format!("keys file {}: key #{} {why}", path.display(), i + 1))?;
                if entry.space != "*" {
                    check_space(&entry.space).map_err(|why| format!("keys file {}: the space of key #{} {why}", path.display(), i + 1))?;
                }
                if keys.iter().any(|k: &Key| k.secret == entry.key.as_bytes()) {
                    return Err(format!("keys file {}: key #{} repeats an earlier key's secret", path.display(), i + 1));
                }
                let space = if entry.space == "*" { SpaceRule::Any } else { SpaceRule::Fixed(entry.space) };
                let name = entry.name.unwrap_or_else(|| format!("key#{}", i + 1));
                keys.push(Key { secret: entry.key.into_bytes(), name, space, access: entry.access });
            }
        }
        Ok(Keys { keys })
    }

    pub fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The caller of a request, from its `Authorization` and `X-KIP-Space` headers.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Reply> {
        // The key is checked before anything else the request says, so a
        // caller without a valid key learns nothing but 401.
        let key = if self.enabled() {
            if headers.get_all(axum::http::header::AUTHORIZATION).iter().nth(1).is_some() {
                return Err(unauthorized("the Authorization header is repeated"));
            }
            let token = bearer_token(headers).ok_or_else(|| unauthorized("missing API key"))?;
            let key = self
                .keys
                .iter()
                // Check every key (no early exit), each in constant time.
                .fold(None, |found, k| if constant_time_eq(&k.secret, token.as_bytes()) { Some(k) } else { found })
                .ok_or_else(|| unauthorized("invalid API key"))?;
            Some(key)
        } else {
            None
        };
        // Repeated, the header would say two things; which one counts
        // should not depend on the proxies on the way.
        if headers.get_all(SPACE_HEADER).iter().nth(1).is_some() {
            return Err(Reply::bad_request("the X-KIP-Space header is repeated", "Send X-KIP-Space once."));
        }
        let requested_space = match headers.get(SPACE_HEADER) {
            // An empty header is no choice (a client templating the header
            // from an unset variable): the default space, or the key's.
            None => None,
            Some(v) if v.is_empty() => None,
            Some(v) => Some(v.to_str().map_err(|_| {
                Reply::bad_request("the X-KIP-Space header is not valid text", "Name the memory space in plain ASCII.")
            })?),
        };
        let Some(key) = key else {
            let space = requested_space.unwrap_or(DEFAULT_SPACE).to_string();
            return Ok(Caller { space, access: Access::ReadWrite, key_name: None, stdio: false });
        };
        let space = match (&key.space, requested_space) {
            (SpaceRule::Any, requested) => requested.unwrap_or(DEFAULT_SPACE).to_string(),
            (SpaceRule::Fixed(s), None) => s.clone(),
            (SpaceRule::Fixed(s), Some(r)) if r == s => s.clone(),
            (SpaceRule::Fixed(_), Some(r)) => {
                return Err(Reply::error(
                    StatusCode::FORBIDDEN,
                    "KIP_3004",
                    format!("this API key may not use the memory space {r:?}"),
                    "The key is bound to one memory space: drop the X-KIP-Space header or use a key of that space.",
                ))
            }
        };
        Ok(Caller { space, access: key.access, key_name: Some(key.name.clone()), stdio: false })
    }
}

/// A key a client can send: `Authorization: Bearer <key>` is read as
/// visible ASCII with surrounding whitespace trimmed, so a key with
/// whitespace, control or non-ASCII characters could never match (and
/// would fail silently, request after request).
fn check_secret(key: &str) -> Result<(), &'static str> {
    if key.len() < 8 {
        Err("is shorter than 8 characters")
    } else if key.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err("holds whitespace, control or non-ASCII characters: a Bearer key is visible ASCII only (check for a trailing newline)")
    }
}

/// A fixed space of the keys file is a space name kip accepts (1–63
/// letters, digits, `_`, `.`, `-`, not starting with `.` or `-`; the rule
/// of the extension's `space::validate`, which the gateway cannot link):
/// with another, every request of the key failed 400.
fn check_space(space: &str) -> Result<(), &'static str> {
    let first_ok = space.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    let rest_ok = space.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if first_ok && rest_ok && space.len() <= 63 {
        Ok(())
    } else {
        Err("names no valid space: a space name has 1 to 63 characters (letters, digits, '_', '.', '-'), starting with a letter, digit or '_', or is \"*\" for any space")
    }
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

fn unauthorized(message: &str) -> Reply {
    Reply::error(
        StatusCode::UNAUTHORIZED,
        "KIP_3004",
        message,
        "Send the API key as `Authorization: Bearer <key>`.",
    )
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn keys() -> Keys {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kip-server-keys-{}-{n}.json", std::process::id()));
        std::fs::write(
            &dir,
            r#"{"keys": [
                {"key": "alice-rw-secret", "space": "alice", "access": "read-write", "name": "alice"},
                {"key": "alice-ro-secret", "space": "alice", "access": "read-only"},
                {"key": "admin-any-secret", "space": "*", "access": "read-write", "name": "admin"}
            ]}"#,
        )
        .unwrap();
        let k = Keys::load(Some("full-access-key"), Some(&dir)).unwrap();
        std::fs::remove_file(&dir).unwrap();
        k
    }

    /// Keys asked for but empty are a start-up error, never "no
    /// authentication"; a secret listed twice is ambiguous.
    #[test]
    fn empty_or_repeated_keys_are_refused() {
        assert!(Keys::load(Some(""), None).err().unwrap().contains("API_KEY is set but empty"));
        assert!(Keys::load(Some("  "), None).is_err());
        let file = |text: &str| {
            let path = std::env::temp_dir().join(format!("kip-server-keys-bad-{}-{}.json", std::process::id(), text.len()));
            std::fs::write(&path, text).unwrap();
            let out = Keys::load(None, Some(&path));
            std::fs::remove_file(&path).unwrap();
            out
        };
        assert!(file(r#"{"keys": []}"#).err().unwrap().contains("lists no key"));
        let twice = r#"{"keys": [{"key": "same-secret-1", "space": "a", "access": "read-only"}, {"key": "same-secret-1", "space": "*", "access": "read-write"}]}"#;
        assert!(file(twice).err().unwrap().contains("repeats"));
        assert!(!Keys::load(None, None).unwrap().enabled(), "no setting at all: authentication off");
        // Keys no Authorization header can carry.
        for bad in ["key-with-newline\n", " leading-space", "tab\tinside-key", "clé-non-ascii", "inner space key"] {
            let err = Keys::load(Some(bad), None).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(err.contains("visible ASCII"), "{err}");
        }
        let spaced = r#"{"keys": [{"key": "secret-key-1 ", "space": "a", "access": "read-only"}]}"#;
        assert!(file(spaced).err().unwrap().contains("visible ASCII"));
        // Short keys, from API_KEY as from the file.
        assert!(Keys::load(Some("short"), None).err().unwrap().contains("API_KEY is shorter than 8 characters"));
        let short = r#"{"keys": [{"key": "short", "space": "a", "access": "read-only"}]}"#;
        assert!(file(short).err().unwrap().contains("key #1 is shorter than 8 characters"));
        // A fixed space kip would refuse on every request.
        for space in ["", "bad space!", "-dash-first", &"x".repeat(64)] {
            let text = format!(r#"{{"keys": [{{"key": "secret-key-1", "space": "{space}", "access": "read-only"}}]}}"#);
            assert!(file(&text).err().unwrap_or_else(|| panic!("{space:?} accepted")).contains("names no valid space"));
        }
        let fine = r#"{"keys": [{"key": "secret-key-1", "space": "team_a.b-1", "access": "read-only"}]}"#;
        assert!(file(fine).is_ok());
    }

    #[test]
    fn auth_off_uses_the_space_header() {
        let k = Keys::default();
        assert_eq!(k.authenticate(&headers(&[])).unwrap().space, "default");
        let c = k.authenticate(&headers(&[("x-kip-space", "bob")])).unwrap();
        assert_eq!((c.space.as_str(), c.access), ("bob", Access::ReadWrite));
    }

    #[test]
    fn keys_map_to_space_and_access() {
        let k = keys();
        let c = k.authenticate(&headers(&[("authorization", "Bearer alice-ro-secret")])).unwrap();
        assert_eq!((c.space.as_str(), c.access, c.key_name.as_deref()), ("alice", Access::ReadOnly, Some("key#2")));
        let c = k.authenticate(&headers(&[("authorization", "bearer alice-rw-secret")])).unwrap();
        assert_eq!((c.space.as_str(), c.access), ("alice", Access::ReadWrite));
        let c = k.authenticate(&headers(&[("authorization", "Bearer full-access-key"), ("x-kip-space", "zed")])).unwrap();
        assert_eq!((c.space.as_str(), c.access), ("zed", Access::ReadWrite));
        let c = k.authenticate(&headers(&[("authorization", "Bearer admin-any-secret")])).unwrap();
        assert_eq!(c.space, "default");
    }

    #[test]
    fn bad_credentials_are_401_and_foreign_spaces_403() {
        let k = keys();
        for h in [
            headers(&[]),
            headers(&[("authorization", "Bearer nope")]),
            headers(&[("authorization", "Basic alice-rw-secret")]),
            headers(&[("authorization", "Bearer ")]),
        ] {
            assert_eq!(k.authenticate(&h).unwrap_err().status, StatusCode::UNAUTHORIZED);
        }
        let h = headers(&[("authorization", "Bearer alice-rw-secret"), ("x-kip-space", "bob")]);
        assert_eq!(k.authenticate(&h).unwrap_err().status, StatusCode::FORBIDDEN);
        // No key and a malformed space header: authentication is decided first.
        let mut h = HeaderMap::new();
        h.insert("x-kip-space", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        assert_eq!(k.authenticate(&h).unwrap_err().status, StatusCode::UNAUTHORIZED);
        h.insert("authorization", HeaderValue::from_static("Bearer alice-rw-secret"));
        assert_eq!(k.authenticate(&h).unwrap_err().status, StatusCode::BAD_REQUEST);
    }
}
