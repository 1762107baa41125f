//! Load: concurrent HTTP clients mixing reads and writes for a fixed time.
//!
//! `KIP_GATEWAY_LOAD_CLIENTS` (default 16) and `KIP_GATEWAY_LOAD_SECS`
//! (default 3) size it; `make soak` runs 64 clients for 30 s. With
//! `KIP_GATEWAY_PG_RESTART` set to a shell command that restarts Postgres,
//! a second run restarts it under load: requests may then fail with 503
//! (and only 503) until the gateway has reconnected, and must all succeed
//! again afterwards. Latency percentiles are printed (`--nocapture`).

use crate::db_or_skip;
use crate::support::*;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Sample {
    start: Duration,
    latency: Duration,
    status: u16,
}

/// Run `clients` loops for `secs` seconds against `s`; returns every request.
async fn run_load(s: &Server, clients: u64, secs: u64, space: &str) -> Vec<Sample> {
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(secs);
    let http = client();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, url, space) = (http.clone(), format!("{}/kip", s.base), space.to_string());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            let mut i = 0u64;
            while Instant::now() < end {
                // Two reads for each write; each client writes its own concepts.
                let body = match i % 3 {
                    0 => json!({"method": "execute_kip", "params": {
                        "command": "UPSERT { CONCEPT ?p { {type: \"Person\", name: :n} SET ATTRIBUTES { visits: :i } } }",
                        "parameters": {"n": format!("load_{c}_{}", i % 20), "i": i}}}),
                    1 => json!({"method": "execute_kip_readonly", "params": {
                        "command": "FIND(?p.name, ?p.attributes.visits) WHERE { ?p {type: \"Person\"} FILTER(?p.name == :n) }",
                        "parameters": {"n": format!("load_{c}_{}", (i + 7) % 20)}}}),
                    _ => json!({"method": "execute_kip_readonly", "params": {
                        "command": "FIND(COUNT(?p)) WHERE { ?p {type: \"Person\"} FILTER(STARTS_WITH(?p.name, \"load_\")) }"}}),
                };
                let start = t0.elapsed();
                let status = match http.post(&url).header("X-KIP-Space", &space).json(&body).send().await {
                    Ok(r) => {
                        let st = r.status().as_u16();
                        let _ = r.bytes().await;
                        st
                    }
                    Err(_) => 0, // transport error: counted as a failure
                };
                out.push(Sample { start, latency: t0.elapsed() - start, status });
                i += 1;
            }
            out
        }));
    }
    let mut samples = Vec::new();
    for t in tasks {
        samples.extend(t.await.unwrap());
    }
    samples
}

fn report(label: &str, samples: &[Sample], secs: u64) {
    let mut lat: Vec<f64> = samples.iter().filter(|s| s.status == 200).map(|s| s.latency.as_secs_f64() * 1000.0).collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| lat.get(((lat.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    let mut by_status = std::collections::BTreeMap::new();
    for s in samples {
        *by_status.entry(s.status).or_insert(0u64) += 1;
    }
    println!(
        "{label}: {} requests in {secs}s ({:.0}/s), p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, statuses {by_status:?}",
        samples.len(),
        samples.len() as f64 / secs as f64,
        pct(0.50),
        pct(0.99),
        lat.last().copied().unwrap_or(f64::NAN),
    );
}

#[tokio::test]
async fn mixed_load_has_no_5xx() {
    let url = db_or_skip!();
    let clients = env_or("KIP_GATEWAY_LOAD_CLIENTS", 16);
    let secs = env_or("KIP_GATEWAY_LOAD_SECS", 3);
    let s = Server::start(&url, &["--log-retention-days", "1"], &[]).await;
    let space = "gw_load";
    assert_eq!(s.kip_as(None, Some(space), "execute_kip", cmd("DESCRIBE PRIMER")).await.0, 200);

    let samples = run_load(&s, clients, secs, space).await;
    report(&format!("{clients} clients"), &samples, secs);
    let failed: Vec<u16> = samples.iter().map(|s| s.status).filter(|&st| st != 200).collect();
    assert!(failed.is_empty(), "non-200 answers under load: {failed:?}");
    assert!(samples.len() as u64 >= clients, "every client got at least one answer");
    // The pool is intact afterwards.
    assert_eq!(s.get("/health").await.0, 200);

    let Ok(restart) = std::env::var("KIP_GATEWAY_PG_RESTART") else {
        println!("Postgres restart under load: skipped (set KIP_GATEWAY_PG_RESTART to a restart command)");
        return;
    };
    // Restart Postgres a few seconds into a second run.
    let secs = secs.max(15);
    let window = Arc::new(std::sync::Mutex::new((Duration::MAX, Duration::ZERO)));
    let t0 = Instant::now();
    let restarter = {
        let window = window.clone();
        tokio::task::spawn_blocking(move || {
            std::thread::sleep(Duration::from_secs(3));
            let begin = t0.elapsed();
            let ok = std::process::Command::new("sh").arg("-c").arg(&restart).status().map(|s| s.success()).unwrap_or(false);
            *window.lock().unwrap() = (begin, t0.elapsed());
            ok
        })
    };
    let samples = run_load(&s, clients, secs, space).await;
    assert!(restarter.await.unwrap(), "the restart command failed");
    let (begin, end) = *window.lock().unwrap();
    report(&format!("{clients} clients, Postgres restarted at {:.1}s-{:.1}s", begin.as_secs_f64(), end.as_secs_f64()), &samples, secs);
    // Requests started within 5 s of the end of the restart may be 503; none may be another error.
    let settle = end + Duration::from_secs(5);
    for smp in &samples {
        let in_window = smp.start + smp.latency >= begin && smp.start <= settle;
        match (smp.status, in_window) {
            (200, _) => {}
            (503, true) => {}
            (st, _) => panic!("status {st} at {:.2}s (restart window {begin:?}..{settle:?})", smp.start.as_secs_f64()),
        }
    }
    assert!(samples.iter().any(|smp| smp.start > settle && smp.status == 200), "no success after the restart");
    assert_eq!(s.get("/health").await.0, 200);
}
