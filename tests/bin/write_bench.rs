//! Write-throughput benchmark: UPSERT of Event capsules of the Brain
//! Formation shape (an Event with 5 attributes and 3 links, plus the Domain
//! and Person blocks it references), one client, one capsule per
//! kip_execute call. Prints capsules per second; asserts nothing.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-write-bench [-- <count>]
//!
//! `KIP_BENCH_ASYNC_COMMIT=1` runs the session with `synchronous_commit =
//! off`, which shows how much of the time is the WAL flush of each commit.
//! `KIP_BENCH_HISTORY=compare` measures the cost of the history: the same
//! capsules with `kip.history` off and on, in alternating rounds.
//! `kip-write-bench scale` measures the capsule rate by memory size: four
//! spaces filled with SQL to 10^3, 10^4, 10^5 and 10^6 elements (concepts
//! plus links), then 1,000 capsules each in alternating rounds.
//! `kip-write-bench hand [<count>]` sets the capsules beside the same writes
//! as one hand-written SQL statement per capsule, on the same tables, and
//! checks that both wrote the same memory.

use kip_integration_tests::{connect, fresh_space, kip, use_space};
use serde_json::json;
use std::time::{Duration, Instant};

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

/// The parameters of capsule `i`.
fn capsule_params(i: usize) -> serde_json::Value {
    let minute = i % 60;
    let hour = (i / 60) % 24;
    let day = 1 + (i / 1440) % 28;
    let timestamp = format!("2026-07-{day:02}T{hour:02}:{minute:02}:00Z");
    json!({
        "domain": format!("Topic{}", i % 10),
        "participant_id": format!("user_{}", i % 50),
        "event_name": format!("Conversation:{timestamp}:topic_{i}"),
        "timestamp": timestamp,
        "participants": ["$self", format!("user_{}", i % 50)],
        "summary": format!("User {} discussed topic {} with the agent; decisions were recorded.", i % 50, i),
        "outcome": "User satisfied",
        "expires_at": "2026-10-01T00:00:00Z",
        "source": format!("conversation:{i}"),
    })
}

/// Write `count` capsules into `space` starting at capsule `from`; returns
/// the wall time and each call's latency.
fn write(c: &mut postgres::Client, from: usize, count: usize) -> (Duration, Vec<Duration>) {
    // Prepared once, as the gateway (`prepare_cached`) and kql-bench call
    // kip: an unnamed statement per call costs a round trip and a parse and
    // plan of the outer SELECT, the client's cost rather than kip's.
    let statement = c.prepare("SELECT kip_execute($1::text, $2::jsonb)").expect("prepare kip_execute");
    timed(from, count, |i| {
        let params = capsule_params(i);
        let t = Instant::now();
        let out: serde_json::Value = c.query_one(&statement, &[&CAPSULE, &params]).expect("kip_execute").get(0);
        let latency = t.elapsed();
        if out.get("error").is_some() {
            panic!("capsule {i} failed: {out}");
        }
        latency
    })
}

/// Run `one` for capsules `from..from + count`; returns the wall time and
/// the latency each call reports.
fn timed(from: usize, count: usize, mut one: impl FnMut(usize) -> Duration) -> (Duration, Vec<Duration>) {
    let start = Instant::now();
    let latencies = (from..from + count).map(&mut one).collect();
    (start.elapsed(), latencies)
}

/// The machine and its load, the last line of every report.
fn print_machine() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("  machine: {} (load average at end: {})", machine(), load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
}

/// The role of `KIP_BENCH_ROLE=writer`.
const WRITER: &str = "kip_bench_writer";

fn set_history(c: &mut postgres::Client, on: bool) {
    c.batch_execute(if on { "SET kip.history = on" } else { "SET kip.history = off" }).expect("set kip.history");
}

fn main() {
    let _awake = kip_integration_tests::hold_cpus_awake();
    let arg = std::env::args().nth(1);
    let mut c = connect();
    if arg.as_deref() == Some("scale") {
        return scale(&mut c);
    }
    if arg.as_deref() == Some("hand") {
        let count = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(5_000);
        return compare_hand(&mut c, count);
    }
    let count: usize = arg.and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let async_commit = std::env::var("KIP_BENCH_ASYNC_COMMIT").is_ok_and(|v| v == "1");
    if async_commit {
        c.batch_execute("SET synchronous_commit = off").expect("set synchronous_commit");
    }
    let commit = if async_commit { "off" } else { "on" };
    if std::env::var("KIP_BENCH_HISTORY").is_ok_and(|v| v == "compare") {
        return compare_history(&mut c, count, commit);
    }
    let space = fresh_space(&mut c, "bench_write");
    // KIP_BENCH_ROLE=writer: write as an application connects in
    // production, a member of kip_writer with a write grant on the space,
    // under row-level security, instead of as a superuser.
    let as_writer = std::env::var("KIP_BENCH_ROLE").is_ok_and(|v| v == "writer");
    if as_writer {
        c.batch_execute(&format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{WRITER}') THEN \
               CREATE ROLE {WRITER} NOLOGIN IN ROLE kip_writer; END IF; END $$"
        ))
        .expect("create the writer role");
        c.execute("SELECT kip_grant($1, $2::name, 'write')", &[&space, &WRITER]).expect("grant the space");
        c.batch_execute(&format!("SET ROLE {WRITER}")).expect("set role");
    }
    kip(&mut c, "DESCRIBE PRIMER", json!({})); // bootstrap outside the timing
    // KIP_BENCH_VECTORS=1: the Persons and Domains the capsules name carry
    // vectors, as the embedding worker leaves them in a live memory (each
    // capsule then updates two embedded concepts). The first 50 capsules
    // create them, outside the timing, and a fixed unit vector is stored.
    let vectors = std::env::var("KIP_BENCH_VECTORS").is_ok_and(|v| v == "1");
    let first = if vectors {
        write(&mut c, 0, 50);
        c.execute(
            "UPDATE kip.concepts SET embedding = array_fill(0.05103104, ARRAY[384])::real[]::vector WHERE space = $1",
            &[&space],
        )
        .expect("store vectors");
        50
    } else {
        0
    };
    let (elapsed, mut latencies) = write(&mut c, first, count);
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p) as usize];
    let embedded = format!(
        "{}{}",
        if vectors { ", the concepts they name embedded" } else { "" },
        if as_writer { "; as a kip_writer role" } else { "" }
    );
    println!(
        "write benchmark: {count} Event capsules (3 concept blocks, 5 attributes, 3 links each{embedded}), 1 client, one commit per capsule (synchronous_commit {commit}), space {space}"
    );
    println!("  total {:.2} s -> {:.0} capsules/s", elapsed.as_secs_f64(), count as f64 / elapsed.as_secs_f64());
    println!("  latency p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms", pct(0.5).as_secs_f64() * 1e3, pct(0.95).as_secs_f64() * 1e3, pct(0.99).as_secs_f64() * 1e3);
    print_machine();
}

/// `KIP_BENCH_HISTORY=compare`: the cost of the history. The same capsules
/// go to two spaces, one written with `kip.history = off` and one with it
/// on, in alternating rounds (so load changes on the machine hit both).
fn compare_history(c: &mut postgres::Client, count: usize, commit: &str) {
    const ROUNDS: usize = 10;
    let per_round = (count / ROUNDS).max(1);
    let spaces = [fresh_space(c, "bench_history_off"), fresh_space(c, "bench_history_on")];
    for space in &spaces {
        use_space(c, space);
        kip(c, "DESCRIBE PRIMER", json!({}));
    }
    let mut totals = [Duration::ZERO; 2];
    for round in 0..ROUNDS {
        for (mode, space) in spaces.iter().enumerate() {
            use_space(c, space);
            set_history(c, mode == 1);
            let (elapsed, _) = write(c, round * per_round, per_round);
            totals[mode] += elapsed;
        }
    }
    set_history(c, true);
    let n = (per_round * ROUNDS) as f64;
    let off = n / totals[0].as_secs_f64();
    let on = n / totals[1].as_secs_f64();
    println!(
        "history cost: {} Event capsules per mode in {ROUNDS} alternating rounds, 1 client, one commit per capsule (synchronous_commit {commit})",
        per_round * ROUNDS
    );
    println!("  kip.history = off: {off:.0} capsules/s");
    println!("  kip.history = on:  {on:.0} capsules/s ({:.0}% of off)", 100.0 * on / off);
    print_machine();
}

/// A capsule as hand-written SQL: the writes `kip_execute` makes for
/// [`CAPSULE`] (the same rows, attributes and metadata, merged into existing
/// rows the same way), as one statement in one round trip, on kip's tables
/// with their indexes, triggers, history and foreign keys. It knows what
/// kip works out per call: the blocks' order, that the Event is new, which
/// links go where, and where `$self` is.
const HAND_CAPSULE: &str = "\
WITH c AS ( \
    INSERT INTO kip.concepts AS c (space, type, name, attributes, metadata) \
    VALUES ($1, 'Domain', $2, '{}', $5::jsonb), \
           ($1, 'Person', $3, '{\"person_class\": \"Human\"}', $5::jsonb), \
           ($1, 'Event', $4, $6::jsonb, $7::jsonb) \
    ON CONFLICT (space, type, name) DO UPDATE \
        SET attributes = c.attributes || EXCLUDED.attributes, metadata = c.metadata || EXCLUDED.metadata \
    RETURNING id, type) \
INSERT INTO kip.propositions AS p (space, subject_concept, predicate, object_concept, metadata) \
SELECT $1, e.id, l.predicate, l.object, $7::jsonb \
FROM c e CROSS JOIN LATERAL (VALUES \
    ('belongs_to_domain', (SELECT id FROM c WHERE type = 'Domain')), \
    ('involves', (SELECT id FROM c WHERE type = 'Person')), \
    ('involves', (SELECT id FROM kip.concepts WHERE space = $1 AND type = 'Person' AND name = '$self')) \
) l(predicate, object) \
WHERE e.type = 'Event' \
ON CONFLICT (space, subject, predicate, object) DO UPDATE \
    SET attributes = p.attributes || EXCLUDED.attributes, metadata = p.metadata || EXCLUDED.metadata";

/// [`write`] as hand-written SQL ([`HAND_CAPSULE`]) into `space`.
fn write_hand(c: &mut postgres::Client, space: &str, from: usize, count: usize) -> (Duration, Vec<Duration>) {
    let statement = c.prepare(HAND_CAPSULE).expect("prepare the hand-written capsule");
    timed(from, count, |i| {
        let p = capsule_params(i);
        let text = |k: &str| p[k].as_str().expect("a text parameter").to_string();
        let capsule_metadata = json!({
            "source": p["source"], "author": "$self", "confidence": 0.9,
            "created_at": p["timestamp"], "observed_at": p["timestamp"],
        });
        let mut event_metadata = capsule_metadata.clone();
        event_metadata["memory_tier"] = json!("short-term");
        event_metadata["expires_at"] = p["expires_at"].clone();
        let event_attributes = json!({
            "event_class": "Conversation", "start_time": p["timestamp"], "participants": p["participants"],
            "content_summary": p["summary"], "outcome": p["outcome"],
        });
        let t = Instant::now();
        c.execute(
            &statement,
            &[&space, &text("domain"), &text("participant_id"), &text("event_name"), &capsule_metadata, &event_attributes, &event_metadata],
        )
        .expect("hand-written capsule");
        t.elapsed()
    })
}

/// What a space holds of the capsules, for comparing two spaces: the
/// Domains, Persons and Events with their attributes and metadata, and the
/// Events' links by endpoint names, with their metadata.
fn capsule_content(c: &mut postgres::Client, space: &str) -> Vec<String> {
    let concepts = c
        .query(
            "SELECT concat_ws(' ', type, name, attributes::text, metadata::text) FROM kip.concepts \
             WHERE space = $1 AND type IN ('Domain', 'Person', 'Event') ORDER BY type, name",
            &[&space],
        )
        .expect("read concepts");
    let links = c
        .query(
            "SELECT concat_ws(' ', s.name, p.predicate, o.name, p.attributes::text, p.metadata::text) \
             FROM kip.propositions p JOIN kip.concepts s ON s.id = p.subject_concept JOIN kip.concepts o ON o.id = p.object_concept \
             WHERE p.space = $1 AND s.type = 'Event' ORDER BY 1",
            &[&space],
        )
        .expect("read links");
    concepts.iter().chain(links.iter()).map(|r| r.get(0)).collect()
}

/// `kip-write-bench hand`: the capsules through `kip_execute` against the
/// same writes as hand-written SQL, in alternating rounds into two spaces;
/// then both spaces must hold the same memory.
fn compare_hand(c: &mut postgres::Client, count: usize) {
    const ROUNDS: usize = 10;
    let per_round = (count / ROUNDS).max(1);
    let spaces = [fresh_space(c, "bench_write_kip"), fresh_space(c, "bench_write_hand")];
    for space in &spaces {
        use_space(c, space);
        kip(c, "DESCRIBE PRIMER", json!({})); // bootstrap outside the timing
    }
    let mut totals = [Duration::ZERO; 2];
    let mut latencies: [Vec<Duration>; 2] = Default::default();
    for round in 0..ROUNDS {
        let from = round * per_round;
        use_space(c, &spaces[0]);
        let (elapsed, l) = write(c, from, per_round);
        totals[0] += elapsed;
        latencies[0].extend(l);
        let (elapsed, l) = write_hand(c, &spaces[1], from, per_round);
        totals[1] += elapsed;
        latencies[1].extend(l);
    }
    let (kip_content, hand_content) = (capsule_content(c, &spaces[0]), capsule_content(c, &spaces[1]));
    assert_eq!(kip_content.len(), hand_content.len(), "kip and the hand-written SQL wrote different numbers of rows");
    for (k, h) in kip_content.iter().zip(&hand_content) {
        assert_eq!(k, h, "kip and the hand-written SQL wrote different memories");
    }
    let n = (per_round * ROUNDS) as f64;
    let commit: String = c.query_one("SHOW synchronous_commit", &[]).expect("read synchronous_commit").get(0);
    println!(
        "kip against hand-written SQL: {} Event capsules each in {ROUNDS} alternating rounds, 1 client, synchronous_commit {commit}; both wrote the same {} rows",
        per_round * ROUNDS,
        kip_content.len()
    );
    for (label, (total, l)) in ["kip_execute", "hand-written SQL"].iter().zip(totals.iter().zip(latencies.iter_mut())) {
        l.sort();
        println!(
            "  {label:<16} {:>6.0} capsules/s, p50 {:.2} ms",
            n / total.as_secs_f64(),
            l[l.len() / 2].as_secs_f64() * 1e3
        );
    }
    println!("  kip's time / hand-written time: {:.2}", totals[0].as_secs_f64() / totals[1].as_secs_f64());
    print_machine();
}

/// Elements (concepts + links) of a space.
fn elements(c: &mut postgres::Client, space: &str) -> i64 {
    c.query_one(
        "SELECT (SELECT count(*) FROM kip.concepts WHERE space = $1) + (SELECT count(*) FROM kip.propositions WHERE space = $1)",
        &[&space],
    )
    .expect("count elements")
    .get(0)
}

/// Grow `space` to about `target` elements with Formation-like filler
/// written in SQL: Event concepts (the capsule's attributes), each filed
/// under one of the capsules' 10 domains and involving one of their 50
/// persons (one concept and two links per Event).
fn fill(c: &mut postgres::Client, space: &str, target: i64) {
    let missing = target - elements(c, space);
    if missing <= 0 {
        return;
    }
    let events = missing / 3;
    let start: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND name LIKE 'filler:%'", &[&space])
        .expect("count filler")
        .get(0);
    // `space` comes from fresh_space (test code); the numbers are computed here.
    c.batch_execute(&format!(
        "INSERT INTO kip.concepts (space, type, name, attributes, metadata)
           SELECT '{space}', 'Event', 'filler:' || g,
                  jsonb_build_object('event_class', 'Conversation', 'start_time', '2026-06-01T00:00:00Z',
                                     'participants', jsonb_build_array('$self', 'user_' || (g % 50)),
                                     'content_summary', 'User ' || (g % 50) || ' discussed filler topic ' || g || ' with the agent.',
                                     'outcome', 'User satisfied'),
                  jsonb_build_object('source', 'filler', 'author', '$self', 'confidence', 0.9, 'memory_tier', 'short-term')
           FROM generate_series({start}, {start} + {events} - 1) g;
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{space}', e.id, k.predicate, o.id
           FROM kip.concepts e
           CROSS JOIN (VALUES ('belongs_to_domain', 'Domain', 'Topic', 10), ('involves', 'Person', 'user_', 50)) AS k(predicate, type, prefix, modulo)
           JOIN kip.concepts o ON o.space = e.space AND o.type = k.type
             AND o.name = k.prefix || (substr(e.name, 8)::bigint % k.modulo)
           WHERE e.space = '{space}' AND e.type = 'Event' AND e.name LIKE 'filler:%'
             AND substr(e.name, 8)::bigint >= {start};
         ANALYZE kip.concepts; ANALYZE kip.propositions;"
    ))
    .expect("fill the space");
}

/// A memory in steady use is vacuumed; without this, autovacuum's pass over
/// the filler would compete with the measurement.
fn vacuum(c: &mut postgres::Client) {
    c.batch_execute("VACUUM kip.concepts").expect("vacuum concepts");
    c.batch_execute("VACUUM kip.propositions").expect("vacuum propositions");
}

/// `kip-write-bench scale`: the capsule rate at 10^3 … 10^6 elements. One
/// space per size, filled first; then rounds of capsules go to each space in
/// turn, so the host's load drifting over the run hits every size alike.
fn scale(c: &mut postgres::Client) {
    const ROUNDS: usize = 5;
    const PER_ROUND: usize = 200;
    const SIZES: [i64; 4] = [1_000, 10_000, 100_000, 1_000_000];
    let mut spaces = Vec::new();
    for size in SIZES {
        let space = fresh_space(c, &format!("bench_write_scale_{size}"));
        kip(c, "DESCRIBE PRIMER", json!({}));
        // The capsules' domains and persons exist before the filler refers to them.
        write(c, 0, 60);
        let t = Instant::now();
        fill(c, &space, size);
        println!("space {space}: filled to {} elements in {:.1} s", elements(c, &space), t.elapsed().as_secs_f64());
        spaces.push(space);
    }
    vacuum(c);
    let before: Vec<i64> = spaces.iter().map(|s| elements(c, s)).collect();
    let mut latencies: Vec<Vec<Duration>> = vec![Vec::new(); SIZES.len()];
    let mut totals = vec![Duration::ZERO; SIZES.len()];
    for round in 0..ROUNDS {
        for (i, space) in spaces.iter().enumerate() {
            use_space(c, space);
            let (elapsed, l) = write(c, 60 + round * PER_ROUND, PER_ROUND);
            totals[i] += elapsed;
            latencies[i].extend(l);
        }
    }
    println!(
        "write rate by memory size: {} Event capsules per size in {ROUNDS} alternating rounds, 1 client, durable commits",
        ROUNDS * PER_ROUND
    );
    println!("| elements before | elements after | capsules/s | p50 | p95 |");
    println!("|---|---|---|---|---|");
    let mut rates = Vec::new();
    for (i, space) in spaces.iter().enumerate() {
        let l = &mut latencies[i];
        l.sort();
        let pct = |p: f64| l[((l.len() as f64 - 1.0) * p) as usize].as_secs_f64() * 1e3;
        let rate = (ROUNDS * PER_ROUND) as f64 / totals[i].as_secs_f64();
        rates.push(rate);
        println!("| {} | {} | {rate:.0} | {:.2} ms | {:.2} ms |", before[i], elements(c, space), pct(0.5), pct(0.95));
    }
    let first = rates[0];
    let (lo, hi) = rates.iter().fold((f64::MAX, 0.0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    println!(
        "  spread: {lo:.0}-{hi:.0} capsules/s; the 10^6 rate is {:.0}% of the 10^3 rate",
        100.0 * rates[rates.len() - 1] / first
    );
    print_machine();
    // The filler is over a million rows of the shared test database: drop
    // it, so later runs and tests do not inherit it.
    for space in &spaces {
        c.batch_execute(&format!("SELECT kip_drop_space('{space}')")).expect("drop a bench space");
    }
}
