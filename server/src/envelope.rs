//! What the gateway answers: a KIP envelope and the HTTP status that goes
//! with it.
//!
//! Envelopes from the extension pass through untouched; the status is read
//! from their error code, so load balancers and retry logic see failures
//! without parsing bodies. Errors the gateway raises itself (bad HTTP input,
//! authentication, an unreachable database) use the same envelope shape,
//! `{"error": {"code", "message", "hint"}}`, with the closest KIP code.

use axum::http::StatusCode;
use serde_json::{json, Value};

/// A response body and its status, shared by the HTTP and MCP front ends.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    /// Seconds for a `Retry-After` header (a busy pool), if any.
    pub retry_after: Option<u32>,
}

impl Reply {
    /// An envelope returned by `kip_execute*`: the status follows its error code.
    pub fn from_envelope(body: Value) -> Reply {
        Reply { status: status_of(&body), body, retry_after: None }
    }

    pub fn ok(body: Value) -> Reply {
        Reply { status: StatusCode::OK, body, retry_after: None }
    }

    /// An error raised by the gateway itself.
    pub fn error(status: StatusCode, code: &str, message: impl Into<String>, hint: &str) -> Reply {
        Reply {
            status,
            body: json!({ "error": { "code": code, "message": message.into(), "hint": hint } }),
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>, hint: &str) -> Reply {
        Reply::error(StatusCode::BAD_REQUEST, "KIP_1001", message, hint)
    }

    /// The error code of the envelope, if it is an error.
    pub fn error_code(&self) -> Option<&str> {
        self.body.get("error")?.get("code")?.as_str()
    }
}

/// The HTTP status of an envelope. A batch (`{"result": [...]}`) is 200: its
/// per-command errors are reported inline, as KIP defines batches.
pub fn status_of(envelope: &Value) -> StatusCode {
    match envelope.get("error").and_then(|e| e.get("code")).and_then(Value::as_str) {
        None => StatusCode::OK,
        Some(code) => status_of_code(code),
    }
}

/// KIP error classes (spec Appendix 4) to HTTP statuses.
pub fn status_of_code(code: &str) -> StatusCode {
    match code {
        // 1xxx syntax, 2xxx schema, 3001 reference: the request itself is wrong.
        "KIP_1001" | "KIP_1002" | "KIP_2001" | "KIP_2002" | "KIP_2003" | "KIP_3001" => StatusCode::BAD_REQUEST,
        "KIP_3002" => StatusCode::NOT_FOUND,
        // Duplicate, and EXPECT VERSION mismatch: a conflict with the current state.
        "KIP_3003" | "KIP_3005" => StatusCode::CONFLICT,
        "KIP_3004" => StatusCode::FORBIDDEN,
        "KIP_4001" => StatusCode::REQUEST_TIMEOUT,
        // KIP_4002 (resource limit), KIP_4003 (internal) and unknown codes.
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_by_error_class() {
        let cases = [
            ("KIP_1001", 400),
            ("KIP_1002", 400),
            ("KIP_2001", 400),
            ("KIP_2002", 400),
            ("KIP_2003", 400),
            ("KIP_3001", 400),
            ("KIP_3002", 404),
            ("KIP_3003", 409),
            ("KIP_3004", 403),
            ("KIP_3005", 409),
            ("KIP_4001", 408),
            ("KIP_4002", 500),
            ("KIP_4003", 500),
            ("KIP_9999", 500),
        ];
        for (code, status) in cases {
            assert_eq!(status_of_code(code).as_u16(), status, "{code}");
        }
    }

    #[test]
    fn results_and_batches_are_200() {
        assert_eq!(status_of(&json!({"result": 1})), StatusCode::OK);
        assert_eq!(status_of(&json!({"result": [{"error": {"code": "KIP_1001"}}]})), StatusCode::OK);
        assert_eq!(status_of(&json!({"error": {"code": "KIP_3002"}})), StatusCode::NOT_FOUND);
    }
}
