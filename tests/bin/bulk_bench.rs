//! Bulk KML benchmark: UPDATE, DELETE ATTRIBUTES and DELETE CONCEPT … DETACH
//! over 10,000 and 100,000 matches, one `kip_execute` call each, and then
//! a few commands touching few rows of the same spaces (`small_commands`). Prints the
//! time of each command and the peak private memory of the backend while it
//! ran (sampled from /proc every 2 ms), to show that the memory does not grow
//! with the number of matches beyond what Postgres itself needs to update
//! that many rows: the same UPDATE written by hand in SQL, on the same rows
//! and triggers, is measured first as the baseline. Asserts nothing.
//!
//!     cargo run --release -p kip-integration-tests --bin kip-bulk-bench
//!
//! Each size gets a fresh space: `size` Items (attribute `n`), each filed
//! under one of 10 domains by a `belongs_to_domain` link, loaded with SQL.

use kip_integration_tests::{connect, fresh_space, kip, use_space};
use postgres::Client;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `RssAnon` of process `pid` in kB: the backend's private memory (shared
/// buffers are not counted, so reading many pages does not show up here).
fn rss_anon_kb(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run `f`, sampling the private memory of backend `pid` every 2 ms
/// meanwhile; returns f's result, the elapsed time and the peak in kB.
fn sampled<T>(pid: i32, f: impl FnOnce() -> T) -> (T, Duration, u64) {
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(rss_anon_kb(pid).unwrap_or(0)));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(kb) = rss_anon_kb(pid) {
                    peak.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let t = Instant::now();
    let out = f();
    let elapsed = t.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler thread");
    (out, elapsed, peak.load(Ordering::Relaxed))
}

/// A fresh backend in `space` (so its peak memory is the next command's),
/// its pid and its private memory now, in kB.
fn backend(space: &str) -> (Client, i32, u64) {
    let mut c = connect();
    use_space(&mut c, space);
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).expect("backend pid").get(0);
    kip(&mut c, "FIND(?d.name) WHERE { ?d {type: \"Domain\"} } LIMIT 1", json!({}));
    let before = rss_anon_kb(pid).unwrap_or(0);
    (c, pid, before)
}

fn row(size: i64, name: &str, elapsed: Duration, peak: u64, before: u64) {
    println!(
        "| {size} | {name} | {:.2} s | {:.0}/s | {:.1} MB ({:.1} MB) |",
        elapsed.as_secs_f64(),
        size as f64 / elapsed.as_secs_f64(),
        peak as f64 / 1024.0,
        before as f64 / 1024.0
    );
}

fn load(c: &mut Client, space: &str, size: i64) {
    let out = kip(
        c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Item"} SET ATTRIBUTES { description: "a bench item" } } }"#,
        json!({}),
    );
    assert!(out.get("error").is_none(), "{out}");
    // The space name comes from fresh_space (test code), not user input.
    c.batch_execute(&format!(
        "INSERT INTO kip.concepts (space, type, name) SELECT '{space}', 'Domain', 'Area' || g FROM generate_series(0, 9) g;
         INSERT INTO kip.concepts (space, type, name, attributes)
           SELECT '{space}', 'Item', 'item' || g, jsonb_build_object('n', g) FROM generate_series(1, {size}) g;
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{space}', i.id, 'belongs_to_domain', d.id
           FROM kip.concepts i JOIN kip.concepts d ON d.space = i.space AND d.type = 'Domain' AND d.name = 'Area' || (i.id % 10)
           WHERE i.space = '{space}' AND i.type = 'Item';
         ANALYZE kip.concepts; ANALYZE kip.propositions;"
    ))
    .expect("load the items");
}

/// The median of `runs` timings of `f(i)`, `i` the run's number.
fn median(runs: usize, mut f: impl FnMut(usize)) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

/// Commands that touch a few rows of a large space, where a cost that grew
/// with the table rather than with the rows touched would show: a DELETE
/// of one concept (its cascade step once sized a hash table for millions
/// of links, 50 ms a call), the decay formula over 100 matches (its nested
/// functions were once copied into the plan at every level), and the
/// maintenance cycle (its duplicate search once compared names pair by
/// pair). Medians; rows of a second table.
fn small_commands(c: &mut Client, space: &str, size: i64) -> Vec<String> {
    let mut rows = Vec::new();
    let mut report = |name: &str, runs: usize, t: Duration| {
        rows.push(format!("| {size} | {name} | {runs} | {:.2} ms |", t.as_secs_f64() * 1000.0));
    };
    let t = median(31, |i| {
        let out = kip(c, &format!(r#"DELETE CONCEPT ?x DETACH WHERE {{ ?x {{type: "Item", name: "item{}"}} }}"#, i + 1), json!({}));
        assert!(out.get("error").is_none(), "{out}");
    });
    report("DELETE CONCEPT DETACH of one named concept", 31, t);
    let decay = r#"UPDATE ?x SET ATTRIBUTES { score: CLAMP(MUL(COALESCE(?x.attributes.score, 1), 0.95), 0.05, 1) } WHERE { ?x {type: "Item"} } LIMIT 100"#;
    let t = median(11, |_| {
        let out = kip(c, decay, json!({}));
        assert!(out.get("error").is_none(), "{out}");
    });
    report("UPDATE with CLAMP(MUL(COALESCE(…))), 100 matches", 11, t);
    let t = median(3, |_| {
        c.query_one("SELECT kip_maintenance($1::text)", &[&space]).expect("kip_maintenance");
    });
    report("kip_maintenance cycle of the space", 3, t);
    rows
}

fn main() {
    let _awake = kip_integration_tests::hold_cpus_awake();
    let mut setup = connect();
    println!("bulk KML: one kip_execute call per command, durable commit; peak = the backend's private memory (RssAnon) while the command ran");
    println!("| matches | command | time | rate | backend peak (before) |");
    println!("|---|---|---|---|---|");
    let mut small = Vec::new();
    for size in [10_000i64, 100_000] {
        let space = fresh_space(&mut setup, "bench_bulk");
        load(&mut setup, &space, size);
        {
            let (mut c, _, _) = backend(&space);
            small.extend(small_commands(&mut c, &space, size));
        }
        let (mut c, pid, before) = backend(&space);
        let update = format!("UPDATE kip.concepts SET attributes = attributes || '{{\"level\": 1}}' WHERE space = '{space}' AND type = 'Item'");
        let (done, elapsed, peak) = sampled(pid, || c.batch_execute(&update));
        done.expect("hand-written UPDATE");
        row(size, "hand-written SQL UPDATE (baseline)", elapsed, peak, before);
        let commands = [
            ("UPDATE SET ATTRIBUTES", r#"UPDATE ?x SET ATTRIBUTES { level: 2, n2: ADD(?x.attributes.n, 1) } WHERE { ?x {type: "Item"} }"#),
            ("DELETE ATTRIBUTES", r#"DELETE ATTRIBUTES {"level"} FROM ?x WHERE { ?x {type: "Item"} }"#),
            ("DELETE CONCEPT DETACH", r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Item"} }"#),
        ];
        for (name, command) in commands {
            let (mut c, pid, before) = backend(&space);
            let (out, elapsed, peak) = sampled(pid, || kip(&mut c, command, json!({})));
            assert!(out.get("error").is_none(), "{command}: {out}");
            row(size, name, elapsed, peak, before);
            eprintln!("  {name}: {}", out["result"]);
        }
        setup.batch_execute(&format!("SELECT kip_drop_space('{space}')")).ok();
    }
    println!();
    println!("small commands on the same spaces (median of the runs)");
    println!("| items | command | runs | median |");
    println!("|---|---|---|---|");
    for row in small {
        println!("{row}");
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
}
