//! The FINDs an agent actually sends: every FIND of the reference Brain
//! prompts (Recall, Maintenance, Formation, in `../shared/reference/brain`),
//! timed through `kip_execute` on a memory shaped like one Formation writes,
//! slowest first, with the `kip_explain` plans of the slowest. Asserts
//! nothing (figures, not tests).
//!
//!     cargo run --release -p kip-integration-tests --bin kip-brain-bench
//!
//! The memory lives in space `brain_bench` of database `kip_bench` (created
//! on first run; `BRAIN_BENCH_REBUILD=1` regenerates it): 100,000 Events in
//! 10 Domains, each involving one of 50 Persons and `$self`, with the
//! attributes and metadata Formation gives them (`event_class`,
//! `start_time`, `content_summary`, `salience_score`, a tenth short-term
//! with an `expires_at`).

use kip_integration_tests::{dsn_for, ensure_database, shared_dir};
use postgres::{Client, NoTls};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

const SPACE: &str = "brain_bench";
const EVENTS: i64 = 100_000;
/// Timed runs per query, after one untimed.
const RUNS: usize = 5;
/// How many of the slowest queries get their plan printed.
const PLANS: usize = 5;

fn kip(c: &mut Client, command: &str, params: &Value) -> Value {
    c.query_one("SELECT kip_execute($1::text, $2::jsonb)", &[&command, params]).expect("kip_execute").get(0)
}

fn generate(c: &mut Client) {
    let have: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Event'", &[&SPACE])
        .unwrap()
        .get(0);
    if have >= EVENTS && std::env::var("BRAIN_BENCH_REBUILD").is_err() {
        println!("memory present: {have} Events");
        return;
    }
    let t = Instant::now();
    c.batch_execute(&format!("DELETE FROM kip.spaces WHERE name = '{SPACE}'; SELECT kip_create_space('{SPACE}')")).unwrap();
    // The space's bootstrap: its types, predicates, domains and $self.
    kip(c, "DESCRIBE PRIMER", &json!({}));
    c.batch_execute(&format!(
        "INSERT INTO kip.concepts (space, type, name, attributes, metadata)
           SELECT '{SPACE}', 'Domain', 'Topic' || g, jsonb_build_object('description', 'Conversations about topic ' || g),
                  '{{\"source\": \"bench\", \"author\": \"$self\"}}'
           FROM generate_series(0, 9) g;
         INSERT INTO kip.concepts (space, type, name, attributes, metadata)
           SELECT '{SPACE}', 'Person', 'user_' || g, jsonb_build_object('person_class', 'Human'),
                  '{{\"source\": \"bench\", \"author\": \"$self\"}}'
           FROM generate_series(0, 49) g;
         INSERT INTO kip.concepts (space, type, name, attributes, metadata)
           SELECT '{SPACE}', 'Event', 'Conversation-' || g,
                  jsonb_build_object(
                    'event_class', CASE WHEN g % 97 = 0 THEN 'GrowthMilestone' WHEN g % 50 = 0 THEN 'SelfReflection' ELSE 'Conversation' END,
                    'start_time', to_char(timestamp '2025-01-01' + g * interval '5 minutes', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                    'participants', jsonb_build_array('$self', 'user_' || g % 50),
                    'content_summary', 'user_' || g % 50 || ' discussed topic ' || g % 10 || ' with the agent; decisions were recorded.',
                    'salience_score', (g * 37) % 100),
                  jsonb_build_object('source', 'conversation:' || g, 'author', '$self', 'confidence', 0.9,
                    'created_at', to_char(timestamp '2025-01-01' + g * interval '5 minutes', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))
                  || CASE WHEN g % 10 = 0 THEN jsonb_build_object('memory_tier', 'short-term',
                       'expires_at', to_char(timestamp '2025-04-01' + g * interval '5 minutes', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))
                     ELSE '{{}}'::jsonb END
           FROM generate_series(1, {EVENTS}) g;
         CREATE TEMP TABLE ids AS
           SELECT type, name, id FROM kip.concepts WHERE space = '{SPACE}' AND type IN ('Domain', 'Person', 'Event');
         CREATE INDEX ON ids (type, name);
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept, metadata)
           SELECT '{SPACE}', e.id, l.predicate, o.id, '{{\"source\": \"bench\", \"author\": \"$self\"}}'
           FROM generate_series(1, {EVENTS}) g
           JOIN ids e ON e.type = 'Event' AND e.name = 'Conversation-' || g
           CROSS JOIN LATERAL (VALUES ('belongs_to_domain', 'Domain', 'Topic' || g % 10),
                                      ('involves', 'Person', 'user_' || g % 50),
                                      ('involves', 'Person', '$self')) l(predicate, type, name)
           JOIN ids o ON o.type = l.type AND o.name = l.name
           ON CONFLICT DO NOTHING;
         DROP TABLE ids;
         ANALYZE kip.concepts; ANALYZE kip.propositions;"
    ))
    .unwrap();
    println!("generated {EVENTS} Events in {:.1?}", t.elapsed());
}

/// Values for a query's `:name` placeholders that name this memory's
/// elements (as `tests/kql.rs`'s Brain test does for its own).
fn sample_params(cmd: &str) -> Value {
    let mut params = Map::new();
    let bytes = cmd.as_bytes();
    for (i, _) in cmd.match_indices(':') {
        let prev = if i == 0 { b' ' } else { bytes[i - 1] };
        if prev.is_ascii_alphanumeric() || prev == b'"' || prev == b'_' {
            continue;
        }
        let name: String = cmd[i + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() || !name.chars().next().unwrap().is_ascii_alphabetic() {
            continue;
        }
        let v = if name.contains("limit") {
            json!(10)
        } else if ["date", "time", "cutoff", "_at", "since", "until", "now", "start", "sleep"].iter().any(|k| name.contains(k)) {
            json!("2025-06-01T00:00:00Z")
        } else if ["threshold", "score", "confidence", "factor"].iter().any(|k| name.contains(k)) {
            json!(0.5)
        } else if name == "type" || name.ends_with("_type") {
            json!("Person")
        } else if name.contains("predicate") {
            json!("belongs_to_domain")
        } else if name.contains("domain") {
            json!("Topic3")
        } else {
            json!("user_7")
        };
        params.insert(name, v);
    }
    Value::Object(params)
}

/// The FIND commands of a prompt file's ```prolog blocks.
fn finds(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("```prolog").skip(1) {
        let block = block.split("```").next().unwrap_or("");
        let mut current: Option<String> = None;
        let mut statements = Vec::new();
        for line in block.lines() {
            let t = line.trim_start();
            let starts = ["FIND", "UPSERT", "UPDATE", "DELETE", "DESCRIBE", "SEARCH", "EXPORT", "MERGE"]
                .iter()
                .any(|k| t.starts_with(k) && t[k.len()..].starts_with(|c: char| c == '(' || c == ' '));
            if starts {
                statements.extend(current.take());
                current = Some(String::new());
            }
            if let Some(s) = current.as_mut() {
                // Comments after a statement belong to the prose around it.
                if !t.starts_with("//") {
                    s.push_str(line);
                    s.push('\n');
                }
            }
        }
        statements.extend(current);
        out.extend(statements.into_iter().filter(|s| s.trim_start().starts_with("FIND")));
    }
    out
}

struct Timed {
    file: &'static str,
    command: String,
    params: Value,
    median: Duration,
    outcome: String,
}

fn main() {
    let Some(shared) = shared_dir() else {
        println!("../shared absent: the Brain prompts are not here, nothing to run");
        return;
    };
    ensure_database("kip_bench");
    let mut c = Client::connect(&dsn_for("kip_bench"), NoTls).expect("connect kip_bench");
    c.batch_execute(&format!("SET kip.space = '{SPACE}'")).unwrap();
    generate(&mut c);
    let mut timed = Vec::new();
    for file in ["BrainRecall.md", "BrainMaintenance.md", "BrainFormation.md"] {
        let text = std::fs::read_to_string(shared.join("reference/brain").join(file)).expect("read a Brain prompt");
        for command in finds(&text) {
            let params = sample_params(&command);
            let mut times = Vec::new();
            let mut outcome = String::new();
            for run in 0..=RUNS {
                let t = Instant::now();
                let out = kip(&mut c, &command, &params);
                let d = t.elapsed();
                if run > 0 {
                    times.push(d);
                }
                // An error's code, or the size of the result (its shape
                // depends on the projections: DESIGN §7 "Projection").
                outcome = match (out.get("error"), out.get("result")) {
                    (Some(e), _) => e["code"].as_str().unwrap_or("error").to_string(),
                    (None, Some(result)) => format!("{:.1} kB", result.to_string().len() as f64 / 1000.0),
                    (None, None) => "?".to_string(),
                };
            }
            times.sort();
            timed.push(Timed { file, command, params, median: times[times.len() / 2], outcome });
        }
    }
    timed.sort_by(|a, b| b.median.cmp(&a.median));
    let total: Duration = timed.iter().map(|t| t.median).sum();
    println!(
        "\n{} FINDs of the Brain prompts on {EVENTS} Events (space {SPACE}), median of {RUNS} runs each, slowest first; all of them: {total:.1?}",
        timed.len()
    );
    println!("{:>10}  {:<20} {:<10} query", "median", "prompt", "result");
    for t in &timed {
        let first = t.command.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        let first: String = first.chars().take(110).collect();
        println!("{:>10.2?}  {:<20} {:<10} {first}", t.median, t.file.trim_end_matches(".md"), t.outcome);
    }
    for t in timed.iter().take(PLANS) {
        let plan: String = c.query_one("SELECT kip_explain($1, $2::jsonb, true)", &[&t.command, &t.params]).unwrap().get(0);
        println!(
            "\n===== {} ({:.2?}) =====\n{}parameters {}\n{}",
            t.file,
            t.median,
            t.command,
            t.params,
            plan.split("-- plan\n").nth(1).unwrap_or(&plan)
        );
    }
}
