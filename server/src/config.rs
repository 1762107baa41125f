//! Command line and environment configuration of `kip-server`.
//!
//! Every option has an environment variable, so the same binary runs from a
//! service manager, a container or an MCP client's launch configuration.
//! Secrets (`API_KEY`, the keys file) are never printed: clap is told to hide
//! their values, and `Config` has no `Debug` that could leak them.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "kip-server", version, about = "HTTP and MCP gateway to a PostgreSQL database with the kip extension")]
pub struct Cli {
    #[command(flatten)]
    pub options: Options,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve HTTP: `POST /kip`, `POST /mcp` (streamable HTTP), `GET /`, `GET /health` (the default).
    Serve,
    /// Speak MCP over stdin/stdout, for MCP clients that start the server themselves.
    Mcp(McpOptions),
}

#[derive(Args)]
pub struct McpOptions {
    /// The memory space every call of this MCP session uses.
    #[arg(long, env = "KIP_SPACE", default_value = "default")]
    pub space: String,
    /// Offer only read access: `execute_kip` is refused, `execute_kip_readonly` works.
    #[arg(long, env = "KIP_READ_ONLY")]
    pub read_only: bool,
}

#[derive(Args)]
pub struct Options {
    /// PostgreSQL connection URL of a database with `CREATE EXTENSION kip` (required).
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,

    /// Address and port of the HTTP listener.
    #[arg(long, env = "KIP_LISTEN", global = true, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// One API key with full access: read-write, in any space (chosen with `X-KIP-Space`).
    #[arg(long, env = "API_KEY", global = true, hide_env_values = true)]
    pub api_key: Option<String>,

    /// A JSON file of API keys, each mapped to a space and an access level (see docs).
    #[arg(long, env = "KIP_API_KEYS_FILE", global = true)]
    pub api_keys_file: Option<PathBuf>,

    /// Largest accepted request body, in bytes (larger ones get 413).
    #[arg(long, env = "KIP_MAX_BODY_BYTES", global = true, default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// How long a client may take to send a request's head (line and
    /// headers), and how long an idle keep-alive connection stays open;
    /// past it the connection is closed. 0 disables it.
    #[arg(long, env = "KIP_HEADER_TIMEOUT_MS", global = true, default_value_t = 10_000)]
    pub header_timeout_ms: u64,

    /// How long a client may take to send a request's body, from when the
    /// gateway starts reading it; past it the request is answered 408
    /// (KIP_4001). Only reading the request is bounded, not the time to
    /// compute the answer.
    /// 0 disables it.
    #[arg(long, env = "KIP_BODY_TIMEOUT_MS", global = true, default_value_t = 30_000)]
    pub body_timeout_ms: u64,

    /// How long the gateway waits for a client to take any byte of an
    /// answer; past it the connection is closed (a client that never reads
    /// a large answer would otherwise hold its memory). 0 disables it.
    #[arg(long, env = "KIP_WRITE_TIMEOUT_MS", global = true, default_value_t = 30_000)]
    pub write_timeout_ms: u64,

    /// Connections in the Postgres pool.
    #[arg(long, env = "KIP_POOL_SIZE", global = true, default_value_t = 16)]
    pub pool_size: usize,

    /// How long a request may wait for a pooled connection (or for a new
    /// connection to open) before it is answered 503.
    #[arg(long, env = "KIP_POOL_TIMEOUT_MS", global = true, default_value_t = 5_000)]
    pub pool_timeout_ms: u64,

    /// Postgres `statement_timeout` of the gateway's connections; a command
    /// that runs longer fails with KIP_4001 (HTTP 408). 0 disables it.
    #[arg(long, env = "KIP_STATEMENT_TIMEOUT_MS", global = true, default_value_t = 30_000)]
    pub statement_timeout_ms: u64,

    /// Days the request log (`kip_gateway.request_log`) keeps entries; 0 turns the request log off.
    #[arg(long, env = "KIP_LOG_RETENTION_DAYS", global = true, default_value_t = 7)]
    pub log_retention_days: u32,

    /// Store KIP parameter values in the request log (off: only their names are kept).
    #[arg(long, env = "KIP_LOG_PARAMETERS", global = true)]
    pub log_parameters: bool,

    /// Seconds that in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, env = "KIP_SHUTDOWN_GRACE_SECS", global = true, default_value_t = 30)]
    pub shutdown_grace_secs: u64,
}

impl Options {
    /// Refuse settings the gateway cannot work with, at start-up rather
    /// than as a 503 on every request.
    pub fn validate(&self) -> Result<(), String> {
        if self.pool_size == 0 {
            return Err("KIP_POOL_SIZE (--pool-size) is 0: the pool needs at least one connection".into());
        }
        if self.pool_timeout_ms == 0 {
            return Err("KIP_POOL_TIMEOUT_MS (--pool-timeout-ms) is 0: no request could wait for a connection; give it milliseconds (default 5000)".into());
        }
        if self.max_body_bytes == 0 {
            return Err("KIP_MAX_BODY_BYTES (--max-body-bytes) is 0: every request would be refused".into());
        }
        Ok(())
    }

    pub fn pool_timeout(&self) -> Duration {
        Duration::from_millis(self.pool_timeout_ms)
    }

    pub fn header_timeout(&self) -> Option<Duration> {
        (self.header_timeout_ms > 0).then(|| Duration::from_millis(self.header_timeout_ms))
    }

    pub fn write_timeout(&self) -> Option<Duration> {
        (self.write_timeout_ms > 0).then(|| Duration::from_millis(self.write_timeout_ms))
    }

    pub fn body_timeout(&self) -> Option<Duration> {
        (self.body_timeout_ms > 0).then(|| Duration::from_millis(self.body_timeout_ms))
    }
}
