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
//! [`jsonrpc_refusal`] turns them into JSON-RPC errors with the same status.

use super::KipMcp;
use crate::gateway::Gateway;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
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

/// Whether an MCP service refusal of this request is a JSON-RPC parse
/// error: its body, declared JSON, is not JSON at all (rmcp answers both
/// that and JSON that is no JSON-RPC message with 415).
pub fn is_parse_error(headers: &HeaderMap, body: &[u8]) -> bool {
    let declared_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    declared_json && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err()
}

/// A refusal of the MCP service that is not JSON (a 4xx or 5xx in plain
/// text) as a JSON-RPC error object with the same status and headers: id
/// null (the request's is unknown or unread), code -32700 for a body that
/// is not JSON, -32603 for a server error, -32600 for any other refusal,
/// and rmcp's text as the message. Successes, SSE streams and answers that
/// are JSON already pass untouched.
pub async fn jsonrpc_refusal(response: Response, parse_error: bool) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let message = if text.is_empty() { status.canonical_reason().unwrap_or("request refused").to_string() } else { text };
    let code = if status.is_server_error() {
        -32603
    } else if parse_error && status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        -32700
    } else {
        -32600
    };
    let error = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(error.to_string()))
}
