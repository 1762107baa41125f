//! Crash: a capsule (one UPSERT through one `kip_execute`) is atomic and
//! durable across crashes.
//!
//! 1. `kill -9` of the backend in the middle of a large capsule: the
//!    postmaster resets every session and replays the WAL.
//! 2. `pg_ctl stop -m immediate` (scripts/cluster.sh crash) while several
//!    clients stream capsules, then a restart (scripts/cluster.sh start).
//!
//! After each, every capsule is either entirely present (all its concepts
//! and links) or entirely absent; every acknowledged capsule is present; and
//! the capsules found are exactly the acknowledged ones plus, possibly, the
//! one each client had in flight when its connection died (its commit may
//! have reached the WAL before the acknowledgement reached the client). The
//! capsule killed in part 1 was still running, so it must be absent. The
//! server log of the window may only show the expected SIGKILL.
//!
//! This suite resets every session of the cluster: run it alone.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-reliability-crash
//!
//! `KIP_CRASH_ROUNDS` (rounds of each part, default 1), `KIP_CRASH_LARGE`
//! (concepts of the killed capsule, default 3000), `KIP_CRASH_STREAM_CLIENTS`
//! (default 4), `KIP_CRASH_STREAM_MS` (stream time before the stop, default
//! 2000). Uses (and recreates) the database `kip_reliability_crash`.

use kip_integration_tests::reliability::{call, connect_db, drop_database, env_u64, fresh_database, wait_until_up, Call, ServerLog};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DB: &str = "kip_reliability_crash";

const SETUP: &str = r#"UPSERT {
  CONCEPT ?t { {type: "$ConceptType", name: "CrashItem"} SET ATTRIBUTES { description: "An element of a crash-test capsule" } }
  CONCEPT ?p { {type: "$PropositionType", name: "crash_next"} SET ATTRIBUTES { description: "Chains the items of one capsule" } }
}"#;

/// A capsule of `size` concepts tagged `tag`, chained by `size - 1` links.
fn capsule(tag: &str, size: usize) -> String {
    let mut s = String::with_capacity(size * 120);
    s.push_str("UPSERT {\n");
    for j in 0..size {
        s.push_str(&format!(r#"  CONCEPT ?c{j} {{ {{type: "CrashItem", name: "{tag}-{j}"}} SET ATTRIBUTES {{ capsule: "{tag}", position: {j} }}"#));
        if j > 0 {
            s.push_str(&format!(r#" SET PROPOSITIONS {{ ("crash_next", ?c{}) }}"#, j - 1));
        }
        s.push_str(" }\n");
    }
    s.push_str("}\nWITH METADATA { source: \"crash-test\" }");
    s
}

fn scripts_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

fn cluster(action: &str) {
    let status = Command::new("bash").arg(scripts_dir().join("cluster.sh")).arg(action).status().expect("run scripts/cluster.sh");
    assert!(status.success(), "scripts/cluster.sh {action} failed");
}

/// SIGKILL to a server process (as ourselves, else as the postgres user).
fn kill9(pid: i32) {
    let pid = pid.to_string();
    let ok = Command::new("kill").args(["-9", &pid]).status().is_ok_and(|s| s.success())
        || Command::new("sudo").args(["-n", "-u", "postgres", "kill", "-9", &pid]).status().is_ok_and(|s| s.success());
    assert!(ok, "could not kill -9 backend {pid}");
}

/// What a capsule writer knows: capsules acknowledged, and the one whose
/// connection died before an answer (outcome unknown to the client).
#[derive(Default)]
struct Ledger {
    sizes: BTreeMap<String, usize>,
    acked: BTreeSet<String>,
    in_flight: BTreeSet<String>,
}

/// Tags found in the database: (concepts, links) per capsule.
fn found(db: &str) -> BTreeMap<String, (i64, i64)> {
    let mut c = connect_db(db);
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for row in c
        .query("SELECT attributes->>'capsule', count(*) FROM kip.concepts WHERE type = 'CrashItem' GROUP BY 1", &[])
        .expect("count capsule concepts")
    {
        out.entry(row.get(0)).or_default().0 = row.get(1);
    }
    for row in c
        .query(
            "SELECT s.attributes->>'capsule', count(*) FROM kip.propositions p
               JOIN kip.concepts s ON s.id = p.subject_concept
               JOIN kip.concepts o ON o.id = p.object_concept
              WHERE p.predicate = 'crash_next' AND s.attributes->>'capsule' = o.attributes->>'capsule'
              GROUP BY 1",
            &[],
        )
        .expect("count capsule links")
    {
        out.entry(row.get(0)).or_default().1 = row.get(1);
    }
    out
}

/// Checks the ledger against the database; returns failures.
fn verify(part: &str, prefix: &str, ledger: &Ledger, must_be_absent: &BTreeSet<String>) -> Vec<String> {
    let mut failures = Vec::new();
    // This part's capsules (tags start with its prefix).
    let present: BTreeMap<String, (i64, i64)> = found(DB).into_iter().filter(|(t, _)| t.starts_with(prefix)).collect();
    let mut in_flight_committed = 0;
    for (tag, (concepts, links)) in &present {
        let Some(&size) = ledger.sizes.get(tag) else {
            failures.push(format!("{part}: capsule {tag} was never sent"));
            continue;
        };
        if *concepts != size as i64 || *links != size as i64 - 1 {
            failures.push(format!("{part}: capsule {tag} is partial: {concepts}/{size} concepts, {links}/{} links", size - 1));
        }
        if !ledger.acked.contains(tag) {
            if ledger.in_flight.contains(tag) && !must_be_absent.contains(tag) {
                in_flight_committed += 1;
            } else {
                failures.push(format!("{part}: capsule {tag} is present but was not acknowledged"));
            }
        }
    }
    for tag in &ledger.acked {
        if !present.contains_key(tag) {
            failures.push(format!("{part}: acknowledged capsule {tag} is missing"));
        }
    }
    let whole = present.iter().filter(|(t, (c, _))| ledger.sizes.get(*t).is_some_and(|s| *c == *s as i64)).count();
    println!(
        "crash: {part}: {} capsules sent, {} acknowledged, {} found ({whole} whole), {} in flight at the crash ({in_flight_committed} of them committed)",
        ledger.sizes.len(),
        ledger.acked.len(),
        present.len(),
        ledger.in_flight.len()
    );
    if present.len() != ledger.acked.len() + in_flight_committed {
        failures.push(format!("{part}: found {} capsules, acknowledged {} (+{in_flight_committed} in flight)", present.len(), ledger.acked.len()));
    }
    failures
}

/// Part 1: kill -9 the backend writing a large capsule.
fn kill_round(round: u64, large: usize, ledger: &mut Ledger, killed: &mut BTreeSet<String>) -> Vec<String> {
    let mut failures = Vec::new();
    // A few small capsules acknowledged before the kill, and one large one
    // to learn how long a large capsule takes.
    let mut c = connect_db(DB);
    for i in 0..3 {
        let tag = format!("k{round}-small{i}");
        ledger.sizes.insert(tag.clone(), 10);
        match call(&mut c, &capsule(&tag, 10), &json!({})) {
            Call::Envelope(e) if e.get("result").is_some() => {
                ledger.acked.insert(tag);
            }
            other => failures.push(format!("small capsule {tag}: {other:?}")),
        }
    }
    let tag = format!("k{round}-calibration");
    ledger.sizes.insert(tag.clone(), large);
    let t = Instant::now();
    match call(&mut c, &capsule(&tag, large), &json!({})) {
        Call::Envelope(e) if e.get("result").is_some() => {
            ledger.acked.insert(tag);
        }
        other => failures.push(format!("large capsule {tag}: {other:?}")),
    }
    let duration = t.elapsed();

    let tag = format!("k{round}-killed");
    ledger.sizes.insert(tag.clone(), large);
    let text = capsule(&tag, large);
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let writer = std::thread::spawn(move || {
        let t = Instant::now();
        (call(&mut c, &text, &json!({})), t.elapsed())
    });
    // Kill it at about a third of its expected duration, once it is
    // visibly running.
    let mut monitor = connect_db(DB);
    let wait_from = Instant::now();
    loop {
        let active: Option<bool> = monitor
            .query_opt("SELECT state = 'active' AND query LIKE '%kip_execute%' FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .unwrap()
            .map(|r| r.get(0));
        if active == Some(true) {
            break;
        }
        assert!(wait_from.elapsed() < Duration::from_secs(10), "the large capsule never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(duration / 3);
    let still: Option<bool> = monitor
        .query_opt("SELECT state = 'active' FROM pg_stat_activity WHERE pid = $1", &[&pid])
        .unwrap()
        .map(|r| r.get(0));
    kill9(pid);
    let (outcome, took) = writer.join().expect("writer thread");
    match outcome {
        Call::Lost(_) => {
            ledger.in_flight.insert(tag.clone());
            if still == Some(true) {
                killed.insert(tag.clone());
            }
        }
        Call::Envelope(e) if e.get("result").is_some() => {
            println!("crash: the large capsule finished before the kill ({took:?}); round {round} does not test a kill mid-capsule");
            ledger.acked.insert(tag);
        }
        other => failures.push(format!("killed capsule: expected a lost connection, got {other:?}")),
    }
    let back = wait_until_up(DB, Duration::from_secs(120));
    println!(
        "crash: kill -9 round {round}: large capsule of {large} concepts takes {:.0} ms, killed after {:.0} ms, cluster answering again after {:.1} s",
        duration.as_secs_f64() * 1e3,
        took.as_secs_f64() * 1e3,
        back.as_secs_f64()
    );
    failures
}

/// Part 2: capsules streamed by several clients, then an immediate stop.
fn stop_round(round: u64, clients: usize, stream_ms: u64, ledger: &mut Ledger) -> Vec<String> {
    let shared = Arc::new(Mutex::new(Ledger::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let unexpected = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..clients)
        .map(|w| {
            let (shared, stop, unexpected) = (shared.clone(), stop.clone(), unexpected.clone());
            std::thread::spawn(move || {
                let mut c = connect_db(DB);
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let tag = format!("s{round}-w{w}-{i}");
                    let size = 20 + (i * 7 + w * 13) % 60;
                    shared.lock().unwrap().sizes.insert(tag.clone(), size);
                    match call(&mut c, &capsule(&tag, size), &json!({})) {
                        Call::Envelope(e) if e.get("result").is_some() => {
                            shared.lock().unwrap().acked.insert(tag);
                        }
                        Call::Lost(_) => {
                            shared.lock().unwrap().in_flight.insert(tag);
                            return;
                        }
                        other => {
                            unexpected.lock().unwrap().push(format!("{tag}: {other:?}"));
                            return;
                        }
                    }
                    i += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(stream_ms));
    cluster("crash");
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("stream writer");
    }
    cluster("start");
    let back = wait_until_up(DB, Duration::from_secs(120));
    let mut part = shared.lock().unwrap();
    println!("crash: immediate stop round {round}: {clients} writers for {stream_ms} ms, restarted and answering after {:.1} s", back.as_secs_f64());
    ledger.sizes.append(&mut part.sizes);
    ledger.acked.append(&mut part.acked);
    ledger.in_flight.append(&mut part.in_flight);
    let unexpected = unexpected.lock().unwrap().clone();
    unexpected
}

fn main() {
    let rounds = env_u64("KIP_CRASH_ROUNDS", 1);
    let large = env_u64("KIP_CRASH_LARGE", 3000) as usize;
    let clients = env_u64("KIP_CRASH_STREAM_CLIENTS", 4) as usize;
    let stream_ms = env_u64("KIP_CRASH_STREAM_MS", 2000);
    let start = Instant::now();
    fresh_database(DB);
    let mut setup = connect_db(DB);
    match call(&mut setup, SETUP, &json!({})) {
        Call::Envelope(e) if e.get("result").is_some() => {}
        other => panic!("crash setup failed: {other:?}"),
    }
    drop(setup);
    let mut failures = Vec::new();

    // Part 1.
    let log = ServerLog::mark();
    let mut ledger = Ledger::default();
    let mut killed = BTreeSet::new();
    for round in 0..rounds {
        failures.extend(kill_round(round, large, &mut ledger, &mut killed));
    }
    failures.extend(verify("kill -9", "k", &ledger, &killed));
    let lines = log.crash_lines();
    let sigkills = lines.iter().filter(|l| l.contains("terminated by signal 9")).count();
    if sigkills < killed.len() {
        failures.push(format!("the server log shows {sigkills} SIGKILLed backends, expected {}", killed.len()));
    }
    for l in lines.iter().filter(|l| l.contains("terminated by") && !l.contains("signal 9")) {
        failures.push(format!("unexpected crash: {l}"));
    }

    // Part 2.
    let log = ServerLog::mark();
    let mut ledger2 = Ledger::default();
    for round in 0..rounds {
        failures.extend(stop_round(round, clients, stream_ms, &mut ledger2));
    }
    failures.extend(verify("immediate stop", "s", &ledger2, &BTreeSet::new()));
    for l in log.crash_lines().iter().filter(|l| l.contains("terminated by")) {
        failures.push(format!("unexpected crash: {l}"));
    }

    // The cluster is healthy for whatever runs next.
    let mut c = connect_db(DB);
    let ok: i32 = c.query_one("SELECT 1", &[]).expect("cluster answers").get(0);
    assert_eq!(ok, 1);
    println!("crash: finished in {:.1} s", start.elapsed().as_secs_f64());
    if !failures.is_empty() {
        eprintln!("crash: FAILED\n- {}", failures.join("\n- "));
        std::process::exit(1);
    }
    drop_database(DB);
    println!("crash: passed");
}
