//! Result normalization of the conformance fixtures (kip-conformance/README.md):
//! ids become positional tokens, volatile metadata is dropped, unordered
//! top-level results are sorted, and both sides are compared by their
//! canonical encoding (sorted keys, no spaces).

use serde_json::{Map, Value};
use std::collections::HashMap;

/// Apply steps 1–3 of the README to a result value.
pub fn normalize(value: &Value, ordered: bool) -> Value {
    let mut ids = HashMap::new();
    let mut counter = 0usize;
    let tokenized = tokenize(value, &mut ids, &mut counter);
    let cleaned = drop_volatile(&tokenized);
    match cleaned {
        Value::Array(items) if !ordered => {
            let mut items = items;
            items.sort_by_key(canonical);
            Value::Array(items)
        }
        other => other,
    }
}

fn token_for(s: &str, ids: &mut HashMap<String, String>, counter: &mut usize) -> Option<String> {
    let is_concept = s.strip_prefix("C:").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let prop = s.strip_prefix("P:").and_then(|rest| {
        let (n, pred) = rest.split_once(':')?;
        (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(pred)
    });
    if !is_concept && prop.is_none() {
        return None;
    }
    if let Some(t) = ids.get(s) {
        return Some(t.clone());
    }
    *counter += 1;
    let token = match prop {
        Some(pred) => format!("P:<{}>:{}", counter, pred),
        None => format!("C:<{}>", counter),
    };
    ids.insert(s.to_string(), token.clone());
    Some(token)
}

fn tokenize(v: &Value, ids: &mut HashMap<String, String>, counter: &mut usize) -> Value {
    match v {
        Value::String(s) => Value::String(token_for(s, ids, counter).unwrap_or_else(|| s.clone())),
        Value::Array(items) => Value::Array(items.iter().map(|i| tokenize(i, ids, counter)).collect()),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), tokenize(&m[k], ids, counter));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn drop_volatile(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(drop_volatile).collect()),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, val) in m {
                let mut val = drop_volatile(val);
                if k == "metadata" {
                    if let Value::Object(meta) = &mut val {
                        meta.remove("_created_at");
                        meta.remove("_updated_at");
                    }
                }
                out.insert(k.clone(), val);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Canonical JSON text: object keys sorted, no spaces, integral numbers
/// written as integers (so 2 and 2.0 compare equal).
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(&m[*k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => out.push_str(&format!("{}", f as i64)),
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokenizes_ids_in_sorted_key_order() {
        let v = json!({"subject": "C:9", "object": "C:7", "id": "P:40:treats"});
        let n = normalize(&v, false);
        assert_eq!(n, json!({"id": "P:<1>:treats", "object": "C:<2>", "subject": "C:<3>"}));
    }

    #[test]
    fn drops_volatile_metadata_and_sorts() {
        let v = json!([{"metadata": {"_version": 1, "_updated_at": "x", "_created_at": "y"}}, "a"]);
        let n = normalize(&v, false);
        assert_eq!(canonical(&n), r#"["a",{"metadata":{"_version":1}}]"#);
        assert_eq!(canonical(&json!(2.0)), "2");
    }
}
