//! Slow clients: a request head or body trickled in a byte at a time is cut
//! off by the header and body read timeouts (an idle connection too), while
//! a request whose answer takes longer than both is still answered; a
//! client that never reads its answer is dropped by the write timeout.

use crate::db_or_skip;
use crate::support::*;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One second for the head and one for the body (set by environment, as a
/// service manager would).
const SHORT: [(&str, &str); 2] = [("KIP_HEADER_TIMEOUT_MS", "1000"), ("KIP_BODY_TIMEOUT_MS", "1000")];

/// Longer than the timeouts, far shorter than a held connection.
const PATIENCE: Duration = Duration::from_secs(8);

/// Connect, send `head`, then one `drip` byte every 100 ms (none if `None`)
/// until the server closes the connection. Returns everything it answered
/// and when it closed; fails if the connection is still open after PATIENCE.
async fn trickle(addr: SocketAddr, head: String, drip: Option<u8>) -> (String, Duration) {
    let started = Instant::now();
    let (mut rd, mut wr) = TcpStream::connect(addr).await.unwrap().into_split();
    let writer = tokio::spawn(async move {
        if wr.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        while let Some(b) = drip {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if wr.write_all(&[b]).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    });
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(PATIENCE, async {
        let mut buf = [0u8; 4096];
        // A reset after the answer (unread bytes in the server's buffer) ends it too.
        while let Ok(n) = rd.read(&mut buf).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    writer.abort();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(closed.is_ok(), "the connection was still held after {PATIENCE:?}; answered so far: {answer:?}");
    (answer, started.elapsed())
}

/// The status and JSON body of a raw HTTP/1.1 answer (`Content-Length` or chunked).
fn parse_answer(answer: &str) -> (u16, Value) {
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let body = match (body.find('{'), body.rfind('}')) {
        (Some(a), Some(b)) => &body[a..=b],
        _ => body,
    };
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_trickled_or_missing_request_head_is_cut_off() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &SHORT).await;
    let addr = s.addr();
    // A header line that never ends.
    let head = format!("POST /kip HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
    let (answer, took) = trickle(addr, head, Some(b'a')).await;
    assert!(!answer.contains("200 OK"), "{answer:?}");
    assert!(took >= Duration::from_millis(900), "closed after {took:?}, before the timeout");
    // A connection that sends nothing at all.
    let (answer, took) = trickle(addr, String::new(), None).await;
    assert_eq!(answer, "");
    assert!(took >= Duration::from_millis(900), "closed after {took:?}, before the timeout");
    // The server is fine, and answers on a fresh connection.
    assert_eq!(s.get("/health").await.0, 200);
}

#[tokio::test]
async fn a_trickled_request_body_is_408() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &SHORT).await;
    let addr = s.addr();
    for (path, extra) in [("/kip", ""), ("/mcp", "Accept: application/json, text/event-stream\r\n")] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{extra}Content-Length: 1000\r\n\r\n{{"
        );
        let (answer, took) = trickle(addr, head, Some(b' ')).await;
        let (status, body) = parse_answer(&answer);
        assert_eq!(status, 408, "{path}: {answer:?}");
        // /kip answers a KIP envelope, /mcp a JSON-RPC error carrying it.
        let kip_error = if path == "/mcp" { &body["error"]["data"] } else { &body["error"] };
        assert_eq!(kip_error["code"], "KIP_4001", "{path}: {answer:?}");
        assert!(took >= Duration::from_millis(900), "{path}: answered after {took:?}, before the timeout");
    }
    assert_eq!(s.get("/health").await.0, 200);
}

/// The timeouts bound reading the request, not the answer: calls held
/// by a lock for longer than both still succeed, over `/kip` and `/mcp`.
#[tokio::test]
async fn a_slow_answer_is_not_cut_off() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gateway_slow_test").await;
    let s = Server::start(&url, &[], &SHORT).await;
    let sp = "gw_slow_answer";
    let find = cmd(r#"FIND(?p.name) WHERE { ?p {type: "Person"} } LIMIT 1"#);
    assert_eq!(s.kip_as(None, Some(sp), "execute_kip", find.clone()).await.0, 200);
    let lock = pg(&url).await;
    lock.batch_execute("BEGIN; LOCK TABLE kip.concepts IN ACCESS EXCLUSIVE MODE").await.unwrap();
    let kip = {
        let req = client().post(format!("{}/kip", s.base)).header("X-KIP-Space", sp).json(&json!({"method": "execute_kip", "params": find}));
        tokio::spawn(send(req))
    };
    let mcp = {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "execute_kip_readonly", "arguments": cmd("FIND(?p.name) WHERE { ?p {type: \"Person\"} } LIMIT 1")}});
        let req = client()
            .post(format!("{}/mcp", s.base))
            .header("X-KIP-Space", sp)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&call);
        tokio::spawn(send(req))
    };
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!kip.is_finished() && !mcp.is_finished(), "the calls wait on the lock");
    lock.batch_execute("ROLLBACK").await.unwrap();
    let (st, body) = kip.await.unwrap();
    assert_eq!(st, 200, "{body}");
    let (st, body) = mcp.await.unwrap();
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
    drop(s);
    drop_database(&shared, "kip_gateway_slow_test").await;
}

/// A client that posts a request with a large answer (5 MB: a batch of
/// 1,000 DESCRIBE PRIMER) and never reads it is dropped once the write
/// timeout passes without progress, and the answer's memory with it.
/// (Such a connection was held, the answer in memory, for as long as the
/// client kept the socket open.)
#[tokio::test]
async fn a_client_that_never_reads_its_answer_is_dropped() {
    let url = db_or_skip!();
    // The debug log says when the write timeout cut the connection.
    let envs = [("KIP_WRITE_TIMEOUT_MS", "1000"), ("KIP_HEADER_TIMEOUT_MS", "0"), ("RUST_LOG", "info,kip_server=debug")];
    let s = Server::start(&url, &["--log-retention-days", "0"], &envs).await;
    let body = json!({"method": "execute_kip_readonly", "params": {"commands": vec!["DESCRIBE PRIMER"; 1000]}}).to_string();
    let request = format!(
        "POST /kip HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        s.addr(),
        body.len()
    );
    // A small receive buffer, so the answer cannot all sit in the client's kernel.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let cut_before = s.log().matches("connection ended with an error").count();
    let mut stream = socket.connect(s.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    // Read nothing until the server gave up on the connection (the answer
    // takes a few seconds to compute on a busy machine: a fixed pause could
    // end first, and the client would then read the whole answer).
    let cut = "connection ended with an error";
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while s.log().matches(cut).count() <= cut_before {
        assert!(std::time::Instant::now() < deadline, "the write timeout never cut the connection: {}", s.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Now read: what the kernels held, then the end of a closed connection.
    let mut received = 0usize;
    let ended = tokio::time::timeout(PATIENCE, async {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            received += n;
        }
    })
    .await;
    assert!(ended.is_ok(), "the connection is still open after {received} bytes");
    assert!(received < 5_000_000, "received {received} bytes, about the whole answer: not cut off");
    assert_eq!(s.get("/health").await.0, 200);
}
