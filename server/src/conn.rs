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
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// Serve `app` on `listener` until `shutdown`: then stop accepting, let
/// every connection finish the request it is on (idle ones close at once),
/// and return when all are closed. `header_timeout` `None`: no limit;
/// `write_timeout`: see [`WriteTimeout`].
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    shutdown: CancellationToken,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    // A client may shut down its side of the connection once its request
    // is sent (`nc -N`, some proxies) and still read the answer: without
    // half-close hyper took that end of input for the client leaving, and
    // answered nothing, though the call (a write too) still ran.
    http.timer(TokioTimer::new()).header_read_timeout(header_timeout).half_close(true);
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
        let io = TokioIo::new(WriteTimeout::new(stream, write_timeout));
        let conn = http.serve_connection(io, TowerToHyperService::new(app.clone()));
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

/// A connection whose writes fail once the client has taken no byte for
/// `timeout`: hyper has no write timeout, so a client that posts a request
/// with a large answer and never reads it held the answer's memory (and,
/// on shutdown, the drain) for as long as it kept the socket open. The
/// clock runs only while a write is blocked, so a slow reader that keeps
/// reading is not cut off; a stalled one is, and its connection closed.
pub struct WriteTimeout {
    stream: TcpStream,
    timeout: Option<Duration>,
    /// Armed when a write first blocks, disarmed by any progress.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl WriteTimeout {
    pub fn new(stream: TcpStream, timeout: Option<Duration>) -> WriteTimeout {
        WriteTimeout { stream, timeout, deadline: None }
    }

    /// The outcome of a write-side poll, with the stall clock applied.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        let Some(timeout) = self.timeout else { return poll };
        if poll.is_ready() {
            self.deadline = None;
            return poll;
        }
        let deadline = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + timeout)));
        ready!(std::future::Future::poll(deadline.as_mut(), cx));
        Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client did not read the answer in time")))
    }
}

impl AsyncRead for WriteTimeout {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteTimeout {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}
