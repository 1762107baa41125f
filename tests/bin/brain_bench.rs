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

use kip_integration_tests::brain::{finds, sample_params, Names, PROMPTS};
use kip_integration_tests::{dsn_for, ensure_database, shared_dir};
use postgres::{Client, NoTls};
use serde_json::{json, Value};
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

struct Timed {
    file: &'static str,
    command: String,
    params: Value,
    median: Duration,
    outcome: String,
}

fn main() {
    let _awake = kip_integration_tests::hold_cpus_awake();
    let Some(shared) = shared_dir() else {
        println!("../shared absent: the Brain prompts are not here, nothing to run");
        return;
    };
    ensure_database("kip_bench");
    let mut c = Client::connect(&dsn_for("kip_bench"), NoTls).expect("connect kip_bench");
    c.batch_execute(&format!("SET kip.space = '{SPACE}'")).unwrap();
    generate(&mut c);
    let mut timed = Vec::new();
    // Names this memory holds.
    let names = Names { name: "user_7", domain: "Topic3", date: "2025-06-01T00:00:00Z" };
    for file in PROMPTS {
        let text = std::fs::read_to_string(shared.join("reference/brain").join(file)).expect("read a Brain prompt");
        for command in finds(&text) {
            let params = sample_params(&command, &names);
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
