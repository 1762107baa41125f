//! `kip-server mcp`: MCP over stdin/stdout, through a line filter.
//!
//! rmcp's stdio transport skips a line that is not JSON without a word, so
//! a client that sent one waited for an answer forever; it answers a
//! request whose params do not fit its method -32601 (method not found),
//! and a line that is no valid request (a batch, no `"jsonrpc"`, an id of
//! the wrong type) with an error that has no `"id"`. The filter answers
//! those itself, as JSON-RPC says (`super::message::screen`: -32700 parse
//! error, -32600 invalid request, -32602 invalid params, always with an
//! id, null when it cannot be read), drops responses (the server sends
//! the client no requests; one as the first line ended the session), and
//! passes every other line to rmcp, a tool call's arguments kept aside as
//! written. One task writes stdout, so the filter's answers and rmcp's
//! never interleave inside a line.

use super::message::{screen, PendingArguments, Screened};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The reader and writer to give rmcp, and the stdout writer's task
/// (await it after the session, so its last answers are written).
pub fn filtered(pending: PendingArguments) -> (DuplexStream, DuplexStream, JoinHandle<()>) {
    let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
    let (lines, stdout_lines) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(read_stdin(to_rmcp, lines.clone(), pending));
    tokio::spawn(forward_answers(from_rmcp, lines));
    let writer = tokio::spawn(write_stdout(stdout_lines));
    (rmcp_in, rmcp_out, writer)
}

/// Each stdin line: answered here when it is no valid request, dropped
/// when it is a response, passed to rmcp otherwise. End of input ends
/// rmcp's session.
async fn read_stdin(mut to_rmcp: DuplexStream, answers: mpsc::Sender<Vec<u8>>, pending: PendingArguments) {
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
        let sent = match screen(&line, &pending) {
            Screened::Answer(answer) => answers.send(answer.to_string().into_bytes()).await.is_ok(),
            Screened::Ignore => true,
            Screened::Pass(mut line) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                to_rmcp.write_all(&line).await.is_ok()
            }
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
