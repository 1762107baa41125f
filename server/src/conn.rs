//! The HTTP listener: connections served with hyper's HTTP/1 builder, which
//! (unlike `axum::serve`) takes a header read timeout.
//!
//! A client that connects and then sends its request head a byte at a time,
//! or nothing at all, would otherwise hold a connection and its task for as
//! long as it likes; enough of them exhaust the process. hyper's timer runs
//! only while a head is being read (an idle keep-alive connection included),
//! never while a request is handled or its answer written. The body's read
//! time is bounded in `crate::http`, where a late body can still be answered
//! 408.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Serve `app` on `listener` until `shutdown`: then stop accepting, let
/// every connection finish the request it is on (idle ones close at once),
/// and return when all are closed. `header_timeout` `None`: no limit.
pub async fn serve(listener: TcpListener, app: Router, header_timeout: Option<Duration>, shutdown: CancellationToken) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    // Each connection task holds a receiver; `closed()` resolves when the last one is gone.
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let (shutdown, open) = (shutdown.clone(), open_rx.clone());
        tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                _ = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(open);
        });
    }
    // New connections are refused from here on.
    drop(listener);
    drop(open_rx);
    open_tx.closed().await;
}

/// A failed accept: a connection that went away before it was accepted is
/// skipped; anything else (out of file descriptors, say) is logged and
/// retried after a pause rather than in a busy loop.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "cannot accept connections");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
