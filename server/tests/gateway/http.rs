//! `POST /kip` with authentication off: the envelope passes through, every
//! KIP error class gets its status, bad input gets a JSON envelope, spaces
//! come from `X-KIP-Space` and never leak between pooled requests, and
//! `list_logs` pages the request log.

use crate::db_or_skip;
use crate::support::*;
use serde_json::{json, Value};
use std::io::{Read, Write};

const LIMIT: &str = "4096";

async fn open_server(url: &str) -> Server {
    Server::start(url, &["--max-body-bytes", LIMIT, "--pool-size", "4"], &[]).await
}

#[tokio::test]
async fn root_health_and_envelope_pass_through() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    let (st, root) = s.get("/").await;
    assert_eq!(st, 200);
    assert_eq!(root["name"], "kip-server");
    assert_eq!(root["protocol"], "KIP v1.0");
    assert!(root["version"].is_string());
    let (st, health) = s.get("/health").await;
    assert_eq!((st, &health["status"]), (200, &json!("ok")), "{health}");

    let (st, primer) = s.kip_as(None, Some("gw_http"), "execute_kip", cmd("DESCRIBE PRIMER")).await;
    assert_eq!(st, 200, "{primer}");
    assert!(primer["result"]["identity"].is_object() && primer["result"]["domain_map"].is_array(), "{primer}");

    // The same request through SQL gives the same envelope.
    let db = pg(&url).await;
    let q = json!({"command": "FIND(?p.name) WHERE { ?p {type: \"Person\"} } ORDER BY ?p.name", "parameters": {}});
    let row = db
        .query_one("SELECT set_config('kip.space', 'gw_http', false), kip_execute_readonly($1::jsonb)", &[&q])
        .await
        .unwrap();
    let direct: Value = row.get(1);
    let (st, via_http) = s.kip_as(None, Some("gw_http"), "execute_kip_readonly", q).await;
    assert_eq!((st, via_http), (200, direct));

    // A batch is 200, with the failing command's error inline.
    let (st, batch) = s.kip_as(None, Some("gw_http"), "execute_kip", json!({"commands": ["FIND(", "DESCRIBE PRIMER"]})).await;
    assert_eq!(st, 200, "{batch}");
    assert_eq!(batch["result"][0]["error"]["code"], "KIP_1001");
    assert!(batch["result"][1]["result"].is_object());
}

#[tokio::test]
async fn kip_errors_map_to_statuses() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    let sp = Some("gw_status");
    let run = |c: &'static str| s.kip_as(None, sp, "execute_kip", cmd(c));
    assert_eq!(run("DESCRIBE PRIMER").await.0, 200);
    // 400: syntax (KIP_1001), unknown type (KIP_2001), reference (KIP_3001)
    assert_error(&run("FIND(").await, 400, "KIP_1001");
    assert_error(&run(r#"UPDATE ?x SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "drug"} }"#).await, 400, "KIP_2001");
    assert_error(&run(r#"UPDATE ?y SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "Person"} }"#).await, 400, "KIP_3001");
    // a malformed request object is the extension's KIP_1001 too
    assert_error(&s.kip_as(None, sp, "execute_kip", json!({"command": 1})).await, 400, "KIP_1001");
    assert_error(&s.kip_as(None, sp, "execute_kip", Value::Null).await, 400, "KIP_1001");
    // 404: a missing element, and a read-only call in a space that does not exist
    assert_error(&run(r#"UPSERT { CONCEPT ?a { {id: "C:999999999"} SET ATTRIBUTES { x: 1 } } }"#).await, 404, "KIP_3002");
    let (st, body) = s.kip_as(None, Some("gw_never_written"), "execute_kip_readonly", cmd("DESCRIBE PRIMER")).await;
    assert_error(&(st, body), 404, "KIP_3002");
    // 409: EXPECT VERSION mismatch (KIP_3005) and an ambiguous MERGE (KIP_3003)
    assert_error(&run(r#"UPSERT { CONCEPT ?x { {type: "Person", name: "gw_ghost"} EXPECT VERSION 3 } }"#).await, 409, "KIP_3005");
    assert_eq!(run(r#"UPSERT { CONCEPT ?a { {type: "Person", name: "gw_dup_a"} } CONCEPT ?b { {type: "Person", name: "gw_dup_b"} } }"#).await.0, 200);
    assert_error(
        &run(r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Person", name: "gw_dup_a"} ?t {type: "Person"} }"#).await,
        409,
        "KIP_3003",
    );
    // 403: protected system structure
    assert_error(&run(r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Domain", name: "CoreSchema"} }"#).await, 403, "KIP_3004");
    // read-only calls refuse KML (the extension's KIP_1001)
    let (st, body) = s.kip_as(None, sp, "execute_kip_readonly", cmd(r#"UPSERT { CONCEPT ?x { {type: "Person", name: "gw_ro"} } }"#)).await;
    assert_error(&(st, body), 400, "KIP_1001");
}

#[tokio::test]
async fn bad_input_gets_json_envelopes() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    for body in [&b"not json"[..], b"", b"[1,2]", b"{\"params\": {}}", b"{\"method\": 7}", b"\xff\xfe"] {
        let got = s.post_raw("/kip", None, body.to_vec()).await;
        assert_error(&got, 400, "KIP_1001");
    }
    assert_error(&s.kip("drop_everything", json!({})).await, 400, "KIP_1001");
    // 413 by declared length, without reading the body
    let big = format!("{{\"method\": \"execute_kip\", \"params\": {{\"command\": \"{}\"}}}}", "x".repeat(5000));
    assert_error(&s.post_raw("/kip", None, big.into_bytes()).await, 413, "KIP_4002");
    // 413 for a chunked body (no declared length) once the limit is passed
    let (status, body) = raw_chunked(s.addr(), "/kip", 10_000);
    assert_eq!(status, 413, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], "KIP_4002");
    // unknown route and method: JSON too
    assert_error(&s.get("/nowhere").await, 404, "KIP_3002");
    assert_error(&s.get("/kip").await, 405, "KIP_1001");
    // the server is still fine
    assert_eq!(s.get("/health").await.0, 200);
}

/// The request log comes back by itself when its schema goes (dropped, or
/// the database re-created under the gateway): it failed until a restart.
#[tokio::test]
async fn the_request_log_recreates_its_schema() {
    // A database of its own: the other tests' logs live in the shared one.
    let shared = db_or_skip!();
    let (base, _) = shared.rsplit_once('/').expect("a database URL ends with /<database>");
    let admin = pg(&shared).await;
    admin.batch_execute("DROP DATABASE IF EXISTS kip_gateway_schema_test WITH (FORCE)").await.unwrap();
    admin.batch_execute("CREATE DATABASE kip_gateway_schema_test").await.unwrap();
    let url = format!("{base}/kip_gateway_schema_test");
    pg(&url).await.batch_execute("CREATE EXTENSION kip CASCADE").await.unwrap();
    let s = open_server(&url).await;
    let space = unique("gw_log_schema");
    let sp = Some(space.as_str());
    assert_eq!(s.kip_as(None, sp, "execute_kip", cmd("DESCRIBE PRIMER")).await.0, 200);
    let mut page = Value::Null;
    for _ in 0..100 {
        page = s.kip_as(None, sp, "list_logs", json!({"limit": 10})).await.1;
        if page["result"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(page["result"].as_array().is_some_and(|a| !a.is_empty()), "{page}");
    pg(&url).await.batch_execute("DROP SCHEMA kip_gateway CASCADE").await.unwrap();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(s.kip_as(None, sp, "list_logs", json!({"limit": 10})).await.0);
    }
    assert_eq!(statuses.last(), Some(&200), "{statuses:?}");
}

/// `/kip` takes JSON bodies only, and on a loopback listener loopback Host
/// names only: a web page can neither post a form or text to it (a CORS
/// "simple request", sent without asking) nor reach it through a name
/// rebound to 127.0.0.1.
#[tokio::test]
async fn kip_refuses_what_a_web_page_could_send() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    let body = json!({"method": "execute_kip", "params": {"command": "DESCRIBE PRIMER"}}).to_string();
    for content_type in [Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data"), None] {
        let mut req = client().post(format!("{}/kip", s.base)).body(body.clone());
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        assert_error(&send(req).await, 415, "KIP_1001");
    }
    let rebound = client()
        .post(format!("{}/kip", s.base))
        .header("host", "evil.example")
        .header("content-type", "application/json")
        .body(body.clone());
    assert_error(&send(rebound).await, 403, "KIP_3004");
    let fine = client().post(format!("{}/kip", s.base)).header("content-type", "application/json; charset=utf-8").body(body);
    assert_eq!(send(fine).await.0, 200);
}

/// POST a chunked body of `size` bytes over a raw socket; returns status and body.
fn raw_chunked(addr: std::net::SocketAddr, path: &str, size: usize) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b' '; 1000];
    for _ in 0..size / 1000 {
        // The server may answer and close before the whole body is sent.
        if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).is_err()
            || stream.write_all(&chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    // The body may itself be chunked: keep the JSON object.
    let body = match (body.find('{'), body.rfind('}')) {
        (Some(a), Some(b)) => body[a..=b].to_string(),
        _ => body,
    };
    (status, body)
}

#[tokio::test]
async fn spaces_come_from_the_header_and_never_leak() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    for space in ["gw_leak_a", "gw_leak_b"] {
        let upsert = json!({
            "command": "UPSERT { CONCEPT ?p { {type: \"Person\", name: :name} } }",
            "parameters": {"name": format!("marker_{space}")}
        });
        assert_eq!(s.kip_as(None, Some(space), "execute_kip", upsert).await.0, 200);
    }
    let find = cmd(r#"FIND(?p.name) WHERE { ?p {type: "Person"} FILTER(STARTS_WITH(?p.name, "marker_")) }"#);
    // Interleave many requests over a 4-connection pool: each sees only its space.
    let mut tasks = Vec::new();
    for i in 0..60 {
        let space = ["gw_leak_a", "gw_leak_b", "default"][i % 3];
        let (base, find) = (s.base.clone(), find.clone());
        tasks.push(tokio::spawn(async move {
            let mut req = client().post(format!("{base}/kip")).json(&json!({"method": "execute_kip", "params": find}));
            if space != "default" {
                req = req.header("X-KIP-Space", space);
            } else if i % 2 == 0 {
                // An empty header is no choice of space: the default one.
                req = req.header("X-KIP-Space", "");
            }
            (space, send(req).await)
        }));
    }
    for t in tasks {
        let (space, (st, body)) = t.await.unwrap();
        assert_eq!(st, 200, "{body}");
        let expected = if space == "default" { json!([]) } else { json!([format!("marker_{space}")]) };
        assert_eq!(body["result"], expected, "space {space}");
    }
    // An invalid space name is the extension's error, not a crash.
    let (st, body) = s.kip_as(None, Some("bad space!"), "execute_kip", cmd("DESCRIBE PRIMER")).await;
    assert_error(&(st, body), 400, "KIP_1002");
}

#[tokio::test]
async fn list_logs_pages_newest_first_without_parameter_values() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    let space = unique("gw_logs");
    let sp = Some(space.as_str());
    for i in 0..5 {
        let params = json!({
            "command": "FIND(?p.name) WHERE { ?p {type: \"Person\"} FILTER(?p.name == :secret_name) }",
            "parameters": {"secret_name": format!("hunter{i}")}
        });
        assert_eq!(s.kip_as(None, sp, "execute_kip", params).await.0, 200);
    }
    assert_eq!(s.kip_as(None, sp, "execute_kip", cmd("FIND(")).await.0, 400);
    // The log is written in the background: wait for the six entries.
    let mut page = Value::Null;
    for _ in 0..100 {
        page = s.kip_as(None, sp, "list_logs", json!({"limit": 100})).await.1;
        if page["result"].as_array().is_some_and(|a| a.len() >= 6) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let all = page["result"].as_array().expect("result array").clone();
    assert_eq!(all.len(), 6, "{page}");
    assert!(page.get("next_cursor").is_none());
    assert_eq!(all[0]["status"], 400);
    assert_eq!(all[0]["command"], "FIND");
    // Parameters that are not an object are still values: redacted too.
    // (In a space of its own: the pages below count this space's entries.)
    let odd_space = unique("gw_logs_odd");
    let odd_sp = Some(odd_space.as_str());
    let odd = json!({"command": "DESCRIBE PRIMER", "parameters": "hunter-odd"});
    assert_eq!(s.kip_as(None, odd_sp, "execute_kip", odd).await.0, 400);
    let mut logged = Value::Null;
    for _ in 0..100 {
        logged = s.kip_as(None, odd_sp, "list_logs", json!({"limit": 1})).await.1;
        if logged["result"][0]["request"]["parameters"].is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(logged["result"][0]["request"]["parameters"], "[redacted]", "{logged}");
    // An error that repeats a parameter's value is logged without its
    // message and hint (the type passed as :t is named in kip's refusal).
    let refused = json!({"command": "UPSERT { CONCEPT ?d { {type: :t, name: \"x\"} } }", "parameters": {"t": "HunterType"}});
    let answer = s.kip_as(None, odd_sp, "execute_kip", refused).await;
    assert!(answer.1.to_string().contains("HunterType"), "the caller is told: {}", answer.1);
    let mut logged = Value::Null;
    for _ in 0..100 {
        logged = s.kip_as(None, odd_sp, "list_logs", json!({"limit": 1})).await.1;
        if logged["result"][0]["request"]["command"].as_str().is_some_and(|c| c.starts_with("UPSERT")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let entry = &logged["result"][0];
    assert_eq!(entry["error"]["code"], answer.1["error"]["code"], "{logged}");
    assert!(entry["error"]["message"].as_str().unwrap().contains("withheld"), "{logged}");
    assert!(!logged.to_string().contains("Hunter"), "a parameter value leaked through an error message: {logged}");
    assert_eq!(all[0]["error"]["code"], "KIP_1001");
    assert_eq!(all[1]["status"], 200);
    assert_eq!(all[1]["method"], "execute_kip");
    assert_eq!(all[1]["request"]["parameters"]["secret_name"], "[redacted]");
    assert!(!page.to_string().contains("hunter"), "parameter values leaked into the log: {page}");
    let ids: Vec<i64> = all.iter().map(|e| e["_id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");

    // Pages of 4 then 2, following next_cursor.
    let (st, p1) = s.kip_as(None, sp, "list_logs", json!({"limit": 4})).await;
    assert_eq!(st, 200);
    assert_eq!(p1["result"].as_array().unwrap().len(), 4);
    let cursor = p1["next_cursor"].as_str().expect("next_cursor").to_string();
    let (_, p2) = s.kip_as(None, sp, "list_logs", json!({"limit": 4, "cursor": cursor})).await;
    let p2_ids: Vec<i64> = p2["result"].as_array().unwrap().iter().map(|e| e["_id"].as_i64().unwrap()).collect();
    assert_eq!(p2_ids, ids[4..].to_vec());
    assert!(p2.get("next_cursor").is_none());
    // default limit 10; other spaces see none of these entries
    let other_space = unique("gw_logs_other");
    assert_eq!(s.kip_as(None, Some(&other_space), "execute_kip", cmd("DESCRIBE PRIMER")).await.0, 200);
    let mut other = Value::Null;
    for _ in 0..100 {
        other = s.kip_as(None, Some(&other_space), "list_logs", json!({})).await.1;
        if !other["result"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let other = other["result"].as_array().unwrap().clone();
    assert_eq!(other.len(), 1, "{other:?}");
    assert_eq!(other[0]["space"], other_space.as_str());
    // bad params
    for bad in [json!({"limit": 0}), json!({"limit": 101}), json!({"cursor": "x"}), json!({"limit": 5, "extra": 1})] {
        assert_error(&s.kip_as(None, sp, "list_logs", bad).await, 400, "KIP_1001");
    }
    // The table lives in the gateway's schema.
    let db = pg(&url).await;
    let n: i64 = db
        .query_one("SELECT count(*) FROM kip_gateway.request_log WHERE space = $1", &[&space])
        .await
        .unwrap()
        .get(0);
    assert!(n >= 6);
}

/// Request-log entries and `list_logs` pages stay bounded: the commands of
/// a batch share one command's 64 KB, and a page stops past 1 MB, its
/// `next_cursor` going on from there.
#[tokio::test]
async fn list_logs_pages_stay_bounded() {
    let url = db_or_skip!();
    let s = Server::start(&url, &["--pool-size", "4"], &[]).await;
    let space = unique("gw_logs_big");
    let sp = Some(space.as_str());
    let long = |i: usize| format!("FIND(?x) WHERE {{ ?x {{name: \"{i}{}\"}} }}", "z".repeat(60_000));
    let batch: Vec<String> = (0..15).map(long).collect();
    // Each finds nothing (404 KIP_3002 alone, inside a batch's 200): logged all the same.
    assert_eq!(s.kip_as(None, sp, "execute_kip_readonly", json!({"commands": batch})).await.0, 200);
    for i in 0..18 {
        assert_eq!(s.kip_as(None, sp, "execute_kip_readonly", json!({"command": long(i)})).await.0, 404);
    }
    let entries = log_entries(&s, &space, 19).await;
    let batch_entry = entries.last().unwrap();
    let size = batch_entry.to_string().len();
    assert!(size < 70_000, "the batch's entry holds {size} bytes");
    assert!(batch_entry.to_string().contains("truncated"), "later commands of the batch are cut");
    let (st, first) = s.kip_as(None, sp, "list_logs", json!({"limit": 100})).await;
    assert_eq!(st, 200);
    let n = first["result"].as_array().unwrap().len();
    assert!(n < 19 && first["next_cursor"].is_string(), "a page of {n} entries, {} bytes", first.to_string().len());
    assert!(first.to_string().len() < 1_200_000, "{} bytes", first.to_string().len());
}

/// Every entry of `space`, following `next_cursor`, once `n` are logged
/// (the log is written in the background).
async fn log_entries(s: &Server, space: &str, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"limit": 100, "cursor": c}),
                None => json!({"limit": 100}),
            };
            let page = s.kip_as(None, Some(space), "list_logs", params).await.1;
            all.extend(page["result"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        if all.len() >= n {
            return all;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the request log of {space} never held {n} entries");
}

/// A NUL character (`\u0000`), which Postgres text and jsonb cannot hold,
/// is the request's fault: 400 KIP_1001 (it was 500 "retry later"). Its
/// request-log entry is written, NUL replaced, and so are the others (the
/// batched insert failed and dropped every entry with it).
#[tokio::test]
async fn a_nul_character_is_400_and_the_request_log_keeps_every_entry() {
    let url = db_or_skip!();
    let s = open_server(&url).await;
    let sp = unique("gw_nul");
    let sp = sp.as_str();
    for _ in 0..3 {
        assert_eq!(s.kip_as(None, Some(sp), "execute_kip", cmd("DESCRIBE PRIMER")).await.0, 200);
    }
    let nul = cmd("FIND(?p.name) WHERE { ?p {type: \"Per\u{0}son\"} }");
    let got = s.kip_as(None, Some(sp), "execute_kip_readonly", nul).await;
    assert_error(&got, 400, "KIP_1001");
    assert!(got.1["error"]["hint"].as_str().unwrap().contains("NUL"), "{}", got.1);
    let with_params = json!({"command": "FIND(?p.name) WHERE { ?p {type: :t} }", "parameters": {"t": "a\u{0}b"}});
    assert_error(&s.kip_as(None, Some(sp), "execute_kip", with_params).await, 400, "KIP_1001");
    let entries = log_entries(&s, sp, 5).await;
    assert_eq!(entries.iter().filter(|e| e["status"] == 400).count(), 2, "{entries:?}");
    assert_eq!(entries.iter().filter(|e| e["status"] == 200).count(), 3, "{entries:?}");
    assert!(!s.log().contains("entries dropped"), "{}", s.log());
}

/// Odd input gets short, accurate answers: invalid UTF-8 is named as such
/// (not "expected `,` or `}`"); an unknown method is echoed cut short; the
/// read-only refusal names the method to use (`execute_kip`), not the SQL
/// function; the request log caps a command's text at 64 KB.
#[tokio::test]
async fn odd_input_gets_short_accurate_answers() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[]).await;
    let got = s.post_raw("/kip", None, b"{\"method\": \"execute_kip\xff\"}".to_vec()).await;
    assert_error(&got, 400, "KIP_1001");
    assert!(got.1["error"]["message"].as_str().unwrap().contains("UTF-8"), "{}", got.1);
    let got = s.kip(&"m".repeat(200_000), json!({})).await;
    assert_error(&got, 400, "KIP_1001");
    assert!(got.1["error"]["message"].as_str().unwrap().len() < 200, "{}", got.1["error"]["message"]);
    assert!(s.log().len() < 100_000, "the method went into the log");
    let sp = unique("gw_names");
    let got = s.kip_as(None, Some(&sp), "execute_kip_readonly", cmd(r#"UPSERT { CONCEPT ?p { {type: "Person", name: "x"} } }"#)).await;
    let hint = got.1["error"]["hint"].as_str().unwrap_or_default();
    assert!(hint.contains("execute_kip") && !hint.contains("kip_execute"), "{}", got.1);
    let long = format!("FIND(?p.name) WHERE {{ ?p {{type: \"Person\"}} }} LIMIT 1 {}", " ".repeat(100_000));
    assert_eq!(s.kip_as(None, Some(&sp), "execute_kip", cmd(&long)).await.0, 200);
    let entries = log_entries(&s, &sp, 2).await;
    let logged = entries[0]["request"]["command"].as_str().unwrap();
    assert!(logged.len() < 70_000 && logged.contains("truncated"), "{} bytes", logged.len());
}

/// A client that shuts down its side of the connection once its request is
/// sent (`nc -N`, some proxies) still reads its answer (it got nothing,
/// though the call ran).
#[tokio::test]
async fn a_client_that_half_closes_still_gets_its_answer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = db_or_skip!();
    let s = open_server(&url).await;
    let body = json!({"method": "execute_kip", "params": {"command": "DESCRIBE PRIMER"}}).to_string();
    for version in ["HTTP/1.1", "HTTP/1.0"] {
        let request = format!(
            "POST /kip {version}\r\nHost: {}\r\nContent-Type: application/json\r\nX-KIP-Space: gw_half_close\r\nContent-Length: {}\r\n\r\n{body}",
            s.addr(),
            body.len()
        );
        let mut stream = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        stream.shutdown().await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(std::time::Duration::from_secs(30), stream.read_to_string(&mut answer))
            .await
            .expect("the answer comes")
            .unwrap();
        assert!(answer.starts_with(&format!("{version} 200")), "{version}: {answer:?}");
        assert!(answer.contains("\"result\""), "{version}: {answer:?}");
    }
}

/// POST `body` to `path` over a raw socket with the extra header lines
/// `headers` (each "Name: value"), as given, repeats included.
fn raw_with_headers(addr: std::net::SocketAddr, path: &str, headers: &[&str], body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let mut head = format!("POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

/// A header that says which caller, space or host a request is for is
/// sent once: repeated, which value counts would depend on the proxies on
/// the way (the first one counted).
#[tokio::test]
async fn repeated_headers_that_decide_who_and_where_are_refused() {
    let url = db_or_skip!();
    let s = Server::start(&url, &[], &[("API_KEY", "repeat-header-key")]).await;
    let addr = s.addr();
    let host = format!("Host: {addr}");
    let key = "Authorization: Bearer repeat-header-key";
    let body = json!({"method": "execute_kip", "params": {"command": "DESCRIBE PRIMER"}}).to_string();
    let (ok, _) = raw_with_headers(addr, "/kip", &[&host, key], &body);
    assert_eq!(ok, 200);
    for path in ["/kip", "/mcp"] {
        let (status, answer) = raw_with_headers(addr, path, &[&host, &host, key], &body);
        assert_eq!(status, 400, "{path} repeated Host: {answer}");
        let (status, answer) = raw_with_headers(addr, path, &[&host, key, "Authorization: Bearer other-key-123"], &body);
        assert_eq!(status, 401, "{path} repeated Authorization: {answer}");
        assert!(answer.contains("repeated"), "{answer}");
    }
    let (status, answer) = raw_with_headers(addr, "/kip", &[&host, key, "X-KIP-Space: a", "X-KIP-Space: b"], &body);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("X-KIP-Space header is repeated"), "{answer}");
}
