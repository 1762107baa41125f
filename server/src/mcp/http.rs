//! `POST /mcp`: MCP over streamable HTTP.
//!
//! Stateless mode with plain JSON responses: every POST is a complete
//! exchange, so any gateway instance can answer any request and a graceful
//! shutdown has no long-lived streams to wait for. The HTTP layer in front
//! (`crate::http`) authenticates the request and puts the `Caller` in its
//! extensions, where the tool handler finds it.
//!
//! rmcp answers some refusals in plain text (a wrong Accept or Content-Type,
//! a body that is no JSON-RPC message, an unsupported protocol version or
//! HTTP method); MCP clients read an error body as JSON-RPC, so
//! [`jsonrpc_refusal`] turns them into JSON-RPC errors with the same status
//! (400, not rmcp's 415, for a JSON body that is not JSON or not JSON-RPC),
//! and gives its JSON errors the `"id": null` they lack. rmcp answers a
//! request whose params do not fit its method -32601 (method not found),
//! or -32600 with id null; [`invalid_params`] answers -32602 with the
//! request's id before rmcp sees it. A `tools/call`'s arguments reach the
//! tool as the client's text (`super::message`). The gateway's own
//! refusals on `/mcp` (408, 413, a body that cannot be read) go out as
//! JSON-RPC errors too ([`from_reply`]); 401 and 403 keep the KIP envelope
//! and `WWW-Authenticate`, as HTTP authentication is answered.

use super::KipMcp;
use crate::envelope::Reply;
use crate::gateway::Gateway;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub type McpService = StreamableHttpService<KipMcp, LocalSessionManager>;

pub fn service(gateway: Gateway, listen: SocketAddr, max_body_bytes: usize, shutdown: CancellationToken) -> McpService {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(shutdown);
    // Host checking defends a loopback listener against DNS rebinding; on a
    // public address the operator's host names are unknown, and the API keys
    // protect the endpoint.
    config = match crate::http::allowed_hosts(listen) {
        Some(hosts) => config.with_allowed_hosts(hosts),
        None => config.disable_allowed_hosts(),
    };
    StreamableHttpService::new(move || Ok(KipMcp::http(gateway.clone())), Arc::new(LocalSessionManager::default()), config)
}

fn declared_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// What the request's body is, as far as a refusal's JSON-RPC code and
/// status are concerned.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// Declared JSON, but not JSON at all (-32700).
    NotJson,
    /// Declared JSON, and JSON (rmcp refusing it means: no JSON-RPC message, -32600).
    Json,
    /// Not declared JSON: rmcp's 415 stands.
    Other,
}

pub fn body_kind(headers: &HeaderMap, body: &[u8]) -> BodyKind {
    if !declared_json(headers) {
        BodyKind::Other
    } else if std::str::from_utf8(body).is_err() || serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
        // serde skips the bytes of strings unchecked: UTF-8 is checked first,
        // or a body with invalid UTF-8 in a string passed for JSON (-32600).
        BodyKind::NotJson
    } else {
        BodyKind::Json
    }
}

fn json_response(status: StatusCode, message: Value) -> Response {
    let mut response = Response::new(Body::from(message.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A gateway refusal (408, 413, an unreadable body) on `/mcp` as a
/// JSON-RPC error with the same status: id null (the body was not read),
/// -32600, the KIP message, and the KIP error object as `data`.
pub fn from_reply(reply: Reply) -> Response {
    let error = reply.body.get("error").cloned().unwrap_or(Value::Null);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("request refused").to_string();
    json_response(
        reply.status,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message, "data": error}}),
    )
}

/// A request whose params do not have its method's shape, answered -32602
/// (invalid params) with its id, as JSON-RPC says; rmcp, which fails to
/// decode such a request, answered -32601 (method not found) or -32600
/// with id null. `None` for anything else, which goes on to rmcp.
pub fn invalid_params(body: &[u8]) -> Option<Response> {
    let message: Value = serde_json::from_slice(body).ok()?;
    invalid_params_error(&message).map(|error| json_response(StatusCode::OK, error))
}

/// The -32602 answer to `message` (see [`invalid_params`]), if it needs one;
/// shared with stdio. `initialize` and `tools/call` params are checked
/// against rmcp's own types; any other method's, when present, must be an
/// object (MCP; `null` is taken as absent).
pub fn invalid_params_error(message: &Value) -> Option<Value> {
    let (id, method) = (message.get("id").filter(|id| super::message::valid_id(id))?, message.get("method")?.as_str()?);
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let check = match method {
        "initialize" => serde_json::from_value::<rmcp::model::InitializeRequestParams>(params).err().map(|e| e.to_string()),
        "tools/call" => serde_json::from_value::<rmcp::model::CallToolRequestParams>(params).err().map(|e| e.to_string()),
        _ if !(params.is_null() || params.is_object()) => Some("params must be an object".into()),
        _ => None,
    }?;
    Some(super::message::error(id.clone(), -32602, format!("invalid params for {method}: {check}")))
}

/// A refusal of the MCP service as a JSON-RPC error object with the same
/// headers: id null (the request's is unknown or unread), code -32700 for
/// a body that is not JSON, -32603 for a server error, -32600 for any
/// other refusal, and rmcp's text as the message. A body declared JSON
/// that rmcp refuses as unsupported media (415) is a bad request (400):
/// the media type was right, the content was not. A JSON error without
/// an `id` gets `"id": null`. Successes and SSE streams pass untouched.
pub async fn jsonrpc_refusal(response: Response, kind: BodyKind) -> Response {
    let status = response.status();
    let is_json = declared_json(response.headers());
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    if is_json {
        let mut answer: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
        if let Some(obj) = answer.as_object_mut().filter(|o| o.contains_key("error")) {
            obj.entry("id").or_insert(Value::Null);
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        let body = if answer.is_null() { Body::from(text) } else { Body::from(answer.to_string()) };
        return Response::from_parts(parts, body);
    }
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let message = if text.is_empty() { status.canonical_reason().unwrap_or("request refused").to_string() } else { text };
    let code = if status.is_server_error() {
        -32603
    } else if kind == BodyKind::NotJson && [StatusCode::BAD_REQUEST, StatusCode::UNSUPPORTED_MEDIA_TYPE].contains(&status) {
        -32700
    } else {
        -32600
    };
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && kind != BodyKind::Other {
        parts.status = StatusCode::BAD_REQUEST;
    }
    let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(error.to_string()))
}
