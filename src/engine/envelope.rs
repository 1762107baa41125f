//! The KIP response envelope (RC10 §6.2).

use crate::exec::jsonb::Doc;
use kip_lang::KipError;
use serde_json::{json, Value};

/// What a successfully executed command produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// A FIND's element objects stay the jsonb its statement built.
    pub result: Doc,
    /// Present when more rows are available (`CURSOR` pagination).
    pub next_cursor: Option<String>,
}

impl Outcome {
    pub fn new(result: impl Into<Doc>) -> Self {
        Outcome { result: result.into(), next_cursor: None }
    }

    /// The result as a value (a FIND's jsonb parts decoded).
    pub fn result_value(&self) -> Value {
        self.result.clone().into_value()
    }
}

/// `{"result": …, "next_cursor"?: …}` or `{"error": {"code", "message", "hint"?}}`.
pub fn single(outcome: Result<Outcome, KipError>) -> Doc {
    match outcome {
        Ok(o) => {
            let mut members = vec![("result".to_string(), o.result)];
            if let Some(c) = o.next_cursor {
                members.push(("next_cursor".to_string(), Doc::Json(Value::String(c))));
            }
            Doc::Object(members)
        }
        Err(e) => Doc::Json(json!({ "error": e.to_json() })),
    }
}

/// `{"result": [<single envelope>, …]}`.
pub fn batch(items: Vec<Doc>) -> Doc {
    Doc::Object(vec![("result".to_string(), Doc::Array(items))])
}
