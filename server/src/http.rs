//! HTTP routes: `GET /`, `GET /health`, `POST /kip` and `POST /mcp`.
//!
//! Every answer, including refusals (401, 403, 404, 405, 408, 413, bad
//! JSON), is JSON in the KIP envelope shape; on `/mcp`, every refusal but
//! 401/403 is a JSON-RPC error (`crate::mcp::http`). The caller is authenticated from the
//! headers before any body byte is read, and the body is read up to the
//! configured limit and within the body timeout (408 past it), so an
//! unauthenticated, oversized or trickled upload costs nothing. The paths
//! take a trailing slash too (`/kip/`, `/mcp/`): clients configured with a
//! base URL often add one, and a redirect of a POST is not followed by all.
//! `/kip` takes only JSON bodies and, on a loopback listener, only loopback
//! Host names, so a web page can neither post to it nor rebind a name to it.

use crate::auth::{Caller, Keys};
use crate::envelope::Reply;
use crate::gateway::Gateway;
use crate::mcp::http::McpService;
use crate::params::Params;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any_service, get, post};
use axum::{Json, Router};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

pub struct AppState {
    pub gateway: Gateway,
    pub keys: Keys,
    pub max_body_bytes: usize,
    /// How long reading a request body may take; `None`: no limit.
    pub body_timeout: Option<std::time::Duration>,
    /// The Host values `/kip` answers ([`allowed_hosts`]); `None`: any.
    pub allowed_hosts: Option<Vec<String>>,
}

/// The `Host` header values a listener on `listen` answers: on a loopback
/// address only the loopback names, which defends it against DNS rebinding
/// (a web page whose name resolves to 127.0.0.1 reaching the gateway with
/// the page's Host); on a public address the operator's host names are
/// unknown, and the API keys protect the endpoints (`None`: any). `/kip`
/// and `/mcp` apply the same list.
pub fn allowed_hosts(listen: std::net::SocketAddr) -> Option<Vec<String>> {
    listen.ip().is_loopback().then(|| {
        let port = listen.port();
        vec![
            "localhost".to_string(),
            "127.0.0.1".into(),
            "::1".into(),
            "[::1]".into(),
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ]
    })
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body)).into_response();
        // A 401 names the scheme it wants (RFC 9110 §15.5.2).
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        }
        response
    }
}

pub fn router(state: Arc<AppState>, mcp: McpService) -> Router {
    let mcp = any_service(mcp).layer(middleware::from_fn_with_state(state.clone(), authenticate_mcp));
    Router::new()
        .route("/", get(root))
        .route("/health", get(health))
        .route("/kip", post(kip))
        .route("/kip/", post(kip))
        .route("/mcp", mcp.clone())
        .route("/mcp/", mcp)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

async fn root() -> Json<Value> {
    Json(json!({ "name": "kip-server", "version": env!("CARGO_PKG_VERSION"), "protocol": "KIP v1.0" }))
}

async fn health(State(state): State<Arc<AppState>>) -> Reply {
    state.gateway.health().await
}

/// `POST /kip` with `{"method": ..., "params": ...}`.
async fn kip(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Reply {
    if let Err(reply) = check_host(&state, &headers) {
        return reply;
    }
    let caller = match state.keys.authenticate(&headers) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    if let Err(reply) = check_json_body(&headers) {
        return reply;
    }
    let bytes = match read_body(&headers, body, state.max_body_bytes, state.body_timeout).await {
        Ok(b) => b,
        Err(reply) => return reply,
    };
    let (method, params) = match kip_request(&bytes) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    state.gateway.call_to_completion(caller, method, params).await
}

/// The method and the params of a `/kip` body. The params stay the
/// client's text ([`Params`]); the body is only validated as JSON, which
/// reads numbers of any size and nesting of any depth (serde_json's
/// recursion limit, counted from the body's top, refused parameters kip
/// accepts).
fn kip_request(bytes: &[u8]) -> Result<(String, Params), Reply> {
    let hint = "POST a JSON object {\"method\": \"execute_kip\" | \"execute_kip_readonly\" | \"list_logs\", \"params\": {...}}.";
    // serde_json would report invalid UTF-8 as a syntax error ("expected `,` or `}`").
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Reply::bad_request(format!("the request body is not valid UTF-8 (byte {})", e.valid_up_to()), hint))?;
    let body: &RawValue =
        serde_json::from_str(text).map_err(|e| Reply::bad_request(format!("the request body is not valid JSON: {e}"), hint))?;
    if !body.get().starts_with('{') {
        return Err(Reply::bad_request("the request body must be a JSON object", hint));
    }
    // Members as raw text; a repeated name keeps its last value, as before.
    let mut members: HashMap<String, Box<RawValue>> =
        serde_json::from_str(body.get()).map_err(|e| Reply::bad_request(format!("the request body is not valid JSON: {e}"), hint))?;
    let method = members.get("method").and_then(|m| serde_json::from_str::<String>(m.get()).ok());
    let Some(method) = method else {
        return Err(Reply::bad_request("the request has no \"method\" string", hint));
    };
    let params = members.remove("params").map(Params::new).unwrap_or_else(Params::null);
    Ok((method, params))
}

/// One Host header; on a loopback listener, only the loopback Host names
/// ([`allowed_hosts`]).
fn check_host(state: &AppState, headers: &HeaderMap) -> Result<(), Reply> {
    // RFC 9112 §3.2: a request with more than one Host is refused.
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return Err(Reply::bad_request("the Host header is repeated", "Send Host once."));
    }
    let Some(hosts) = &state.allowed_hosts else { return Ok(()) };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    if hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Ok(());
    }
    Err(Reply::error(
        StatusCode::FORBIDDEN,
        "KIP_3004",
        format!("the Host header {host:?} is not allowed on a loopback listener"),
        "Address the gateway as localhost or 127.0.0.1 (a page served under another name cannot reach it).",
    ))
}

/// A JSON body only: a web page can send a cross-site POST of a form or of
/// text/plain without the browser asking the gateway first (CORS "simple
/// requests"), but not one of application/json.
fn check_json_body(headers: &HeaderMap) -> Result<(), Reply> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if json {
        return Ok(());
    }
    Err(Reply::error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "KIP_1001",
        "the request body must be sent as Content-Type: application/json",
        "Send the header Content-Type: application/json (curl: -H 'Content-Type: application/json').",
    ))
}

fn too_large(limit: usize) -> Reply {
    Reply::error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "KIP_4002",
        format!("the request body exceeds the limit of {limit} bytes"),
        "Split the work into smaller requests (fewer commands per batch).",
    )
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

fn body_too_slow(timeout: std::time::Duration) -> Reply {
    Reply::error(
        StatusCode::REQUEST_TIMEOUT,
        "KIP_4001",
        format!("the request body was not received within {} ms", timeout.as_millis()),
        "Send the whole body at once, right after the headers.",
    )
}

/// The body, refused with 413 past `limit` bytes (by its declared length
/// first, so nothing is read) and with 408 when it takes longer than
/// `timeout` to arrive: a client trickling its body would otherwise hold
/// the request's task for as long as it kept sending.
async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Option<std::time::Duration>,
) -> Result<axum::body::Bytes, Reply> {
    if declared_length(headers).is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    let read = axum::body::to_bytes(body, limit);
    let read = match timeout {
        Some(t) => tokio::time::timeout(t, read).await.map_err(|_| body_too_slow(t))?,
        None => read.await,
    };
    read.map_err(|e| {
        let is_limit = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
            .any(|e| e.is::<http_body_util::LengthLimitError>());
        if is_limit {
            too_large(limit)
        } else {
            Reply::bad_request(format!("the request body could not be read: {e}"), "Send the body again.")
        }
    })
}

/// In front of `/mcp`: the same Host check, authentication, body limit and body
/// timeout as `/kip` (the body, one JSON-RPC message, is read here and
/// handed on whole); the caller rides in the request's extensions to the
/// tool handler. Its refusals other than authentication's 401 (a Host
/// that is not a loopback name on a loopback listener, the body's 408 and
/// 413, params that do not fit their method, the MCP service's own
/// refusals) are JSON-RPC errors.
async fn authenticate_mcp(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    // The Host first, as on `/kip`, and by the same list: rmcp's own check,
    // which stays behind it, takes a loopback name with any port.
    if let Err(reply) = check_host(&state, request.headers()) {
        return crate::mcp::http::from_reply(reply);
    }
    let caller: Caller = match state.keys.authenticate(request.headers()) {
        Ok(c) => c,
        Err(reply) => return reply.into_response(),
    };
    let (mut parts, body) = request.into_parts();
    let bytes = match read_body(&parts.headers, body, state.max_body_bytes, state.body_timeout).await {
        Ok(b) => b,
        Err(reply) => return crate::mcp::http::from_reply(reply),
    };
    let kind = crate::mcp::http::body_kind(&parts.headers, &bytes);
    let mut bytes = bytes;
    if kind == crate::mcp::http::BodyKind::Json {
        // A tool call's arguments go to the tool as the client wrote them.
        if let Some((rest, arguments)) = crate::mcp::message::take_arguments(&bytes) {
            bytes = rest.into();
            parts.extensions.insert(crate::mcp::message::RawArguments(arguments));
        }
        if let Some(refusal) = crate::mcp::http::invalid_params(&bytes) {
            return refusal;
        }
    }
    parts.extensions.insert(caller);
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    crate::mcp::http::jsonrpc_refusal(response, kind).await
}

async fn not_found() -> Reply {
    Reply::error(StatusCode::NOT_FOUND, "KIP_3002", "no such endpoint", "The endpoints are POST /kip, POST /mcp, GET / and GET /health.")
}

async fn method_not_allowed() -> Reply {
    Reply::error(
        StatusCode::METHOD_NOT_ALLOWED,
        "KIP_1001",
        "method not allowed on this endpoint",
        "Use POST for /kip and /mcp, GET for / and /health.",
    )
}
