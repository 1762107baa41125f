//! A request's `params` (an `execute_kip` request object, `list_logs`'
//! options, an MCP tool's arguments) as the client wrote them.
//!
//! The extension gets the client's JSON text unchanged: parsed into a
//! `serde_json::Value` and encoded again, numbers became doubles (1e-400
//! was stored as 0, 20-digit mantissas were rounded a second time, 1e400
//! and 30-digit integers were refused or altered) and nesting was bounded
//! by serde's recursion limit counted from the body's top, not from the
//! parameter. jsonb reads the text as the extension would read it from SQL.
//! The gateway itself only looks at a few fields (the command's first
//! word, the logged request, `list_logs`' cursor and limit), through
//! [`Params::view`], a lossy reading that never fails.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// How deep a request's JSON may nest on its way to Postgres. kip refuses
/// parameters nested deeper than 128 levels with its own `KIP_1001`; the
/// gateway lets a few levels past that through, so the caller reads kip's
/// answer, and stops far below where Postgres's jsonb parser runs out of
/// stack (an ERROR, not an envelope).
pub const MAX_DEPTH: usize = 256;

pub struct Params {
    /// The client's text, valid JSON.
    raw: Box<RawValue>,
    /// [`view_of`] the text.
    view: Value,
    /// Bracket nesting of the text.
    depth: usize,
}

impl Params {
    pub fn new(raw: Box<RawValue>) -> Params {
        let view = view_of(&raw, 0);
        let depth = nesting_depth(raw.get().as_bytes());
        Params { raw, view, depth }
    }

    /// No params at all: JSON `null`, as the extension was always sent.
    pub fn null() -> Params {
        Params::from_value(Value::Null)
    }

    /// Params that reached the gateway parsed already (an MCP tool call
    /// whose text the front end did not keep).
    pub fn from_value(value: Value) -> Params {
        let raw = serde_json::value::to_raw_value(&value).expect("a Value is JSON");
        Params::new(raw)
    }

    /// The JSON text for the extension.
    pub fn text(&self) -> &str {
        self.raw.get()
    }

    /// A reading for the gateway's own use; see [`view_of`].
    pub fn view(&self) -> &Value {
        &self.view
    }

    pub fn depth(&self) -> usize {
        self.depth
    }
}

/// Levels of subtrees [`view_of`] splits before it gives up on one.
const VIEW_SPLITS: usize = 4;

/// `raw` as a `Value` for inspection: numbers as doubles, and a subtree
/// serde cannot read (a number out of a double's range, nesting past its
/// recursion limit) split into its members, down to [`VIEW_SPLITS`]
/// levels, then kept as its JSON text in a string. Never fails, so an odd
/// parameter costs the log its exact value, not the call.
fn view_of(raw: &RawValue, splits: usize) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(raw.get()) {
        return v;
    }
    if splits < VIEW_SPLITS {
        if let Ok(members) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get()) {
            return Value::Object(members.iter().map(|(k, v)| (k.clone(), view_of(v, splits + 1))).collect::<Map<_, _>>());
        }
        if let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(raw.get()) {
            return Value::Array(items.iter().map(|v| view_of(v, splits + 1)).collect());
        }
    }
    Value::String(raw.get().to_string())
}

/// The deepest bracket nesting of a JSON text (brackets inside strings not
/// counted): one pass, no recursion, whatever the depth.
pub fn nesting_depth(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(text: &str) -> Params {
        Params::new(serde_json::from_str(text).unwrap())
    }

    #[test]
    fn the_text_is_kept_as_written() {
        for text in [
            r#"{"command": "FIND(?x)", "parameters": {"x": 1e-400}}"#,
            r#"{"parameters":{"a":1e400,"b":123456789012345678901234567890,"c":45931773795037525048e-98,"d":0.1}}"#,
        ] {
            assert_eq!(params(text).text(), text);
        }
    }

    #[test]
    fn the_view_never_fails() {
        let p = params(r#"{"command": "find(?x)", "parameters": {"big": 1e400, "ok": 2}}"#);
        assert_eq!(p.view(), &json!({"command": "find(?x)", "parameters": {"big": "1e400", "ok": 2}}));
        let deep = format!(r#"{{"command": "FIND", "parameters": {{"x": {}1{}}}}}"#, "[".repeat(200), "]".repeat(200));
        let p = params(&deep);
        assert_eq!(p.view()["command"], "FIND");
        assert!(p.view()["parameters"]["x"].is_array());
        assert_eq!(p.depth(), 202);
        assert_eq!(Params::null().text(), "null");
    }

    #[test]
    fn depth_skips_strings() {
        assert_eq!(nesting_depth(br#"{"a": "[[[{{{\"[[", "b": [[1]]}"#), 3);
        assert_eq!(nesting_depth(b"5"), 0);
    }
}
