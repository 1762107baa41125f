//! `POST /mcp`: MCP over streamable HTTP.
//!
//! Stateless mode with plain JSON responses: every POST is a complete
//! exchange, so any gateway instance can answer any request and a graceful
//! shutdown has no long-lived streams to wait for. The HTTP layer in front
//! (`crate::http`) authenticates the request and puts the `Caller` in its
//! extensions, where the tool handler finds it.

use super::KipMcp;
use crate::gateway::Gateway;
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
