//! The pure parts of MERGE: filling the target's attributes from the source
//! (target wins), the `aliases` union, and the `_merged_from` trail.

use serde_json::{Map, Value};

pub const ALIASES: &str = "aliases";
pub const MERGED_FROM: &str = "_merged_from";

/// Target attributes after the merge, and how many keys came from the source.
///
/// Every source key absent on the target is copied (and counted); on a
/// conflict the target keeps its value. `aliases` is the one exception: it
/// becomes the union of both lists plus the source's name, so the old
/// grounding paths survive.
pub fn attributes(target: &Map<String, Value>, source: &Map<String, Value>, source_name: &str) -> (Map<String, Value>, usize) {
    let mut merged = target.clone();
    let mut filled = 0;
    for (k, v) in source {
        if !target.contains_key(k) {
            filled += 1;
            if k != ALIASES {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    let mut aliases = Vec::new();
    for list in [target.get(ALIASES), source.get(ALIASES)] {
        push_all(&mut aliases, list);
    }
    push_unique(&mut aliases, Value::String(source_name.to_string()));
    merged.insert(ALIASES.to_string(), Value::Array(aliases));
    (merged, filled)
}

/// Target metadata after the merge: `_merged_from` = the target's trail, then
/// the source's own trail (chained merges), then `"<Type>:<name>"` of the
/// source; duplicates dropped.
pub fn metadata(target: &Map<String, Value>, source: &Map<String, Value>, source_entry: &str) -> Map<String, Value> {
    let mut merged = target.clone();
    let mut trail = Vec::new();
    push_all(&mut trail, target.get(MERGED_FROM));
    push_all(&mut trail, source.get(MERGED_FROM));
    push_unique(&mut trail, Value::String(source_entry.to_string()));
    merged.insert(MERGED_FROM.to_string(), Value::Array(trail));
    merged
}

/// Whether the target's trail records `entry` (used for the replay hint).
pub fn records(metadata: &Value, entry: &str) -> bool {
    metadata.get(MERGED_FROM).and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v.as_str() == Some(entry)))
}

/// Append a list value (a scalar counts as a one-element list).
fn push_all(out: &mut Vec<Value>, list: Option<&Value>) {
    match list {
        Some(Value::Array(items)) => items.iter().for_each(|v| push_unique(out, v.clone())),
        Some(Value::Null) | None => {}
        Some(v) => push_unique(out, v.clone()),
    }
}

fn push_unique(out: &mut Vec<Value>, v: Value) {
    if !out.contains(&v) {
        out.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn target_wins_and_aliases_union() {
        let target = obj(json!({"molecular_formula": "C9H8O4", "risk_level": 2}));
        let source = obj(json!({"aliases": ["acetylsalicylic acid"], "origin": "willow bark", "risk_level": 5}));
        let (merged, filled) = attributes(&target, &source, "ASA");
        assert_eq!(filled, 2);
        assert_eq!(merged["risk_level"], json!(2));
        assert_eq!(merged["origin"], json!("willow bark"));
        assert_eq!(merged["aliases"], json!(["acetylsalicylic acid", "ASA"]));
    }

    #[test]
    fn aliases_keep_target_order_and_drop_duplicates() {
        let target = obj(json!({"aliases": ["JS", "ECMAScript"]}));
        let source = obj(json!({"aliases": ["ECMAScript", "es"]}));
        let (merged, filled) = attributes(&target, &source, "JS");
        assert_eq!(filled, 0);
        assert_eq!(merged["aliases"], json!(["JS", "ECMAScript", "es"]));
    }

    #[test]
    fn trail_carries_the_source_history() {
        let target = obj(json!({"source": "x", "_merged_from": ["Drug:A"]}));
        let source = obj(json!({"_merged_from": ["Drug:B", "Drug:A"]}));
        let merged = metadata(&target, &source, "Drug:C");
        assert_eq!(merged["_merged_from"], json!(["Drug:A", "Drug:B", "Drug:C"]));
        assert!(records(&Value::Object(merged), "Drug:B"));
    }
}
