//! MCP front end: the KIP tools over stdio (`kip-server mcp`) and over
//! streamable HTTP (`POST /mcp`).
//!
//! Tools `execute_kip` and `execute_kip_readonly` take the input schemas of
//! the KIP function definitions (`execute_kip*.json`, copied from the KIP
//! specification's FunctionDefinition files); `list_logs` pages the request
//! log. A call goes through the same `Gateway` as `POST /kip`, and its result
//! is the envelope as JSON text (plus structured content). A failed call is
//! a tool error (`isError`) carrying the envelope, as `kip-mcp-server` does
//! for non-2xx answers, so the agent reads the KIP error and its hint.

use crate::auth::{Access, Caller};
use crate::envelope::Reply;
use crate::gateway::Gateway;
use crate::params::Params;
use message::{PendingArguments, RawArguments};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::{Arc, OnceLock};

pub mod http;
pub mod message;
pub mod stdio;

const INSTRUCTIONS: &str = include_str!("instructions.md");
const EXECUTE_KIP: &str = include_str!("execute_kip.json");
const EXECUTE_KIP_READONLY: &str = include_str!("execute_kip_readonly.json");

/// The MCP server. Over stdio the caller is fixed at startup; over HTTP it
/// comes from the request, authenticated by the HTTP layer.
#[derive(Clone)]
pub struct KipMcp {
    gateway: Gateway,
    caller: Option<Caller>,
    /// Over stdio, the tool arguments the line filter took out of the messages.
    pending: Option<PendingArguments>,
}

impl KipMcp {
    pub fn stdio(gateway: Gateway, space: String, access: Access, pending: PendingArguments) -> KipMcp {
        let caller = Caller { space, access, key_name: Some("stdio".into()), stdio: true };
        KipMcp { gateway, caller: Some(caller), pending: Some(pending) }
    }

    pub fn http(gateway: Gateway) -> KipMcp {
        KipMcp { gateway, caller: None, pending: None }
    }

    /// The tool call's arguments as the client wrote them, when the front
    /// end took them out of the message (`message::take_arguments`).
    fn raw_arguments(&self, context: &RequestContext<RoleServer>) -> Option<Box<serde_json::value::RawValue>> {
        if let Some(pending) = &self.pending {
            return pending.take(&context.id.clone().into_json_value());
        }
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        parts.extensions.get::<RawArguments>().map(|a| a.0.clone())
    }

    fn caller(&self, context: &RequestContext<RoleServer>) -> Option<Caller> {
        if let Some(c) = &self.caller {
            return Some(c.clone());
        }
        context.extensions.get::<axum::http::request::Parts>()?.extensions.get::<Caller>().cloned()
    }
}

/// Whether `name` is one of this server's tools.
pub(crate) fn serves_tool(name: &str) -> bool {
    tools().iter().any(|t| t.name == name)
}

/// The tools, built once from the definition files.
fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut execute = from_definition(EXECUTE_KIP);
        execute.title = Some("Execute KIP commands".into());
        execute.annotations = Some(ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(false));
        let mut readonly = from_definition(EXECUTE_KIP_READONLY);
        readonly.title = Some("Execute read-only KIP commands".into());
        readonly.annotations = Some(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false));
        let schema: JsonObject = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {
                "cursor": {"type": "string", "description": "The next_cursor of the previous page."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10,
                          "description": "Entries per page (1 to 100, default 10)."}
            },
            "additionalProperties": false
        }))
        .expect("static schema");
        let mut logs = Tool::new(
            "list_logs",
            "Lists this memory space's recent KIP calls, newest first (method, command kind, status, duration, error). Use it to debug failed executions.",
            Arc::new(schema),
        );
        logs.title = Some("List KIP request logs".into());
        logs.annotations = Some(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false));
        vec![execute, readonly, logs]
    })
}

/// A tool from a KIP function definition `{name, description, parameters}`.
fn from_definition(text: &str) -> Tool {
    let def: Value = serde_json::from_str(text).expect("bundled function definition is JSON");
    let name = def["name"].as_str().expect("definition name").to_string();
    let description = def["description"].as_str().unwrap_or_default().to_string();
    let schema: JsonObject = serde_json::from_value(def["parameters"].clone()).expect("definition parameters object");
    Tool::new(name, description, Arc::new(schema))
}

fn tool_result(reply: Reply) -> CallToolResult {
    let text = serde_json::to_string_pretty(&reply.body).unwrap_or_else(|_| reply.body.to_string());
    let mut result = if reply.status.is_success() {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(format!("KIP request failed (HTTP {}): {text}", reply.status.as_u16()))])
    };
    result.structured_content = Some(reply.body);
    result
}

impl ServerHandler for KipMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("kip-server", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !tools().iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
        }
        // Unreachable over HTTP without the auth layer; refuse rather than default.
        let caller = self.caller(&context).ok_or_else(|| ErrorData::internal_error("request not authenticated", None))?;
        let params = match self.raw_arguments(&context) {
            Some(raw) => Params::new(raw),
            None => Params::from_value(request.arguments.map(Value::Object).unwrap_or(Value::Null)),
        };
        let reply = self.gateway.call_to_completion(caller, request.name.to_string(), params).await;
        Ok(tool_result(reply).into())
    }
}
