//! Pathological queries: open hop walks (`{1,}`) over a dense cyclic graph,
//! catastrophic regular expressions, cross products with huge LIMITs. Each
//! ends within the per-command budget (plus a small slack) as a KIP
//! envelope: `KIP_4001` (time budget) or `KIP_4002` (resource limit), or a
//! result when the engine really can answer in time (a huge LIMIT is capped
//! at `kip.max_limit`, so such a result must not exceed it). Cases built to
//! be too expensive must be refused. Meanwhile a probe session keeps asking
//! a small query and must keep answering quickly, and the server log must
//! show no backend crash.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-reliability-pathological
//!
//! `KIP_PATHO_BUDGET_MS` (default 2000), `KIP_PATHO_SLACK_MS` (time allowed
//! past the budget, default 1500), `KIP_PATHO_SESSIONS` (sessions
//! running the cases at once, default 2), `KIP_PATHO_ROUNDS` (default 1),
//! `KIP_PATHO_NODES` (default 300), `KIP_PATHO_PROBE_MAX_MS` (default 2000).
//! Uses (and recreates) the database `kip_reliability_pathological`.

use kip_integration_tests::reliability::{call, connect_db, drop_database, env_u64, fresh_database, Call, ServerLog, Tally};
use postgres::Client;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DB: &str = "kip_reliability_pathological";
/// Out-degree of every node of the cyclic graph.
const DEGREE: usize = 12;

/// The per-command time budget of a session: `kip.command_timeout`, which
/// kip re-arms for every command and maps to KIP_4001.
fn arm_budget(c: &mut Client, ms: u64) {
    c.batch_execute(&format!("SET kip.command_timeout = {ms}")).expect("arm the command budget");
}

struct Case {
    name: &'static str,
    command: &'static str,
    params: Value,
    /// Built to exceed any reasonable budget: a result is a failure.
    must_refuse: bool,
}

fn cases() -> Vec<Case> {
    let c = |name, command, params, must_refuse| Case { name, command, params, must_refuse };
    vec![
        c("open walk from every node", r#"FIND(?a.name, ?b.name) WHERE { ?a {type: "Node"} (?a, "link"{1,}, ?b) } LIMIT 999999999"#, json!({}), true),
        c("two chained open walks", r#"FIND(?a.name, ?c.name) WHERE { ?a {type: "Node"} (?a, "link"{1,}, ?b) (?b, "link"{1,}, ?c) } ORDER BY ?c.name LIMIT 999999999"#, json!({}), true),
        c("open walk, counted", r#"FIND(COUNT(?b)) WHERE { ?a {type: "Node"} (?a, "link"{1,}, ?b) }"#, json!({}), false),
        c("open walk from one node", r#"FIND(?b.name) WHERE { ?a {type: "Node", name: "n0"} (?a, "link"{1,}, ?b) } LIMIT 999999999"#, json!({}), false),
        c("backward open walk", r#"FIND(?a.name) WHERE { ?b {type: "Node", name: "n1"} (?a, "link"{1,}, ?b) } LIMIT 999999999"#, json!({}), false),
        c("cross product, ordered, huge LIMIT", r#"FIND(?a.name, ?b.name, ?c.name) WHERE { ?a {type: "Node"} ?b {type: "Node"} ?c {type: "Node"} } ORDER BY ?c.name DESC LIMIT 9223372036854775807"#, json!({}), true),
        c("cross product, huge LIMIT", r#"FIND(?a.name, ?b.name) WHERE { ?a {type: "Node"} ?b {type: "Node"} } LIMIT 999999999999"#, json!({}), false),
        c("cross product counted", r#"FIND(COUNT(?a), COUNT(?b), COUNT(?c)) WHERE { ?a {type: "Node"} ?b {type: "Node"} ?c {type: "Node"} }"#, json!({}), false),
        c("nested quantifiers (a+)+$", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "(a+)+$"}), false),
        c("nested stars ((a*)*)*b", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "((a*)*)*b"}), false),
        c("alternation (a|aa)*c", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "^(a|aa|aaa)*c$"}), false),
        c("back-reference ^(a*)*\\1$", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "^(a*)*\\1c$"}), false),
        c("back-references ^(a+)\\1+(a+)\\2+$", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "^(a+)\\1+(a+)\\2+(a+)\\3+c$"}), false),
        c("counted repetition (.*a){30}", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "(.*a){30}c"}), false),
        c("huge bounded repetition", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, :re)) }"#, json!({"re": "((a{1,100}){1,100}){1,100}c"}), false),
        c("huge bounded repetition, literal", r#"FIND(COUNT(?t)) WHERE { ?t {type: "Node"} FILTER(REGEX(?t.attributes.text, "((a{1,100}){1,100}){1,100}c")) }"#, json!({}), false),
        // No text ends with "c": a plan that filters ?b before walking back
        // from it answers [] in about a second (seen in a CI run), one that
        // walks first runs out of budget. Either must end within it.
        c("regex over an open walk", r#"FIND(?b.name) WHERE { ?a {type: "Node"} (?a, "link"{1,}, ?b) FILTER(REGEX(?b.attributes.text, :re)) } LIMIT 999999999"#, json!({"re": "(a+)+c$"}), false),
    ]
}

/// A dense cyclic graph of `n` nodes, each with DEGREE links, and a long
/// run of `a` on every tenth node for the regular expressions.
fn build_graph(c: &mut Client, n: usize) {
    let mut s = String::from(
        r#"UPSERT {
  CONCEPT ?nt { {type: "$ConceptType", name: "Node"} SET ATTRIBUTES { description: "A node of the dense cyclic graph" } }
  CONCEPT ?lt { {type: "$PropositionType", name: "link"} SET ATTRIBUTES { description: "A link of the dense cyclic graph" } }
}
"#,
    );
    s.push_str("UPSERT {\n");
    for i in 0..n {
        s.push_str(&format!("  CONCEPT ?n{i} {{ {{type: \"Node\", name: \"n{i}\"}} SET ATTRIBUTES {{ text: :t{} }} }}\n", usize::from(i % 10 == 0)));
    }
    for i in 0..n {
        let mut targets: Vec<usize> = (0..DEGREE).map(|k| (i + 1 + k * 17) % n).filter(|&t| t != i).collect();
        targets.sort();
        targets.dedup();
        let links: Vec<String> = targets.iter().map(|t| format!("(\"link\", ?n{t})")).collect();
        s.push_str(&format!("  CONCEPT ?m{i} {{ {{type: \"Node\", name: \"n{i}\"}} SET PROPOSITIONS {{ {} }} }}\n", links.join(" ")));
    }
    s.push('}');
    let params = json!({"t0": "short text", "t1": format!("{}!", "a".repeat(4000))});
    match call(c, &s, &params) {
        Call::Envelope(e) if e.get("result").is_some() => {}
        other => panic!("building the graph failed: {other:?}"),
    }
}

#[derive(Default)]
struct Outcomes {
    tally: Tally,
    failures: Vec<String>,
    slowest_ms: u128,
}

fn run_cases(budget_ms: u64, slack_ms: u64, rounds: u64, max_limit: usize) -> Outcomes {
    let mut c = connect_db(DB);
    arm_budget(&mut c, budget_ms);
    let mut o = Outcomes::default();
    for _ in 0..rounds {
        for case in cases() {
            let t = Instant::now();
            let out = call(&mut c, case.command, &case.params);
            let ms = t.elapsed().as_millis();
            o.slowest_ms = o.slowest_ms.max(ms);
            let label = match &out {
                Call::Envelope(e) => match out.code() {
                    Some(code) => code.to_string(),
                    None => {
                        let rows = e["result"].as_array().map_or(1, |r| r.len());
                        if rows > max_limit {
                            o.failures.push(format!("{}: {rows} rows, above kip.max_limit {max_limit}", case.name));
                        }
                        "result".to_string()
                    }
                },
                Call::SqlError { sqlstate, message } => format!("SQL error {sqlstate}: {message}"),
                Call::Lost(why) => format!("connection lost: {why}"),
            };
            o.tally.add(&format!("{} -> {}", case.name, label.split(':').next().unwrap_or("")));
            let refused = matches!(out.code(), Some("KIP_4001" | "KIP_4002"));
            let answered = matches!(&out, Call::Envelope(e) if e.get("result").is_some());
            if !(refused || answered && !case.must_refuse) {
                o.failures.push(format!("{}: {label} after {ms} ms (expected {})", case.name, if case.must_refuse { "KIP_4001/KIP_4002" } else { "a result or KIP_4001/KIP_4002" }));
            }
            if ms > (budget_ms + slack_ms) as u128 {
                o.failures.push(format!("{}: {label} after {ms} ms, over the {budget_ms} ms budget (+{slack_ms} ms slack)", case.name));
            }
            if matches!(out, Call::Lost(_)) {
                return o;
            }
        }
    }
    o
}

fn main() {
    let budget_ms = env_u64("KIP_PATHO_BUDGET_MS", 2000);
    // Slack over the budget for the cancel to land and the envelope to
    // return (the sessions share the machine's cores).
    let slack_ms = env_u64("KIP_PATHO_SLACK_MS", 1500);
    let sessions = env_u64("KIP_PATHO_SESSIONS", 2) as usize;
    let rounds = env_u64("KIP_PATHO_ROUNDS", 1);
    let nodes = env_u64("KIP_PATHO_NODES", 300) as usize;
    let probe_max = env_u64("KIP_PATHO_PROBE_MAX_MS", 2000);
    fresh_database(DB);
    let mut setup = connect_db(DB);
    build_graph(&mut setup, nodes);
    let max_limit: usize = setup.query_one("SELECT current_setting('kip.max_limit')::int", &[]).map(|r| r.get::<_, i32>(0) as usize).unwrap_or(10_000);
    let log = ServerLog::mark();
    let start = Instant::now();

    // The probe: another session asking a small question all along.
    let done = Arc::new(AtomicBool::new(false));
    let probe = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut c = connect_db(DB);
            let (mut n, mut worst, mut errors) = (0u64, Duration::ZERO, Vec::new());
            while !done.load(Ordering::Relaxed) {
                let t = Instant::now();
                let out = call(&mut c, r#"FIND(?b.name) WHERE { ?a {type: "Node", name: "n1"} (?a, "link", ?b) }"#, &json!({}));
                worst = worst.max(t.elapsed());
                n += 1;
                if !matches!(&out, Call::Envelope(e) if e["result"].as_array().is_some_and(|r| !r.is_empty())) {
                    errors.push(format!("{out:?}"));
                    if matches!(out, Call::Lost(_)) {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            (n, worst, errors)
        })
    };

    let results = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..sessions)
        .map(|_| {
            let results = results.clone();
            std::thread::spawn(move || {
                let o = run_cases(budget_ms, slack_ms, rounds, max_limit);
                results.lock().unwrap().push(o);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("pathological session panicked");
    }
    done.store(true, Ordering::Relaxed);
    let (probes, worst, probe_errors) = probe.join().expect("probe thread");

    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let mut slowest = 0;
    for o in results.lock().unwrap().iter() {
        tally.merge(&o.tally);
        failures.extend(o.failures.iter().cloned());
        slowest = slowest.max(o.slowest_ms);
    }
    println!(
        "pathological: {} cases x {sessions} sessions x {rounds} rounds over {nodes} nodes ({} links), budget {budget_ms} ms, {:.1}s",
        cases().len(),
        nodes * DEGREE,
        start.elapsed().as_secs_f64()
    );
    for (k, v) in &tally.0 {
        println!("pathological:   {k} ({v})");
    }
    println!("pathological: slowest command {slowest} ms; probe answered {probes} times, worst {} ms, {} errors", worst.as_millis(), probe_errors.len());
    if worst > Duration::from_millis(probe_max) {
        failures.push(format!("the probe session waited {} ms (limit {probe_max} ms)", worst.as_millis()));
    }
    for e in probe_errors.iter().take(5) {
        failures.push(format!("probe: {e}"));
    }
    for l in log.crash_lines() {
        failures.push(format!("server log: {l}"));
    }
    if !failures.is_empty() {
        eprintln!("pathological: FAILED\n- {}", failures.join("\n- "));
        std::process::exit(1);
    }
    drop_database(DB);
    println!("pathological: passed");
}
