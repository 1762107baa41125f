//! MCP over streamable HTTP (`POST /mcp`) and over stdio (`kip-server mcp`),
//! spoken as raw JSON-RPC. (The handshake with a third-party MCP client is
//! in scripts/gateway_test.sh.)

use crate::db_or_skip;
use crate::support::*;
use serde_json::{json, Value};

async fn rpc(s: &Server, key: Option<&str>, id: i64, method: &str, params: Value) -> Value {
    rpc_at(s, "/mcp", key, id, method, params).await
}

async fn rpc_at(s: &Server, path: &str, key: Option<&str>, id: i64, method: &str, params: Value) -> Value {
    let mut req = client()
        .post(format!("{}{path}", s.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let (st, body) = send(req).await;
    assert_eq!(st, 200, "{body}");
    body
}

fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "kip-gateway-test", "version": "0"}})
}

fn check_tools(list: &Value) {
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["execute_kip", "execute_kip_readonly", "list_logs"]);
    // The input schema is the KIP function definition's.
    let definition: Value = serde_json::from_str(include_str!("../../src/mcp/execute_kip.json")).unwrap();
    assert_eq!(tools[0]["inputSchema"], definition["parameters"]);
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], true);
}

#[tokio::test]
async fn streamable_http_tools() {
    let url = db_or_skip!();
    let keys = std::env::temp_dir().join(format!("kip-gateway-test-mcpkeys-{}.json", free_port()));
    std::fs::write(
        &keys,
        json!({"keys": [
            {"key": "mcp-rw-key-1", "space": "gw_mcp", "access": "read-write"},
            {"key": "mcp-ro-key-1", "space": "gw_mcp", "access": "read-only"}
        ]})
        .to_string(),
    )
    .unwrap();
    let s = Server::start(&url, &[], &[("KIP_API_KEYS_FILE", keys.to_str().unwrap())]).await;
    let rw = Some("mcp-rw-key-1");

    let init = rpc(&s, rw, 1, "initialize", initialize_params()).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "kip-server");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    assert!(init["result"]["instructions"].as_str().unwrap().contains("DESCRIBE PRIMER"));
    check_tools(&rpc(&s, rw, 2, "tools/list", json!({})).await);

    let call = |key, id, tool: &str, args: Value| {
        let (s, tool) = (&s, tool.to_string());
        async move { rpc(s, key, id, "tools/call", json!({"name": tool, "arguments": args})).await }
    };
    let primer = call(rw, 3, "execute_kip", cmd("DESCRIBE PRIMER")).await;
    assert_eq!(primer["result"]["isError"], false, "{primer}");
    let envelope: Value = serde_json::from_str(primer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(envelope["result"]["identity"].is_object());
    assert_eq!(primer["result"]["structuredContent"], envelope);

    // A KIP error is a tool error carrying the envelope.
    let bad = call(rw, 4, "execute_kip", cmd("FIND(")).await;
    assert_eq!(bad["result"]["isError"], true);
    let text = bad["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("HTTP 400") && text.contains("KIP_1001"), "{text}");

    // The read-only key may only read.
    let ro = Some("mcp-ro-key-1");
    let refused = call(ro, 5, "execute_kip", cmd("DESCRIBE PRIMER")).await;
    assert_eq!(refused["result"]["isError"], true);
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().contains("HTTP 403"));
    let read = call(ro, 6, "execute_kip_readonly", cmd("DESCRIBE PRIMER")).await;
    assert_eq!(read["result"]["isError"], false, "{read}");
    let logs = call(ro, 7, "list_logs", json!({"limit": 3})).await;
    assert_eq!(logs["result"]["isError"], false, "{logs}");
    assert!(logs["result"]["structuredContent"]["result"].is_array());
    std::fs::remove_file(keys).unwrap();
}

#[tokio::test]
async fn stdio_tools() {
    let url = db_or_skip!();
    let mut peer = StdioPeer::spawn(&url, &["--space", "gw_stdio"]);
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}));
    let init = peer.response(1);
    assert_eq!(init["result"]["serverInfo"]["name"], "kip-server", "{init}");
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    check_tools(&peer.response(2));
    let upsert = json!({"command": "UPSERT { CONCEPT ?p { {type: \"Person\", name: \"stdio_marker\"} } }"});
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "execute_kip", "arguments": upsert}}));
    assert_eq!(peer.response(3)["result"]["isError"], false);

    // It wrote into the --space given on the command line.
    let db = pg(&url).await;
    let row = db
        .query_one(
            "SELECT set_config('kip.space', 'gw_stdio', false), kip_execute_readonly($1::jsonb)",
            &[&cmd(r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "stdio_marker"} }"#)],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Value>(1)["result"], json!(["stdio_marker"]));

    // --read-only refuses execute_kip.
    let mut ro = StdioPeer::spawn(&url, &["--space", "gw_stdio", "--read-only"]);
    ro.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}));
    ro.response(1);
    ro.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    ro.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "execute_kip", "arguments": cmd("DESCRIBE PRIMER")}}));
    let refused = ro.response(2);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    // In the words of stdio, which has no API key.
    let message = refused["result"]["structuredContent"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("--read-only") && !message.contains("API key"), "{refused}");
}

/// `POST /mcp/` is `POST /mcp`: clients configured with a base URL often
/// add the slash, and not all follow a redirect of a POST.
#[tokio::test]
async fn a_trailing_slash_is_the_same_endpoint() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[]).await;
    let init = rpc_at(&s, "/mcp/", None, 1, "initialize", initialize_params()).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "kip-server", "{init}");
    check_tools(&rpc_at(&s, "/mcp/", None, 2, "tools/list", json!({})).await);
    let (st, primer) = s.post_raw("/kip/", None, json!({"method": "execute_kip", "params": cmd("DESCRIBE PRIMER")}).to_string().into_bytes()).await;
    assert_eq!(st, 200, "{primer}");
    assert!(primer["result"]["identity"].is_object(), "{primer}");
    // Other paths below /mcp are no endpoints.
    assert_error(&s.post_raw("/mcp/elsewhere", None, b"{}".to_vec()).await, 404, "KIP_3002");
}

/// The MCP service's refusals are JSON-RPC error objects (id null), with
/// the status rmcp chose; they were plain text, which MCP clients cannot
/// parse as JSON-RPC. A body declared JSON that is not JSON, or not
/// JSON-RPC, is 400 (-32700, -32600), not rmcp's 415.
#[tokio::test]
async fn mcp_refusals_are_jsonrpc_errors() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[]).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}).to_string();
    let both = "application/json, text/event-stream";
    // (accept, content type, body, status, JSON-RPC code)
    let cases: [(&str, &str, &str, u16, i64); 5] = [
        ("application/json", "application/json", &init, 406, -32600),
        (both, "text/plain", &init, 415, -32600),
        (both, "application/json", "not json", 400, -32700),
        (both, "application/json", "", 400, -32700),
        (both, "application/json", r#"{"hello": "world"}"#, 400, -32600),
    ];
    for (accept, content_type, body, status, code) in cases {
        let req = client()
            .post(format!("{}/mcp", s.base))
            .header("accept", accept)
            .header("content-type", content_type)
            .body(body.to_string());
        let resp = req.send().await.unwrap();
        let what = format!("accept {accept:?}, content-type {content_type:?}, body {body:?}");
        assert_eq!(resp.status().as_u16(), status, "{what}");
        assert_eq!(resp.headers()["content-type"], "application/json", "{what}");
        let got: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap_or_else(|e| panic!("{what}: not JSON: {e}"));
        assert_eq!(got["jsonrpc"], "2.0", "{what}: {got}");
        assert_eq!(got["id"], Value::Null, "{what}: {got}");
        assert_eq!(got["error"]["code"], code, "{what}: {got}");
        assert!(got["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {got}");
    }
    // A GET (no stream is offered): 405, its Allow header kept.
    let resp = client().get(format!("{}/mcp", s.base)).header("accept", "text/event-stream").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers()["allow"], "POST");
    let got: Value = resp.json().await.unwrap();
    assert_eq!((&got["id"], &got["error"]["code"]), (&Value::Null, &json!(-32600)), "{got}");
    // An answer that is JSON-RPC already is untouched.
    let ok = rpc(&s, None, 7, "tools/list", json!({})).await;
    assert_eq!(ok["id"], 7);
    // A body that is not UTF-8 is not JSON: -32700 (serde skips a string's bytes unchecked).
    let resp = client()
        .post(format!("{}/mcp", s.base))
        .header("accept", both)
        .header("content-type", "application/json")
        .body(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"p\xffng\"}".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let got: Value = resp.json().await.unwrap();
    assert_eq!((&got["id"], &got["error"]["code"]), (&Value::Null, &json!(-32700)), "{got}");
    // A Host that is not a loopback name, or a loopback name with another
    // port than the listener's (another origin): 403 as a JSON-RPC error
    // too, refused as on /kip.
    for host in ["rebound.example", "localhost:1"] {
        let resp = client()
            .post(format!("{}/mcp", s.base))
            .header("host", host)
            .header("accept", both)
            .header("content-type", "application/json")
            .body(init.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{host}");
        let got: Value = resp.json().await.unwrap();
        assert_eq!((&got["id"], &got["error"]["code"]), (&Value::Null, &json!(-32600)), "{host}: {got}");
        assert_eq!(got["error"]["data"]["code"], "KIP_3004", "{host}: {got}");
    }
}

/// Both endpoints check the Host before the API key: a rebound page learns
/// nothing of the key from the answer.
#[tokio::test]
async fn the_host_is_checked_before_the_key() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[("API_KEY", "host-order-key")]).await;
    for path in ["kip", "mcp"] {
        let resp = client()
            .post(format!("{}/{path}", s.base))
            .header("host", "rebound.example")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 403, "/{path}");
        let unauthorized = client()
            .post(format!("{}/{path}", s.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(unauthorized.status().as_u16(), 401, "/{path}");
    }
}

/// JSON-RPC as the specification has it: params that do not fit their
/// method are -32602 (rmcp said -32601, method not found); an error
/// answer always has an `id` (null when unknown); and the gateway's own
/// 413 on /mcp is a JSON-RPC error, not a KIP envelope.
#[tokio::test]
async fn mcp_errors_follow_jsonrpc() {
    let url = db_or_skip!();
    let s = Server::start(&url, &["--max-body-bytes", "4096"], &[]).await;
    for params in [None, Some(json!({})), Some(json!({"name": 5}))] {
        let (method, params) = match params {
            None => ("initialize", Value::Null),
            Some(p) => ("tools/call", p),
        };
        let mut msg = json!({"jsonrpc": "2.0", "id": 9, "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        let (st, got) = post_mcp(&s, msg.to_string()).await;
        assert_eq!((st, &got["id"], &got["error"]["code"]), (200, &json!(9), &json!(-32602)), "{msg}: {got}");
    }
    // Params of any other method, when present, must be an object: -32602
    // with the request's id (rmcp said -32600, id null).
    for (id, method, params) in [(14, "tools/list", json!([1])), (23, "ping", json!(5))] {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (st, got) = post_mcp(&s, msg.to_string()).await;
        assert_eq!((st, &got["id"], &got["error"]["code"]), (200, &json!(id), &json!(-32602)), "{msg}: {got}");
    }
    // An unknown method stays -32601.
    let (_, got) = post_mcp(&s, json!({"jsonrpc": "2.0", "id": 3, "method": "nope", "params": {}}).to_string()).await;
    assert_eq!(got["error"]["code"], -32601, "{got}");
    // A response message posted to the server: refused, with "id": null.
    let (st, got) = post_mcp(&s, json!({"jsonrpc": "2.0", "id": 4, "result": {}}).to_string()).await;
    assert_eq!(st, 400, "{got}");
    assert!(got.as_object().unwrap().contains_key("id") && got["id"].is_null(), "{got}");
    // The body limit: 413 as JSON-RPC, the KIP error as its data.
    let (st, got) = post_mcp(&s, json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "pad": "x".repeat(5000)}).to_string()).await;
    assert_eq!(st, 413, "{got}");
    assert_eq!((&got["jsonrpc"], &got["id"], &got["error"]["code"]), (&json!("2.0"), &Value::Null, &json!(-32600)), "{got}");
    assert_eq!(got["error"]["data"]["code"], "KIP_4002", "{got}");
}

/// Over stdio too: a line that is not JSON is answered -32700 with id null
/// (rmcp skipped it silently, and the client waited for ever), bad params
/// -32602, and the session goes on.
#[tokio::test]
async fn stdio_answers_bad_lines() {
    let url = db_or_skip!();
    let mut peer = StdioPeer::spawn(&url, &["--space", "gw_stdio"]);
    // A response with no request to match, even as the first line, is
    // ignored (it ended the session: "MCP handshake failed").
    peer.send(json!({"jsonrpc": "2.0", "id": 77, "result": {}}));
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}));
    peer.response(1);
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    {
        use std::io::Write;
        let stdin = peer.child.stdin.as_mut().unwrap();
        writeln!(stdin, "this is not json").unwrap();
        stdin.flush().unwrap();
    }
    let parse_error = peer.response_matching(|v| v.get("id") == Some(&Value::Null));
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}}));
    assert_eq!(peer.response(2)["error"]["code"], -32602);
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}));
    check_tools(&peer.response(3));
    // Every error answer has an "id": the request's when it can be read,
    // null otherwise (JSON-RPC 2.0 §5; rmcp left it out).
    let lines = [
        (json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]), Value::Null, -32600),
        (json!({"id": 4, "method": "ping"}), json!(4), -32600),
        (json!({"jsonrpc": "2.0", "id": true, "method": "ping"}), Value::Null, -32600),
        (json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": 5}), json!(5), -32602),
    ];
    for (line, id, code) in lines {
        peer.send(line.clone());
        let got = peer.response_matching(|v| v.get("error").is_some());
        assert!(got.as_object().unwrap().contains_key("id"), "{line}: {got}");
        assert_eq!((&got["id"], &got["error"]["code"]), (&id, &json!(code)), "{line}: {got}");
    }
    // A tool call's arguments reach the extension as written.
    let call = r#"{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "execute_kip_readonly", "arguments": {"command": "FIND(?p.name) WHERE { ?p {type: \"Person\"} } LIMIT :n", "parameters": {"n": 1e400}}}}"#;
    {
        use std::io::Write;
        let stdin = peer.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{call}").unwrap();
        stdin.flush().unwrap();
    }
    let got = peer.response(6);
    assert_eq!(got["result"]["structuredContent"]["error"]["code"], "KIP_1001", "{got}");
    assert!(got["result"]["structuredContent"]["error"]["message"].as_str().unwrap().contains("out of range"), "{got}");
    peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    assert_eq!(peer.response(7)["result"], json!({}));
}
