//! Fuzz through SQL: random and mutated commands, with random and mutated
//! parameters, go through `kip_execute` on a live database. Every call must
//! come back as a KIP envelope: a Postgres error raised by the call is a
//! failure, and so is a lost connection or a crash line in the server log
//! ("terminated by signal"). Each finding is printed with its reproducer
//! (command, parameters, session settings) and the run fails.
//!
//! Seeds: the conformance fixtures (`../shared/kip-conformance`, when
//! present), the bootstrap capsules and a built-in set covering every
//! command. Generators (the class of each input is printed with the
//! figures): `mutated` (character and token mutations of a seed),
//! `tokens` (random token soup), `params` (a seed with its parameters
//! replaced by hostile JSON values), `settings` (a seed under unusual
//! session settings), and one class per hostile input named in the project's
//! limits: `deep_json`, `long_name`, `long_description`, `huge_text`,
//! `many_clauses`, `export_chain`, `forged_cursor`, `search_path`,
//! `limit_zero`.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-reliability-fuzz
//!
//! `KIP_FUZZ_CASES` (default 100,000), `KIP_FUZZ_CLIENTS` (default 2),
//! `KIP_FUZZ_SEED`, `KIP_FUZZ_TIMEOUT_MS` (kip.command_timeout of the fuzz
//! sessions, default 5000), `KIP_FUZZ_HOSTILE_REPEAT` (inputs of each
//! hostile class per session, default 3), `KIP_FUZZ_CHAIN` (length of the
//! chain of links about links, default 20,000), and `KIP_FUZZ_SKIP`: a comma-separated list of
//! classes not to generate, for hostile inputs whose fix is not in yet (the
//! run still prints them as skipped). Uses (and recreates) the database
//! `kip_reliability_fuzz`.

use kip_integration_tests::reliability::{call, call_sql, connect_db, drop_database, env_u64, fresh_database, wait_until_up, Call, Rng, ServerLog, Tally};
use kip_integration_tests::shared_dir;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DB: &str = "kip_reliability_fuzz";

/// External id of the last link of the chain of links about links.
static CHAIN_END: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Classes of hostile inputs, generated a few times per run each (they are
/// expensive), unless listed in KIP_FUZZ_SKIP.
const HOSTILE: &[&str] =
    &["deep_json", "long_name", "long_description", "huge_text", "many_clauses", "export_chain", "forged_cursor", "search_path", "limit_zero"];

const SETUP: &str = r#"UPSERT {
  CONCEPT ?t { {type: "$ConceptType", name: "Fuzz"} SET ATTRIBUTES { description: "Fuzz target" } }
  CONCEPT ?p { {type: "$PropositionType", name: "fuzz_link"} SET ATTRIBUTES { description: "Fuzz link" } }
  CONCEPT ?a { {type: "Fuzz", name: "a"} SET ATTRIBUTES { n: 1, s: "alpha", l: [1, 2, 3] } }
  CONCEPT ?b { {type: "Fuzz", name: "b"} SET ATTRIBUTES { n: 2, s: "beta" } SET PROPOSITIONS { ("fuzz_link", ?a) } }
  CONCEPT ?c { {type: "Fuzz", name: "c"} SET ATTRIBUTES { n: 3 } SET PROPOSITIONS { ("fuzz_link", ?b) } }
  CONCEPT ?d { {type: "Fuzz", name: "d"} SET PROPOSITIONS { ("fuzz_link", ?c) ("fuzz_link", ?a) } }
}"#;

/// Built-in seeds: (command, parameters).
fn builtin_seeds() -> Vec<(String, Value)> {
    let p = |c: &str, v: Value| (c.to_string(), v);
    vec![
        p(r#"FIND(?a.name, COUNT(?b)) WHERE { ?a {type: "Fuzz"} OPTIONAL { (?a, "fuzz_link", ?b) } FILTER(?a.attributes.n > :n || !IS_NULL(?a.attributes.s)) } ORDER BY ?a.name DESC LIMIT :lim"#, json!({"n": 1, "lim": 5})),
        p(r#"FIND(?a, ?b) WHERE { ?a {type: "Fuzz", name: :name} (?a, "fuzz_link"{1,3}, ?b) }"#, json!({"name": "d"})),
        p(r#"FIND(?x) WHERE { ?x {type: :t} NOT { (?x, "fuzz_link", ?y) } UNION { ?x {type: "Fuzz", name: "a"} } } LIMIT 3"#, json!({"t": "Fuzz"})),
        p(r#"FIND(?a.attributes.s) WHERE { ?a {type: "Fuzz"} FILTER(REGEX(?a.attributes.s, :re) && CONTAINS(?a.name, :sub)) }"#, json!({"re": "^a.*", "sub": "a"})),
        p(r#"FIND(?a.name) WHERE { ?a {type: "Fuzz"} FILTER(?a.attributes.n IN :set) } CURSOR :cur"#, json!({"set": [1, 2], "cur": "azE6MzoyNmY4MWRiNzljM2UxMDA5"})),
        p(r#"UPSERT { CONCEPT ?c { {type: "Fuzz", name: :name} SET ATTRIBUTES { a: [1, {b: :p}], description: :d } SET PROPOSITIONS { ("fuzz_link", {type: "Fuzz", name: "a"}) } } WITH METADATA { confidence: :conf } }"#, json!({"name": "e", "p": "x", "d": "text", "conf": 0.5})),
        p(r#"UPSERT { CONCEPT ?c { {type: "Fuzz", name: :name} EXPECT VERSION :v SET ATTRIBUTES { n: :n } } }"#, json!({"name": "a", "v": 1, "n": 9})),
        p(r#"UPSERT { PROPOSITION ?l { ({type: "Fuzz", name: "a"}, "fuzz_link", {type: "Fuzz", name: "c"}) SET ATTRIBUTES { w: :w } } }"#, json!({"w": 1})),
        p(r#"UPDATE ?t SET ATTRIBUTES { n: ADD(COALESCE(?t.attributes.n, 0), :k), m: CLAMP(MUL(?t.attributes.n, 2), 0, 10) } SET METADATA { s: :s } WHERE { ?t {type: "Fuzz"} } LIMIT 10"#, json!({"k": 1, "s": "x"})),
        p(r#"DELETE ATTRIBUTES { "s", :key } FROM ?x WHERE { ?x {type: "Fuzz", name: :name} }"#, json!({"key": "l", "name": "e"})),
        p(r#"DELETE METADATA { "confidence" } FROM ?x WHERE { ?x {type: "Fuzz", name: "e"} }"#, json!({})),
        p(r#"DELETE PROPOSITIONS ?l WHERE { ?l ({type: "Fuzz", name: "a"}, "fuzz_link", ?o) }"#, json!({})),
        p(r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Fuzz", name: :name} }"#, json!({"name": "e"})),
        p(r#"MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Fuzz", name: :from} ?b {type: "Fuzz", name: :into} }"#, json!({"from": "e", "into": "d"})),
        p(r#"SEARCH CONCEPT :term WITH TYPE "Fuzz" MODE "keyword" THRESHOLD :th LIMIT 3"#, json!({"term": "alpha", "th": 0.1})),
        p(r#"SEARCH PROPOSITION :term LIMIT 3"#, json!({"term": "fuzz"})),
        p(r#"EXPORT ?a WHERE { ?a {type: "Fuzz"} } LIMIT :lim"#, json!({"lim": 2})),
        p(r#"DESCRIBE PRIMER"#, json!({})),
        p(r#"DESCRIBE DOMAINS"#, json!({})),
        p(r#"DESCRIBE CONCEPT TYPES LIMIT 5"#, json!({})),
        p(r#"DESCRIBE CONCEPT TYPE :t"#, json!({"t": "Fuzz"})),
        p(r#"DESCRIBE PROPOSITION TYPE "fuzz_link""#, json!({})),
    ]
}

/// Fixture commands and capsules, when available.
fn file_seeds() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    if let Some(shared) = shared_dir() {
        let dir = shared.join("kip-conformance");
        let mut files: Vec<_> = std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files.into_iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
            let Ok(doc) = serde_json::from_str::<Value>(&std::fs::read_to_string(&f).unwrap_or_default()) else { continue };
            for s in doc["setup"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                out.push((s.to_string(), json!({})));
            }
            for c in doc["cases"].as_array().into_iter().flatten() {
                if let Some(t) = c["command"].as_str() {
                    out.push((t.to_string(), c.get("parameters").cloned().unwrap_or(json!({}))));
                }
            }
        }
    }
    let capsules = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../capsules");
    let mut files: Vec<_> = std::fs::read_dir(capsules).into_iter().flatten().flatten().map(|e| e.path()).collect();
    files.sort();
    for f in files.into_iter().filter(|f| f.extension().is_some_and(|e| e == "kip")) {
        out.push((std::fs::read_to_string(f).unwrap_or_default(), json!({})));
    }
    out
}

/// No NUL anywhere in generated text or parameters: Postgres refuses it in
/// `text` and `jsonb` when binding the call, before kip_execute runs. (A
/// `\u0000` escape inside a KIP string literal is still generated.)
const TOKENS: &[&str] = &[
    "FIND", "WHERE", "FILTER", "OPTIONAL", "NOT", "UNION", "ORDER BY", "ASC", "DESC", "LIMIT", "CURSOR", "COUNT", "DISTINCT",
    "UPSERT", "CONCEPT", "PROPOSITION", "SET ATTRIBUTES", "SET PROPOSITIONS", "WITH METADATA", "EXPECT VERSION", "UPDATE",
    "SET METADATA", "MERGE", "INTO", "DELETE", "DETACH", "FROM", "DESCRIBE", "PRIMER", "TYPES", "TYPE", "SEARCH", "MODE",
    "THRESHOLD", "EXPORT", "IN", "IS_NULL", "CONTAINS", "REGEX", "ADD", "MUL", "CLAMP", "COALESCE", "?x", "?a", ":p", ":n",
    ":", "\"s\"", "\"", "\\", "\\u", "{", "}", "(", ")", "[", "]", ",", "|", "||", "&&", "!", "==", "<=", ".",
    ".attributes", ".metadata.k", ".metadata._version", "{1,3}", "{0,}", "{1,}", "-1", "0", "1e999", "9223372036854775808",
    "0.5", "true", "null", "//", "\n", " ", "é", "😀", "\u{1}", "id:", "type:", "name:", "\"C:1\"", "\"P:1:fuzz_link\"",
    "\"$self\"", "\"$ConceptType\"", "\"CoreSchema\"", "\"Domain\"",
];

/// Hostile JSON values for parameters.
fn hostile_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 12 } else { 16 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(*rng.pick(&[0i64, -1, 1, i64::MAX, i64::MIN, 2147483648, -2147483649])),
        3 => json!(*rng.pick(&[0.5f64, -0.0, 1e308, -1e308, 5e-324])),
        4 => json!(*rng.pick(&["", " ", "a", "Fuzz", "$self", "$ConceptType", "CoreSchema", "fuzz_link", "C:1", "P:1:x", "C:+5", "C:007"])),
        5 => json!(*rng.pick(&["'; DROP TABLE kip.concepts; --", "\\", "\"", "$1", "%", "_", "\u{1}x", "\u{FEFF}", "é😀", "(a+)+$", "[", "(?=x)"])),
        6 => json!("x".repeat(*rng.pick(&[255usize, 1000, 2001, 65_536]))),
        7 => json!(*rng.pick(&["azE6MzoyNmY4MWRiNzljM2UxMDA5", "!!!", "AAAA", "azE6LTE6MDAwMDAwMDAwMDAwMDAwMA"])),
        8 => json!(*rng.pick(&["NaN", "Infinity", "2026-13-45T25:61:00Z", "1e999"])),
        9 | 10 | 11 => json!(rng.below(5)),
        12 | 13 => {
            let n = rng.below(4);
            Value::Array((0..n).map(|_| hostile_value(rng, depth + 1)).collect())
        }
        _ => {
            let n = rng.below(4);
            let mut m = serde_json::Map::new();
            for i in 0..n {
                let k = rng.pick(&["a", "_version", "", "description", "n", "é", "x y"]).to_string();
                m.insert(format!("{k}{i}"), hostile_value(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// Parameters named in a command (`:name`), so mutated parameters hit them.
fn param_names(command: &str) -> Vec<String> {
    let b = command.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' && i + 1 < b.len() && (b[i + 1].is_ascii_alphabetic() || b[i + 1] == b'_') {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            out.push(command[start..j].to_string());
            i = j;
        } else {
            i += 1;
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Long seeds are mutated in windows of 400 characters; no NUL (see TOKENS).
const OPTIONS: kip_mutate::Options = kip_mutate::Options { tokens: TOKENS, window: 400, allow_nul: false };

fn mutate(rng: &mut Rng, seed: &str) -> String {
    kip_mutate::mutate(rng, seed, &OPTIONS)
}

/// One input: class, session settings to apply first, command, parameters.
struct Input {
    class: &'static str,
    settings: Vec<String>,
    command: String,
    params: Value,
}

fn generate(rng: &mut Rng, seeds: &[(String, Value)], hostile: Option<&'static str>) -> Input {
    let plain = |class, command, params| Input { class, settings: vec![], command, params };
    if let Some(class) = hostile {
        return match class {
            // serde_json parses up to depth 128; Postgres jsonb goes deeper.
            "deep_json" => {
                let depth = *rng.pick(&[200usize, 1_000, 5_000]);
                let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
                Input { class, settings: vec![format!("SELECT set_config('kip.fuzz_deep', '{deep}', false)")], command: r#"UPSERT { CONCEPT ?c { {type: "Fuzz", name: "deep"} SET ATTRIBUTES { v: :v } } }"#.into(), params: json!({"v": "__deep__"}) }
            }
            "long_name" => {
                // Random hex, so the index entry cannot be compressed under
                // the btree row limit.
                let len = *rng.pick(&[3_000usize, 10_000, 100_000]);
                let name: String = (0..len).map(|_| char::from_digit(rng.below(16) as u32, 16).unwrap()).collect();
                plain(class, r#"UPSERT { CONCEPT ?c { {type: "Fuzz", name: :n} } }"#.into(), json!({"n": name}))
            }
            "long_description" => {
                // Many distinct words: the tsvector of the generated column
                // has a 1 MB limit.
                let words: Vec<String> = (0..120_000).map(|i| format!("w{i:x}{}", rng.below(1_000_000))).collect();
                plain(class, r#"UPSERT { CONCEPT ?c { {type: "Fuzz", name: "longdesc"} SET ATTRIBUTES { description: :d } } }"#.into(), json!({"d": words.join(" ")}))
            }
            "huge_text" => plain(class, format!("FIND(?a) WHERE {{ ?a {{type: \"Fuzz\", name: \"{}\"}} }}", "x".repeat(10 << 20)), json!({})),
            "many_clauses" => {
                let clauses: String = (0..10_000).map(|i| format!("?v{i} {{type: \"Fuzz\"}} ")).collect();
                plain(class, format!("FIND(?v0) WHERE {{ {clauses}}}"), json!({}))
            }
            // The last link of the chain: exporting it reaches every link.
            // Loading the chain takes one query per level: a longer budget.
            "export_chain" => Input {
                class,
                settings: vec!["SET kip.command_timeout = 120000".into(), "SET statement_timeout = 240000".into()],
                command: r#"EXPORT ?l WHERE { ?l (id: :last) }"#.into(),
                params: json!({"last": CHAIN_END.get().cloned().unwrap_or_default()}),
            },
            "forged_cursor" => {
                let forged = *rng.pick(&["azE6OTIyMzM3MjAzNjg1NDc3NTgwNzowMDAwMDAwMDAwMDAwMDAw", "azE6LTE6MDAwMDAwMDAwMDAwMDAwMA", "azE6OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OmZmZmZmZmZmZmZmZmZmZmY"]);
                plain(class, r#"FIND(?a.name) WHERE { ?a {type: "Fuzz"} } LIMIT 1 CURSOR :c"#.into(), json!({"c": forged}))
            }
            "search_path" => {
                let (command, params) = seeds[rng.below(seeds.len())].clone();
                Input { class, settings: vec!["SET search_path = ''".into(), "SET standard_conforming_strings = off".into()], command, params }
            }
            "limit_zero" => plain(class, r#"FIND(?a.name) WHERE { ?a {type: "Fuzz"} } LIMIT 0"#.into(), json!({})),
            _ => unreachable!(),
        };
    }
    let (seed, seed_params) = &seeds[rng.below(seeds.len())];
    match rng.below(100) {
        0..=54 => {
            let command = mutate(rng, seed);
            let params = if rng.chance(30) { mutate_params(rng, &command, seed_params) } else { seed_params.clone() };
            plain("mutated", command, params)
        }
        55..=69 => {
            let n = 1 + rng.below(30);
            let command: Vec<&str> = (0..n).map(|_| *rng.pick(TOKENS)).collect();
            plain("tokens", command.join(" "), json!({}))
        }
        70..=94 => {
            let params = mutate_params(rng, seed, seed_params);
            plain("params", seed.clone(), params)
        }
        _ => {
            let setting = rng
                .pick(&[
                    "SET datestyle = 'SQL, DMY'",
                    "SET TimeZone = 'Pacific/Chatham'",
                    "SET extra_float_digits = -15",
                    "SET bytea_output = 'escape'",
                    "SET enable_hashjoin = off",
                    "SET work_mem = '64kB'",
                    "SET kip.space = 'other_fuzz_space'",
                    "SET kip.max_hops = 1",
                    "SET kip.default_limit = 1",
                ])
                .to_string();
            Input { class: "settings", settings: vec![setting], command: seed.clone(), params: seed_params.clone() }
        }
    }
}

fn mutate_params(rng: &mut Rng, command: &str, base: &Value) -> Value {
    let mut m = base.as_object().cloned().unwrap_or_default();
    for name in param_names(command) {
        if rng.chance(60) {
            m.insert(name, hostile_value(rng, 0));
        }
    }
    if rng.chance(10) {
        m.insert("unused".into(), hostile_value(rng, 0));
    }
    if rng.chance(3) {
        return hostile_value(rng, 0); // not even an object
    }
    Value::Object(m)
}

#[derive(Default)]
struct Figures {
    by_class: Tally,
    outcomes: Tally,
    hostile: Tally,
    findings: Vec<String>,
    lost: u64,
}

/// A fresh fuzz session: its statement timeout, so no input runs unbounded.
fn session(timeout_ms: u64) -> postgres::Client {
    let mut c = connect_db(DB);
    // kip's own per-command budget answers KIP_4001; statement_timeout is
    // only a backstop for time spent outside any command.
    c.batch_execute(&format!("SET kip.command_timeout = {timeout_ms}; SET statement_timeout = {}", timeout_ms * 6))
        .expect("set the budgets");
    c
}

fn run_one(c: &mut postgres::Client, input: &Input) -> Call {
    for s in &input.settings {
        if let Err(e) = c.batch_execute(s) {
            return Call::SqlError { sqlstate: "setup".into(), message: format!("{s}: {e}") };
        }
    }
    if input.class == "deep_json" {
        // The deep document is built server-side (the client's JSON library
        // refuses it) and passed as the parameters of kip_execute.
        let sql = "SELECT kip_execute($1::text, jsonb_build_object('v', current_setting('kip.fuzz_deep')::jsonb))";
        return match c.query_one(sql, &[&input.command]) {
            Ok(row) => Call::Envelope(row.get(0)),
            Err(e) if e.is_closed() || e.as_db_error().is_none() => Call::Lost(e.to_string()),
            Err(e) => {
                let db = e.as_db_error().unwrap();
                Call::SqlError { sqlstate: db.code().code().into(), message: db.message().into() }
            }
        };
    }
    if input.class == "search_path" {
        // Nothing is on the search path: the call itself is qualified.
        return call_sql(c, "SELECT public.kip_execute($1::text, $2::jsonb)", &input.command, &input.params);
    }
    call(c, &input.command, &input.params)
}

fn short(s: &str) -> String {
    if s.len() > 300 {
        let cut = (0..=300).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        format!("{}… ({} bytes)", &s[..cut], s.len())
    } else {
        s.to_string()
    }
}

fn worker(t: usize, cases: u64, seed: u64, timeout_ms: u64, seeds: Arc<Vec<(String, Value)>>, hostile: Vec<&'static str>, repeat: u64) -> Figures {
    let mut rng = Rng(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9));
    let mut f = Figures::default();
    let mut c = session(timeout_ms);
    // Hostile inputs are expensive: each class a few times per run, spread
    // over the run.
    let every = (cases / (hostile.len().max(1) as u64 * repeat.max(1))).max(1);
    for i in 0..cases {
        let h = (!hostile.is_empty() && i % every == every / 2).then(|| hostile[((i / every) as usize) % hostile.len()]);
        let input = generate(&mut rng, &seeds, h);
        f.by_class.add(input.class);
        let out = run_one(&mut c, &input);
        let repro = || format!("class {}: settings {:?}, command {:?}, parameters {}", input.class, input.settings, short(&input.command), short(&input.params.to_string()));
        if HOSTILE.contains(&input.class) {
            let label = match &out {
                Call::Envelope(_) => out.code().unwrap_or("result").to_string(),
                Call::SqlError { sqlstate, .. } => format!("SQL {sqlstate}"),
                Call::Lost(_) => "connection lost".into(),
            };
            f.hostile.add(&format!("{} -> {label}", input.class));
        }
        match &out {
            // KIP_4003 is a Postgres error the engine did not anticipate,
            // only wrapped in an envelope: a finding too.
            Call::Envelope(e) if out.code() == Some("KIP_4003") => {
                f.outcomes.add("KIP_4003");
                f.findings.push(format!("internal error KIP_4003 {}\n    {}", short(&e["error"]["message"].to_string()), repro()));
            }
            Call::Envelope(e) if input.class == "limit_zero" && e["result"].as_array().is_some_and(|r| !r.is_empty()) => {
                f.outcomes.add("result");
                f.findings.push(format!("LIMIT 0 returned rows: {}\n    {}", short(&e.to_string()), repro()));
            }
            Call::Envelope(_) => f.outcomes.add(out.code().unwrap_or("result")),
            Call::SqlError { sqlstate, message } => {
                f.outcomes.add(&format!("SQL {sqlstate}"));
                f.findings.push(format!("non-envelope error {sqlstate} {}\n    {}", short(message), repro()));
            }
            Call::Lost(why) => {
                f.outcomes.add("connection lost");
                f.lost += 1;
                f.findings.push(format!("connection lost ({why})\n    {}", repro()));
                wait_until_up(DB, Duration::from_secs(120));
            }
        }
        if !input.settings.is_empty() || matches!(out, Call::Lost(_)) {
            c = session(timeout_ms); // settings never leak into the next input
        }
    }
    f
}

fn main() {
    let cases = env_u64("KIP_FUZZ_CASES", 100_000);
    let clients = env_u64("KIP_FUZZ_CLIENTS", 2) as usize;
    let seed = env_u64("KIP_FUZZ_SEED", 9_090_909);
    let timeout_ms = env_u64("KIP_FUZZ_TIMEOUT_MS", 5_000);
    let repeat = env_u64("KIP_FUZZ_HOSTILE_REPEAT", 3);
    let skip: Vec<String> = std::env::var("KIP_FUZZ_SKIP").unwrap_or_default().split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    for s in &skip {
        assert!(HOSTILE.contains(&s.as_str()), "KIP_FUZZ_SKIP: unknown class {s:?} (classes: {})", HOSTILE.join(", "));
    }
    let hostile: Vec<&'static str> = HOSTILE.iter().copied().filter(|h| !skip.iter().any(|s| s == h)).collect();

    fresh_database(DB);
    let mut setup = connect_db(DB);
    for cmd in [SETUP] {
        match call(&mut setup, cmd, &json!({})) {
            Call::Envelope(e) if e.get("result").is_some() => {}
            other => panic!("fuzz setup failed: {other:?}"),
        }
    }
    if hostile.contains(&"export_chain") {
        // A long chain of links about links: each link's subject is the
        // previous link. Built in SQL, as a KIP capsule this deep is itself
        // a hostile input.
        let depth = env_u64("KIP_FUZZ_CHAIN", 20_000) as i64;
        setup
            .batch_execute(&format!(
                "WITH ends AS (
                   SELECT (SELECT id FROM kip.concepts WHERE type = 'Fuzz' AND name = 'a') AS a,
                          (SELECT id FROM kip.concepts WHERE type = 'Fuzz' AND name = 'b') AS b),
                 ids AS (SELECT i, nextval('kip.element_id_seq') AS id FROM generate_series(0, {depth}) i)
                 INSERT INTO kip.propositions (id, space, subject_concept, subject_link, predicate, object_concept)
                 SELECT id, current_setting('kip.space'), CASE WHEN i = 0 THEN a END,
                        lag(id) OVER (ORDER BY i), 'fuzz_chain', b
                   FROM ids, ends ORDER BY i"
            ))
            .expect("build the chain of links about links");
        let last: i64 = setup.query_one("SELECT max(id) FROM kip.propositions WHERE predicate = 'fuzz_chain'", &[]).expect("chain end").get(0);
        CHAIN_END.set(format!("P:{last}:fuzz_chain")).unwrap();
    }
    let mut seeds = builtin_seeds();
    seeds.extend(file_seeds());
    let seeds = Arc::new(seeds);
    println!("fuzz: {cases} inputs over {clients} sessions, {} seeds, seed {seed}, statement_timeout {timeout_ms} ms", seeds.len());
    if !skip.is_empty() {
        println!("fuzz: KIP_FUZZ_SKIP: not generating {}", skip.join(", "));
    }

    let log = ServerLog::mark();
    let start = Instant::now();
    let per = cases / clients as u64;
    let all = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..clients)
        .map(|t| {
            let (seeds, all, hostile) = (seeds.clone(), all.clone(), hostile.clone());
            let n = if t == 0 { cases - per * (clients as u64 - 1) } else { per };
            std::thread::spawn(move || {
                let f = worker(t, n, seed, timeout_ms, seeds, hostile, repeat);
                all.lock().unwrap().push(f);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("fuzz worker panicked");
    }
    let elapsed = start.elapsed();
    let mut figures = Figures::default();
    for f in all.lock().unwrap().iter() {
        figures.by_class.merge(&f.by_class);
        figures.outcomes.merge(&f.outcomes);
        figures.hostile.merge(&f.hostile);
        figures.findings.extend(f.findings.iter().cloned());
        figures.lost += f.lost;
    }
    println!("fuzz: {} inputs in {:.1}s ({:.0}/s)", figures.by_class.total(), elapsed.as_secs_f64(), figures.by_class.total() as f64 / elapsed.as_secs_f64());
    println!("fuzz: inputs by class: {}", figures.by_class);
    println!("fuzz: outcomes: {}", figures.outcomes);
    println!("fuzz: hostile inputs: {}", figures.hostile);
    let crashes = log.crash_lines();
    println!("fuzz: findings {} (non-envelope errors, KIP_4003, LIMIT 0 rows), lost connections {}, crash lines in the server log {}", figures.findings.len() as u64 - figures.lost, figures.lost, crashes.len());
    if figures.findings.is_empty() && crashes.is_empty() {
        drop_database(DB);
        println!("fuzz: passed");
        return;
    }
    eprintln!("fuzz: FAILED");
    let mut seen = std::collections::BTreeSet::new();
    for finding in &figures.findings {
        // One reproducer per kind of finding (first line).
        if seen.insert(finding.lines().next().unwrap_or("").chars().take(80).collect::<String>()) {
            eprintln!("- {finding}");
        }
    }
    for l in &crashes {
        eprintln!("- server log: {l}");
    }
    std::process::exit(1);
}
