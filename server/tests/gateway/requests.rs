//! A request reaches the extension as the client wrote it: numbers keep
//! their digits (the gateway re-encoded them as doubles: 1e-400 was
//! stored as 0, 1e400 refused as bad JSON, long mantissas rounded twice)
//! and parameters nest as deep as kip itself accepts, over `/kip` and MCP.
//! Bodies are sent as raw text: `json!` would round the numbers itself.

use crate::db_or_skip;
use crate::support::*;
use serde_json::{json, Value};

/// A `/kip` body for `command` with `parameters` given as JSON text.
fn body(method: &str, command: &str, parameters: &str) -> Vec<u8> {
    format!(r#"{{"method": "{method}", "params": {{"command": {}, "parameters": {parameters}}}}}"#, json!(command)).into_bytes()
}

/// The same request straight to `kip_execute` in `space`: the envelope as text.
async fn direct(url: &str, space: &str, command: &str, parameters: &str) -> Value {
    let request = format!(r#"{{"command": {}, "parameters": {parameters}}}"#, json!(command));
    let row = pg(url)
        .await
        .query_one("SELECT set_config('kip.space', $1, false), kip_execute($2::text::jsonb)", &[&space, &request])
        .await
        .unwrap();
    row.get(1)
}

const LIMIT_N: &str = r#"FIND(?p.name) WHERE { ?p {type: "Person"} } LIMIT :n"#;

#[tokio::test]
async fn numbers_reach_the_extension_as_written() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[]).await;
    // Out of a double's range: kip's own answer, as when called directly.
    for n in ["1e-400", "1e400", "123456789012345678901234567890"] {
        let parameters = format!(r#"{{"n": {n}}}"#);
        let got = s.post_raw("/kip", None, body("execute_kip", LIMIT_N, &parameters)).await;
        assert_error(&got, 400, "KIP_1001");
        let want = direct(&url, "default", LIMIT_N, &parameters).await;
        assert_eq!(got.1["error"]["message"], want["error"]["message"], "{n}");
    }
    // Text Postgres's own jsonb reader refuses (a lone surrogate, a number
    // past numeric's range): the client's to mend, 400, not "retry later".
    for parameters in [r#"{"n": "\ud800"}"#, r#"{"n": 1e999999999}"#] {
        let got = s.post_raw("/kip", None, body("execute_kip", LIMIT_N, parameters)).await;
        assert_error(&got, 400, "KIP_1001");
    }
    let got = s.post_raw("/kip", None, body("execute_kip", LIMIT_N, r#"{"n": 123456789012345678901234567890}"#)).await;
    assert!(got.1["error"]["message"].as_str().unwrap().contains("'123456789012345678901234567890'"), "{}", got.1);

    // Stored as kip stores them when called directly: the double kip's own
    // reading of the digits gives (serde_json's default reading, which the
    // gateway's re-encoding applied first, rounds the second one apart).
    let upsert = r#"UPSERT { CONCEPT ?p { {type: "Person", name: "Numbers"} SET ATTRIBUTES { a: :a, b: :b } } }"#;
    let values = r#"{"a": 0.1, "b": 45931773795037525048e-98}"#;
    let (via_gateway, via_sql) = (unique("gw_numbers"), unique("gw_numbers_sql"));
    let req = client().post(format!("{}/kip", s.base)).header("content-type", "application/json").header("X-KIP-Space", &via_gateway);
    assert_eq!(send(req.body(body("execute_kip", upsert, values))).await.0, 200);
    assert!(direct(&url, &via_sql, upsert, values).await.get("error").is_none());
    let db = pg(&url).await;
    let stored = |space: String, attribute: &'static str| {
        let db = &db;
        async move {
            let find = format!(r#"{{"command": "FIND(?p.attributes.{attribute}) WHERE {{ ?p {{type: \"Person\", name: \"Numbers\"}} }}"}}"#);
            let sql = "SELECT set_config('kip.space', $1, false), kip_execute($2::text::jsonb)->'result'->>0";
            db.query_one(sql, &[&space, &find]).await.unwrap().get::<_, String>(1)
        }
    };
    assert_eq!(stored(via_gateway.clone(), "a").await.parse::<f64>().unwrap(), 0.1);
    let (gateway_b, sql_b) = (stored(via_gateway, "b").await, stored(via_sql, "b").await);
    assert_eq!(gateway_b, sql_b, "45931773795037525048e-98 through the gateway and directly");
}

/// Parameters nested 126 levels are kip's to accept (serde's recursion
/// limit, counted from the body's top, refused them); deeper ones get
/// kip's KIP_1001; past the gateway's own bound (256, far below where
/// Postgres's jsonb parser runs out of stack) the gateway says so.
#[tokio::test]
async fn deep_parameters_reach_the_extension() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[]).await;
    let nested = |levels: usize| format!(r#"{{"x": {}1{}}}"#, "[".repeat(levels - 1), "]".repeat(levels - 1));
    for levels in [125, 126] {
        let (st, got) = s.post_raw("/kip", None, body("execute_kip", "DESCRIBE PRIMER", &nested(levels))).await;
        assert_eq!(st, 200, "{levels} levels: {got}");
    }
    let got = s.post_raw("/kip", None, body("execute_kip", "DESCRIBE PRIMER", &nested(200))).await;
    assert_error(&got, 400, "KIP_1001");
    assert!(got.1["error"]["message"].as_str().unwrap().contains("nested deeper than 128"), "{}", got.1);
    let got = s.post_raw("/kip", None, body("execute_kip", "DESCRIBE PRIMER", &nested(400))).await;
    assert_error(&got, 400, "KIP_1001");
    assert!(got.1["error"]["message"].as_str().unwrap().contains("at most 256"), "{}", got.1);
}

/// A tool call's arguments too: taken out of the message before rmcp
/// parses it, and handed to the extension as written.
#[tokio::test]
async fn mcp_tool_arguments_reach_the_extension_as_written() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[]).await;
    let call = |id: u32, arguments: String| {
        format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "tools/call", "params": {{"name": "execute_kip_readonly", "arguments": {arguments}}}}}"#)
    };
    for (id, n) in [(1, "1e-400"), (2, "1e400"), (3, "123456789012345678901234567890")] {
        let parameters = format!(r#"{{"n": {n}}}"#);
        let arguments = format!(r#"{{"command": {}, "parameters": {parameters}}}"#, json!(LIMIT_N));
        let (st, got) = post_mcp(&s, call(id, arguments)).await;
        assert_eq!((st, &got["id"], &got["result"]["isError"]), (200, &json!(id), &json!(true)), "{got}");
        let want = direct(&url, "default", LIMIT_N, &parameters).await;
        assert_eq!(got["result"]["structuredContent"]["error"]["message"], want["error"]["message"], "{n}");
    }
    let deep = format!(r#"{{"command": "DESCRIBE PRIMER", "parameters": {{"x": {}1{}}}}}"#, "[".repeat(125), "]".repeat(125));
    let (st, got) = post_mcp(&s, call(4, deep)).await;
    assert_eq!((st, &got["result"]["isError"]), (200, &json!(false)), "{got}");
}
