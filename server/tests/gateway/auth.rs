//! Authentication on: 401 before the body is read, per-key spaces,
//! read-only keys, the full-access `API_KEY`, and keys never in the logs.

use crate::db_or_skip;
use crate::support::*;
use serde_json::json;

const ALICE_RW: &str = "alice-rw-7f3a9c";
const ALICE_RO: &str = "alice-ro-51d2e8";
const BOB_RW: &str = "bob-rw-0c44b1";
const FULL: &str = "full-access-9e8d7c";

async fn auth_server(url: &str) -> (Server, std::path::PathBuf) {
    let keys = std::env::temp_dir().join(format!("kip-gateway-test-keys-{}.json", free_port()));
    std::fs::write(
        &keys,
        json!({"keys": [
            {"key": ALICE_RW, "space": "gw_alice", "access": "read-write", "name": "alice"},
            {"key": ALICE_RO, "space": "gw_alice", "access": "read-only", "name": "alice-reader"},
            {"key": BOB_RW, "space": "gw_bob", "access": "read-write", "name": "bob"}
        ]})
        .to_string(),
    )
    .unwrap();
    let s = Server::start(url, &["--max-body-bytes", "2048"], &[("API_KEY", FULL), ("KIP_API_KEYS_FILE", keys.to_str().unwrap())]).await;
    (s, keys)
}

fn find_markers() -> serde_json::Value {
    cmd(r#"FIND(?p.name) WHERE { ?p {type: "Person"} FILTER(STARTS_WITH(?p.name, "auth_marker")) }"#)
}

#[tokio::test]
async fn unauthenticated_requests_get_401_before_the_body_is_read() {
    let url = db_or_skip!();
    let (s, keys) = auth_server(&url).await;
    assert_error(&s.kip("execute_kip", cmd("DESCRIBE PRIMER")).await, 401, "KIP_3004");
    assert_error(&s.kip_as(Some("wrong-key-123"), None, "execute_kip", cmd("DESCRIBE PRIMER")).await, 401, "KIP_3004");
    // Oversized and malformed bodies: still 401, so the body was never looked at.
    assert_error(&s.post_raw("/kip", None, vec![b'x'; 100_000]).await, 401, "KIP_3004");
    assert_error(&s.post_raw("/kip", Some("nope-nope"), b"not json".to_vec()).await, 401, "KIP_3004");
    let basic = client().post(format!("{}/kip", s.base)).header("Authorization", format!("Basic {ALICE_RW}")).body("{}");
    assert_error(&send(basic).await, 401, "KIP_3004");
    // A 401 names the scheme it wants (RFC 9110 §15.5.2).
    let plain = client().post(format!("{}/kip", s.base)).header("content-type", "application/json").body("{}").send().await.unwrap();
    assert_eq!(plain.headers().get("www-authenticate").and_then(|v| v.to_str().ok()), Some("Bearer"));
    // With a key, the same oversized body is 413 and bad JSON is 400.
    assert_error(&s.post_raw("/kip", Some(ALICE_RW), vec![b'x'; 100_000]).await, 413, "KIP_4002");
    assert_error(&s.post_raw("/kip", Some(ALICE_RW), b"not json".to_vec()).await, 400, "KIP_1001");
    // MCP is behind the same check; / and /health are public.
    let mcp = client().post(format!("{}/mcp", s.base)).header("content-type", "application/json").body("{}");
    assert_error(&send(mcp).await, 401, "KIP_3004");
    assert_eq!(s.get("/").await.0, 200);
    assert_eq!(s.get("/health").await.0, 200);
    std::fs::remove_file(keys).unwrap();
}

#[tokio::test]
async fn keys_bind_spaces_and_access() {
    let url = db_or_skip!();
    let (s, keys) = auth_server(&url).await;
    let upsert = |name: &str| {
        json!({"command": "UPSERT { CONCEPT ?p { {type: \"Person\", name: :n} } }", "parameters": {"n": name}})
    };
    // Writes land in the key's space.
    assert_eq!(s.kip_as(Some(ALICE_RW), None, "execute_kip", upsert("auth_marker_alice")).await.0, 200);
    assert_eq!(s.kip_as(Some(BOB_RW), None, "execute_kip", upsert("auth_marker_bob")).await.0, 200);
    let (st, a) = s.kip_as(Some(ALICE_RW), None, "execute_kip", find_markers()).await;
    assert_eq!((st, a["result"].clone()), (200, json!(["auth_marker_alice"])));
    let (st, b) = s.kip_as(Some(BOB_RW), None, "execute_kip_readonly", find_markers()).await;
    assert_eq!((st, b["result"].clone()), (200, json!(["auth_marker_bob"])));
    // A key bound to a space may not name another one.
    assert_error(&s.kip_as(Some(ALICE_RW), Some("gw_bob"), "execute_kip", find_markers()).await, 403, "KIP_3004");
    assert_eq!(s.kip_as(Some(ALICE_RW), Some("gw_alice"), "execute_kip", find_markers()).await.0, 200);

    // Read-only key: execute_kip refused with 403 whatever the command, reads work.
    assert_error(&s.kip_as(Some(ALICE_RO), None, "execute_kip", find_markers()).await, 403, "KIP_3004");
    assert_error(&s.kip_as(Some(ALICE_RO), None, "execute_kip", upsert("auth_marker_ro")).await, 403, "KIP_3004");
    let (st, r) = s.kip_as(Some(ALICE_RO), None, "execute_kip_readonly", find_markers()).await;
    assert_eq!((st, r["result"].clone()), (200, json!(["auth_marker_alice"])));
    assert_error(&s.kip_as(Some(ALICE_RO), None, "execute_kip_readonly", upsert("auth_marker_ro")).await, 400, "KIP_1001");
    let (st, logs) = s.kip_as(Some(ALICE_RO), None, "list_logs", json!({"limit": 100})).await;
    assert_eq!(st, 200);
    assert!(logs["result"].as_array().unwrap().iter().all(|e| e["space"] == "gw_alice"), "{logs}");

    // The full-access API_KEY writes anywhere, chosen by header (default: "default").
    let (st, r) = s.kip_as(Some(FULL), Some("gw_alice"), "execute_kip", find_markers()).await;
    assert_eq!((st, r["result"].clone()), (200, json!(["auth_marker_alice"])));
    let (st, r) = s.kip_as(Some(FULL), None, "execute_kip", find_markers()).await;
    assert_eq!((st, r["result"].clone()), (200, json!([])));

    // No secret in the server's log; the key names are there.
    let log = s.log();
    for secret in [ALICE_RW, ALICE_RO, BOB_RW, FULL] {
        assert!(!log.contains(secret), "a key leaked into the log");
    }
    assert!(log.contains("alice-reader"), "{log}");
    std::fs::remove_file(keys).unwrap();
}

#[tokio::test]
async fn a_broken_keys_file_stops_startup_without_printing_keys() {
    let url = db_or_skip!();
    let keys = std::env::temp_dir().join(format!("kip-gateway-test-badkeys-{}.json", free_port()));
    std::fs::write(&keys, r#"{"keys": [{"key": "secret-value-123", "space": "x", "access": "admin"}]}"#).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kip-server"))
        .args(["--database-url", &url, "--listen", "127.0.0.1:0"])
        .env("KIP_API_KEYS_FILE", &keys)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid keys file"), "{stderr}");
    assert!(!stderr.contains("secret-value-123"), "{stderr}");
    std::fs::remove_file(keys).unwrap();
}

/// Without a key, a malformed `X-KIP-Space` is still 401: authentication
/// is decided before anything else the request says (it was 400).
#[tokio::test]
async fn no_key_and_a_malformed_space_header_is_401() {
    let url = db_or_skip!();
    let (s, keys) = auth_server(&url).await;
    let space = reqwest::header::HeaderValue::from_bytes(b"caf\xe9").unwrap();
    let req = client().post(format!("{}/kip", s.base)).header("X-KIP-Space", space.clone()).json(&serde_json::json!({"method": "execute_kip", "params": cmd("DESCRIBE PRIMER")}));
    assert_error(&send(req).await, 401, "KIP_3004");
    let req = client().post(format!("{}/kip", s.base)).bearer_auth(ALICE_RW).header("X-KIP-Space", space).json(&serde_json::json!({"method": "execute_kip", "params": cmd("DESCRIBE PRIMER")}));
    assert_error(&send(req).await, 400, "KIP_1001");
    std::fs::remove_file(keys).unwrap();
}

/// Keys that no request can carry and settings the gateway cannot work
/// with stop it at start-up with a message naming the setting.
#[tokio::test]
async fn unusable_keys_and_settings_stop_startup() {
    let url = db_or_skip!();
    let cases: [(&str, &str, &str); 5] = [
        ("API_KEY", "gateway-key-123\n", "visible ASCII"),
        ("API_KEY", " gateway-key-123", "visible ASCII"),
        ("API_KEY", "clé-de-passerelle", "visible ASCII"),
        ("KIP_POOL_SIZE", "0", "KIP_POOL_SIZE"),
        ("KIP_POOL_TIMEOUT_MS", "0", "KIP_POOL_TIMEOUT_MS"),
    ];
    for (var, value, expected) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kip-server"))
            .args(["--database-url", &url, "--listen", "127.0.0.1:0"])
            .env_remove("API_KEY")
            .env_remove("KIP_API_KEYS_FILE")
            .env(var, value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{var}={value:?} accepted: {stderr}");
        assert!(stderr.contains(expected), "{var}={value:?}: {stderr}");
        assert!(!stderr.contains("gateway-key-123") && !stderr.contains("passerelle"), "a key was printed: {stderr}");
    }
}
