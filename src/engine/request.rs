//! The request object of `execute_kip` (KIP RC10 §6.1), validated.
//!
//! Exactly one of `command` (a string) or `commands` (an array of strings or
//! `{command, parameters}` objects) is required; `parameters` is an object of
//! shared placeholder values that a per-command `parameters` object overrides
//! key by key; `dry_run` is a boolean. Anything else is a KIP_1001 error that
//! names the offending field.

use kip_lang::{ErrorCode, KipError};
use serde_json::{Map, Value};

/// Most commands in one batch. Each command's answer is held until the
/// batch's envelope is complete: 25,000 `DESCRIBE PRIMER`s in a 475 KB
/// request answered 131 MB.
pub const MAX_BATCH_COMMANDS: usize = 1_000;

#[derive(Debug, Clone, PartialEq)]
pub struct CommandRequest {
    pub command: String,
    pub parameters: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub commands: Vec<CommandRequest>,
    /// `commands` was used: the response is the batch envelope.
    pub batch: bool,
    pub dry_run: bool,
}

fn malformed(message: impl Into<String>) -> KipError {
    KipError::new(ErrorCode::InvalidSyntax, message).with_hint(
        "A request is an object with exactly one of \"command\" (string) or \"commands\" (array of strings or {\"command\", \"parameters\"} objects), optional \"parameters\" (object) and \"dry_run\" (boolean).",
    )
}

fn parameters_of(value: Option<&Value>, field: &str) -> Result<Map<String, Value>, KipError> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(other) => Err(malformed(format!(
            "\"{field}\" must be an object of placeholder values, got {}",
            kip_lang::json_kind(other)
        ))),
    }
}

/// A single command given as text plus parameters (the two-argument form).
pub fn single(command: &str, parameters: Value) -> Result<Request, KipError> {
    let parameters = match parameters {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(KipError::new(
                ErrorCode::InvalidSyntax,
                format!("the parameters must be an object of placeholder values, got {}", kip_lang::json_kind(&other)),
            )
            .with_hint("Pass the values by placeholder name, e.g. '{\"name\": \"Aspirin\"}' for :name; '{}' when there are none."))
        }
    };
    Ok(Request {
        commands: vec![CommandRequest { command: command.to_string(), parameters }],
        batch: false,
        dry_run: false,
    })
}

/// The `execute_kip` arguments object.
pub fn from_json(request: &Value) -> Result<Request, KipError> {
    let obj = request
        .as_object()
        .ok_or_else(|| malformed(format!("the request must be a JSON object, got {}", kip_lang::json_kind(request))))?;
    for key in obj.keys() {
        if !matches!(key.as_str(), "command" | "commands" | "parameters" | "dry_run") {
            return Err(malformed(format!("unknown request field \"{key}\"")));
        }
    }
    let shared = parameters_of(obj.get("parameters"), "parameters")?;
    let dry_run = match obj.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(malformed(format!("\"dry_run\" must be a boolean, got {}", kip_lang::json_kind(other)))),
    };
    let (commands, batch) = match (obj.get("command"), obj.get("commands")) {
        (Some(_), Some(_)) => return Err(malformed("\"command\" and \"commands\" are mutually exclusive; give exactly one")),
        (None, None) => return Err(malformed("the request has neither \"command\" nor \"commands\"; give exactly one")),
        (Some(Value::String(text)), None) => {
            (vec![CommandRequest { command: text.clone(), parameters: shared }], false)
        }
        (Some(other), None) => {
            return Err(malformed(format!("\"command\" must be a string, got {}", kip_lang::json_kind(other))))
        }
        (None, Some(Value::Array(items))) => {
            if items.len() > MAX_BATCH_COMMANDS {
                return Err(KipError::new(
                    ErrorCode::ResourceExhausted,
                    format!("the batch has {} commands; at most {MAX_BATCH_COMMANDS} are allowed", items.len()),
                )
                .with_hint("Send the commands in several requests."));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(batch_item(i, item, &shared)?);
            }
            (out, true)
        }
        (None, Some(other)) => {
            return Err(malformed(format!("\"commands\" must be an array, got {}", kip_lang::json_kind(other))))
        }
    };
    Ok(Request { commands, batch, dry_run })
}

fn batch_item(index: usize, item: &Value, shared: &Map<String, Value>) -> Result<CommandRequest, KipError> {
    match item {
        Value::String(text) => Ok(CommandRequest { command: text.clone(), parameters: shared.clone() }),
        Value::Object(o) => {
            for key in o.keys() {
                if !matches!(key.as_str(), "command" | "parameters") {
                    return Err(malformed(format!("commands[{index}] has an unknown field \"{key}\"")));
                }
            }
            let command = match o.get("command") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => {
                    return Err(malformed(format!(
                        "commands[{index}].command must be a string, got {}",
                        kip_lang::json_kind(other)
                    )))
                }
                None => return Err(malformed(format!("commands[{index}] has no \"command\""))),
            };
            let mut parameters = shared.clone();
            for (k, v) in parameters_of(o.get("parameters"), &format!("commands[{index}].parameters"))? {
                parameters.insert(k, v);
            }
            Ok(CommandRequest { command, parameters })
        }
        other => Err(malformed(format!(
            "commands[{index}] must be a string or a {{command, parameters}} object, got {}",
            kip_lang::json_kind(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_batch_has_at_most_max_batch_commands() {
        let within = json!({"commands": vec!["DESCRIBE PRIMER"; MAX_BATCH_COMMANDS]});
        assert_eq!(from_json(&within).unwrap().commands.len(), MAX_BATCH_COMMANDS);
        let over = json!({"commands": vec!["DESCRIBE PRIMER"; MAX_BATCH_COMMANDS + 1]});
        let e = from_json(&over).unwrap_err();
        assert_eq!(e.code, ErrorCode::ResourceExhausted);
        assert!(e.message.contains("1001 commands"), "{}", e.message);
    }

    #[test]
    fn exactly_one_of_command_and_commands() {
        assert!(from_json(&json!({"command": "DESCRIBE PRIMER", "commands": []})).is_err());
        assert!(from_json(&json!({})).is_err());
        assert!(from_json(&json!({"command": 3})).is_err());
        assert!(from_json(&json!("DESCRIBE PRIMER")).is_err());
        assert!(from_json(&json!({"commands": "x"})).is_err());
        assert!(from_json(&json!({"command": "x", "dry_run": "yes"})).is_err());
        assert!(from_json(&json!({"command": "x", "extra": 1})).is_err());
        let r = from_json(&json!({"command": "DESCRIBE PRIMER"})).unwrap();
        assert!(!r.batch);
    }

    #[test]
    fn per_command_parameters_override_shared() {
        let r = from_json(&json!({
            "commands": ["A", {"command": "B", "parameters": {"x": 2}}],
            "parameters": {"x": 1, "y": 1}
        }))
        .unwrap();
        assert!(r.batch);
        assert_eq!(r.commands[0].parameters["x"], json!(1));
        assert_eq!(r.commands[1].parameters["x"], json!(2));
        assert_eq!(r.commands[1].parameters["y"], json!(1));
    }
}
