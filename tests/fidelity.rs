//! Protocol fidelity: the rules the reference engines keep for clause
//! groups, dangling ids, grounding, LIMIT 0 and external ids, and the
//! compiler's independence from literal values.

use kip_integration_tests::{connect, err_code, fresh_space, kip, ok};
use postgres::Client;
use serde_json::{json, Value};

fn memory() -> Client {
    let mut c = connect();
    fresh_space(&mut c, "fid");
    ok(kip(
        &mut c,
        r#"UPSERT {
            CONCEPT ?drug { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "A drug." } }
            CONCEPT ?symptom { {type: "$ConceptType", name: "Symptom"} SET ATTRIBUTES { description: "A symptom." } }
            CONCEPT ?treats { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { description: "treats" } }
            CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk: 2 } }
            CONCEPT ?b { {type: "Drug", name: "Ibuprofen"} SET ATTRIBUTES { risk: 3 } }
        }"#,
        json!({}),
    ));
    c
}

fn find(c: &mut Client, q: &str) -> Value {
    ok(kip(c, q, json!({})))
}

#[test]
fn a_clause_group_that_matches_nothing_does_not_suppress_the_others() {
    let mut c = memory();
    // ?s shares no variable with ?d, and no Symptom exists.
    let out = find(&mut c, r#"FIND(?d.name, ?s.name) WHERE { ?d {type: "Drug"} ?s {type: "Symptom"} } ORDER BY ?d.name ASC"#);
    assert_eq!(out, json!([["Aspirin", "Ibuprofen"], [null, null]]));
    // Order of the groups does not matter.
    let out = find(&mut c, r#"FIND(?d.name) WHERE { ?s {type: "Symptom"} ?d {type: "Drug"} } ORDER BY ?d.name ASC"#);
    assert_eq!(out, json!(["Aspirin", "Ibuprofen"]));
    // When every group matches, solutions are the cross product.
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?s { {type: "Symptom", name: "Headache"} } }"#, json!({})));
    let out = find(&mut c, r#"FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} ?s {type: "Symptom"} }"#);
    assert_eq!(out, json!(2));
    // Connected clauses still join: nothing treats anything yet.
    let out = find(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) }"#);
    assert_eq!(out, json!([]));
    // A constant FILTER still applies to everything.
    let out = find(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} ?s {type: "Symptom"} FILTER(1 == 2) }"#);
    assert_eq!(out, json!([]));
}

#[test]
fn a_not_that_shares_no_variable_excludes_nothing() {
    let mut c = memory();
    let out = find(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { ?x {type: "Drug"} } } ORDER BY ?d.name ASC"#);
    assert_eq!(out, json!(["Aspirin", "Ibuprofen"]));
    // A NOT that does share a variable still filters.
    let out = find(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { ?d {name: "Aspirin"} } }"#);
    assert_eq!(out, json!(["Ibuprofen"]));
}

#[test]
fn dangling_ids_are_errors_only_in_the_mandatory_pattern() {
    let mut c = memory();
    let missing_c = "C:999999999";
    let missing_p = "P:999999999:treats";
    assert_eq!(err_code(&kip(&mut c, &format!(r#"FIND(?x) WHERE {{ ?x {{id: "{missing_c}"}} }}"#), json!({}))), "KIP_3002");
    assert_eq!(err_code(&kip(&mut c, &format!(r#"FIND(?l) WHERE {{ ?l (id: "{missing_p}") }}"#), json!({}))), "KIP_3002");
    let drugs = json!(["Aspirin", "Ibuprofen"]);
    for q in [
        format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} OPTIONAL {{ ?x {{id: "{missing_c}"}} }} }} ORDER BY ?d.name ASC"#),
        format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} OPTIONAL {{ (?d, "treats", {{id: "{missing_c}"}}) }} }} ORDER BY ?d.name ASC"#),
        format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} NOT {{ (?d, "treats", {{id: "{missing_c}"}}) }} }} ORDER BY ?d.name ASC"#),
        format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} NOT {{ ?l (id: "{missing_p}") (?d, "treats", ?l) }} }} ORDER BY ?d.name ASC"#),
        format!(r#"FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} UNION {{ ?d {{id: "{missing_c}"}} }} }} ORDER BY ?d.name ASC"#),
        // The clauses before a UNION are its other operand.
        format!(r#"FIND(?d.name) WHERE {{ ?d {{id: "{missing_c}"}} UNION {{ ?d {{type: "Drug"}} }} }} ORDER BY ?d.name ASC"#),
        format!(r#"FIND(?d.name) WHERE {{ ?l (id: "{missing_p}") (?d, "treats", ?l) UNION {{ ?d {{type: "Drug"}} }} }} ORDER BY ?d.name ASC"#),
    ] {
        assert_eq!(find(&mut c, &q), drugs, "{q}");
    }
    // A malformed id is a syntax error everywhere.
    let q = r#"FIND(?d.name) WHERE { ?d {type: "Drug"} OPTIONAL { ?x {id: "C:x"} } }"#;
    assert_eq!(err_code(&kip(&mut c, q, json!({}))), "KIP_1001");
}

#[test]
fn embedded_endpoints_must_exist_in_the_mandatory_pattern() {
    let mut c = memory();
    let q = r#"FIND(?d.name) WHERE { (?d, "treats", {type: "Symptom", name: "Nowhere"}) }"#;
    let out = kip(&mut c, q, json!({}));
    assert_eq!(err_code(&out), "KIP_3002");
    assert!(out["error"]["message"].as_str().unwrap().contains("Nowhere"), "{out}");
    // Nested inside a higher-order endpoint too.
    let q = r#"FIND(?x) WHERE { (?x, "treats", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Nowhere"})) }"#;
    assert_eq!(err_code(&kip(&mut c, q, json!({}))), "KIP_3002");
    // Inside OPTIONAL it just matches nothing.
    let q = r#"FIND(?d.name) WHERE { ?d {type: "Drug", name: "Aspirin"} OPTIONAL { (?d, "treats", {type: "Symptom", name: "Nowhere"}) } }"#;
    assert_eq!(find(&mut c, q), json!(["Aspirin"]));
}

#[test]
fn limit_zero_returns_nothing_and_no_cursor() {
    let mut c = memory();
    let out = kip(&mut c, r#"FIND(?d.name) WHERE { ?d {type: "Drug"} } LIMIT 0"#, json!({}));
    assert_eq!(out, json!({"result": []}));
    let out = kip(&mut c, r#"FIND(?d.name, ?d.attributes.risk) WHERE { ?d {type: "Drug"} } LIMIT 0"#, json!({}));
    assert_eq!(out, json!({"result": []}));
    for q in ["DESCRIBE CONCEPT TYPES LIMIT 0", "DESCRIBE PROPOSITION TYPES LIMIT 0"] {
        let out = kip(&mut c, q, json!({}));
        assert_eq!(out, json!({"result": []}), "{q}");
    }
    let out = kip(&mut c, r#"EXPORT ?d WHERE { ?d {type: "Drug"} } LIMIT 0"#, json!({}));
    assert!(out.get("next_cursor").is_none(), "{out}");
}

#[test]
fn one_strict_external_id_form_everywhere() {
    let mut c = memory();
    let id = find(&mut c, r#"FIND(?d) WHERE { ?d {type: "Drug", name: "Aspirin"} }"#)[0]["id"].as_str().unwrap().to_string();
    let n = id.trim_start_matches("C:");
    for bad in [format!("C:+{n}"), format!("C:0{n}"), format!("C: {n}"), format!("c:{n}")] {
        let q = format!(r#"FIND(?d.name) WHERE {{ ?d {{id: "{bad}"}} }}"#);
        assert_eq!(err_code(&kip(&mut c, &q, json!({}))), "KIP_1001", "FIND {bad}");
        let u = format!(r#"UPSERT {{ CONCEPT ?d {{ {{id: "{bad}"}} SET ATTRIBUTES {{ x: 1 }} }} }}"#);
        assert_eq!(err_code(&kip(&mut c, &u, json!({}))), "KIP_1001", "UPSERT {bad}");
    }
    let q = format!(r#"FIND(?d.name) WHERE {{ ?d {{id: "{id}"}} }}"#);
    assert_eq!(find(&mut c, &q), json!(["Aspirin"]));
}

/// The SQL text of a command, from kip_explain.
fn sql_of(c: &mut Client, command: &str) -> String {
    let plan: String = c.query_one("SELECT kip_explain($1::text)", &[&command]).unwrap().get(0);
    let sql = plan.split("-- parameters").next().unwrap().to_string();
    assert!(sql.contains("SELECT"), "{plan}");
    sql
}

#[test]
fn literal_values_never_change_the_sql_text() {
    let mut c = memory();
    let pairs = [
        (
            r#"FIND(?d.name) WHERE { ?d {type: "Drug", name: "Aspirin"} }"#,
            r#"FIND(?d.name) WHERE { ?d {type: "Drug", name: "x'); DROP TABLE kip.concepts; --"} }"#,
        ),
        (
            r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk > 1 && CONTAINS(?d.name, "a")) } LIMIT 5"#,
            r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.risk > 99 && CONTAINS(?d.name, "%_\\")) } LIMIT 50"#,
        ),
        (
            r#"FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", {type: "Symptom", name: "A"}) }"#,
            r#"FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", {type: "Symptom", name: "B\"quote"}) }"#,
        ),
        (
            r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(IN(?d.name, ["a", "b"])) }"#,
            r#"FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(IN(?d.name, ["c", "d'e"])) }"#,
        ),
    ];
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?s { {type: "Symptom", name: "A"} } CONCEPT ?t { {type: "Symptom", name: "B\"quote"} } }"#, json!({})));
    for (a, b) in pairs {
        assert_eq!(sql_of(&mut c, a), sql_of(&mut c, b), "{a}\n{b}");
    }
    // The hostile name was a value, not SQL.
    assert_eq!(find(&mut c, r#"FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }"#), json!(2));
}

/// A cursor issued after `DROP EXTENSION kip; CREATE EXTENSION kip` is
/// signed with the new installation's secret: another connection accepts
/// it (a backend that kept the old secret issued tokens no other backend
/// took, and refused theirs).
#[test]
fn cursors_after_the_extension_is_created_again_work_on_every_connection() {
    let db = "kip_cursor_secret_test";
    kip_integration_tests::reliability::fresh_database(db);
    let dsn = format!("host=localhost port={} user=postgres dbname={db}", kip_integration_tests::port());
    let connect_db = || Client::connect(&dsn, postgres::NoTls).expect("connect");
    let page = |c: &mut Client| {
        kip_integration_tests::use_space(c, "cursors");
        let first = kip(c, "DESCRIBE CONCEPT TYPES LIMIT 1", json!({}));
        first["next_cursor"].as_str().unwrap_or_else(|| panic!("no cursor: {first}")).to_string()
    };
    let mut a = connect_db();
    let before = page(&mut a);
    a.batch_execute("SET client_min_messages = warning; DROP EXTENSION kip CASCADE; CREATE EXTENSION kip CASCADE").unwrap();
    let after = page(&mut a);
    assert_ne!(before, after, "the token is still signed with the dropped installation's secret");
    let mut b = connect_db();
    let _ = page(&mut b);
    let next = kip(&mut b, "DESCRIBE CONCEPT TYPES LIMIT 1 CURSOR :c", json!({"c": after}));
    assert!(next.get("result").is_some(), "another connection refused the token: {next}");
    let stale = kip(&mut b, "DESCRIBE CONCEPT TYPES LIMIT 1 CURSOR :c", json!({"c": before}));
    assert_eq!(err_code(&stale), "KIP_1001", "{stale}");
    drop((a, b));
    kip_integration_tests::reliability::drop_database(db);
}

/// DESCRIBE DOMAINS, which takes no LIMIT or CURSOR, refuses a listing
/// longer than it gives (KIP_4002, pointing to the FIND that pages) rather
/// than cutting it short without a word.
#[test]
fn describe_domains_refuses_more_domains_than_it_lists() {
    let mut c = connect();
    let space = fresh_space(&mut c, "many_domains");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Domain", name: "Zeta"} } }"#, json!({})));
    // Plain SQL, as a bulk load would write them.
    c.execute(
        "INSERT INTO kip.concepts (space, type, name) SELECT $1, 'Domain', 'D' || g FROM generate_series(1, 10000) g",
        &[&space],
    )
    .unwrap();
    let e = kip(&mut c, "DESCRIBE DOMAINS", json!({}));
    assert_eq!(err_code(&e), "KIP_4002", "{e}");
    assert!(e["error"]["hint"].as_str().unwrap().contains("FIND(?d.name)"), "{e}");
    // The primer still answers, with its first 200 and the total.
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    assert_eq!(primer["domain_map"].as_array().unwrap().len(), 200, "{primer}");
    assert!(primer["total_domains"].as_i64().unwrap() > 10_000, "{primer}");
    c.execute("DELETE FROM kip.concepts WHERE space = $1 AND type = 'Domain' AND name ~ '^D[0-9]+$'", &[&space]).unwrap();
    assert!(ok(kip(&mut c, "DESCRIBE DOMAINS", json!({}))).as_array().unwrap().len() < 10_000);
}
