//! `kip-server`: the HTTP and MCP gateway to a PostgreSQL database with the
//! kip extension.
//!
//! ```text
//! HTTP  POST /kip {method, params} ─┐
//! HTTP  POST /mcp (streamable)  ────┼─ auth ─ Gateway ─ pool ─ kip_execute[_readonly]($request)
//! stdio kip-server mcp ─────────────┘            └─ request log (kip_gateway.request_log)
//! ```
//!
//! Modules: `config` (CLI and env), `auth` (API keys → caller), `conn`
//! (the listener and its timeouts), `http` (routes), `mcp` (MCP server),
//! `gateway` (the three methods), `params` (a request's JSON text, kept as
//! sent), `db` (pool and statements), `envelope` (replies and statuses),
//! `request_log`.

mod auth;
mod config;
mod conn;
mod db;
mod envelope;
mod gateway;
mod http;
mod mcp;
mod params;
mod request_log;

use auth::{Access, Keys};
use clap::Parser;
use config::{Cli, Command, McpOptions, Options};
use db::{Db, PoolSettings};
use gateway::Gateway;
use request_log::RequestLog;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kip-server: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr in every mode: stdout is the MCP channel of `kip-server mcp`.
/// `KIP_LOG_FORMAT=json` gives one JSON object per line; `RUST_LOG` filters.
/// By default rmcp says only warnings: it logged three INFO lines for every
/// stateless `/mcp` request (its service starting, serving and stopping).
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if std::env::var("KIP_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().flatten_event(true).init();
    } else {
        builder.with_ansi(false).init();
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    let opts = cli.options;
    opts.validate()?;
    let url = opts.database_url.clone().ok_or("a database is required: set DATABASE_URL or --database-url")?;
    let keys = Keys::load(opts.api_key.as_deref(), opts.api_keys_file.as_deref())?;
    let db = Db::new(
        &url,
        &PoolSettings { size: opts.pool_size, timeout: opts.pool_timeout(), statement_timeout_ms: opts.statement_timeout_ms },
    )?;
    let (log, log_tasks) = RequestLog::start(db.clone(), opts.log_retention_days, opts.log_parameters);
    let gateway = Gateway::new(db.clone(), log);

    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            wait_for_signal().await;
            tracing::info!("shutdown requested: draining requests in flight");
            shutdown.cancel();
            // A second signal (an operator's second Ctrl-C) does not wait
            // out the grace period: calls still running are abandoned, and
            // Postgres rolls back what they had not committed.
            wait_for_signal().await;
            tracing::warn!("second shutdown signal: stopping at once, abandoning calls in flight");
            std::process::exit(1);
        }
    });

    let result = match cli.command {
        None | Some(Command::Serve) => serve(&opts, keys, gateway.clone(), shutdown).await,
        Some(Command::Mcp(mcp_opts)) => serve_stdio(mcp_opts, gateway.clone(), shutdown).await,
    };
    // Calls whose client left run on, detached from any connection: wait for
    // them (each is bounded by the statement timeout), so they end and are
    // logged before the request log is flushed.
    let grace = Duration::from_secs(opts.shutdown_grace_secs);
    gateway.drain(gateway.call_limit().unwrap_or(grace)).await;
    log_tasks.stop(Duration::from_secs(5)).await;
    db.close();
    tracing::info!("kip-server stopped");
    result
}

async fn serve(opts: &Options, keys: Keys, gateway: Gateway, shutdown: CancellationToken) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::bind(opts.listen).await.map_err(|e| format!("cannot listen on {}: {e}", opts.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let mcp = mcp::http::service(gateway.clone(), addr, opts.max_body_bytes, shutdown.child_token());
    let state = Arc::new(http::AppState {
        gateway,
        keys,
        max_body_bytes: opts.max_body_bytes,
        body_timeout: opts.body_timeout(),
        allowed_hosts: http::allowed_hosts(addr),
    });
    tracing::info!(%addr, auth = state.keys.enabled(), "kip-server listening (POST /kip, POST /mcp)");
    let app = http::router(state, mcp);
    let server = conn::serve(listener, app, opts.header_timeout(), opts.write_timeout(), shutdown.clone());
    let grace = Duration::from_secs(opts.shutdown_grace_secs);
    tokio::select! {
        _ = server => Ok(()),
        // Requests still running after the grace period are abandoned.
        _ = async { shutdown.cancelled().await; tokio::time::sleep(grace).await } => {
            tracing::warn!("grace period over: stopping with requests still in flight");
            Ok(())
        }
    }
}

async fn serve_stdio(opts: McpOptions, gateway: Gateway, shutdown: CancellationToken) -> Result<(), String> {
    use rmcp::ServiceExt;
    let access = if opts.read_only { Access::ReadOnly } else { Access::ReadWrite };
    tracing::info!(space = opts.space.as_str(), read_only = opts.read_only, "kip-server MCP on stdio");
    let pending = mcp::message::PendingArguments::default();
    let server = mcp::KipMcp::stdio(gateway, opts.space, access, pending.clone());
    let (input, output, stdout_writer) = mcp::stdio::filtered(pending);
    let running = server.serve((input, output)).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
    let cancel = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => { r.map_err(|e| format!("MCP session failed: {e}"))?; }
        _ = shutdown.cancelled() => cancel.cancel(),
    }
    // The session's last answers may still be on their way to stdout.
    let _ = tokio::time::timeout(Duration::from_secs(2), stdout_writer).await;
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
