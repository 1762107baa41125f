//! The request log: one row per KIP call in `kip_gateway.request_log`, paged
//! newest first by `list_logs`, pruned after the retention period.
//!
//! The table lives in the gateway's own schema, created on first use (not by
//! the extension). Rows are written off the request path by one task that
//! batches them; if the database is down or the queue is full, entries are
//! dropped with a warning rather than slowing requests. Parameter values are
//! replaced by `"[redacted]"` unless `--log-parameters` is on.

use crate::auth::Caller;
use crate::db::{Conn, Db, DbError};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

const SCHEMA: &str = "
    CREATE SCHEMA IF NOT EXISTS kip_gateway;
    CREATE TABLE IF NOT EXISTS kip_gateway.request_log (
        id          bigserial PRIMARY KEY,
        at          timestamptz NOT NULL DEFAULT now(),
        space       text NOT NULL,
        method      text NOT NULL,
        command     text,
        status      integer NOT NULL,
        duration_us bigint NOT NULL,
        key_name    text,
        request     jsonb NOT NULL,
        error       jsonb
    );
    CREATE INDEX IF NOT EXISTS request_log_space_id ON kip_gateway.request_log (space, id DESC);
    CREATE INDEX IF NOT EXISTS request_log_at ON kip_gateway.request_log (at);
";
// Two gateways starting together must not race on CREATE ... IF NOT EXISTS.
const SCHEMA_LOCK: i64 = 0x6b69_7067_7477; // "kipgtw"

const INSERT: &str = "
    INSERT INTO kip_gateway.request_log (space, method, command, status, duration_us, key_name, request, error)
    SELECT space, method, command, status, duration_us, key_name, request, error
    FROM jsonb_to_recordset($1::jsonb) AS x(space text, method text, command text, status integer,
         duration_us bigint, key_name text, request jsonb, error jsonb)";

/// A page: the `$3` newest entries before cursor `$2`, cut in Postgres
/// where their sizes pass `$4` bytes (the first entry always stays), so the
/// gateway never holds more than about one page's budget of rows. The
/// last column counts the entries read before the cut.
const PAGE: &str = "
    WITH read AS (
        SELECT id, at, method, command, status, duration_us, request, error,
               sum(octet_length(request::text) + coalesce(octet_length(error::text), 0) + coalesce(octet_length(command), 0))
                   OVER (ORDER BY id DESC ROWS UNBOUNDED PRECEDING) AS upto
        FROM (SELECT * FROM kip_gateway.request_log
              WHERE space = $1 AND ($2::bigint IS NULL OR id < $2)
              ORDER BY id DESC
              LIMIT $3) newest
    )
    SELECT id, (extract(epoch FROM at) * 1000)::bigint, method, command, status, duration_us, request, error,
           (SELECT count(*) FROM read)
    FROM read
    WHERE id = (SELECT max(id) FROM read) OR upto <= $4
    ORDER BY id DESC";

const QUEUE: usize = 10_000;
const BATCH: usize = 500;

/// An entry as the row `INSERT` reads, with every string made storable.
fn row_of(e: &Entry) -> Value {
    storable(json!({
        "space": e.space, "method": e.method, "command": e.command, "status": e.status,
        "duration_us": e.duration.as_micros() as i64, "key_name": e.key_name,
        "request": e.request, "error": e.error,
    }))
}

/// `v` with each NUL character (JSON `\u0000`) replaced by U+FFFD: jsonb
/// and text cannot hold NUL, and an entry with one made the batched insert
/// fail (22P05), dropping every other entry of the batch.
fn storable(v: Value) -> Value {
    let clean = |s: String| if s.contains('\0') { s.replace('\0', "\u{FFFD}") } else { s };
    match v {
        Value::String(s) => Value::String(clean(s)),
        Value::Array(items) => Value::Array(items.into_iter().map(storable).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (clean(k), storable(v))).collect()),
        other => other,
    }
}

/// Command text longer than this is cut in the request log (with a note of
/// its length): the log keeps what a call was, not arbitrary payloads.
const MAX_LOGGED_COMMAND: usize = 64 * 1024;

/// A command's text as logged: at most [`MAX_LOGGED_COMMAND`] bytes.
fn capped(command: &Value) -> Value {
    capped_to(command, MAX_LOGGED_COMMAND)
}

/// A command's text as logged: at most `max` bytes. A value that is no
/// string (a request kip refuses) is kept only when its JSON fits too.
fn capped_to(command: &Value, max: usize) -> Value {
    match command {
        Value::String(s) => Value::String(cut(s, max)),
        other => {
            let json = other.to_string();
            if json.len() > max {
                Value::String(format!("[a {} of {} bytes, not kept]", kind_of(other), json.len()))
            } else {
                other.clone()
            }
        }
    }
}

/// `s` cut to at most `max` bytes, with a note of its length when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [truncated: {} bytes in all]", &s[..end], s.len())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "JSON object",
        Value::Array(_) => "JSON array",
        _ => "JSON value",
    }
}

/// How much of an error's message or hint the log keeps: kip's messages
/// may quote a command's literals (a 60 KB name).
const MAX_LOGGED_ERROR_TEXT: usize = 4096;

/// A page of `list_logs` stops adding entries past this many bytes, cut
/// by the query itself ([`PAGE`]; its `next_cursor` goes on from there):
/// entries written before the batch cap, or with their parameters kept,
/// may be large, and a page of 100 of them was read and built in memory
/// whole (100 MB, and 3.8 GB for 20 callers).
const MAX_PAGE_BYTES: usize = 1024 * 1024;

/// The message and hint of an error, withheld from the log when the
/// request's parameters are not kept: kip's messages often repeat the value
/// they refuse (an unregistered type passed as `:t`, a malformed id).
const WITHHELD: &str = "[withheld: the request had parameters, and --log-parameters is off]";

/// Whether a request passes any parameter, to the whole request or to one
/// command of a batch.
fn has_parameters(params: &Value) -> bool {
    let given = |v: Option<&Value>| match v {
        None | Some(Value::Null) => false,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    };
    given(params.get("parameters"))
        || params
            .get("commands")
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|item| given(item.get("parameters"))))
}

/// One finished call, as recorded.
pub struct Entry {
    pub space: String,
    pub method: &'static str,
    pub command: Option<String>,
    pub status: u16,
    pub duration: Duration,
    pub key_name: Option<String>,
    pub request: Value,
    pub error: Option<Value>,
}

#[derive(Clone)]
pub struct RequestLog {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    enabled: bool,
    keep_parameters: bool,
    schema_ready: AtomicBool,
    queue: mpsc::Sender<Entry>,
    dropped: AtomicU64,
}

/// The background tasks of the log; `stop` flushes what is queued.
pub struct Tasks {
    stop: watch::Sender<bool>,
    handles: Vec<JoinHandle<()>>,
}

impl Tasks {
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        for h in self.handles {
            let _ = tokio::time::timeout(grace, h).await;
        }
    }
}

impl RequestLog {
    /// A log writing to `db`; `retention_days == 0` turns it off.
    pub fn start(db: Db, retention_days: u32, keep_parameters: bool) -> (RequestLog, Tasks) {
        let (queue, rx) = mpsc::channel(QUEUE);
        let (stop, stop_rx) = watch::channel(false);
        let log = RequestLog {
            inner: Arc::new(Inner { db, enabled: retention_days > 0, keep_parameters, schema_ready: AtomicBool::new(false), queue, dropped: AtomicU64::new(0) }),
        };
        let mut handles = vec![tokio::spawn(log.clone().write_loop(rx, stop_rx.clone()))];
        if retention_days > 0 {
            handles.push(tokio::spawn(log.clone().prune_loop(retention_days, stop_rx)));
        }
        (log, Tasks { stop, handles })
    }

    pub fn enabled(&self) -> bool {
        self.inner.enabled
    }

    /// What a request looks like in the log: commands kept, parameter values
    /// redacted unless configured otherwise, unknown fields dropped.
    pub fn redact(&self, params: &Value) -> Value {
        let keep = self.inner.keep_parameters;
        let parameters = |v: &Value| -> Value {
            match v {
                Value::Object(m) if !keep => {
                    Value::Object(m.keys().map(|k| (k.clone(), json!("[redacted]"))).collect())
                }
                // Not an object (a request kip refuses): a value all the same.
                _ if !keep => json!("[redacted]"),
                other => other.clone(),
            }
        };
        let mut out = Map::new();
        let Some(obj) = params.as_object() else { return json!({}) };
        if let Some(c) = obj.get("command") {
            out.insert("command".into(), capped(c));
        }
        if let Some(Value::Array(items)) = obj.get("commands") {
            // The commands of a batch share one command's allowance: up to
            // 15 of them, each of 64 KB, made an entry of about 1 MB.
            let mut budget = MAX_LOGGED_COMMAND;
            let mut within_budget = |c: &Value| {
                let logged = capped_to(c, budget);
                budget = budget.saturating_sub(c.as_str().map_or_else(|| c.to_string().len(), str::len));
                logged
            };
            let items = items
                .iter()
                .map(|item| match item {
                    Value::Object(o) => {
                        let mut m = Map::new();
                        if let Some(c) = o.get("command") {
                            m.insert("command".into(), within_budget(c));
                        }
                        if let Some(p) = o.get("parameters") {
                            m.insert("parameters".into(), parameters(p));
                        }
                        Value::Object(m)
                    }
                    other => within_budget(other),
                })
                .collect();
            out.insert("commands".into(), Value::Array(items));
        }
        if let Some(p) = obj.get("parameters") {
            out.insert("parameters".into(), parameters(p));
        }
        if let Some(d) = obj.get("dry_run") {
            out.insert("dry_run".into(), d.clone());
        }
        Value::Object(out)
    }

    /// A reply's error as logged: whole when parameters are kept or the
    /// request passed none; otherwise its code, with message and hint
    /// withheld ([`WITHHELD`]).
    pub fn logged_error(&self, params: &Value, error: Option<&Value>) -> Option<Value> {
        let error = error?;
        if self.inner.keep_parameters || !has_parameters(params) {
            let mut kept = error.clone();
            if let Value::Object(m) = &mut kept {
                for text in m.values_mut() {
                    if let Value::String(s) = text {
                        *s = cut(s, MAX_LOGGED_ERROR_TEXT);
                    }
                }
            }
            return Some(kept);
        }
        let mut out = Map::new();
        if let Some(code) = error.get("code") {
            out.insert("code".into(), code.clone());
        }
        out.insert("message".into(), json!(WITHHELD));
        Some(Value::Object(out))
    }

    /// Queue an entry; never waits.
    pub fn record(&self, entry: Entry) {
        if !self.inner.enabled {
            return;
        }
        if self.inner.queue.try_send(entry).is_err() {
            // One warning per thousand drops, not one per request under load.
            let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            if dropped % 1000 == 0 {
                tracing::warn!(dropped = dropped + 1, "request log queue full: entries dropped");
            }
        }
    }

    /// One page of the caller's space, newest first: `{"result": [...], "next_cursor"?}`.
    pub async fn page(&self, caller: &Caller, cursor: Option<i64>, limit: i64) -> Result<Value, DbError> {
        let db = &self.inner.db;
        let conn = db.conn().await?;
        let rows = db
            .bounded(async move {
                let rows = self.query_page(&conn, caller, cursor, limit).await;
                conn.release();
                rows
            })
            .await?;
        // `read` counts the rows the query looked at (up to limit + 1):
        // more follow when it kept fewer, or found one beyond the limit.
        let read = match rows.first() {
            Some(row) => row.try_get::<_, i64>(8)?,
            None => 0,
        };
        let more = read > rows.len() as i64 || rows.len() as i64 > limit;
        let mut entries = Vec::new();
        let mut last_id = None;
        for row in rows.iter().take(limit as usize) {
            let id: i64 = row.try_get(0)?;
            let duration_us: i64 = row.try_get(5)?;
            let mut e = json!({
                "_id": id,
                "timestamp": row.try_get::<_, i64>(1)?,
                "method": row.try_get::<_, String>(2)?,
                "command": row.try_get::<_, Option<String>>(3)?,
                "space": caller.space,
                "status": row.try_get::<_, i32>(4)?,
                "duration_ms": duration_us as f64 / 1000.0,
                "request": row.try_get::<_, Value>(6)?,
            });
            if let Some(err) = row.try_get::<_, Option<Value>>(7)? {
                e["error"] = err;
            }
            entries.push(e);
            last_id = Some(id);
        }
        let mut out = json!({ "result": entries });
        if let (true, Some(id)) = (more, last_id) {
            out["next_cursor"] = json!(id.to_string());
        }
        Ok(out)
    }

    async fn query_page(&self, conn: &Conn, caller: &Caller, cursor: Option<i64>, limit: i64) -> Result<Vec<tokio_postgres::Row>, DbError> {
        self.ensure_schema(conn).await?;
        let budget = MAX_PAGE_BYTES as i64;
        Ok(conn.query(PAGE, &[&caller.space, &cursor, &(limit + 1), &budget]).await.map_err(|e| self.schema_gone(e))?)
    }

    /// `e`, after forgetting that the schema exists when `e` says it does
    /// not (the schema dropped, or the database re-created under the
    /// gateway): the next use creates it again instead of failing until a
    /// restart.
    fn schema_gone(&self, e: tokio_postgres::Error) -> tokio_postgres::Error {
        use tokio_postgres::error::SqlState;
        if matches!(e.code(), Some(c) if *c == SqlState::UNDEFINED_TABLE || *c == SqlState::INVALID_SCHEMA_NAME) {
            self.inner.schema_ready.store(false, Ordering::Release);
        }
        e
    }

    async fn ensure_schema(&self, client: &Conn) -> Result<(), DbError> {
        if self.inner.schema_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        // Without the "already exists, skipping" notices at every start.
        let sql = format!(
            "BEGIN; SET LOCAL client_min_messages = warning; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {SCHEMA} COMMIT;"
        );
        if let Err(e) = client.batch_execute(&sql).await {
            // A failed script leaves the connection inside an aborted transaction.
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(e.into());
        }
        self.inner.schema_ready.store(true, Ordering::Release);
        Ok(())
    }

    async fn write_loop(self, mut rx: mpsc::Receiver<Entry>, mut stop: watch::Receiver<bool>) {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let stopping = tokio::select! {
                n = rx.recv_many(&mut batch, BATCH) => n == 0,
                _ = stop.changed() => true,
            };
            if stopping {
                while let Ok(e) = rx.try_recv() {
                    batch.push(e);
                }
            }
            if !batch.is_empty() {
                if let Err(e) = self.write(&batch).await {
                    tracing::warn!(entries = batch.len(), error = e.message(), "request log entries dropped");
                }
                batch.clear();
            }
            if stopping {
                return;
            }
        }
    }

    /// Write a batch in one statement. If Postgres refuses it for its
    /// data (not for being down), the rows are written one by one, so one
    /// bad entry costs only itself, not up to [`BATCH`] others.
    async fn write(&self, batch: &[Entry]) -> Result<(), DbError> {
        let rows: Vec<Value> = batch.iter().map(row_of).collect();
        match self.insert(&rows).await {
            Err(DbError::Failed(_) | DbError::BadInput(_)) if rows.len() > 1 => {
                for row in &rows {
                    if let Err(e) = self.insert(std::slice::from_ref(row)).await {
                        tracing::warn!(entries = 1, error = e.message(), "request log entries dropped");
                    }
                }
                Ok(())
            }
            other => other,
        }
    }

    async fn insert(&self, rows: &[Value]) -> Result<(), DbError> {
        let db = &self.inner.db;
        let conn = db.conn().await?;
        db.bounded(async move {
            let result = async {
                self.ensure_schema(&conn).await?;
                conn.execute(INSERT, &[&tokio_postgres::types::Json(rows)]).await.map_err(|e| self.schema_gone(e))?;
                Ok(())
            }
            .await;
            conn.release();
            result
        })
        .await
    }

    async fn prune_loop(self, retention_days: u32, mut stop: watch::Receiver<bool>) {
        let days = retention_days as i32;
        loop {
            match self.prune(days).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "request log pruned"),
                Err(e) => tracing::debug!(error = e.message(), "request log prune skipped"),
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(600)) => {}
                _ = stop.changed() => return,
            }
        }
    }

    async fn prune(&self, days: i32) -> Result<u64, DbError> {
        let db = &self.inner.db;
        let conn = db.conn().await?;
        db.bounded(async move {
            let result = async {
                self.ensure_schema(&conn).await?;
                Ok(conn
                    .execute("DELETE FROM kip_gateway.request_log WHERE at < now() - make_interval(days => $1)", &[&days])
                    .await
                    .map_err(|e| self.schema_gone(e))?)
            }
            .await;
            conn.release();
            result
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_characters_are_made_storable() {
        let v = storable(json!({"a\0": ["x\0y", 1, {"k": "\0"}], "n": null}));
        assert_eq!(v, json!({"a\u{FFFD}": ["x\u{FFFD}y", 1, {"k": "\u{FFFD}"}], "n": null}));
        assert!(!v.to_string().contains("\\u0000"), "{v}");
    }

    #[test]
    fn parameters_are_seen_in_a_request_and_in_its_batch() {
        assert!(has_parameters(&json!({"command": "FIND", "parameters": {"a": 1}})));
        assert!(has_parameters(&json!({"command": "FIND", "parameters": "odd"})));
        assert!(has_parameters(&json!({"commands": ["FIND", {"command": "FIND", "parameters": {"b": 2}}]})));
        assert!(!has_parameters(&json!({"command": "FIND", "parameters": {}})));
        assert!(!has_parameters(&json!({"command": "FIND", "parameters": null})));
        assert!(!has_parameters(&json!({"commands": ["FIND", {"command": "FIND"}]})));
    }

    #[test]
    fn long_commands_are_capped() {
        let long = "é".repeat(MAX_LOGGED_COMMAND);
        let Value::String(c) = capped(&json!(long)) else { panic!() };
        assert!(c.len() < MAX_LOGGED_COMMAND + 100, "{}", c.len());
        assert!(c.ends_with(&format!("[truncated: {} bytes in all]", long.len())));
        assert_eq!(capped(&json!("FIND(?x)")), json!("FIND(?x)"));
        // A value that is no string is kept whole or not at all.
        assert_eq!(capped(&json!({"a": 1})), json!({"a": 1}));
        let big = json!({"a": "x".repeat(MAX_LOGGED_COMMAND)});
        assert_eq!(capped(&big), json!(format!("[a JSON object of {} bytes, not kept]", big.to_string().len())));
    }
}
