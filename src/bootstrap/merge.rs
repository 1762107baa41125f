//! Merging a capsule's attributes into a schema node that already exists,
//! without losing anything the space holds.
//!
//! The rule, applied recursively: a key the node lacks is added; two objects
//! merge key by key; an array gains the capsule's elements it lacks, after
//! its own; any other value the node has is kept as it is (so a description
//! or a default an agent rewrote stays rewritten). Where the capsule has an
//! object or an array and the node has a value of another kind, the two
//! cannot be merged without dropping one of them: that is a conflict, and
//! the caller refuses the capsule rather than pick a winner.

use serde_json::{Map, Value};

/// The path of the first conflicting value, e.g. `instance_schema.goal`.
#[derive(Debug, PartialEq, Eq)]
pub struct Conflict(pub String);

/// The attributes to write so that `existing` gains what `capsule` adds:
/// only the top-level keys whose value changes, in the capsule's order.
/// Empty when the node already holds everything.
pub fn additions(existing: &Map<String, Value>, capsule: &Map<String, Value>) -> Result<Map<String, Value>, Conflict> {
    let mut out = Map::new();
    for (key, wanted) in capsule {
        match existing.get(key) {
            None => {
                out.insert(key.clone(), wanted.clone());
            }
            Some(have) => {
                let merged = merge(have, wanted, key)?;
                if &merged != have {
                    out.insert(key.clone(), merged);
                }
            }
        }
    }
    Ok(out)
}

fn merge(have: &Value, wanted: &Value, path: &str) -> Result<Value, Conflict> {
    match (have, wanted) {
        (Value::Object(h), Value::Object(w)) => {
            let mut out = h.clone();
            for (key, value) in w {
                let merged = match h.get(key) {
                    None => value.clone(),
                    Some(existing) => merge(existing, value, &format!("{path}.{key}"))?,
                };
                out.insert(key.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (Value::Array(h), Value::Array(w)) => {
            let mut out = h.clone();
            for value in w {
                if !out.contains(value) {
                    out.push(value.clone());
                }
            }
            Ok(Value::Array(out))
        }
        (_, Value::Object(_) | Value::Array(_)) => Err(Conflict(path.to_string())),
        _ => Ok(have.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn adds_missing_keys_and_keeps_existing_values() {
        let have = map(json!({"description": "mine", "instance_schema": {"goal": {"type": "text"}}}));
        let capsule = map(json!({
            "description": "theirs",
            "display_hint": "🧭",
            "instance_schema": {"goal": {"type": "string", "is_required": true}, "status": {"type": "string"}}
        }));
        let add = additions(&have, &capsule).unwrap();
        assert_eq!(
            Value::Object(add),
            json!({
                "display_hint": "🧭",
                "instance_schema": {"goal": {"type": "text", "is_required": true}, "status": {"type": "string"}}
            })
        );
    }

    #[test]
    fn arrays_gain_missing_elements_after_their_own() {
        let have = map(json!({"subject_types": ["Event", "Task"]}));
        let capsule = map(json!({"subject_types": ["Event", "Experience"]}));
        assert_eq!(Value::Object(additions(&have, &capsule).unwrap()), json!({"subject_types": ["Event", "Task", "Experience"]}));
    }

    #[test]
    fn nothing_to_add_is_empty() {
        let same = map(json!({"a": [1, 2], "b": {"c": "d"}, "e": true}));
        assert!(additions(&same, &same).unwrap().is_empty());
    }

    #[test]
    fn an_object_over_a_scalar_is_a_conflict() {
        let have = map(json!({"instance_schema": {"goal": "free text"}}));
        let capsule = map(json!({"instance_schema": {"goal": {"type": "string"}}}));
        assert_eq!(additions(&have, &capsule), Err(Conflict("instance_schema.goal".into())));
    }
}
