//! Load: many clients mix UPSERT, guarded read-modify-write (UPSERT …
//! EXPECT VERSION), UPDATE, DELETE, FIND, SEARCH and EXPORT on one memory
//! for a while. The only errors allowed are KIP_3005 (a stale version guard)
//! and KIP_3002 (an element another client just deleted). Afterwards, over
//! kip.concepts / kip.propositions:
//!
//! * no dangling link (every endpoint exists, in the same space);
//! * no duplicate (type, name), no duplicate (subject, predicate, object);
//! * versions never go down: each client checks every version it reads
//!   against the last one it saw for that element id, and the final version
//!   of a surviving element is at least the largest one ever read;
//! * each guarded counter equals the number of successful guarded increments
//!   of it, and its version is one more than that count;
//! * no backend crash in the server log.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-reliability-load
//!
//! `KIP_LOAD_CLIENTS` (default 16), `KIP_LOAD_SECS` (default 60),
//! `KIP_LOAD_SEED`. Uses (and recreates) the database `kip_reliability_load`.

use kip_integration_tests::reliability::{call, connect_db, drop_database, env_u64, fresh_database, Call, Rng, ServerLog, Tally};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DB: &str = "kip_reliability_load";
const COUNTERS: usize = 8;
const ITEMS: usize = 120;

const SETUP: &str = r#"UPSERT {
  CONCEPT ?item_type { {type: "$ConceptType", name: "LoadItem"} SET ATTRIBUTES { description: "An element written by the load test" } }
  CONCEPT ?counter_type { {type: "$ConceptType", name: "LoadCounter"} SET ATTRIBUTES { description: "A counter only changed by guarded increments" } }
  CONCEPT ?link_type { {type: "$PropositionType", name: "load_link"} SET ATTRIBUTES { description: "A link between load items" } }
}"#;

const UPSERT_ITEMS: &str = r#"UPSERT {
  CONCEPT ?b { {type: "LoadItem", name: :b} SET ATTRIBUTES { description: :desc, writer: :w } }
  CONCEPT ?a {
    {type: "LoadItem", name: :a}
    SET ATTRIBUTES { description: :desc, writer: :w, tags: ["load", :w] }
    SET PROPOSITIONS { ("load_link", ?b) }
  }
  PROPOSITION ?l { (?b, "load_link", ?a) SET ATTRIBUTES { weight: :weight } }
}
WITH METADATA { source: "load", confidence: 0.5 }"#;

const READ_COUNTER: &str = r#"FIND(?c.id, ?c.attributes.n, ?c.metadata._version) WHERE { ?c {type: "LoadCounter", name: :name} }"#;
const GUARDED_INCREMENT: &str = r#"UPSERT { CONCEPT ?c { {type: "LoadCounter", name: :name} EXPECT VERSION :v SET ATTRIBUTES { n: :n } } }"#;
const UPDATE_ITEMS: &str = r#"UPDATE ?x SET ATTRIBUTES { touched: ADD(COALESCE(?x.attributes.touched, 0), 1) } WHERE { ?x {type: "LoadItem", name: :a} }"#;
const DELETE_ITEM: &str = r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "LoadItem", name: :a} }"#;
const DELETE_LINKS: &str = r#"DELETE PROPOSITIONS ?l WHERE { ?a {type: "LoadItem", name: :a} ?l (?a, "load_link", ?b) }"#;
const FIND_ITEMS: &str = r#"FIND(?a.id, ?a.metadata._version, ?b.id, ?b.metadata._version) WHERE { ?a {type: "LoadItem"} (?a, "load_link", ?b) } LIMIT 40"#;
const FIND_COUNTERS: &str = r#"FIND(?c.id, ?c.metadata._version) WHERE { ?c {type: "LoadCounter"} }"#;
const SEARCH: &str = r#"SEARCH CONCEPT :term WITH TYPE "LoadItem" MODE "keyword" LIMIT 5"#;
const EXPORT: &str = r#"EXPORT ?a WHERE { ?a {type: "LoadItem", name: :a} (?a, "load_link", ?b) } LIMIT 20"#;

#[derive(Default)]
struct ClientReport {
    ops: Tally,
    errors: Tally,
    unexpected: Vec<String>,
    /// Successful guarded increments, per counter.
    increments: [u64; COUNTERS],
    /// Largest version read per element id.
    seen: HashMap<String, i64>,
    /// A version read lower than one read earlier for the same id.
    regressions: Vec<String>,
}

impl ClientReport {
    fn observe(&mut self, id: &Value, version: &Value) {
        let (Some(id), Some(v)) = (id.as_str(), version.as_i64()) else { return };
        let last = self.seen.entry(id.to_string()).or_insert(v);
        if v < *last {
            self.regressions.push(format!("{id}: read version {v} after {last}"));
        }
        *last = (*last).max(v);
    }
}

fn run_client(t: usize, seed: u64, deadline: Instant) -> ClientReport {
    let mut c = connect_db(DB);
    let mut rng = Rng(seed ^ (t as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut r = ClientReport::default();
    let item = |rng: &mut Rng| format!("item-{}", rng.below(ITEMS));
    while Instant::now() < deadline {
        let roll = rng.below(100);
        let (op, command, params) = match roll {
            0..=19 => {
                let (a, b) = (item(&mut rng), item(&mut rng));
                if a == b {
                    continue;
                }
                let desc = format!("load item written by client {t} round {}", rng.below(1000));
                ("upsert", UPSERT_ITEMS, json!({"a": a, "b": b, "desc": desc, "w": format!("w{t}"), "weight": rng.below(10)}))
            }
            20..=39 => {
                let k = rng.below(COUNTERS);
                let name = format!("counter-{k}");
                let read = call(&mut c, READ_COUNTER, &json!({"name": name}));
                r.ops.add("find");
                let Call::Envelope(env) = read else {
                    r.unexpected.push(format!("read counter: {read:?}"));
                    continue;
                };
                let row = &env["result"][0];
                r.observe(&row[0], &row[2]);
                let (n, v) = (row[1].as_i64().unwrap_or(-1), row[2].clone());
                let out = call(&mut c, GUARDED_INCREMENT, &json!({"name": name, "v": v, "n": n + 1}));
                r.ops.add("upsert_expect_version");
                match &out {
                    Call::Envelope(e) if e.get("result").is_some() => r.increments[k] += 1,
                    Call::Envelope(_) => r.errors.add(out.code().unwrap()),
                    other => r.unexpected.push(format!("guarded increment: {other:?}")),
                }
                if let Some(code) = out.code().filter(|c| *c != "KIP_3005" && *c != "KIP_3002") {
                    r.unexpected.push(format!("guarded increment: {code}: {out:?}"));
                }
                continue;
            }
            40..=49 => ("update", UPDATE_ITEMS, json!({"a": item(&mut rng)})),
            50..=54 => ("delete_concept", DELETE_ITEM, json!({"a": item(&mut rng)})),
            55..=59 => ("delete_propositions", DELETE_LINKS, json!({"a": item(&mut rng)})),
            60..=74 => ("find", FIND_ITEMS, json!({})),
            75..=79 => ("find", FIND_COUNTERS, json!({})),
            80..=89 => ("search", SEARCH, json!({"term": item(&mut rng)})),
            _ => ("export", EXPORT, json!({"a": item(&mut rng)})),
        };
        let out = call(&mut c, command, &params);
        r.ops.add(op);
        match &out {
            Call::Envelope(env) => {
                if let Some(code) = out.code() {
                    r.errors.add(code);
                    if code != "KIP_3005" && code != "KIP_3002" {
                        r.unexpected.push(format!("{op}: {env} (params {params})"));
                    }
                } else if command == FIND_ITEMS || command == FIND_COUNTERS {
                    // Expressions on one variable share a column: a row of
                    // FIND_ITEMS is [[a.id, a.version], [b.id, b.version]],
                    // one of FIND_COUNTERS is [c.id, c.version].
                    for row in env["result"].as_array().into_iter().flatten() {
                        if row[0].is_array() {
                            r.observe(&row[0][0], &row[0][1]);
                            r.observe(&row[1][0], &row[1][1]);
                        } else {
                            r.observe(&row[0], &row[1]);
                        }
                    }
                }
            }
            other => r.unexpected.push(format!("{op}: {other:?} (params {params})")),
        }
    }
    r
}

fn count(c: &mut postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e:?}")).get(0)
}

fn main() {
    let clients = env_u64("KIP_LOAD_CLIENTS", 16) as usize;
    let secs = env_u64("KIP_LOAD_SECS", 60);
    let seed = env_u64("KIP_LOAD_SEED", 20_261_122);
    fresh_database(DB);
    let log = ServerLog::mark();
    let mut setup = connect_db(DB);
    for cmd in [SETUP.to_string()]
        .into_iter()
        .chain((0..COUNTERS).map(|k| format!(r#"UPSERT {{ CONCEPT ?c {{ {{type: "LoadCounter", name: "counter-{k}"}} SET ATTRIBUTES {{ n: 0 }} }} }}"#)))
    {
        match call(&mut setup, &cmd, &json!({})) {
            Call::Envelope(e) if e.get("result").is_some() => {}
            other => panic!("load setup failed: {other:?}\n{cmd}"),
        }
    }

    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let reports = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..clients)
        .map(|t| {
            let reports = reports.clone();
            std::thread::spawn(move || {
                let r = run_client(t, seed, deadline);
                reports.lock().unwrap().push(r);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("load client panicked");
    }
    let elapsed = start.elapsed();
    let reports = std::mem::take(&mut *reports.lock().unwrap());

    let (mut ops, mut errors) = (Tally::default(), Tally::default());
    let mut unexpected = Vec::new();
    let mut regressions = Vec::new();
    let mut increments = [0u64; COUNTERS];
    let mut max_seen: HashMap<String, i64> = HashMap::new();
    for r in &reports {
        ops.merge(&r.ops);
        errors.merge(&r.errors);
        unexpected.extend(r.unexpected.iter().cloned());
        regressions.extend(r.regressions.iter().cloned());
        for k in 0..COUNTERS {
            increments[k] += r.increments[k];
        }
        for (id, v) in &r.seen {
            let m = max_seen.entry(id.clone()).or_insert(*v);
            *m = (*m).max(*v);
        }
    }
    println!(
        "load: {clients} clients x {:.1}s, {} commands ({:.0}/s), seed {seed}",
        elapsed.as_secs_f64(),
        ops.total(),
        ops.total() as f64 / elapsed.as_secs_f64()
    );
    println!("load: commands by kind: {ops}");
    println!("load: error envelopes by code: {errors}");

    let mut failures = Vec::new();
    if !unexpected.is_empty() {
        failures.push(format!("{} unexpected outcomes (only KIP_3005/KIP_3002 are allowed), first: {}", unexpected.len(), unexpected[..unexpected.len().min(5)].join("\n  ")));
    }
    if !regressions.is_empty() {
        failures.push(format!("{} version regressions seen by a client, first: {}", regressions.len(), regressions[..regressions.len().min(5)].join("; ")));
    }

    // Invariants over the storage tables.
    let mut c = connect_db(DB);
    let dangling = count(
        &mut c,
        "SELECT count(*) FROM kip.propositions p WHERE
           (p.subject_concept IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kip.concepts x WHERE x.id = p.subject_concept AND x.space = p.space))
        OR (p.object_concept  IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kip.concepts x WHERE x.id = p.object_concept  AND x.space = p.space))
        OR (p.subject_link    IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kip.propositions x WHERE x.id = p.subject_link AND x.space = p.space))
        OR (p.object_link     IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kip.propositions x WHERE x.id = p.object_link  AND x.space = p.space))
        OR num_nonnulls(p.subject_concept, p.subject_link) <> 1 OR num_nonnulls(p.object_concept, p.object_link) <> 1",
    );
    let dup_concepts = count(&mut c, "SELECT count(*) FROM (SELECT 1 FROM kip.concepts GROUP BY space, type, name HAVING count(*) > 1) d");
    let dup_links = count(&mut c, "SELECT count(*) FROM (SELECT 1 FROM kip.propositions GROUP BY space, subject, predicate, object HAVING count(*) > 1) d");
    let (concepts, links) = (count(&mut c, "SELECT count(*) FROM kip.concepts"), count(&mut c, "SELECT count(*) FROM kip.propositions"));
    println!("load: final graph {concepts} concepts, {links} propositions; dangling links {dangling}, duplicate (type, name) {dup_concepts}, duplicate (s, p, o) {dup_links}");
    if dangling != 0 {
        failures.push(format!("{dangling} dangling propositions"));
    }
    if dup_concepts != 0 || dup_links != 0 {
        failures.push(format!("{dup_concepts} duplicate (space, type, name), {dup_links} duplicate (space, subject, predicate, object)"));
    }
    // Final versions of the surviving elements are not below any version read.
    let mut behind = 0;
    for row in c.query("SELECT 'C:' || id, version FROM kip.concepts", &[]).expect("read versions") {
        let (id, v): (String, i32) = (row.get(0), row.get(1));
        if max_seen.get(&id).is_some_and(|m| *m > v as i64) {
            behind += 1;
            failures.push(format!("{id}: final version {v} is below a version read during the run ({})", max_seen[&id]));
        }
    }
    println!("load: {} element ids observed, version regressions {}, final versions behind a read {behind}", max_seen.len(), regressions.len());
    let total: u64 = increments.iter().sum();
    for (k, expected) in increments.iter().enumerate() {
        let row = c
            .query_one("SELECT (attributes->>'n')::bigint, version FROM kip.concepts WHERE type = 'LoadCounter' AND name = $1", &[&format!("counter-{k}")])
            .expect("read a counter");
        let (n, version): (i64, i32) = (row.get(0), row.get(1));
        if n as u64 != *expected || version as u64 != expected + 1 {
            failures.push(format!("counter-{k}: n = {n}, version = {version}, successful guarded increments = {expected} (n must equal it, version be one more)"));
        }
    }
    println!("load: {total} successful guarded increments over {COUNTERS} counters, {} KIP_3005", errors.0.get("KIP_3005").copied().unwrap_or(0));
    let crashes = log.crash_lines();
    if !crashes.is_empty() {
        failures.push(format!("backend crashes in the server log:\n  {}", crashes.join("\n  ")));
    }
    if ops.total() < clients as u64 {
        failures.push(format!("only {} commands ran", ops.total()));
    }
    if !failures.is_empty() {
        eprintln!("load: FAILED\n- {}", failures.join("\n- "));
        std::process::exit(1);
    }
    drop_database(DB);
    println!("load: passed");
}
