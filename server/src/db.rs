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
//! nothing after it is back.

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use serde_json::Value;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

// The CTE is materialized, so set_config runs before the call reads the setting.
const EXECUTE: &str = "WITH s AS MATERIALIZED (SELECT set_config('kip.space', $1, true)) \
                       SELECT kip_execute($2::jsonb) FROM s";
const EXECUTE_READONLY: &str = "WITH s AS MATERIALIZED (SELECT set_config('kip.space', $1, true)) \
                                SELECT kip_execute_readonly($2::jsonb) FROM s";

/// Why a database call failed, by what the client should do about it.
#[derive(Debug)]
pub enum DbError {
    /// Postgres cannot be reached, or no connection was free in time: retry later (503).
    Unavailable(String),
    /// The statement ran past `statement_timeout` outside the command's own error handling (408).
    Timeout(String),
    /// Anything else Postgres reported (500).
    Failed(String),
}

impl DbError {
    pub fn message(&self) -> &str {
        match self {
            DbError::Unavailable(m) | DbError::Timeout(m) | DbError::Failed(m) => m,
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
            DbError::Timeout(message)
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

impl From<PoolError> for DbError {
    fn from(e: PoolError) -> DbError {
        match e {
            PoolError::Backend(e) => e.into(),
            PoolError::Timeout(_) => DbError::Unavailable("no database connection became available in time".into()),
            other => DbError::Unavailable(format!("database pool: {other}")),
        }
    }
}

#[derive(Clone)]
pub struct Db {
    pool: Pool,
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
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(settings.size)
            .wait_timeout(Some(settings.timeout))
            .create_timeout(Some(settings.timeout))
            .recycle_timeout(Some(settings.timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| format!("cannot build the connection pool: {e}"))?;
        Ok(Db { pool })
    }

    pub async fn client(&self) -> Result<Object, DbError> {
        Ok(self.pool.get().await?)
    }

    /// Run an `execute_kip` request object in `space`; returns the KIP envelope.
    pub async fn execute(&self, space: &str, request: &Value, read_only: bool) -> Result<Value, DbError> {
        let client = self.client().await?;
        let sql = if read_only { EXECUTE_READONLY } else { EXECUTE };
        let statement = client.prepare_cached(sql).await?;
        let row = client.query_one(&statement, &[&space, request]).await?;
        Ok(row.try_get::<_, Value>(0)?)
    }

    /// The installed kip version; proves the database is reachable and usable.
    pub async fn health(&self) -> Result<String, DbError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT extversion FROM pg_extension WHERE extname = 'kip'", &[])
            .await?
            .ok_or_else(|| DbError::Failed("the kip extension is not installed in this database".into()))?;
        Ok(row.try_get(0)?)
    }

    pub fn close(&self) {
        self.pool.close();
    }
}
