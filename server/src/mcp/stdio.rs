//! `kip-server mcp`: MCP over stdin/stdout, through a line filter.
//!
//! rmcp's stdio transport skips a line that is not JSON without a word, so
//! a client that sent one waited for an answer forever; and it answers a
//! request whose params do not fit its method -32601 (method not found).
//! The filter answers those itself, as JSON-RPC says (-32700 parse error,
//! id null; -32602 invalid params), and passes every other line to rmcp.
//! One task writes stdout, so the filter's answers and rmcp's never
//! interleave inside a line.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The reader and writer to give rmcp, and the stdout writer's task
/// (await it after the session, so its last answers are written).
pub fn filtered() -> (DuplexStream, DuplexStream, JoinHandle<()>) {
    let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
    let (lines, stdout_lines) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(read_stdin(to_rmcp, lines.clone()));
    tokio::spawn(forward_answers(from_rmcp, lines));
    let writer = tokio::spawn(write_stdout(stdout_lines));
    (rmcp_in, rmcp_out, writer)
}

/// Each stdin line: answered here when it is no JSON or has bad params,
/// passed to rmcp otherwise. End of input ends rmcp's session.
async fn read_stdin(mut to_rmcp: DuplexStream, answers: mpsc::Sender<Vec<u8>>) {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let answer = match serde_json::from_slice::<Value>(&line) {
            Err(e) => Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {e}")}})),
            Ok(message) => super::http::invalid_params_error(&message),
        };
        let sent = match answer {
            Some(answer) => answers.send(answer.to_string().into_bytes()).await.is_ok(),
            None => to_rmcp.write_all(&line).await.is_ok() && (line.ends_with(b"\n") || to_rmcp.write_all(b"\n").await.is_ok()),
        };
        if !sent {
            return;
        }
    }
}

async fn forward_answers(from_rmcp: DuplexStream, lines: mpsc::Sender<Vec<u8>>) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.ends_with(b"\n") {
            line.pop();
        }
        if lines.send(line).await.is_err() {
            return;
        }
    }
}

async fn write_stdout(mut lines: mpsc::Receiver<Vec<u8>>) {
    let mut stdout = tokio::io::stdout();
    while let Some(mut line) = lines.recv().await {
        line.push(b'\n');
        if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}
