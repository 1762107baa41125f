//! Write-throughput benchmark: UPSERT of Event capsules of the Brain
//! Formation shape (an Event with 5 attributes and 3 links, plus the Domain
//! and Person blocks it references), one client, one capsule per
//! kip_execute call. Prints capsules per second; asserts nothing.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-write-bench [-- <count>]
//!
//! `KIP_BENCH_ASYNC_COMMIT=1` runs the session with `synchronous_commit =
//! off`, which shows how much of the time is the WAL flush of each commit.

use kip_integration_tests::{connect, fresh_space, kip};
use serde_json::json;
use std::time::Instant;

const CAPSULE: &str = r#"UPSERT {
  CONCEPT ?domain { {type: "Domain", name: :domain} }
  CONCEPT ?participant {
    {type: "Person", name: :participant_id}
    SET ATTRIBUTES { person_class: "Human" }
  }
  CONCEPT ?event {
    {type: "Event", name: :event_name}
    SET ATTRIBUTES {
      event_class: "Conversation",
      start_time: :timestamp,
      participants: :participants,
      content_summary: :summary,
      outcome: :outcome
    }
    SET PROPOSITIONS {
      ("belongs_to_domain", ?domain)
      ("involves", ?participant)
      ("involves", {type: "Person", name: "$self"})
    }
  }
  WITH METADATA { memory_tier: "short-term", expires_at: :expires_at }
}
WITH METADATA { source: :source, author: "$self", confidence: 0.9, created_at: :timestamp, observed_at: :timestamp }"#;

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    format!("{cpu}, {cores} cores")
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut c = connect();
    let space = fresh_space(&mut c, "bench_write");
    let async_commit = std::env::var("KIP_BENCH_ASYNC_COMMIT").is_ok_and(|v| v == "1");
    if async_commit {
        c.batch_execute("SET synchronous_commit = off").expect("set synchronous_commit");
    }
    kip(&mut c, "DESCRIBE PRIMER", json!({})); // bootstrap outside the timing
    let mut latencies = Vec::with_capacity(count);
    let start = Instant::now();
    for i in 0..count {
        let minute = i % 60;
        let hour = (i / 60) % 24;
        let day = 1 + (i / 1440) % 28;
        let timestamp = format!("2026-07-{day:02}T{hour:02}:{minute:02}:00Z");
        let params = json!({
            "domain": format!("Topic{}", i % 10),
            "participant_id": format!("user_{}", i % 50),
            "event_name": format!("Conversation:{timestamp}:topic_{i}"),
            "timestamp": timestamp,
            "participants": ["$self", format!("user_{}", i % 50)],
            "summary": format!("User {} discussed topic {} with the agent; decisions were recorded.", i % 50, i),
            "outcome": "User satisfied",
            "expires_at": "2026-10-01T00:00:00Z",
            "source": format!("conversation:{i}"),
        });
        let t = Instant::now();
        let out = kip(&mut c, CAPSULE, params);
        latencies.push(t.elapsed());
        if out.get("error").is_some() {
            panic!("capsule {i} failed: {out}");
        }
    }
    let elapsed = start.elapsed();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p) as usize];
    println!(
        "write benchmark: {count} Event capsules (3 concept blocks, 5 attributes, 3 links each), 1 client, one commit per capsule (synchronous_commit {}), space {space}",
        if async_commit { "off" } else { "on" }
    );
    println!("  total {:.2} s -> {:.0} capsules/s", elapsed.as_secs_f64(), count as f64 / elapsed.as_secs_f64());
    println!("  latency p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms", pct(0.5).as_secs_f64() * 1e3, pct(0.95).as_secs_f64() * 1e3, pct(0.99).as_secs_f64() * 1e3);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("  machine: {} (load average at end: {})", machine(), load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
}
