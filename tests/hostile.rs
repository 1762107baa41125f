//! Hostile input through kip_execute: every item gets a KIP envelope, never
//! a Postgres ERROR or a crashed backend. Time budgets, parallel plans,
//! size limits, long chains of links about links, forged cursors, unusual
//! session settings, hostile text, and a non-superuser role.

use kip_integration_tests::{connect, dsn_for, err_code, fresh_space, kip, kip_request, ok, use_space};
use postgres::{Client, NoTls};
use serde_json::{json, Value};

fn drugs(c: &mut Client, n: usize) {
    let mut capsule = String::from(r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "A drug." } } "#);
    capsule.push_str(r#"CONCEPT ?p { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { description: "treats" } } "#);
    for i in 0..n {
        capsule.push_str(&format!(r#"CONCEPT ?d{i} {{ {{type: "Drug", name: "drug {i}"}} }} "#));
    }
    capsule.push('}');
    ok(kip(c, &capsule, json!({})));
}

fn message(out: &Value) -> String {
    out["error"]["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn every_command_of_a_batch_gets_its_own_time_budget() {
    let mut c = connect();
    fresh_space(&mut c, "budget");
    drugs(&mut c, 300);
    c.batch_execute("SET kip.command_timeout = '300ms'").unwrap();
    let slow = r#"FIND(COUNT(?a)) WHERE { ?a {type: "Drug"} ?b {type: "Drug"} ?c {type: "Drug"} }"#;
    let started = std::time::Instant::now();
    let out = kip_request(&mut c, json!({"commands": [slow, slow, r#"FIND(COUNT(?a)) WHERE { ?a {type: "Drug"} }"#]}));
    let items = out["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(err_code(&items[0]), "KIP_4001", "{out}");
    assert!(message(&items[0]).contains("kip.command_timeout"), "{out}");
    // The second command was limited too: the budget is re-armed.
    assert_eq!(err_code(&items[1]), "KIP_4001", "{out}");
    assert_eq!(items[2]["result"], json!(300), "{out}");
    assert!(started.elapsed().as_secs() < 20, "budgets did not bound the batch: {:?}", started.elapsed());
    // The session is healthy afterwards and a budget of 0 disables the limit.
    c.batch_execute("SET kip.command_timeout = 0").unwrap();
    assert_eq!(ok(kip(&mut c, r#"FIND(COUNT(?a)) WHERE { ?a {type: "Drug"} }"#, json!({}))), json!(300));
}

#[test]
fn entry_points_that_open_subtransactions_are_parallel_unsafe() {
    let mut c = connect();
    let labels: Vec<(String, String)> = c
        .query(
            "SELECT p.oid::regprocedure::text, p.proparallel::text FROM pg_proc p \
             WHERE p.proname IN ('kip_execute', 'kip_execute_readonly', 'try_timestamptz')",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(labels.len() >= 5, "{labels:?}");
    for (f, label) in &labels {
        assert_eq!(label, "u", "{f} must be PARALLEL UNSAFE");
    }
    // A query that calls it per row of a table that would get a parallel plan.
    fresh_space(&mut c, "parallel");
    drugs(&mut c, 1);
    c.batch_execute(
        "CREATE TEMP TABLE big AS SELECT g FROM generate_series(1, 200000) g; ANALYZE big; \
         SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; \
         SET max_parallel_workers_per_gather = 2",
    )
    .unwrap();
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM big WHERE g % 50000 = 0 AND kip_execute_readonly('FIND(?d.name) WHERE { ?d {type: \"Drug\"} }') ? 'result'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 4);
}

#[test]
fn size_limits_name_the_limit() {
    let mut c = connect();
    fresh_space(&mut c, "limits");
    drugs(&mut c, 1);
    // JSON parameters nested deeper than serde reads.
    let deep: String = "[".repeat(200) + &"]".repeat(200);
    let out: Value = c
        .query_one("SELECT kip_execute('FIND(?d) WHERE { ?d {type: \"Drug\"} }', $1::text::jsonb)", &[&deep])
        .unwrap()
        .get(0);
    assert_eq!(err_code(&out), "KIP_1001");
    assert!(message(&out).contains("128"), "{out}");
    let deep_request = format!(r#"{{"command": "DESCRIBE PRIMER", "parameters": {{"x": {deep}}}}}"#);
    let out: Value = c.query_one("SELECT kip_execute($1::text::jsonb)", &[&deep_request]).unwrap().get(0);
    assert_eq!(err_code(&out), "KIP_1001", "{out}");
    // A number beyond a double's range is refused, as the same literal in
    // the command text is; it was read as null (stored, or matched as null).
    for params in [r#"{"v": 1e400}"#, r#"{"v": [1, -1e309]}"#, r#"{"v": {"x": 123e999}}"#] {
        let out: Value = c
            .query_one(
                "SELECT kip_execute('UPSERT { CONCEPT ?d { {type: \"Drug\", name: \"Big\"} SET ATTRIBUTES { dose: :v } } }', $1::text::jsonb)",
                &[&params],
            )
            .unwrap()
            .get(0);
        assert_eq!(err_code(&out), "KIP_1001", "{params}: {out}");
        assert!(message(&out).contains("out of range"), "{out}");
        // It says where, and jsonb's thousand digits are elided.
        assert!(message(&out).starts_with("the parameters: \"v\""), "{out}");
        assert!(message(&out).len() < 300, "{out}");
    }
    let out: Value = c
        .query_one("SELECT kip_execute('DESCRIBE PRIMER', $1::text::jsonb)", &[&r#"{"a": {"b": [0, 1e999]}}"#])
        .unwrap()
        .get(0);
    assert!(message(&out).starts_with(r#"the parameters: "a"."b"[1]: number '1000"#), "{out}");
    // A lone number is at the top: no position is named.
    let out: Value = c.query_one("SELECT kip_execute('DESCRIBE PRIMER', '1e400'::jsonb)", &[]).unwrap().get(0);
    assert!(message(&out).starts_with("the parameters: number '1000"), "{out}");
    // A number a double cannot stand for, in a parameter or in the text,
    // is refused rather than stored as another (an integer beyond 64 bits
    // was rounded, a non-zero number below a double's smallest magnitude
    // became 0).
    let upsert_dose = |v: &str| format!(r#"UPSERT {{ CONCEPT ?d {{ {{type: "Drug", name: "Big"}} SET ATTRIBUTES {{ dose: {v} }} }} }}"#);
    for (params, reason) in [
        (r#"{"v": 18446744073709551616}"#, "beyond 64 bits"),
        (r#"{"v": [1, -9223372036854775809]}"#, "beyond 64 bits"),
        (r#"{"v": {"x": 1e-400}}"#, "smallest"),
    ] {
        let out: Value = c.query_one("SELECT kip_execute($1, $2::text::jsonb)", &[&upsert_dose(":v"), &params]).unwrap().get(0);
        assert_eq!(err_code(&out), "KIP_1001", "{params}: {out}");
        assert!(message(&out).contains(reason) && out["error"]["hint"].is_string(), "{out}");
    }
    for literal in ["18446744073709551616", "1e-400", "-123456789012345678901234"] {
        let out = kip(&mut c, &upsert_dose(literal), json!({}));
        assert_eq!(err_code(&out), "KIP_1001", "{literal}: {out}");
        assert!(message(&out).contains(literal), "{out}");
    }
    let stored = |c: &mut Client| -> Option<String> {
        c.query_opt("SELECT (attributes -> 'dose')::text FROM kip.concepts WHERE space = current_setting('kip.space') AND type = 'Drug' AND name = 'Big'", &[]).unwrap().map(|r| r.get(0))
    };
    assert_eq!(stored(&mut c), None, "a refused number wrote nothing");
    // 64-bit integers are kept exactly; a long decimal is the nearest double.
    for (v, kept) in [("18446744073709551615", "18446744073709551615"), ("-9223372036854775808", "-9223372036854775808"), ("3.14159265358979323846", "3.141592653589793")] {
        ok(kip(&mut c, &upsert_dose(v), json!({})));
        assert_eq!(stored(&mut c).as_deref(), Some(kept), "{v}");
        let out: Value = c.query_one("SELECT kip_execute($1, $2::text::jsonb)", &[&upsert_dose(":v"), &format!(r#"{{"v": {v}}}"#)]).unwrap().get(0);
        ok(out);
        assert_eq!(stored(&mut c).as_deref(), Some(kept), "{v} as a parameter");
    }
    ok(kip(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Big"} }"#, json!({})));
    let request = r#"{"command": "FIND(?d) WHERE { ?d {type: \"Drug\"} FILTER(?d.attributes.dose == :v) }", "parameters": {"v": 1e400}}"#;
    let out: Value = c.query_one("SELECT kip_execute($1::text::jsonb)", &[&request]).unwrap().get(0);
    assert_eq!(err_code(&out), "KIP_1001", "{out}");
    // A value nested deeper than 100 levels, written or passed, is refused:
    // stored, it failed EXPORT and grouped FINDs (their JSON readers stop
    // at 128 levels, counting the rows and envelopes around it).
    let nest = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
    for (levels, refused) in [(100, false), (101, true), (120, true)] {
        let literal = kip(&mut c, &upsert_dose(&nest(levels)), json!({}));
        let params = format!(r#"{{"v": {}}}"#, nest(levels));
        let passed: Value = c.query_one("SELECT kip_execute($1, $2::text::jsonb)", &[&upsert_dose(":v"), &params]).unwrap().get(0);
        for out in [literal, passed] {
            if refused {
                assert_eq!(err_code(&out), "KIP_1001", "{levels}: {out}");
                assert!(message(&out).contains("at most 100"), "{out}");
            } else {
                ok(out);
            }
        }
    }
    ok(kip(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Big"} }"#, json!({})));
    // A name over the index-key limit.
    let long = "n".repeat(5000);
    let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: :n} } }"#, json!({"n": long}));
    assert_eq!(err_code(&out), "KIP_2002", "{out}");
    assert!(message(&out).contains("1024"), "{out}");
    // A blank name, written or passed as a parameter, is refused; nothing is written.
    for name in ["", "   ", "\t\n"] {
        let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: :n} } }"#, json!({"n": name}));
        assert_eq!(err_code(&out), "KIP_2002", "{name:?}: {out}");
        assert!(message(&out).contains("blank") && out["error"]["hint"].is_string(), "{out}");
    }
    let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: ""} } }"#, json!({}));
    assert_eq!(err_code(&out), "KIP_2002", "{out}");
    let left: i64 = c.query_one("SELECT count(*) FROM kip.concepts WHERE type = 'Drug' AND btrim(name, E' \t\n') = ''", &[]).unwrap().get(0);
    assert_eq!(left, 0);
    // A description too large for the keyword index (within an element
    // size raised for it).
    c.batch_execute("SET kip.max_element_size = '4MB'").unwrap();
    let words: Vec<String> = (0..250_000).map(|i| format!("w{i}")).collect();
    let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Wordy"} SET ATTRIBUTES { description: :d } } }"#, json!({"d": words.join(" ")}));
    assert_eq!(err_code(&out), "KIP_2002", "{}", message(&out));
    assert!(message(&out).contains("tsvector"), "{}", message(&out));
    c.batch_execute("RESET kip.max_element_size").unwrap();
    // A 10 MB command text.
    let huge = format!(r#"FIND(?d) WHERE {{ ?d {{type: "Drug", name: "{}"}} }}"#, "x".repeat(10 * 1024 * 1024));
    let out = kip(&mut c, &huge, json!({}));
    assert_eq!(err_code(&out), "KIP_4002");
    assert!(message(&out).contains("kip.max_command_size"), "{out}");
    // A command with 10,000 clauses.
    let mut many = String::from("FIND(?d0) WHERE { ");
    for i in 0..10_000 {
        many.push_str(&format!(r#"?d{i} {{type: "Drug"}} "#));
    }
    many.push('}');
    let out = kip(&mut c, &many, json!({}));
    assert_eq!(err_code(&out), "KIP_4002");
    assert!(message(&out).contains("kip.max_clauses"), "{out}");
    // Nothing was written by the refused commands.
    assert_eq!(ok(kip(&mut c, r#"FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }"#, json!({}))), json!(1));
}

#[test]
fn a_long_chain_of_links_about_links_exports_to_a_capsule_kip_reimports() {
    let mut c = connect();
    fresh_space(&mut c, "chain");
    drugs(&mut c, 2);
    let depth = 300;
    let mut capsule = String::from(r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "drug 0"} } CONCEPT ?b { {type: "Drug", name: "drug 1"} } PROPOSITION ?l0 { (?a, "treats", ?b) } "#);
    for i in 1..depth {
        capsule.push_str(&format!(r#"PROPOSITION ?l{i} {{ (?l{}, "treats", ?b) }} "#, i - 1));
    }
    capsule.push('}');
    let created = ok(kip(&mut c, &capsule, json!({})));
    let last = created["upsert_proposition_links"][depth - 1].as_str().unwrap().to_string();
    let out = ok(kip(&mut c, "EXPORT ?l WHERE { ?l (id: :id) }", json!({"id": last})));
    let text = out["capsule"].as_str().unwrap().to_string();
    // kip reads its own capsule back: re-applying it changes nothing.
    ok(kip(&mut c, &text, json!({})));
    let count = r#"FIND(COUNT(?l)) WHERE { ?l (?s, "treats", ?o) }"#;
    assert_eq!(ok(kip(&mut c, count, json!({}))), json!(depth));
    // The whole chain exports to a capsule that rebuilds it in a fresh space.
    let all = ok(kip(&mut c, r#"EXPORT ?l WHERE { ?l (?s, "treats", ?o) } LIMIT 1000"#, json!({})));
    let text = all["capsule"].as_str().unwrap().to_string();
    fresh_space(&mut c, "chain_import");
    drugs(&mut c, 2);
    ok(kip(&mut c, &text, json!({})));
    assert_eq!(ok(kip(&mut c, count, json!({}))), json!(depth), "{}", &text[..text.len().min(2000)]);
}

#[test]
fn forged_and_overflowing_cursors_are_refused() {
    let mut c = connect();
    fresh_space(&mut c, "cursor");
    drugs(&mut c, 5);
    let q = r#"FIND(?d.name) WHERE { ?d {type: "Drug"} } LIMIT 2"#;
    let first = kip(&mut c, q, json!({}));
    let token = first["next_cursor"].as_str().unwrap().to_string();
    let resumed = kip(&mut c, &format!(r#"{q} CURSOR "{token}""#), json!({}));
    assert_eq!(resumed["result"].as_array().map(Vec::len), Some(2), "{resumed}");
    let b64 = |s: &str| -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in s.as_bytes().chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    };
    for forged in [b64("k1:4:0000000000000000"), b64("k1:99999999999999999999:0000000000000000"), b64("k1:18446744073709551615:ffffffffffffffff"), "x".repeat(500)] {
        let out = kip(&mut c, &format!(r#"{q} CURSOR "{forged}""#), json!({}));
        assert_eq!(err_code(&out), "KIP_1001", "{forged}: {out}");
    }
    // The key is a random per-database secret that PUBLIC cannot read.
    let (len, public): (i32, bool) = c
        .query_one(
            "SELECT length(secret), has_table_privilege('public', 'kip.instance_secrets', 'SELECT') FROM kip.instance_secrets WHERE name = 'cursor'",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert_eq!((len, public), (32, false));
}

#[test]
fn unusual_session_settings() {
    let mut c = connect();
    let space = fresh_space(&mut c, "settings");
    drugs(&mut c, 3);
    // Give the concepts their vectors, so that changing one below runs the
    // staleness trigger.
    c.execute("SELECT kip_embed_pending(NULL, $1)", &[&space]).unwrap();
    c.batch_execute("SET search_path = ''; SET standard_conforming_strings = off").unwrap();
    let run = |c: &mut Client, q: &str, p: Value| -> Value {
        let out: Value = c.query_one("SELECT public.kip_execute($1::text, $2::jsonb)", &[&q, &p]).unwrap().get(0);
        out
    };
    let out = run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "drug 1"} SET ATTRIBUTES { description: "changed" } } }"#, json!({}));
    assert!(out.get("result").is_some(), "{out}");
    let out = run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "back\\slash_100%"} SET ATTRIBUTES { description: "it's" } } } WITH METADATA { expires_at: "2000-01-01T00:00:00Z" }"#, json!({}));
    assert!(out.get("result").is_some(), "{out}");
    for (q, expect) in [
        (r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(CONTAINS(?d.name, "\\slash_1")) }"#, json!(["back\\slash_100%"])),
        (r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, "^back\\\\s")) }"#, json!(["back\\slash_100%"])),
    ] {
        assert_eq!(run(&mut c, q, json!({}))["result"], expect, "{q}");
    }
    let hits = run(&mut c, r#"SEARCH CONCEPT "slash_100%" WITH TYPE "Drug" LIMIT 5"#, json!({}));
    assert!(hits["result"].to_string().contains("back\\\\slash_100%"), "{hits}");
    for q in ["DESCRIBE PRIMER", r#"EXPORT ?d WHERE { ?d {type: "Drug"} }"#] {
        assert!(run(&mut c, q, json!({})).get("result").is_some(), "{q}");
    }
    // The maintenance cycle reads timestamps with the same settings.
    let valid: bool = c.query_one("SELECT kip.try_timestamptz('2000-01-01T00:00:00Z') IS NOT NULL", &[]).unwrap().get(0);
    assert!(valid);
    let report: Value = c.query_one("SELECT public.kip_maintenance($1)", &[&space]).unwrap().get(0);
    assert!(report.get("error").is_none(), "{report}");
}

#[test]
fn hostile_names_keys_predicates_and_patterns_travel_as_data() {
    let mut c = connect();
    fresh_space(&mut c, "hostile");
    drugs(&mut c, 1);
    let names = [
        "x'); DROP TABLE kip.concepts; --",
        "$1",
        "\\\\'\"",
        "名前 🧪",
        "a%_b",
        "v_1 AS x FROM kip.spaces --",
    ];
    for n in names {
        let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: :n} SET ATTRIBUTES { :k: 1 } } }"#, json!({"n": n, "k": "k"}));
        // Attribute keys cannot be placeholders: a syntax error, in the envelope.
        assert_eq!(err_code(&out), "KIP_1001", "{out}");
        let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: :n} SET ATTRIBUTES { description: :n } } }"#, json!({"n": n}));
        ok(out);
        let found = ok(kip(&mut c, r#"FIND(?d.attributes.description) WHERE { ?d {type: "Drug", name: :n} }"#, json!({"n": n})));
        assert_eq!(found, json!([n]));
        let keyed = format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} FILTER(?d.attributes.description == {}) }}"#, serde_json::to_string(n).unwrap());
        assert_eq!(ok(kip(&mut c, &keyed, json!({}))), json!([n]));
    }
    // Hostile attribute keys written through KIP text.
    let out = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "keys"} SET ATTRIBUTES { "a'b": 1, "--": 2, "x\"y": 3 } } }"#, json!({}));
    ok(out);
    let found = ok(kip(&mut c, r#"FIND(?d.attributes) WHERE { ?d {type: "Drug", name: "keys"} }"#, json!({})));
    assert_eq!(found, json!([{"a'b": 1, "--": 2, "x\"y": 3}]));
    // Hostile predicates: unregistered is KIP_2001, malformed names KIP_1002.
    let out = kip(&mut c, r#"FIND(?a) WHERE { (?a, :p, ?b) }"#, json!({"p": "x'); DROP TABLE kip.concepts; --"}));
    assert_eq!(out, json!({"result": []}), "an unknown predicate matches nothing");
    let out = kip(&mut c, r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: :p} } }"#, json!({"p": "bad name'"}));
    assert_eq!(err_code(&out), "KIP_1002", "{out}");
    // Hostile regular expressions: invalid ones are KIP_1001, costly ones end within the budget.
    let out = kip(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, :r)) }"#, json!({"r": "(unclosed"}));
    assert_eq!(err_code(&out), "KIP_1001", "{out}");
    c.batch_execute("SET kip.command_timeout = '2s'").unwrap();
    let out = kip(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, :r)) }"#, json!({"r": "^(a|a?)+$"}));
    assert!(out.get("result").is_some() || err_code(&out) == "KIP_4001", "{out}");
    // A NUL character cannot be stored: a KIP error, not a Postgres one.
    let out = kip(&mut c, "UPSERT { CONCEPT ?d { {type: \"Drug\", name: \"nul\\u0000byte\"} } }", json!({}));
    assert_eq!(err_code(&out), "KIP_1001", "{out}");
    // Nothing outside the space was touched.
    assert_eq!(ok(kip(&mut c, r#"FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }"#, json!({}))), json!(names.len() + 2));
}

#[test]
fn a_non_superuser_role_can_use_kip() {
    let mut admin = connect();
    admin
        .batch_execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_test_agent') THEN \
               CREATE ROLE kip_test_agent LOGIN NOSUPERUSER; END IF; END $$; \
             GRANT kip_writer TO kip_test_agent",
        )
        .unwrap();
    let dsn = dsn_for("kip_test").replace("user=postgres", "user=kip_test_agent");
    let mut c = Client::connect(&dsn, NoTls).expect("connect as kip_test_agent");
    let superuser: bool = c.query_one("SELECT rolsuper FROM pg_roles WHERE rolname = current_user", &[]).unwrap().get(0);
    assert!(!superuser);
    let space = kip_integration_tests::unique_space("agent");
    // A writer uses the spaces granted to it (governance, tests/governance.rs).
    admin.execute("SELECT kip_grant($1, 'kip_test_agent', 'write')", &[&space]).unwrap();
    use_space(&mut c, &space);
    drugs(&mut c, 5);
    let q = r#"FIND(?d.name) WHERE { ?d {type: "Drug"} } LIMIT 3"#;
    let first = kip(&mut c, q, json!({}));
    let token = first["next_cursor"].as_str().unwrap_or_else(|| panic!("{first}")).to_string();
    let rest = ok(kip(&mut c, &format!(r#"{q} CURSOR "{token}""#), json!({})));
    assert_eq!(rest.as_array().map(Vec::len), Some(2));
    assert!(ok(kip(&mut c, r#"EXPORT ?d WHERE { ?d {type: "Drug"} }"#, json!({})))["capsule"].is_string());
    assert_eq!(err_code(&kip(&mut c, r#"DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Domain", name: "CoreSchema"} }"#, json!({}))), "KIP_3004");
    // The role cannot read the cursor secret directly.
    assert!(c.query_one("SELECT secret FROM kip.instance_secrets", &[]).is_err());
}

#[test]
fn an_element_is_bounded_in_size_and_a_find_in_its_lists() {
    let mut c = connect();
    fresh_space(&mut c, "elemsize");
    drugs(&mut c, 1);
    let upsert = |key: &str| format!(r#"UPSERT {{ CONCEPT ?d {{ {{type: "Drug", name: "drug 0"}} SET ATTRIBUTES {{ {key}: :v }} }} }}"#);
    // One value over kip.max_element_size (1 MB): KIP_2002, nothing written.
    let out = kip(&mut c, &upsert("notes"), json!({"v": "x".repeat(1_100_000)}));
    assert_eq!(err_code(&out), "KIP_2002", "{}", message(&out));
    assert!(message(&out).contains("kip.max_element_size is 1024 kB"), "{}", message(&out));
    assert!(out["error"]["hint"].is_string(), "{out}");
    let created = kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Big"} SET ATTRIBUTES { notes: :v } } }"#, json!({"v": "x".repeat(1_100_000)}));
    assert_eq!(err_code(&created), "KIP_2002", "{}", message(&created));
    assert_eq!(ok(kip(&mut c, r#"FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }"#, json!({}))), json!(1));
    // Growing an element past it write by write: the write that crosses it
    // is refused, by UPSERT and by UPDATE alike.
    let half = "y".repeat(600_000);
    ok(kip(&mut c, &upsert("a"), json!({"v": half})));
    assert_eq!(err_code(&kip(&mut c, &upsert("b"), json!({"v": half}))), "KIP_2002");
    let update = r#"UPDATE ?d SET ATTRIBUTES { c: :v } WHERE { ?d {type: "Drug", name: "drug 0"} }"#;
    assert_eq!(err_code(&kip(&mut c, update, json!({"v": half}))), "KIP_2002");
    let stored = ok(kip(&mut c, r#"FIND(?d.attributes.b, ?d.attributes.c) WHERE { ?d {type: "Drug", name: "drug 0"} }"#, json!({})));
    assert_eq!(stored, json!([[null, null]]));
    // The setting raises the bound; plain SQL is not held to it.
    c.batch_execute("SET kip.max_element_size = '4MB'").unwrap();
    ok(kip(&mut c, &upsert("b"), json!({"v": half})));
    c.batch_execute("RESET kip.max_element_size").unwrap();
    c.batch_execute("UPDATE kip.concepts SET attributes = attributes || jsonb_build_object('d', repeat('z', 600000)) WHERE type = 'Drug' AND name = 'drug 0'").unwrap();
    // At most 64 FIND expressions and 32 ORDER BY keys, before Postgres's
    // own limits (100 function arguments, 1,664 columns).
    let list = |n: usize, f: &dyn Fn(usize) -> String| (0..n).map(f).collect::<Vec<_>>().join(", ");
    let wide = format!(r#"FIND({}) WHERE {{ ?d {{type: "Drug"}} }}"#, list(65, &|i| format!("?d.attributes.k{i}")));
    let out = kip(&mut c, &wide, json!({}));
    assert_eq!(err_code(&out), "KIP_4002", "{out}");
    assert!(message(&out).contains("at most 64"), "{out}");
    let sorted = format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} }} ORDER BY {} LIMIT 1"#, list(33, &|i| format!("?d.attributes.k{i}")));
    let out = kip(&mut c, &sorted, json!({}));
    assert_eq!(err_code(&out), "KIP_4002", "{out}");
    assert!(message(&out).contains("at most 32"), "{out}");
    let fits = format!(r#"FIND({}) WHERE {{ ?d {{type: "Drug"}} }} ORDER BY {} LIMIT 1"#, list(64, &|i| format!("?d.attributes.k{i}")), list(32, &|i| format!("?d.attributes.k{i}")));
    assert_eq!(ok(kip(&mut c, &fits, json!({})))[0].as_array().map(Vec::len), Some(64));
}

#[test]
fn a_number_beyond_a_double_is_read_as_its_decimal_text() {
    let mut c = connect();
    fresh_space(&mut c, "bignum");
    drugs(&mut c, 1);
    // Written by plain SQL: jsonb holds any numeric, JSON numbers do not.
    c.batch_execute("UPDATE kip.concepts SET attributes = attributes || '{\"big\": 1e400, \"small\": 2}' WHERE type = 'Drug' AND name = 'drug 0'").unwrap();
    // Read as text: serde_json, like many JSON readers, holds no such number.
    let text = |c: &mut Client, command: &str| -> String { c.query_one("SELECT kip_execute($1::text)::text", &[&command]).unwrap().get(0) };
    let digits = format!("1{}", "0".repeat(400));
    for command in [
        r#"FIND(?d.attributes.big, ?d.attributes.small) WHERE { ?d {type: "Drug"} }"#,
        r#"FIND(?d) WHERE { ?d {type: "Drug"} }"#,
        r#"EXPORT ?d WHERE { ?d {type: "Drug"} }"#,
        r#"FIND(?d.name, ?d.attributes.big) WHERE { ?d {type: "Drug"} } ORDER BY ?d.attributes.big DESC"#,
    ] {
        let out = text(&mut c, command);
        assert!(!out.contains("\"error\""), "{command}: {}", &out[..out.len().min(300)]);
        assert!(out.contains(&digits), "{command}: {}", &out[..out.len().min(300)]);
    }
    // A merge reads both concepts' attributes in kip.
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "twin"} } }"#, json!({})));
    let out = text(&mut c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Drug", name: "drug 0"} ?t {type: "Drug", name: "twin"} }"#);
    assert!(out.contains("\"merged\": true"), "{out}");
}

#[test]
fn a_batch_stops_where_the_statement_timeout_expired() {
    let mut c = connect();
    fresh_space(&mut c, "stmt_timeout");
    drugs(&mut c, 300);
    let slow = r#"FIND(COUNT(?a)) WHERE { ?a {type: "Drug"} ?b {type: "Drug"} ?c {type: "Drug"} }"#;
    c.batch_execute("SET statement_timeout = '500ms'").unwrap();
    let started = std::time::Instant::now();
    let out = kip_request(&mut c, json!({"commands": [slow, slow, slow]}));
    c.batch_execute("RESET statement_timeout").unwrap();
    let items = out["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    // Postgres fires the timer once: the commands after it would run unbounded.
    assert_eq!(items.len(), 1, "{out}");
    assert_eq!(err_code(&items[0]), "KIP_4001", "{out}");
    assert!(message(&items[0]).contains("statement timeout"), "{out}");
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());

    // One statement calling kip on several rows: the calls after the one
    // that met the timeout are answered KIP_4001 at once, not run unbounded.
    c.batch_execute("SET statement_timeout = '500ms'; SET kip.command_timeout = '30s'").unwrap();
    let started = std::time::Instant::now();
    let rows = c.query("SELECT kip_execute($1::text, '{}'::jsonb) FROM generate_series(1, 3)", &[&slow]).unwrap();
    c.batch_execute("RESET statement_timeout; RESET kip.command_timeout").unwrap();
    let answers: Vec<Value> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(answers.len(), 3);
    for answer in &answers {
        assert_eq!(err_code(answer), "KIP_4001", "{answers:?}");
    }
    assert!(message(&answers[1]).contains("an earlier command of this statement"), "{answers:?}");
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    // The next statement runs as usual.
    assert_eq!(ok(kip(&mut c, r#"FIND(COUNT(?a)) WHERE { ?a {type: "Drug"} }"#, json!({}))), json!(300));

    // Statements of one simple-query message share their start time, but
    // each has a statement_timeout of its own: the one after the expiry runs.
    let slow_sql = slow.replace('\'', "''");
    let messages = c
        .simple_query(&format!(
            "SET statement_timeout = '500ms'; SELECT kip_execute('{slow_sql}'); \
             SELECT kip_execute('FIND(COUNT(?a)) WHERE {{ ?a {{type: \"Drug\"}} }}'); RESET statement_timeout"
        ))
        .unwrap();
    let answers: Vec<Value> = messages
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).map(|t| serde_json::from_str(t).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(err_code(&answers[0]), "KIP_4001", "{answers:?}");
    assert_eq!(answers[1]["result"], json!(300), "{answers:?}");
}

#[test]
fn kip_explain_keeps_the_command_budget_and_says_what_it_explains() {
    let mut c = connect();
    fresh_space(&mut c, "explain_budget");
    drugs(&mut c, 300);
    c.batch_execute("SET kip.command_timeout = '300ms'").unwrap();
    let slow = r#"FIND(COUNT(?a)) WHERE { ?a {type: "Drug"} ?b {type: "Drug"} ?c {type: "Drug"} }"#;
    let started = std::time::Instant::now();
    let plan: String = c.query_one("SELECT kip_explain($1::text, '{}', true)", &[&slow]).unwrap().get(0);
    assert!(plan.starts_with("KIP_4001"), "{plan}");
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    c.batch_execute("RESET kip.command_timeout").unwrap();
    let plan: String = c.query_one("SELECT kip_explain('UPSERT { CONCEPT ?d { {type: \"Drug\", name: \"x\"} } }')", &[]).unwrap().get(0);
    assert!(plan.starts_with("KIP_1001: kip_explain explains FIND commands, not UPSERT"), "{plan}");
}

#[test]
fn errors_quote_a_long_value_by_its_start() {
    let mut c = connect();
    fresh_space(&mut c, "long_values");
    drugs(&mut c, 1);
    let long = "q".repeat(1_000_000);
    for (command, params) in [
        (r#"FIND(?d) WHERE { ?d {type: "Drug", name: :n} (?d, "treats", ?x) }"#, json!({"n": long})),
        (r#"DESCRIBE CONCEPT TYPE :n"#, json!({"n": long})),
        (r#"FIND(?d) WHERE { ?d {id: :n} }"#, json!({"n": format!("C:{long}")})),
    ] {
        let out = kip(&mut c, command, params);
        assert!(out.get("error").is_some(), "{command}");
        let m = message(&out);
        assert!(m.len() < 400 && m.contains(" bytes)"), "{command}: {} bytes: {}", m.len(), &m[..m.len().min(200)]);
    }
    // A name cut short by a parser error names what may follow, not pest's rules.
    let out = kip(&mut c, r#"FIND(?d) WHERE { ?d {type: "Drug", name: :a-b} }"#, json!({"a": "x"}));
    assert_eq!(err_code(&out), "KIP_1001", "{out}");
    assert!(!message(&out).contains("BUILTIN_RULE"), "{out}");
}

/// Functions and operators planted in a schema searched first, with
/// signatures closer than the built-ins kip calls (variadic `concat_ws`,
/// `jsonb_build_object`, `||` on a bigint), never run: not in kip's
/// commands (their subtransactions pin `search_path`), nor in the views and
/// functions that plain SQL inlines.
#[test]
fn functions_planted_on_the_search_path_are_never_called() {
    let mut c = connect();
    let space = fresh_space(&mut c, "planted");
    let schema = kip_integration_tests::unique_space("planted").to_lowercase();
    c.batch_execute(&format!(
        r#"CREATE SCHEMA "{schema}";
           CREATE FUNCTION "{schema}".trap() RETURNS text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'planted function called'; END $$;
           CREATE FUNCTION "{schema}".concat_ws(text, text, text) RETURNS text LANGUAGE sql AS $$ SELECT "{schema}".trap() $$;
           CREATE FUNCTION "{schema}".concat_ws(text, text, text, text, text, text, text) RETURNS text LANGUAGE sql AS $$ SELECT "{schema}".trap() $$;
           CREATE FUNCTION "{schema}".concat_ws(text, text, text, text, text, text, text, text) RETURNS text LANGUAGE sql AS $$ SELECT "{schema}".trap() $$;
           CREATE FUNCTION "{schema}".jsonb_build_object(text, text, text, text, text, text) RETURNS jsonb LANGUAGE sql AS $$ SELECT "{schema}".trap()::jsonb $$;
           CREATE FUNCTION "{schema}".cat(text, bigint) RETURNS text LANGUAGE sql AS $$ SELECT "{schema}".trap() $$;
           CREATE OPERATOR "{schema}".|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = "{schema}".cat);
           CREATE FUNCTION "{schema}".pick(jsonb, jsonb) RETURNS text LANGUAGE sql AS $$ SELECT "{schema}".trap() $$;
           CREATE OPERATOR "{schema}".#>> (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = "{schema}".pick);
           CREATE FUNCTION "{schema}".field(jsonb, jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT "{schema}".trap()::jsonb $$;
           CREATE OPERATOR "{schema}".-> (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = "{schema}".field);"#
    ))
    .unwrap();
    c.batch_execute(&format!(r#"SET search_path = "{schema}", public"#)).unwrap();
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} SET ATTRIBUTES { description: "A note." } }
                    CONCEPT ?d { {type: "Domain", name: "Notes"} SET ATTRIBUTES { description: "Notes." } }
                    CONCEPT ?n { {type: "Note", name: "first"} SET ATTRIBUTES { description: "The first note.", aliases: ["one"] }
                                 SET PROPOSITIONS { ("belongs_to_domain", ?d) } } }"#,
        json!({}),
    ));
    ok(kip(&mut c, r#"FIND(?n, ?n.name) WHERE { ?n {type: "Note"} }"#, json!({})));
    ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    ok(kip(&mut c, "DESCRIBE DOMAINS", json!({})));
    ok(kip(&mut c, r#"SEARCH CONCEPT "first note" MODE "keyword""#, json!({})));
    ok(kip(&mut c, r#"EXPORT ?n WHERE { ?n {type: "Note"} }"#, json!({})));
    // Plain SQL over kip's views, and a write the staleness trigger checks.
    let ids: Vec<String> = c
        .query("SELECT id FROM kip.concept_nodes WHERE space = $1", &[&space])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(ids.iter().all(|id| id.starts_with("C:")), "{ids:?}");
    let texts: Vec<String> = c
        .query("SELECT grounding_text FROM kip.embedding_backlog WHERE space = $1", &[&space])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(texts.iter().any(|t| t == "Note: first. Also known as one. The first note."), "{texts:?}");
    // The grounding text of an Experience reads its nested strings.
    let text: String = c
        .query_one(
            r#"SELECT kip.concept_grounding_text('Experience', 'e', '{"goal": "fix the bug", "initial_state": {"a": "b"}}')"#,
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(text, "Experience: e. fix the bug. b");
    c.batch_execute(&format!(r#"RESET search_path; DROP SCHEMA "{schema}" CASCADE"#)).unwrap();
}

/// A trigger a user adds to kip's tables, with a `SET search_path` of its
/// own, keeps that path when a KIP command fires it (kip pins the path of
/// its own statements with the setting, which a function's own SET
/// overrides in turn).
#[test]
fn a_users_trigger_keeps_its_own_search_path_under_kip() {
    let db = "kip_user_trigger_test";
    kip_integration_tests::reliability::fresh_database(db);
    let mut c = Client::connect(&format!("host=localhost port={} user=postgres dbname={db}", kip_integration_tests::port()), NoTls).unwrap();
    c.batch_execute(
        r#"CREATE SCHEMA audit;
           CREATE TABLE audit.log (name text);
           CREATE FUNCTION audit.note() RETURNS trigger LANGUAGE plpgsql SET search_path = audit, pg_catalog AS $$
           BEGIN INSERT INTO log VALUES (NEW.name); RETURN NEW; END $$;
           CREATE TRIGGER audit_note AFTER INSERT ON kip.concepts FOR EACH ROW EXECUTE FUNCTION audit.note();"#,
    )
    .unwrap();
    use_space(&mut c, "audited");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} } CONCEPT ?n { {type: "Note", name: "kept"} } }"#, json!({})));
    let logged: i64 = c.query_one("SELECT count(*) FROM audit.log WHERE name = 'kept'", &[]).unwrap().get(0);
    assert_eq!(logged, 1);
    drop(c);
    kip_integration_tests::reliability::drop_database(db);
}

/// One session sending many large query shapes (FINDs of 10 to 30 UNION
/// branches, each a plan of megabytes) keeps its saved plans within their
/// memory budget (64 MB as measured, `spi::MAX_SAVED_PLAN_BYTES`): capped
/// by count alone, 84 such shapes held about 150 MB, and a thousand would
/// hold gigabytes.
#[test]
fn saved_plans_stay_within_their_memory_budget() {
    let mut c = connect();
    fresh_space(&mut c, "plan_budget");
    drugs(&mut c, 3);
    let plan_bytes = |c: &mut Client| -> i64 {
        c.query_one(
            "SELECT coalesce(sum(total_bytes), 0)::bigint FROM pg_backend_memory_contexts WHERE name IN ('CachedPlanSource', 'CachedPlanQuery', 'CachedPlan')",
            &[],
        )
        .unwrap()
        .get(0)
    };
    let mut peak = 0;
    for branches in 10..31 {
        for order in ["", " ORDER BY ?d.name ASC", " ORDER BY ?d.name DESC", " ORDER BY ?d.name ASC LIMIT 2"] {
            let mut find = String::from(r#"FIND(?d.name) WHERE { ?d {type: "Drug", name: "Drug 0"}"#);
            for b in 1..branches {
                find.push_str(&format!(
                    r#" UNION {{ ?d {{type: "Drug", name: "drug {}"}} OPTIONAL {{ (?d, "treats", ?s{b}) }} FILTER(?d.name != "x{b}") }}"#,
                    b % 3
                ));
            }
            find.push_str(" }");
            find.push_str(order);
            ok(kip(&mut c, &find, json!({})));
            peak = peak.max(plan_bytes(&mut c));
        }
    }
    assert!(peak < 96 << 20, "the saved plans held {} MB", peak >> 20);
}

/// kip's trigger functions called as plain functions refuse as PL/pgSQL's
/// do (0A000), not with an internal error; parameters that are no object
/// get a hint about parameters.
#[test]
fn trigger_functions_and_odd_parameters_are_refused_plainly() {
    let mut c = connect();
    for function in ["kip.touch_concept()", "kip.spaces_changed()", "kip.check_element_id()", "kip.concepts_history()"] {
        let e = c.query_one(&format!("SELECT {function}"), &[]).expect_err(function);
        let code = e.as_db_error().map(|d| d.code().code().to_string()).unwrap_or_default();
        assert_eq!(code, "0A000", "{function}: {e:?}");
    }
    fresh_space(&mut c, "odd_params");
    for params in ["[]", "1", "\"x\""] {
        let out: Value = c
            .query_one("SELECT kip_execute('DESCRIBE PRIMER', $1::text::jsonb)", &[&params])
            .unwrap()
            .get(0);
        assert_eq!(err_code(&out), "KIP_1001", "{out}");
        assert!(out["error"]["hint"].as_str().unwrap().contains("placeholder"), "{params}: {out}");
    }
}

/// A KIP command run by a trigger that a KIP command fired, in a backend
/// whose plan cache fills up meanwhile (1,152 distinct FINDs, past its
/// 1,024 saved plans): the cache is emptied only when no plan of it is
/// executing. It freed every plan, the outer one included, and the
/// backend crashed reading it when the trigger returned.
#[test]
fn a_nested_command_that_fills_the_plan_cache_leaves_the_outer_plan_alone() {
    let db = "kip_nested_plans_test";
    kip_integration_tests::reliability::fresh_database(db);
    let mut c = Client::connect(&dsn_for(db), NoTls).unwrap();
    use_space(&mut c, "nested");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Thing"} } }"#, json!({})));
    c.batch_execute(
        r#"
        CREATE FUNCTION public.kip_fill_plans() RETURNS trigger
        LANGUAGE plpgsql SET search_path = public, pg_catalog AS $$
        DECLARE
            shape text;
        BEGIN
            FOR k IN 1..64 LOOP
                FOR j IN 0..17 LOOP
                    shape := format('FIND(%s) WHERE { ?p {type: "Thing"} }%s LIMIT 3',
                        (SELECT string_agg(format('?p.attributes.a%s', i), ', ') FROM generate_series(1, k) i),
                        CASE WHEN j = 0 THEN '' ELSE ' ORDER BY ' ||
                            (SELECT string_agg(format('?p.attributes.b%s', i), ', ') FROM generate_series(1, j) i) END);
                    IF kip_execute(shape, '{}') ? 'error' THEN
                        RAISE EXCEPTION 'nested FIND failed: %', kip_execute(shape, '{}');
                    END IF;
                END LOOP;
            END LOOP;
            RETURN NEW;
        END $$;
        CREATE TRIGGER kip_fill_plans AFTER INSERT ON kip.concepts
            FOR EACH ROW WHEN (NEW.name = 'drainme') EXECUTE FUNCTION public.kip_fill_plans();
        "#,
    )
    .unwrap();
    let out = kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "Thing", name: "drainme"} } }"#, json!({}));
    ok(out);
    // The same session goes on.
    let found = ok(kip(&mut c, r#"FIND(?t.name) WHERE { ?t {type: "Thing"} }"#, json!({})));
    assert_eq!(found, json!(["drainme"]));
    drop(c);
    let mut admin = Client::connect(&kip_integration_tests::admin_dsn(), NoTls).unwrap();
    admin.batch_execute(&format!("DROP DATABASE \"{db}\" WITH (FORCE)")).unwrap();
}
