//! The three methods of the KIP backend protocol, shared by the HTTP and MCP
//! front ends: `execute_kip`, `execute_kip_readonly` and `list_logs`.
//!
//! The gateway holds no KIP logic: a request object goes to the extension as
//! it came, its JSON text unchanged ([`Params`]), and the envelope comes back
//! as the extension made it. What is
//! decided here is only who may call what (read-only keys), the HTTP status
//! of failures outside the extension, and what is logged.

use crate::auth::{Access, Caller};
use crate::db::{Db, DbError};
use crate::envelope::Reply;
use crate::params::{Params, MAX_DEPTH};
use crate::request_log::{Entry, RequestLog};
use axum::http::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    ExecuteKip,
    ExecuteKipReadonly,
    ListLogs,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::ExecuteKip, Method::ExecuteKipReadonly, Method::ListLogs];

    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::ExecuteKip => "execute_kip",
            Method::ExecuteKipReadonly => "execute_kip_readonly",
            Method::ListLogs => "list_logs",
        }
    }
}

#[derive(Clone)]
pub struct Gateway {
    db: Db,
    log: RequestLog,
    /// How many calls run on their own tasks; see [`Gateway::drain`].
    in_flight: Arc<watch::Sender<usize>>,
}

/// Counts a call in flight until dropped.
struct InFlight(Arc<watch::Sender<usize>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl Gateway {
    pub fn new(db: Db, log: RequestLog) -> Gateway {
        Gateway { db, log, in_flight: Arc::new(watch::channel(0).0) }
    }

    fn enter(&self) -> InFlight {
        self.in_flight.send_modify(|n| *n += 1);
        InFlight(self.in_flight.clone())
    }

    /// On shutdown: wait, at most `limit`, for the calls still running,
    /// those whose client left included (their tasks are detached from any
    /// connection, so draining connections does not wait for them). Ending
    /// the process under them would leave the statement running in
    /// Postgres, a write committing unseen, and the call unlogged.
    /// Returns how many were still running at the end.
    pub async fn drain(&self, limit: Duration) -> usize {
        let mut count = self.in_flight.subscribe();
        let running = *count.borrow();
        if running > 0 {
            tracing::info!(calls = running, "waiting for calls in flight");
        }
        let _ = tokio::time::timeout(limit, count.wait_for(|n| *n == 0)).await;
        let left = *count.borrow();
        if left > 0 {
            tracing::warn!(calls = left, "stopping with calls still running in the database");
        }
        left
    }

    /// The longest a call can run once started: its wait for a connection
    /// and its client-side bound (`None`: statement timeout off, no bound).
    pub fn call_limit(&self) -> Option<Duration> {
        self.db.call_limit()
    }

    /// [`Gateway::call`] on a task of its own, which a client that goes
    /// away does not cancel. Dropping the call mid-statement (hyper drops
    /// a handler whose client disconnected) would hand its connection back
    /// to the pool while the statement still ran, so the next request
    /// waited behind it past the pool's timeout, and would skip the call's
    /// log line and request-log row although a write may have committed.
    pub async fn call_to_completion(&self, caller: Caller, method: String, params: Params) -> Reply {
        let gateway = self.clone();
        let in_flight = self.enter();
        let task = tokio::spawn(async move {
            let _in_flight = in_flight;
            gateway.call(&caller, &method, params).await
        });
        match task.await {
            Ok(reply) => reply,
            Err(e) => Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "KIP_4003",
                format!("the call failed: {e}"),
                "Retry; if it persists, report it with the gateway's log.",
            ),
        }
    }

    /// Run one call of `method` (by name) for `caller`.
    pub async fn call(&self, caller: &Caller, method: &str, params: Params) -> Reply {
        let started = Instant::now();
        let Some(method) = Method::parse(method) else {
            // Echoed cut short: the name is the caller's, of any size.
            let method = shortened(method, 64);
            let reply = Reply::bad_request(
                format!("unknown method {method:?}"),
                "The method is one of \"execute_kip\", \"execute_kip_readonly\" or \"list_logs\".",
            );
            log_call(caller, &method, None, &reply, started);
            return reply;
        };
        let reply = match method {
            Method::ExecuteKip | Method::ExecuteKipReadonly => self.execute(caller, method, &params).await,
            Method::ListLogs => self.list_logs(caller, params.view()).await,
        };
        let command = (method != Method::ListLogs).then(|| command_kind(params.view()));
        log_call(caller, method.as_str(), command.as_deref(), &reply, started);
        if method != Method::ListLogs {
            self.log.record(Entry {
                space: caller.space.clone(),
                method: method.as_str(),
                command,
                status: reply.status.as_u16(),
                duration: started.elapsed(),
                key_name: caller.key_name.clone(),
                request: self.log.redact(params.view()),
                error: self.log.logged_error(params.view(), reply.body.get("error")),
            });
        }
        reply
    }

    async fn execute(&self, caller: &Caller, method: Method, params: &Params) -> Reply {
        let read_only = method == Method::ExecuteKipReadonly;
        if !read_only && caller.access == Access::ReadOnly {
            return read_only_refusal(caller);
        }
        if params.depth() > MAX_DEPTH {
            return Reply::bad_request(
                format!("the request nests {} levels deep; the gateway passes at most {MAX_DEPTH}", params.depth()),
                "Flatten the parameters: KIP parameters may nest at most 128 levels deep.",
            );
        }
        match self.db.execute(&caller.space, params.text(), read_only).await {
            Ok(envelope) => Reply::from_envelope(with_gateway_names(envelope)),
            Err(e) => db_failure(e),
        }
    }

    async fn list_logs(&self, caller: &Caller, params: &Value) -> Reply {
        let (cursor, limit) = match list_logs_params(params) {
            Ok(p) => p,
            Err(reply) => return reply,
        };
        if !self.log.enabled() {
            return Reply::ok(serde_json::json!({ "result": [] }));
        }
        match self.log.page(caller, cursor, limit).await {
            Ok(page) => Reply::ok(page),
            Err(e) => db_failure(e),
        }
    }

    /// `GET /health`: 200 with the kip version, or 503.
    pub async fn health(&self) -> Reply {
        match self.db.health().await {
            Ok(version) => Reply::ok(serde_json::json!({ "status": "ok", "database": "ok", "kip_version": version })),
            Err(e) => {
                let busy = matches!(e, DbError::Busy(_));
                let mut reply = db_failure(e);
                reply.status = StatusCode::SERVICE_UNAVAILABLE;
                // A full pool is load, not an outage: monitors should not restart anything.
                reply.body["status"] = if busy { "busy" } else { "unavailable" }.into();
                reply
            }
        }
    }
}

/// `execute_kip` for a read-only caller: told in the words of its front end
/// (an API key over HTTP, `--read-only` over stdio, where there is no key).
fn read_only_refusal(caller: &Caller) -> Reply {
    let (message, hint) = if caller.stdio {
        (
            "this session is read-only (kip-server mcp --read-only): execute_kip is not allowed",
            "Use execute_kip_readonly (FIND, DESCRIBE, SEARCH, EXPORT), or start kip-server mcp without --read-only.",
        )
    } else {
        (
            "this API key is read-only: execute_kip is not allowed",
            "Use execute_kip_readonly (FIND, DESCRIBE, SEARCH, EXPORT), or a read-write key.",
        )
    };
    Reply::error(StatusCode::FORBIDDEN, "KIP_3004", message, hint)
}

/// `list_logs` params: `{"cursor"?: string, "limit"?: 1..=100}` (default 10).
fn list_logs_params(params: &Value) -> Result<(Option<i64>, i64), Reply> {
    let invalid = |message: String| {
        Reply::bad_request(message, "list_logs takes {\"cursor\"?: <next_cursor of the previous page>, \"limit\"?: 1 to 100}.")
    };
    let empty = serde_json::Map::new();
    let obj = match params {
        Value::Null => &empty,
        Value::Object(o) => o,
        _ => return Err(invalid("list_logs params must be an object".into())),
    };
    // What the caller sent is echoed shortened: a reply must not grow
    // with a hostile request.
    if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "cursor" | "limit")) {
        return Err(invalid(format!("unknown list_logs field {}", shortened(&format!("{k:?}"), 64))));
    }
    let cursor = match obj.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.parse::<i64>().map_err(|_| invalid(format!("invalid cursor {}", shortened(&format!("{s:?}"), 64))))?),
        Some(_) => return Err(invalid("cursor must be a string".into())),
    };
    let limit = match obj.get("limit") {
        None | Some(Value::Null) => 10,
        Some(v) => match v.as_i64() {
            Some(n @ 1..=100) => n,
            _ => return Err(invalid(format!("limit must be an integer from 1 to 100, got {}", shortened(&v.to_string(), 64)))),
        },
    };
    Ok((cursor, limit))
}

/// A database failure outside the extension's envelope, as a reply.
fn db_failure(e: DbError) -> Reply {
    match e {
        DbError::Unavailable(m) => Reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "KIP_4003",
            format!("the database is unavailable: {m}"),
            "Retry later; the gateway reconnects by itself.",
        ),
        DbError::Busy(m) => {
            let mut reply = Reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                "KIP_4003",
                format!("the gateway is busy: {m}"),
                "Retry after a second; the database is reachable, but every pooled connection is in use.",
            );
            reply.retry_after = Some(1);
            reply
        }
        DbError::BadInput(m) => Reply::bad_request(
            format!("the request holds a value Postgres cannot store: {m}"),
            "Remove NUL characters (\\u0000), unpaired surrogates (\\ud800) and characters the database encoding lacks, and keep numbers within Postgres's numeric range, in the command and its parameters.",
        ),
        DbError::Timeout(m) => Reply::error(
            StatusCode::REQUEST_TIMEOUT,
            "KIP_4001",
            format!("execution time exceeded the limit: {m}"),
            "Narrow the pattern, lower LIMIT, or reduce hops; or retry if another writer held a lock.",
        ),
        DbError::Cancelled(m) => Reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "KIP_4003",
            format!("the statement was cancelled by an administrator: {m}"),
            "The command did not complete and its writes were rolled back; retry it only if it should still run (someone stopped it on purpose, e.g. with pg_cancel_backend).",
        ),
        DbError::Refused(m, hint) => Reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "KIP_4003",
            format!("the database refused the gateway's connection: {m}"),
            hint,
        ),
        DbError::Failed(m) => Reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "KIP_4003",
            format!("database error: {m}"),
            "Retry later; if it persists, report it with the command that caused it.",
        ),
    }
}

/// At most `max` characters of `text`, marked when cut.
fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
    }
}

/// The extension's hints name its SQL functions (`kip_execute`,
/// `kip_execute_readonly`); a gateway caller reaches them as the methods
/// `execute_kip` and `execute_kip_readonly`, so the errors of the
/// envelope (top level and batch items) are told in those names.
fn with_gateway_names(mut envelope: Value) -> Value {
    fn rename(error: Option<&mut Value>) {
        let Some(error) = error else { return };
        for field in ["message", "hint"] {
            if let Some(Value::String(text)) = error.get_mut(field) {
                if text.contains("kip_execute") {
                    *text = text.replace("kip_execute_readonly", "execute_kip_readonly").replace("kip_execute", "execute_kip");
                }
            }
        }
    }
    rename(envelope.get_mut("error"));
    if let Some(Value::Array(items)) = envelope.get_mut("result") {
        for item in items {
            rename(item.get_mut("error"));
        }
    }
    envelope
}

/// The kind of command, for logs: the first keyword of the command text
/// (`FIND`, `UPSERT`, `DESCRIBE`, ...), or `BATCH`.
fn command_kind(params: &Value) -> String {
    if params.get("commands").is_some() {
        return "BATCH".into();
    }
    let text = params.get("command").and_then(Value::as_str).unwrap_or("");
    let word: String = text.trim_start().chars().take_while(|c| c.is_ascii_alphabetic()).take(16).collect();
    if word.is_empty() {
        "-".into()
    } else {
        word.to_ascii_uppercase()
    }
}

/// One structured log line per call; never parameter values or keys.
fn log_call(caller: &Caller, method: &str, command: Option<&str>, reply: &Reply, started: Instant) {
    tracing::info!(
        target: "kip_server::request",
        method,
        space = caller.space.as_str(),
        command = command.unwrap_or("-"),
        status = reply.status.as_u16(),
        error = reply.error_code().unwrap_or("-"),
        key = caller.key_name.as_deref().unwrap_or("-"),
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        "kip call"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_logs_params_are_checked() {
        assert_eq!(list_logs_params(&json!({})).unwrap(), (None, 10));
        assert_eq!(list_logs_params(&Value::Null).unwrap(), (None, 10));
        assert_eq!(list_logs_params(&json!({"cursor": "42", "limit": 100})).unwrap(), (Some(42), 100));
        for bad in [json!({"limit": 0}), json!({"limit": 101}), json!({"limit": 1.5}), json!({"cursor": 3}), json!({"x": 1}), json!([])] {
            assert_eq!(list_logs_params(&bad).unwrap_err().status, StatusCode::BAD_REQUEST, "{bad}");
        }
        // A huge bad value is not echoed in full.
        let huge = "9".repeat(100_000);
        for bad in [json!({"limit": huge.clone()}), json!({"cursor": huge.clone()}), json!({huge.clone(): 1})] {
            let reply = list_logs_params(&bad).unwrap_err();
            assert!(reply.body.to_string().len() < 1_000, "{}", &reply.body.to_string()[..200]);
        }
    }

    #[test]
    fn long_names_are_shortened() {
        assert_eq!(shortened("abc", 64), "abc");
        let long = "x".repeat(900_000);
        let short = shortened(&long, 64);
        assert!(short.len() < 100 && short.ends_with("(900000 bytes)"), "{short}");
    }

    #[test]
    fn hints_name_the_gateway_methods() {
        let e = with_gateway_names(json!({"error": {"code": "KIP_3004", "hint": "Use kip_execute (not kip_execute_readonly) for KML."}}));
        assert_eq!(e["error"]["hint"], "Use execute_kip (not execute_kip_readonly) for KML.");
        let b = with_gateway_names(json!({"result": [{"result": 1}, {"error": {"hint": "Use kip_execute for KML."}}]}));
        assert_eq!(b["result"][1]["error"]["hint"], "Use execute_kip for KML.");
    }

    #[test]
    fn command_kinds() {
        assert_eq!(command_kind(&json!({"command": "  find(?x) WHERE {}"})), "FIND");
        assert_eq!(command_kind(&json!({"commands": ["DESCRIBE PRIMER"]})), "BATCH");
        assert_eq!(command_kind(&json!({"command": "{"})), "-");
    }
}
