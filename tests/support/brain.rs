//! The FIND commands of the reference Brain prompts (`../shared/reference/
//! brain`), and plausible values for their `:name` placeholders: the KIP an
//! agent actually sends, for the tests that run it and `kip-brain-bench`.

use serde_json::{json, Map, Value};

/// The prompt files, in the order the agent's cycle uses them.
pub const PROMPTS: [&str; 3] = ["BrainRecall.md", "BrainMaintenance.md", "BrainFormation.md"];

/// The FIND commands of a prompt file's ```prolog blocks, each with the
/// lines up to the next command of the block.
pub fn finds(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("```prolog").skip(1) {
        let block = block.split("```").next().unwrap_or("");
        let mut current: Option<String> = None;
        let mut statements = Vec::new();
        for line in block.lines() {
            let t = line.trim_start();
            let starts = ["FIND", "UPSERT", "UPDATE", "DELETE", "DESCRIBE", "SEARCH", "EXPORT", "MERGE"]
                .iter()
                .any(|k| t.starts_with(k) && t[k.len()..].starts_with(|c: char| c == '(' || c == ' '));
            if starts {
                statements.extend(current.take());
                current = Some(String::new());
            }
            if let Some(s) = current.as_mut() {
                s.push_str(line);
                s.push('\n');
            }
        }
        statements.extend(current);
        out.extend(statements.into_iter().filter(|s| s.trim_start().starts_with("FIND")));
    }
    out
}

/// What the placeholders of a command name in the memory it runs on.
pub struct Names<'a> {
    /// Any name placeholder not otherwise matched (a person, a concept).
    pub name: &'a str,
    /// A `Domain` the memory holds (an embedded `{type: "Domain", name: :d}`
    /// must name one: a missing one is `KIP_3002`).
    pub domain: &'a str,
    /// Dates, times and cut-offs.
    pub date: &'a str,
}

/// Values for the `:name` placeholders of `cmd`, guessed from their names.
pub fn sample_params(cmd: &str, names: &Names) -> Value {
    let mut params = Map::new();
    let bytes = cmd.as_bytes();
    for (i, _) in cmd.match_indices(':') {
        let prev = if i == 0 { b' ' } else { bytes[i - 1] };
        if prev.is_ascii_alphanumeric() || prev == b'"' || prev == b'_' {
            continue;
        }
        let name: String = cmd[i + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() || !name.chars().next().unwrap().is_ascii_alphabetic() {
            continue;
        }
        let v = if name.contains("limit") {
            json!(10)
        } else if ["date", "time", "cutoff", "_at", "since", "until", "now", "start", "sleep"].iter().any(|k| name.contains(k)) {
            json!(names.date)
        } else if ["threshold", "score", "confidence", "factor"].iter().any(|k| name.contains(k)) {
            json!(0.5)
        } else if name == "type" || name.ends_with("_type") {
            json!("Person")
        } else if name.contains("predicate") {
            json!("belongs_to_domain")
        } else if name.contains("domain") {
            json!(names.domain)
        } else {
            json!(names.name)
        };
        params.insert(name, v);
    }
    Value::Object(params)
}
