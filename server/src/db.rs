//! The Postgres connection pool and the two statements the gateway runs for
//! KIP: `kip_execute` and `kip_execute_readonly`, with bind parameters only.
//!
//! The memory space is applied per request with a transaction-local
//! `set_config('kip.space', $1, true)` in the same statement as the call:
//! the setting ends with the statement's implicit transaction, so a pooled
//! connection never carries one caller's space into the next request.
//!
//! Connections are opened lazily and checked on the way out of the pool, so
//! a restarted or unreachable Postgres costs the requests in flight (503) and
//! nothing after it is back. Each call on a connection is also bounded on
//! the client side ([`Db::bounded`]), and a connection whose call did not
//! end is discarded, never pooled again ([`Conn`]).

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use serde_json::Value;
use std::future::Future;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

// The CTE is materialized, so set_config runs before the call reads the setting.
// The request travels as the client's JSON text (`$2::text`), cast to jsonb by
// Postgres: jsonb's parser keeps every number as written (numeric), where a
// serde_json value would have rounded it to a double (1e-400 became 0).
const EXECUTE: &str = "WITH s AS MATERIALIZED (SELECT set_config('kip.space', $1, true)) \
                       SELECT kip_execute($2::text::jsonb) FROM s";
const EXECUTE_READONLY: &str = "WITH s AS MATERIALIZED (SELECT set_config('kip.space', $1, true)) \
                                SELECT kip_execute_readonly($2::text::jsonb) FROM s";

/// Why a database call failed, by what the client should do about it.
#[derive(Debug)]
pub enum DbError {
    /// Postgres cannot be reached, or did not answer in time: retry later (503).
    Unavailable(String),
    /// Every pooled connection stayed in use past the pool timeout: retry soon (503, Retry-After).
    Busy(String),
    /// The request's own values cannot be stored as Postgres text (a NUL
    /// character, a code point the database encoding lacks): the caller's fault (400).
    BadInput(String),
    /// The statement ran past `statement_timeout` outside the command's own error handling (408).
    Timeout(String),
    /// An administrator cancelled the statement (`pg_cancel_backend`): not
    /// a timeout, and not to be retried blindly (500).
    Cancelled(String),
    /// Postgres refused the gateway's connection for its settings: the
    /// database or role named in the database URL does not exist, or the
    /// password is wrong (503, as `/health` says, with a hint naming the cause).
    Refused(String, &'static str),
    /// Anything else Postgres reported (500).
    Failed(String),
}

impl DbError {
    pub fn message(&self) -> &str {
        match self {
            DbError::Unavailable(m)
            | DbError::Busy(m)
            | DbError::BadInput(m)
            | DbError::Timeout(m)
            | DbError::Cancelled(m)
            | DbError::Refused(m, _)
            | DbError::Failed(m) => m,
        }
    }
}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> DbError {
        let Some(db) = e.as_db_error() else {
            // No server error: either the connection broke or could not be
            // opened (an I/O error underneath), or the client itself failed,
            // e.g. decoding a value.
            let io = std::iter::successors(std::error::Error::source(&e), |s| s.source()).any(|s| s.is::<std::io::Error>());
            return if e.is_closed() || io {
                DbError::Unavailable(format!("database connection failed: {e}"))
            } else {
                DbError::Failed(e.to_string())
            };
        };
        let code = db.code();
        let message = format!("{}: {}", code.code(), db.message());
        if *code == SqlState::QUERY_CANCELED {
            // 57014 is both a statement timeout ("canceling statement due to
            // statement timeout") and pg_cancel_backend ("... due to user
            // request"); only the message tells them apart.
            if db.message().contains("user request") {
                DbError::Cancelled(message)
            } else {
                DbError::Timeout(message)
            }
        } else if let Some(hint) = connection_refusal_hint(code) {
            DbError::Refused(message, hint)
        } else if [
            SqlState::UNTRANSLATABLE_CHARACTER,
            SqlState::CHARACTER_NOT_IN_REPERTOIRE,
            SqlState::INVALID_TEXT_REPRESENTATION,
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        ]
        .contains(code)
        {
            // 22P05 "unsupported Unicode escape sequence" (`\u0000` in a
            // jsonb value), 22021, 22P02 (a lone surrogate `\ud800`, which
            // jsonb's parser refuses) and 22003 (a number past numeric's
            // range, `1e999999999`): the request's text as Postgres reads
            // it, cast to jsonb before kip sees it, so the client's to mend,
            // not a fault of the database, and no "retry later".
            DbError::BadInput(message)
        } else if code.code().starts_with("08")
            || [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW, SqlState::TOO_MANY_CONNECTIONS]
                .contains(code)
        {
            DbError::Unavailable(message)
        } else {
            DbError::Failed(message)
        }
    }
}

/// The hint for an error Postgres raises while it opens a connection
/// because of the gateway's own settings (not an outage): retrying cannot
/// help until the database URL or the database is fixed.
fn connection_refusal_hint(code: &SqlState) -> Option<&'static str> {
    if *code == SqlState::INVALID_CATALOG_NAME {
        Some("The database named in --database-url (DATABASE_URL) does not exist: create it (with CREATE EXTENSION kip) or fix the URL.")
    } else if *code == SqlState::INVALID_PASSWORD {
        Some("The password for the role named in --database-url (DATABASE_URL) was refused: fix the URL's password or the role's.")
    } else if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
        Some("The role named in --database-url (DATABASE_URL) may not connect (it does not exist, or pg_hba.conf refuses it): fix the URL or the role.")
    } else {
        None
    }
}

impl From<PoolError> for DbError {
    fn from(e: PoolError) -> DbError {
        match e {
            PoolError::Backend(e) => e.into(),
            // Waiting for a free slot: every connection is busy, Postgres may be fine.
            PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                DbError::Busy("every database connection of the gateway stayed busy past the pool timeout".into())
            }
            PoolError::Timeout(_) => DbError::Unavailable("no database connection could be opened in time".into()),
            other => DbError::Unavailable(format!("database pool: {other}")),
        }
    }
}

#[derive(Clone)]
pub struct Db {
    pool: Pool,
    /// Client-side bound on one database call once it has a connection
    /// (`None`: the statement timeout is off). See [`Db::bounded`].
    call_timeout: Option<Duration>,
}

/// Time a call may take beyond `statement_timeout` before the gateway gives
/// up on the connection: Postgres's own timeout, its error's round trip and
/// a large answer's transfer all fit in it.
const CALL_MARGIN: Duration = Duration::from_secs(5);

/// A pooled connection that goes back to the pool only through
/// [`Conn::release`], i.e. when the work on it ended. Dropped before that
/// (the call's time bound ran out, or its future was dropped), the
/// connection may be stalled or mid-statement: it is detached from the pool
/// and closed, and the statement is cancelled on a best-effort basis, so the
/// next request never waits behind it.
pub struct Conn {
    object: Option<Object>,
}

impl Conn {
    pub fn release(mut self) {
        drop(self.object.take());
    }
}

impl std::ops::Deref for Conn {
    type Target = Object;
    fn deref(&self) -> &Object {
        self.object.as_ref().expect("a connection until released")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(object) = self.object.take() else { return };
        let cancel = object.cancel_token();
        drop(Object::take(object));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(5), cancel.cancel_query(NoTls)).await;
            });
        }
    }
}

pub struct PoolSettings {
    pub size: usize,
    pub timeout: Duration,
    pub statement_timeout_ms: u64,
}

impl Db {
    /// A pool for `url`; no connection is opened until the first request.
    pub fn new(url: &str, settings: &PoolSettings) -> Result<Db, String> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("invalid database URL: {e}"))?;
        // The URL's own application_name and options (e.g. `-c role=…`,
        // `-c search_path=…`) are kept: the statement timeout goes before
        // them, so an operator's own `-c statement_timeout` wins.
        if config.get_application_name().is_none() {
            config.application_name("kip-server");
        }
        let timeout = format!("-c statement_timeout={}", settings.statement_timeout_ms);
        let options = match config.get_options() {
            Some(own) if !own.trim().is_empty() => format!("{timeout} {own}"),
            _ => timeout,
        };
        config.options(options);
        config.connect_timeout(settings.timeout);
        // TCP keepalives notice a vanished server on idle pooled connections.
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(30));
        let call_timeout =
            (settings.statement_timeout_ms > 0).then(|| Duration::from_millis(settings.statement_timeout_ms) + CALL_MARGIN);
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(settings.size)
            .wait_timeout(Some(settings.timeout))
            .create_timeout(Some(settings.timeout))
            .recycle_timeout(Some(settings.timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| format!("cannot build the connection pool: {e}"))?;
        Ok(Db { pool, call_timeout })
    }

    /// The longest a call takes: the wait for a connection (opening one
    /// included) and [`Db::bounded`]'s limit; `None` when unbounded.
    pub fn call_limit(&self) -> Option<Duration> {
        let pool = self.pool.timeouts();
        let wait = pool.wait.unwrap_or_default() + pool.create.unwrap_or_default() + pool.recycle.unwrap_or_default();
        self.call_timeout.map(|t| t + wait)
    }

    /// A connection from the pool (waits at most the pool timeout; not
    /// part of [`Db::bounded`], so a busy pool is told from a stalled
    /// link); give it back with [`Conn::release`] once its work is done.
    pub async fn conn(&self) -> Result<Conn, DbError> {
        Ok(Conn { object: Some(self.pool.get().await?) })
    }

    /// `work` (which owns a [`Conn`] and releases it at its end), bounded
    /// on the client side by the statement timeout plus [`CALL_MARGIN`]:
    /// Postgres's `statement_timeout` does not help when the link to it
    /// stalls (a proxy or network that stops forwarding), and the call then
    /// waited for TCP to give up, minutes later. Past the bound the call is
    /// answered 503 and its connection, dropped unreleased, is discarded.
    pub async fn bounded<T>(&self, work: impl Future<Output = Result<T, DbError>>) -> Result<T, DbError> {
        let Some(limit) = self.call_timeout else { return work.await };
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(DbError::Unavailable(format!("the database did not answer within {} ms", limit.as_millis())))
        })
    }

    /// Run an `execute_kip` request object, the JSON text the client sent,
    /// in `space`; returns the KIP envelope.
    pub async fn execute(&self, space: &str, request: &str, read_only: bool) -> Result<Value, DbError> {
        let conn = self.conn().await?;
        let sql = if read_only { EXECUTE_READONLY } else { EXECUTE };
        self.bounded(async move {
            let result = async {
                let statement = conn.prepare_cached(sql).await?;
                let row = conn.query_one(&statement, &[&space, &request]).await?;
                Ok(row.try_get::<_, Value>(0)?)
            }
            .await;
            conn.release();
            result
        })
        .await
    }

    /// The installed kip version; proves the database is reachable and usable.
    pub async fn health(&self) -> Result<String, DbError> {
        let conn = self.conn().await?;
        self.bounded(async move {
            let row = conn.query_opt("SELECT extversion FROM pg_extension WHERE extname = 'kip'", &[]).await;
            conn.release();
            let row = row?.ok_or_else(|| DbError::Failed("the kip extension is not installed in this database".into()))?;
            Ok(row.try_get(0)?)
        })
        .await
    }

    pub fn close(&self) {
        self.pool.close();
    }
}
