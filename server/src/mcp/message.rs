//! JSON-RPC messages before rmcp reads them, for HTTP and stdio alike.
//!
//! rmcp parses a message into `serde_json::Value`s: a tool's arguments
//! lost their numbers' digits (doubles) and, past serde's recursion limit
//! (counted from the message's top), the whole message. So the arguments
//! of a `tools/call` are taken out as the client's text ([`take_arguments`])
//! and rmcp sees `{}` in their place; the tool handler gets the text back
//! (HTTP: the request's extensions; stdio: [`PendingArguments`], by id).

use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// A `tools/call`'s arguments as the client wrote them (HTTP: in the
/// request's extensions).
#[derive(Clone)]
pub struct RawArguments(pub Box<RawValue>);

/// Over stdio, the arguments taken out of the `tools/call` requests not
/// yet handled, by request id (its JSON text): one session, one client,
/// whose ids in flight are unique (JSON-RPC).
#[derive(Clone, Default)]
pub struct PendingArguments(Arc<Mutex<HashMap<String, Box<RawValue>>>>);

impl PendingArguments {
    pub fn insert(&self, id: &Value, arguments: Box<RawValue>) {
        self.0.lock().expect("not poisoned").insert(id.to_string(), arguments);
    }

    pub fn take(&self, id: &Value) -> Option<Box<RawValue>> {
        self.0.lock().expect("not poisoned").remove(&id.to_string())
    }

    /// Forget what a request of this id left: a request with no arguments
    /// must not run those of an earlier one that rmcp refused (an unknown
    /// tool) and never took.
    pub fn forget(&self, id: &Value) {
        self.0.lock().expect("not poisoned").remove(&id.to_string());
    }
}

/// A `tools/call` message whose arguments are an object: the message with
/// `{}` in their place, and their text. `None` for any other message
/// (arguments that are no object go to rmcp, to be refused -32602).
pub fn take_arguments(message: &[u8]) -> Option<(Vec<u8>, Box<RawValue>)> {
    let mut members: BTreeMap<String, Box<RawValue>> = serde_json::from_slice(message).ok()?;
    let method: String = serde_json::from_str(members.get("method")?.get()).ok()?;
    if method != "tools/call" {
        return None;
    }
    let mut params: BTreeMap<String, Box<RawValue>> = serde_json::from_str(members.get("params")?.get()).ok()?;
    if !params.get("arguments")?.get().starts_with('{') {
        return None;
    }
    let arguments = params.insert("arguments".into(), RawValue::from_string("{}".into()).expect("JSON"))?;
    members.insert("params".into(), serde_json::value::to_raw_value(&params).ok()?);
    Some((serde_json::to_vec(&members).ok()?, arguments))
}

/// A JSON-RPC error answer.
pub fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// An id JSON-RPC (and rmcp) accepts: a string or an integer.
pub fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// What the stdio filter does with a line.
pub enum Screened {
    /// Answer it (a JSON-RPC error), without rmcp.
    Answer(Value),
    /// Hand these bytes to rmcp.
    Pass(Vec<u8>),
    /// Drop it: a response from the client, and this server sends it no
    /// requests, so there is none it could answer.
    Ignore,
}

/// One stdio line, checked as JSON-RPC 2.0 says: every error answer has an
/// `"id"` (the request's when it can be read, null otherwise). rmcp
/// answered such lines without one, and a response as the first line ended
/// the session ("MCP handshake failed").
pub fn screen(line: &[u8], pending: &PendingArguments) -> Screened {
    if let Err(e) = serde_json::from_slice::<&RawValue>(line) {
        return Screened::Answer(error(Value::Null, -32700, format!("parse error: {e}")));
    }
    let (line, arguments) = match take_arguments(line) {
        Some((line, arguments)) => (line, Some(arguments)),
        None => (line.to_vec(), None),
    };
    let message: Value = match serde_json::from_slice(&line) {
        Ok(m) => m,
        Err(e) => return Screened::Answer(error(Value::Null, -32600, unreadable(&e))),
    };
    let Some(obj) = message.as_object() else {
        let why = if message.is_array() { "batches (arrays) are not supported" } else { "a message is a JSON object" };
        return Screened::Answer(error(Value::Null, -32600, format!("invalid request: {why}")));
    };
    let id = obj.get("id");
    if id.is_some_and(|id| !valid_id(id)) {
        return Screened::Answer(error(Value::Null, -32600, "invalid request: the id must be a string or an integer"));
    }
    let reply_id = id.cloned().unwrap_or(Value::Null);
    // rmcp reads an id as a signed 64-bit integer and refused a larger one
    // with an answer that had no id.
    if id.is_some_and(|id| id.is_u64() && !id.is_i64()) {
        return Screened::Answer(error(reply_id, -32600, "invalid request: a numeric id must be at most 9223372036854775807"));
    }
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Screened::Answer(error(reply_id, -32600, "invalid request: \"jsonrpc\" must be \"2.0\""));
    }
    if !obj.contains_key("method") {
        if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
            return Screened::Ignore;
        }
        return Screened::Answer(error(reply_id, -32600, "invalid request: no \"method\""));
    }
    if let Some(answer) = super::http::invalid_params_error(&message) {
        return Screened::Answer(answer);
    }
    if let Some(id) = id {
        // Kept only for a tool this server has, which takes them when it
        // runs; another tool is refused by rmcp, which would leave them.
        let served = message.pointer("/params/name").and_then(Value::as_str).is_some_and(super::serves_tool);
        match arguments {
            Some(arguments) if served => pending.insert(id, arguments),
            _ => pending.forget(id),
        }
    }
    Screened::Pass(line)
}

/// serde's refusal of a valid JSON message, in the words of the limit it hit.
pub fn unreadable(e: &serde_json::Error) -> String {
    if e.to_string().contains("recursion limit") {
        "invalid request: the message nests deeper than 128 levels (a tool's arguments excepted)".into()
    } else {
        format!("invalid request: the message could not be read: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_are_taken_out_as_written() {
        let msg = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_kip","arguments":{"command":"X","parameters":{"x":1e-400,"y":1e400}}}}"#;
        let (rest, arguments) = take_arguments(msg).unwrap();
        assert_eq!(arguments.get(), r#"{"command":"X","parameters":{"x":1e-400,"y":1e400}}"#);
        let rest: Value = serde_json::from_slice(&rest).unwrap();
        assert_eq!(rest, json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "execute_kip", "arguments": {}}}));
        assert!(take_arguments(br#"{"id":1,"method":"tools/list","params":{"arguments":{}}}"#).is_none());
        assert!(take_arguments(br#"{"id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#).is_none());
    }

    fn answer(line: &str) -> Value {
        match screen(line.as_bytes(), &PendingArguments::default()) {
            Screened::Answer(a) => a,
            Screened::Pass(_) => panic!("{line}: passed"),
            Screened::Ignore => panic!("{line}: ignored"),
        }
    }

    #[test]
    fn every_error_answer_has_an_id() {
        let cases = [
            (r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, Value::Null, -32600),
            (r#"{"id":1,"method":"ping"}"#, json!(1), -32600),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Value::Null, -32600),
            (r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":[1]}"#, json!("a"), -32602),
            (r#"{"jsonrpc":"2.0","id":2}"#, json!(2), -32600),
            (r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#, json!(18446744073709551615u64), -32600),
            ("{oops", Value::Null, -32700),
        ];
        for (line, id, code) in cases {
            let a = answer(line);
            assert!(a.as_object().unwrap().contains_key("id"), "{line}: {a}");
            assert_eq!((&a["id"], &a["error"]["code"]), (&id, &json!(code)), "{line}: {a}");
        }
    }

    #[test]
    fn responses_are_ignored_and_requests_passed() {
        let pending = PendingArguments::default();
        let response = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(matches!(screen(response, &pending), Screened::Ignore));
        let call = br#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"execute_kip","arguments":{"command":"A","parameters":{"n":1e400}}}}"#;
        assert!(matches!(screen(call, &pending), Screened::Pass(_)));
        assert_eq!(pending.take(&json!("c")).unwrap().get(), r#"{"command":"A","parameters":{"n":1e400}}"#);
    }

    /// A call rmcp refuses (an unknown tool) leaves no arguments for a later
    /// call of the same id without any: that one ran the refused call's.
    #[test]
    fn a_refused_calls_arguments_do_not_outlive_it() {
        let pending = PendingArguments::default();
        let refused = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"nope","arguments":{"command":"UPSERT"}}}"#;
        assert!(matches!(screen(refused, &pending), Screened::Pass(_)));
        assert!(pending.take(&json!("a")).is_none(), "kept for a tool the server does not have");
        let first = br#"{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"execute_kip","arguments":{"command":"UPSERT"}}}"#;
        let again = br#"{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"execute_kip"}}"#;
        assert!(matches!(screen(first, &pending), Screened::Pass(_)));
        assert!(matches!(screen(again, &pending), Screened::Pass(_)));
        assert!(pending.take(&json!("b")).is_none(), "a call without arguments got an earlier call's");
    }
}
