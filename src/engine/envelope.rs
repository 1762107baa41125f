//! The KIP response envelope (RC10 §6.2).

use kip_lang::KipError;
use serde_json::{json, Map, Value};

/// What a successfully executed command produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub result: Value,
    /// Present when more rows are available (`CURSOR` pagination).
    pub next_cursor: Option<String>,
}

impl Outcome {
    pub fn new(result: Value) -> Self {
        Outcome { result, next_cursor: None }
    }
}

/// `{"result": …, "next_cursor"?: …}` or `{"error": {"code", "message", "hint"?}}`.
pub fn single(outcome: Result<Outcome, KipError>) -> Value {
    match outcome {
        Ok(o) => {
            let mut m = Map::new();
            m.insert("result".into(), o.result);
            if let Some(c) = o.next_cursor {
                m.insert("next_cursor".into(), Value::String(c));
            }
            Value::Object(m)
        }
        Err(e) => json!({ "error": e.to_json() }),
    }
}

/// `{"result": [<single envelope>, …]}`.
pub fn batch(items: Vec<Value>) -> Value {
    json!({ "result": items })
}
