//! Statement timeout (408), failures outside the extension (500), an
//! unreachable or stalled database (503) and reconnection, a busy pool,
//! graceful shutdown.

use crate::db_or_skip;
use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn find_people() -> serde_json::Value {
    cmd(r#"FIND(?p.name) WHERE { ?p {type: "Person"} } LIMIT 5"#)
}

/// Hold an exclusive lock on the concepts table until the returned client
/// rolls back: every KIP command waits on it.
async fn lock_concepts(url: &str) -> tokio_postgres::Client {
    let db = pg(url).await;
    db.batch_execute("BEGIN; LOCK TABLE kip.concepts IN ACCESS EXCLUSIVE MODE").await.unwrap();
    db
}

/// Wait until a session of the database of `url` (its own: only the
/// gateway's calls run there) waits on a lock.
async fn wait_for_a_call_on_the_lock(url: &str) {
    let admin = pg(url).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "no call ever waited on the lock");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client that gives up does not cancel its call: the call runs to its
/// end on its own task, is logged, and gives its connection back only then.
/// (Dropped with the client, the call's connection went back to the pool
/// mid-statement and the write that then committed was never logged.)
#[tokio::test]
async fn a_call_whose_client_left_still_completes_and_is_logged() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_left_test").await;
    let s = Server::start(&url, &["--pool-size", "2"], &[]).await;
    let sp = "gw_left";
    assert_eq!(s.kip_as(None, Some(sp), "execute_kip", find_people()).await.0, 200);
    let lock = lock_concepts(&url).await;
    let write = json!({"method": "execute_kip", "params": {"command": "UPSERT { CONCEPT ?p { {type: \"Person\", name: \"Left Early\"} SET ATTRIBUTES { person_class: \"Human\" } } }"}});
    let gone = reqwest::Client::builder().timeout(std::time::Duration::from_millis(300)).build().unwrap();
    let result = gone.post(format!("{}/kip", s.base)).header("X-KIP-Space", sp).json(&write).send().await;
    assert!(result.is_err(), "the client gave up before the answer");
    lock.batch_execute("COMMIT").await.unwrap();
    let mut logged = false;
    for _ in 0..100 {
        let page = s.kip_as(None, Some(sp), "list_logs", json!({"limit": 5})).await.1;
        if page["result"].as_array().is_some_and(|a| a.iter().any(|e| e["command"] == "UPSERT" && e["status"] == 200)) {
            logged = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(logged, "the write is in the request log");
    let found = s.kip_as(None, Some(sp), "execute_kip", json!({"command": "FIND(?p.name) WHERE { ?p {type: \"Person\", name: \"Left Early\"} }"})).await;
    assert_eq!(found.1["result"], json!(["Left Early"]), "{found:?}");
    drop(s);
    drop_database(&shared, "kip_gw_left_test").await;
}

#[tokio::test]
async fn a_statement_timeout_is_408() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_timeout_test").await;
    // Bootstrapping a space takes longer than the short timeout: do it first.
    pg(&url).await.execute("SELECT kip_create_space('gw_timeout')", &[]).await.unwrap();
    let s = Server::start(&url, &["--statement-timeout-ms", "1000", "--pool-size", "1"], &[]).await;
    let sp = Some("gw_timeout");
    // The first call on a new connection loads the extension: on a busy
    // machine it may itself exceed the short timeout, so warm up first.
    let mut warm = 0;
    while s.kip_as(None, sp, "execute_kip", find_people()).await.0 != 200 {
        warm += 1;
        assert!(warm < 20, "FIND never succeeded within the statement timeout");
    }
    let lock = lock_concepts(&url).await;
    let started = Instant::now();
    assert_error(&s.kip_as(None, sp, "execute_kip", find_people()).await, 408, "KIP_4001");
    assert!(started.elapsed() < Duration::from_secs(10));
    lock.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(s.kip_as(None, sp, "execute_kip", find_people()).await.0, 200);
    drop(s);
    drop_database(&shared, "kip_gw_timeout_test").await;
}

/// `pg_cancel_backend` raises the SQLSTATE of a statement timeout (57014)
/// with "due to user request": a cancel, not a timeout (it was 408
/// KIP_4001 "execution time exceeded the limit"), answered 500 KIP_4003.
#[tokio::test]
async fn an_administrators_cancel_is_not_a_timeout() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_cancel_test").await;
    // A name of its own: the cancel must hit this gateway's backend only.
    let app = format!("kip_gw_cancel_{}", free_port());
    let sep = if url.contains('?') { '&' } else { '?' };
    let s = Server::start(&format!("{url}{sep}application_name={app}"), &["--pool-size", "1"], &[]).await;
    let sp = Some("gw_cancel");
    assert_eq!(s.kip_as(None, sp, "execute_kip", find_people()).await.0, 200);
    let lock = lock_concepts(&url).await;
    let call = tokio::spawn({
        let base = s.base.clone();
        async move {
            let req = client().post(format!("{base}/kip")).header("X-KIP-Space", "gw_cancel");
            send(req.json(&json!({"method": "execute_kip", "params": find_people()}))).await
        }
    });
    let admin = pg(&url).await;
    let mut cancelled = false;
    for _ in 0..200 {
        let row = admin
            .query_one(
                "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                &[&app],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) > 0 {
            cancelled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(cancelled, "the gateway's call never waited on the lock");
    let got = call.await.unwrap();
    lock.batch_execute("ROLLBACK").await.unwrap();
    assert_error(&got, 500, "KIP_4003");
    assert!(got.1["error"]["message"].as_str().unwrap().contains("cancelled by an administrator"), "{}", got.1);
    // The connection is fine afterwards.
    assert_eq!(s.kip_as(None, sp, "execute_kip", find_people()).await.0, 200);
    drop(s);
    drop_database(&shared, "kip_gw_cancel_test").await;
}

/// A database or a role that does not exist is a connection the database
/// refuses: 503 on /kip and MCP, as on /health (it was 500), with a hint
/// naming the cause.
#[tokio::test]
async fn a_missing_database_or_role_is_503_with_its_cause() {
    let url = db_or_skip!();
    let cfg: tokio_postgres::Config = url.parse().unwrap();
    let db = cfg.get_dbname().unwrap();
    let no_db = url.replacen(&format!("/{db}"), "/kip_gw_no_such_database", 1);
    let user = cfg.get_user().unwrap();
    let no_role = url.replacen(&format!("{user}@"), "kip_gw_no_such_role@", 1);
    for (bad, cause) in [(no_db, "database"), (no_role, "role")] {
        let s = Server::start(&bad, &["--log-retention-days", "0"], &[]).await;
        let got = s.kip("execute_kip", cmd("DESCRIBE PRIMER")).await;
        assert_error(&got, 503, "KIP_4003");
        let hint = got.1["error"]["hint"].as_str().unwrap();
        assert!(hint.contains(&format!("The {cause} named in --database-url")), "{}", got.1);
        let (st, health) = s.get("/health").await;
        assert_eq!((st, &health["status"]), (503, &json!("unavailable")), "{health}");
        assert_eq!(health["error"]["hint"], got.1["error"]["hint"]);
    }
}

#[tokio::test]
async fn a_database_without_kip_is_500_and_unhealthy() {
    let url = db_or_skip!();
    // The maintenance database has no kip extension.
    let cfg: tokio_postgres::Config = url.parse().unwrap();
    let plain = url.replacen(&format!("/{}", cfg.get_dbname().unwrap()), "/postgres", 1);
    let s = Server::start(&plain, &["--log-retention-days", "0"], &[]).await;
    assert_error(&s.kip("execute_kip", cmd("DESCRIBE PRIMER")).await, 500, "KIP_4003");
    let (st, health) = s.get("/health").await;
    assert_eq!((st, &health["status"]), (503, &json!("unavailable")), "{health}");
    // With the request log off, list_logs is an empty page.
    let (st, logs) = s.kip("list_logs", json!({})).await;
    assert_eq!((st, logs), (200, json!({"result": []})));
}

#[tokio::test]
async fn unreachable_postgres_is_503_then_the_gateway_reconnects() {
    let url = db_or_skip!();
    let mut proxy = Proxy::start(pg_addr(&url)).await;
    let s = Server::start(&url_via(&url, proxy.addr), &["--pool-size", "4", "--pool-timeout-ms", "1000"], &[]).await;
    let sp = Some("gw_reconnect");
    // Fill the pool with live connections.
    for r in concurrent(&s.base, 4, "gw_reconnect").await {
        assert_eq!(r.0, 200, "{}", r.1);
    }
    assert_eq!(s.get("/health").await.0, 200);

    proxy.cut();
    let started = Instant::now();
    for _ in 0..6 {
        let got = s.kip_as(None, sp, "execute_kip", find_people()).await;
        assert_error(&got, 503, "KIP_4003");
    }
    assert_error(&s.get("/health").await, 503, "KIP_4003");
    assert!(started.elapsed() < Duration::from_secs(20), "503s must come quickly");

    proxy.restore().await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (st, body) = s.kip_as(None, sp, "execute_kip", find_people()).await;
        if st == 200 {
            break;
        }
        assert_eq!(st, 503, "{body}");
        assert!(Instant::now() < deadline, "the gateway did not reconnect");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Every pooled connection works again.
    for r in concurrent(&s.base, 8, "gw_reconnect").await {
        assert_eq!(r.0, 200, "{}", r.1);
    }
    assert_eq!(s.get("/health").await.0, 200);
}

/// `n` FIND requests at once.
async fn concurrent(base: &str, n: usize, space: &'static str) -> Vec<(u16, serde_json::Value)> {
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let req = client()
                .post(format!("{base}/kip"))
                .header("X-KIP-Space", space)
                .json(&json!({"method": "execute_kip", "params": find_people()}));
            tokio::spawn(send(req))
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn sigterm_drains_requests_in_flight() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_drain_test").await;
    let mut s = Server::start(&url, &["--pool-size", "2"], &[]).await;
    let sp = "gw_shutdown";
    assert_eq!(s.kip_as(None, Some(sp), "execute_kip", find_people()).await.0, 200);
    let lock = lock_concepts(&url).await;
    // A request that waits on the lock...
    let base = s.base.clone();
    let in_flight = tokio::spawn(async move {
        let req = client()
            .post(format!("{base}/kip"))
            .header("X-KIP-Space", sp)
            .json(&json!({"method": "execute_kip", "params": find_people()}));
        send(req).await
    });
    wait_for_a_call_on_the_lock(&url).await;
    // ...is still answered after SIGTERM, while new connections are refused.
    s.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(reqwest::Client::new().get(&s.base).send().await.is_err(), "new connections must be refused while draining");
    assert!(!in_flight.is_finished());
    lock.batch_execute("ROLLBACK").await.unwrap();
    let (st, body) = in_flight.await.unwrap();
    assert_eq!(st, 200, "{body}");
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(0), "{}", s.log());
    assert!(s.log().contains("shutdown requested"));
    drop(s);
    drop_database(&shared, "kip_gw_drain_test").await;
}

/// Warm a gateway up: the first call on a new connection loads the
/// extension, which may itself take longer than a short statement timeout.
async fn warm_up(s: &Server, space: &str) {
    let mut tries = 0;
    while s.kip_as(None, Some(space), "execute_kip", find_people()).await.0 != 200 {
        tries += 1;
        assert!(tries < 20, "FIND never succeeded");
    }
}

/// A link to Postgres that stops forwarding (a hung proxy, a dead network
/// path) is answered 503 once the statement timeout plus a margin has
/// passed, and its connection is discarded: with a pool of one, the next
/// call opens a new connection and succeeds. (The call hung until TCP gave
/// up, past every timeout, and the stalled connection went back to the pool.)
#[tokio::test]
async fn a_stalled_database_link_is_503_and_its_connection_discarded() {
    let url = db_or_skip!();
    let proxy = Proxy::start(pg_addr(&url)).await;
    let args = ["--pool-size", "1", "--statement-timeout-ms", "1000", "--log-retention-days", "0"];
    let s = Server::start(&url_via(&url, proxy.addr), &args, &[]).await;
    let sp = "gw_stall";
    warm_up(&s, sp).await;
    proxy.stall();
    let started = Instant::now();
    let got = s.kip_as(None, Some(sp), "execute_kip", find_people()).await;
    assert_error(&got, 503, "KIP_4003");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "answered after {took:?}");
    assert!(got.1["error"]["message"].as_str().unwrap().contains("did not answer"), "{}", got.1);
    warm_up(&s, sp).await;
}

/// SIGTERM waits for a call whose client already left (it runs on a task
/// of its own; its connection, closed by the client on its side only, stays
/// open for the answer, and a call whose connection went runs detached), so
/// its write is finished and logged before the process exits. (The process exited at once: the write
/// committed in Postgres afterwards, with no log line and no request-log row.)
#[tokio::test]
async fn sigterm_waits_for_calls_whose_client_left() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_left_drain_test").await;
    let mut s = Server::start(&url, &["--pool-size", "2"], &[("KIP_STATEMENT_TIMEOUT_MS", "4000")]).await;
    let sp = unique("gw_drain");
    warm_up(&s, &sp).await;
    let lock = lock_concepts(&url).await;
    let write = json!({"method": "execute_kip", "params": cmd(r#"UPSERT { CONCEPT ?p { {type: "Person", name: "Drained Write"} } }"#)});
    let gone = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    let sent = gone.post(format!("{}/kip", s.base)).header("X-KIP-Space", &sp).json(&write).send().await;
    assert!(sent.is_err(), "the client gave up before the answer");
    s.signal("TERM");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.wait_exit(Duration::from_millis(10)), None, "exited with a call in flight: {}", s.log());
    lock.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(0), "{}", s.log());
    let log = s.log();
    // The call is waited for, as a request of its connection (which the
    // gateway keeps open for the answer when the client only closed its
    // side) or as a call whose connection went: it ends, logged, before
    // the gateway stops.
    let ended = log.find("command=\"UPSERT\"").expect("the UPSERT is logged");
    assert!(ended < log.find("kip-server stopped").unwrap(), "{log}");
    let row = pg(&url)
        .await
        .query_one("SELECT count(*) FROM kip_gateway.request_log WHERE space = $1 AND command = 'UPSERT' AND status = 200", &[&sp])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1, "the call is in the request log");
    drop(s);
    drop_database(&shared, "kip_gw_left_drain_test").await;
}

/// A pool whose every connection is in use is "busy" (503 with
/// Retry-After), not "the database is unavailable".
#[tokio::test]
async fn a_busy_pool_is_told_from_an_unreachable_database() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_busy_test").await;
    let args = ["--pool-size", "1", "--pool-timeout-ms", "300", "--log-retention-days", "0"];
    let s = Server::start(&url, &args, &[]).await;
    let sp = unique("gw_busy");
    warm_up(&s, &sp).await;
    let lock = lock_concepts(&url).await;
    // The only connection waits on the lock...
    let held = {
        let req = client().post(format!("{}/kip", s.base)).header("X-KIP-Space", &sp).json(&json!({"method": "execute_kip", "params": find_people()}));
        tokio::spawn(send(req))
    };
    wait_for_a_call_on_the_lock(&url).await;
    // ...so health and other calls find the pool busy.
    let resp = client().get(format!("{}/health", s.base)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let health: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(health["status"], "busy", "{health}");
    assert!(health["error"]["message"].as_str().unwrap().contains("busy"), "{health}");
    assert_error(&s.kip_as(None, Some(&sp), "execute_kip", find_people()).await, 503, "KIP_4003");
    lock.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(held.await.unwrap().0, 200);
    assert_eq!(s.get("/health").await.0, 200);
    drop(s);
    drop_database(&shared, "kip_gw_busy_test").await;
}

/// A second SIGTERM stops the gateway at once (exit status 1), without
/// waiting out the grace period for a call held by a lock.
#[tokio::test]
async fn a_second_sigterm_stops_at_once() {
    // A database of its own: the lock would hold up the other tests' calls.
    let shared = db_or_skip!();
    let url = own_database(&shared, "kip_gw_second_term_test").await;
    let mut s = Server::start(&url, &["--pool-size", "2", "--shutdown-grace-secs", "60"], &[]).await;
    let sp = "gw_second_term";
    assert_eq!(s.kip_as(None, Some(sp), "execute_kip", find_people()).await.0, 200);
    let lock = lock_concepts(&url).await;
    let base = s.base.clone();
    let held = tokio::spawn(async move {
        let req = client().post(format!("{base}/kip")).header("X-KIP-Space", sp).json(&json!({"method": "execute_kip", "params": find_people()}));
        let _ = req.send().await;
    });
    wait_for_a_call_on_the_lock(&url).await;
    s.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.wait_exit(Duration::from_millis(10)), None, "the first SIGTERM drains: {}", s.log());
    s.signal("TERM");
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(1), "{}", s.log());
    assert!(s.log().contains("second shutdown signal"), "{}", s.log());
    lock.batch_execute("ROLLBACK").await.unwrap();
    let _ = held.await;
    drop(s);
    drop_database(&shared, "kip_gw_second_term_test").await;
}
