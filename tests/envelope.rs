//! The request/response envelope of kip_execute and kip_execute_readonly
//! (RC10 §6): single and batch forms, stop-on-KML-error, inline read and
//! syntax errors, dry runs, malformed requests, read-only refusal, and the
//! isolation of memory spaces.

use kip_integration_tests::{connect, err_code, fresh_space, kip, kip_readonly, kip_request, ok, use_space};
use serde_json::{json, Value};

const REGISTER: &str = r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "A drug." } } }"#;

fn find_drugs() -> &'static str {
    r#"FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name ASC"#
}

#[test]
fn single_command_returns_result_or_error_object() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    let out = kip(&mut c, "DESCRIBE PRIMER", json!({}));
    let obj = out.as_object().unwrap();
    assert!(obj.contains_key("result") ^ obj.contains_key("error"), "{out}");
    let out = kip(&mut c, "FIND(?x WHERE {", json!({}));
    assert_eq!(err_code(&out), "KIP_1001");
    let e = out["error"].as_object().unwrap();
    assert!(e["message"].as_str().unwrap().contains("line 1"), "syntax errors say where: {out}");
    assert!(!out.as_object().unwrap().contains_key("result"));
}

#[test]
fn request_object_form_with_parameters() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    ok(kip(&mut c, REGISTER, json!({})));
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: :n} } }"#, json!({"n": "Aspirin"})));
    let out = kip_request(&mut c, json!({"command": "FIND(?d.name) WHERE { ?d {type: \"Drug\", name: :n} }", "parameters": {"n": "Aspirin"}}));
    assert_eq!(ok(out), json!(["Aspirin"]));
    // A missing parameter is a KIP error naming it.
    let out = kip_request(&mut c, json!({"command": "FIND(?d.name) WHERE { ?d {type: \"Drug\", name: :missing} }"}));
    assert!(out["error"]["message"].as_str().unwrap().contains("missing"), "{out}");
}

#[test]
fn batch_continues_after_read_and_syntax_errors() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    ok(kip(&mut c, REGISTER, json!({})));
    let out = kip_request(
        &mut c,
        json!({"commands": [
            "FIND(?d.name WHERE",                                   // syntax error: inline
            r#"FIND(?x.name) WHERE { ?x {id: "C:999999999999"} }"#, // read error (KIP_3002): inline
            {"command": r#"UPSERT { CONCEPT ?d { {type: "Drug", name: :n} } }"#, "parameters": {"n": "Aspirin"}},
            find_drugs()
        ]}),
    );
    let items = out["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(items.len(), 4, "{out}");
    assert_eq!(err_code(&items[0]), "KIP_1001");
    assert!(items[1].get("error").is_some(), "{out}");
    assert!(items[2].get("result").is_some(), "{out}");
    assert_eq!(items[3]["result"], json!(["Aspirin"]), "{out}");
}

#[test]
fn batch_stops_at_the_first_kml_error_without_partial_writes() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    ok(kip(&mut c, REGISTER, json!({})));
    let out = kip_request(
        &mut c,
        json!({"commands": [
            r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }"#,
            // Creates Ibuprofen, then fails on an unregistered type: nothing of it may remain.
            r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Ibuprofen"} } CONCEPT ?x { {type: "NoSuchType", name: "x"} } }"#,
            r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Never"} } }"#
        ]}),
    );
    let items = out["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(items.len(), 2, "batch must stop after the failed KML command: {out}");
    assert!(items[0].get("result").is_some(), "{out}");
    assert_eq!(err_code(&items[1]), "KIP_2001");
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!(["Aspirin"]));
}

#[test]
fn dry_run_validates_without_executing() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    ok(kip(&mut c, REGISTER, json!({})));
    let out = kip_request(
        &mut c,
        json!({"command": r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }"#, "dry_run": true}),
    );
    let r = ok(out);
    assert_eq!(r["upsert_concept_nodes"], json!([]));
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!([]));
    // Syntax and parameter errors are still reported.
    let out = kip_request(&mut c, json!({"command": "UPSERT {", "dry_run": true}));
    assert_eq!(err_code(&out), "KIP_1001");
    let out = kip_request(&mut c, json!({"command": "FIND(?d) WHERE { ?d {name: :n} }", "dry_run": true}));
    assert!(out.get("error").is_some(), "{out}");
    // So are the UPSERT checks that need no database: a reserved metadata
    // key, a handle used before it is defined, an invalid new type name.
    for (command, code) in [
        (r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "X"} } WITH METADATA { _version: 1 } }"#, "KIP_2002"),
        (r#"UPSERT { PROPOSITION ?l { (?d, "treats", ?d) } CONCEPT ?d { {type: "Drug", name: "X"} } }"#, "KIP_3001"),
        (r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "bad type!"} } }"#, "KIP_1002"),
    ] {
        let out = kip_request(&mut c, json!({"command": command, "dry_run": true}));
        assert_eq!(err_code(&out), code, "{command}: {out}");
        assert_eq!(err_code(&kip(&mut c, command, json!({}))), code, "a real run agrees: {command}");
    }
    // And what a run refuses before touching an element: an unregistered
    // type or predicate (the space exists and the caller may read it), an
    // invalid REGEX, a malformed id.
    for (command, code) in [
        (r#"UPSERT { CONCEPT ?d { {type: "drug", name: "X"} } }"#, "KIP_2001"),
        (r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "X"} SET PROPOSITIONS { ("cures", {type: "Drug", name: "Y"}) } } }"#, "KIP_2001"),
        (r#"FIND(?d) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, "(")) }"#, "KIP_1001"),
        (r#"DELETE CONCEPT ?d DETACH WHERE { ?d {id: "C:007"} }"#, "KIP_1001"),
    ] {
        let out = kip_request(&mut c, json!({"command": command, "dry_run": true}));
        assert_eq!(err_code(&out), code, "{command}: {out}");
        assert_eq!(err_code(&kip(&mut c, command, json!({}))), code, "a real run agrees: {command}");
    }
    // And what compiling the command finds, with its literal ids taken to
    // exist: unbound variables, a target that binds a predicate, a forged
    // CURSOR token.
    for (command, code) in [
        (r#"UPDATE ?y SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "Drug", name: "Aspirin"} }"#, "KIP_3001"),
        (r#"DELETE CONCEPT ?y DETACH WHERE { ?x {type: "Drug"} }"#, "KIP_3001"),
        (r#"FIND(?y) WHERE { ?x {type: "Drug"} }"#, "KIP_3001"),
        (r#"FIND(?x.name) WHERE { ?x {type: "Drug"} } ORDER BY ?z.name"#, "KIP_3001"),
        (r#"EXPORT ?y WHERE { ?x {type: "Drug"} }"#, "KIP_3001"),
        (r#"EXPORT ?p WHERE { (?x, ?p, ?y) }"#, "KIP_1001"),
        (r#"FIND(?x.name) WHERE { ?x {type: "Drug"} } LIMIT 1 CURSOR "garbage""#, "KIP_1001"),
        (r#"DESCRIBE CONCEPT TYPES LIMIT 1 CURSOR "garbage""#, "KIP_1001"),
    ] {
        let out = kip_request(&mut c, json!({"command": command, "dry_run": true}));
        assert_eq!(err_code(&out), code, "{command}: {out}");
        assert_eq!(err_code(&kip(&mut c, command, json!({}))), code, "a real run agrees: {command}");
    }
    // A literal id is not looked up: what it names is the run's to find.
    let out = kip_request(&mut c, json!({"command": r#"FIND(?x) WHERE { ?x {id: "C:999999999"} }"#, "dry_run": true}));
    assert_eq!(ok(out)["valid"], json!(true));
    let out = kip_request(&mut c, json!({"command": r#"UPSERT { CONCEPT ?d { {type: "drug", name: "X"} } }"#, "dry_run": true}));
    assert!(out["error"]["hint"].as_str().unwrap_or_default().contains("Drug"), "a did-you-mean hint: {out}");
    // A type defined by an earlier statement of the same text counts, as
    // when the text runs.
    let defined = r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Herb"} SET ATTRIBUTES { description: "A herb." } } }
                     UPSERT { CONCEPT ?h { {type: "Herb", name: "Mint"} } }"#;
    assert!(ok(kip_request(&mut c, json!({"command": defined, "dry_run": true})))["upsert_concept_nodes"].is_array());
    assert_eq!(ok(kip(&mut c, r#"FIND(COUNT(?t)) WHERE { ?t {type: "$ConceptType"} FILTER(?t.name == "Herb") }"#, json!({}))), json!(0));
}

/// A batch's dry run stops where its run would: at the first KML command
/// the checks refuse. Reads and syntax errors before it are inline. A type
/// not registered yet does not stop it: an earlier command of the batch,
/// which a dry run does not apply, may register it.
#[test]
fn a_batch_dry_run_stops_at_the_first_refused_kml_command() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    ok(kip(&mut c, REGISTER, json!({})));
    let out = kip_request(
        &mut c,
        json!({"commands": [
            "FIND(?x WHERE",
            r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "A"} } }"#,
            r#"UPSERT { CONCEPT ?n { {type: "Nope", name: "x"} } }"#,
            r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "B"} SET PROPOSITIONS { ("treats", ?nowhere) } } }"#,
            find_drugs(),
        ], "dry_run": true}),
    );
    let items = out["result"].as_array().unwrap_or_else(|| panic!("a result array: {out}"));
    let codes: Vec<String> = items.iter().map(|i| if i.get("error").is_some() { err_code(i) } else { "ok".into() }).collect();
    assert_eq!(codes, ["KIP_1001", "ok", "KIP_2001", "KIP_3001"], "{out}");
    // Each UPSERT statement of a text has handles of its own, in a dry run
    // as in the run (the Genesis capsule reuses its handles so).
    let twice = r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "D1"} } } UPSERT { CONCEPT ?a { {type: "Drug", name: "D2"} } }"#;
    assert!(ok(kip_request(&mut c, json!({"command": twice, "dry_run": true})))["upsert_concept_nodes"].is_array());
}

/// A batch is answered with its `result` array also when the space cannot
/// be used: each command gets the error, up to the first KML command.
#[test]
fn a_batch_on_a_space_that_cannot_be_used_answers_per_command() {
    let mut c = connect();
    use_space(&mut c, &kip_integration_tests::unique_space("missing"));
    let request = json!({"commands": ["DESCRIBE PRIMER", "FIND(?x WHERE", find_drugs()]});
    let out: Value = c.query_one("SELECT kip_execute_readonly($1::jsonb)", &[&request]).unwrap().get(0);
    let items = out["result"].as_array().unwrap_or_else(|| panic!("a result array: {out}"));
    let codes: Vec<String> = items.iter().map(err_code).collect();
    assert_eq!(codes, ["KIP_3002", "KIP_1001", "KIP_3002"], "{out}");
    // A lone command still gets its error at the top.
    let out: Value = c.query_one("SELECT kip_execute_readonly($1::jsonb)", &[&json!({"command": "DESCRIBE PRIMER"})]).unwrap().get(0);
    assert_eq!(err_code(&out), "KIP_3002", "{out}");
}

#[test]
fn malformed_requests_are_kip_errors() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    for bad in [
        json!({"command": "DESCRIBE PRIMER", "commands": ["DESCRIBE PRIMER"]}),
        json!({}),
        json!({"command": 42}),
        json!({"commands": "DESCRIBE PRIMER"}),
        json!({"commands": [42]}),
        json!({"commands": [{"parameters": {}}]}),
        json!({"command": "DESCRIBE PRIMER", "parameters": [1]}),
        json!({"command": "DESCRIBE PRIMER", "dry_run": "yes"}),
        json!({"command": "DESCRIBE PRIMER", "bogus": 1}),
        json!(["DESCRIBE PRIMER"]),
        json!(null),
    ] {
        let out = kip_request(&mut c, bad.clone());
        assert_eq!(err_code(&out), "KIP_1001", "{bad} -> {out}");
        assert!(out["error"]["hint"].is_string(), "{out}");
    }
    let out: Value = c.query_one("SELECT kip_execute(NULL::text)", &[]).unwrap().get(0);
    assert_eq!(err_code(&out), "KIP_1001");
    let out: Value = c.query_one("SELECT kip_execute('DESCRIBE PRIMER', '[1,2]')", &[]).unwrap().get(0);
    assert_eq!(err_code(&out), "KIP_1001");
}

#[test]
fn readonly_refuses_kml_and_cannot_write() {
    let mut c = connect();
    fresh_space(&mut c, "env");
    ok(kip(&mut c, REGISTER, json!({})));
    for kml in [
        r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "X"} } }"#,
        r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "X"} }"#,
        r#"UPDATE ?d SET ATTRIBUTES { a: 1 } WHERE { ?d {type: "Drug"} }"#,
    ] {
        let out = kip_readonly(&mut c, kml, json!({}));
        assert!(out["error"]["message"].as_str().unwrap().contains("kip_execute_readonly"), "{out}");
    }
    let primer = ok(kip_readonly(&mut c, "DESCRIBE PRIMER", json!({})));
    assert_eq!(primer["identity"]["name"], "$self", "the read-only PRIMER shows the agent's identity: {primer}");
    assert!(primer["domain_map"].as_array().is_some_and(|d| !d.is_empty()), "{primer}");
    // The read-only entry point works inside a read-only transaction.
    let mut tx = c.transaction().unwrap();
    tx.batch_execute("SET TRANSACTION READ ONLY").unwrap();
    let out: Value = tx
        .query_one("SELECT kip_execute_readonly($1::text)", &[&find_drugs()])
        .unwrap()
        .get(0);
    assert_eq!(out["result"], json!([]), "{out}");
    tx.rollback().unwrap();
    // Read-only calls never create a space.
    use_space(&mut c, &kip_integration_tests::unique_space("never"));
    let out = kip_readonly(&mut c, find_drugs(), json!({}));
    assert_eq!(err_code(&out), "KIP_3002");
}

#[test]
fn spaces_are_isolated() {
    let mut c = connect();
    let a = fresh_space(&mut c, "space_a");
    ok(kip(&mut c, REGISTER, json!({})));
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "OnlyInA"} } }"#, json!({})));
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!(["OnlyInA"]));
    fresh_space(&mut c, "space_b");
    ok(kip(&mut c, REGISTER, json!({})));
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!([]));
    use_space(&mut c, &a);
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!(["OnlyInA"]));
}

/// Values cross between jsonb and kip without a text round trip
/// (src/exec/jsonb.rs): every JSON kind, in attributes written from KIP text
/// and from parameters, comes back as the text path always gave it.
#[test]
fn json_values_come_back_as_written() {
    let mut c = connect();
    fresh_space(&mut c, "env_json");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Probe"} SET ATTRIBUTES { description: "A probe." } } }"#, json!({})));
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?p { {type: "Probe", name: "literal"} SET ATTRIBUTES {
             int: -5, one: 1.0, tenth: 0.1, big: 1e20, huge: 1.23456789012345678901234567890e29,
             text: "héllo ☃ \"quoted\"", empty: "", yes: true, nothing: null,
             list: [1, [2, [3]], {"a": null, "b": []}], object: {"k": {"k": {}}} } } }"#,
        json!({}),
    ));
    let attrs = json!({
        "int": -5, "one": 1.0, "tenth": 0.1, "big": 1e20_f64, "huge": 1.2345678901234568e29,
        "text": "héllo ☃ \"quoted\"", "empty": "", "yes": true, "nothing": null,
        "list": [1, [2, [3]], {"a": null, "b": []}], "object": {"k": {"k": {}}},
    });
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?p { {type: "Probe", name: "parameter"} SET ATTRIBUTES { a: :a } } }"#,
        json!({ "a": attrs.clone() }),
    ));
    let found = ok(kip(&mut c, r#"FIND(?p.attributes) WHERE { ?p {type: "Probe", name: "literal"} }"#, json!({})));
    // 1e20 is stored as the exact integer it is; a decimal with more
    // digits than a double holds comes back as the nearest double (an
    // integer beyond 64 bits without an exponent is refused:
    // tests/hostile.rs).
    let mut expected = attrs.clone();
    expected["big"] = json!(100000000000000000000_u128 as f64);
    assert_eq!(found, json!([expected]), "{found}");
    let found = ok(kip(&mut c, r#"FIND(?p.attributes.a) WHERE { ?p {type: "Probe", name: "parameter"} }"#, json!({})));
    assert_eq!(found, json!([expected]), "{found}");
    // The same through the read-only entry point and the request form.
    let found = ok(kip_readonly(&mut c, r#"FIND(?p.attributes.a) WHERE { ?p {type: "Probe", name: "parameter"} }"#, json!({})));
    assert_eq!(found, json!([expected]), "{found}");
    // 1.0 stays a decimal, 1 an integer: the text of each number is kept.
    let row = c
        .query_one(
            "SELECT (kip_execute('FIND(?p.attributes) WHERE { ?p {type: \"Probe\", name: \"literal\"} }') -> 'result' -> 0)::text",
            &[],
        )
        .unwrap();
    let text: String = row.get(0);
    assert!(text.contains(r#""one": 1.0"#) && text.contains(r#""int": -5"#), "{text}");
    assert!(text.contains(r#""big": 100000000000000000000"#), "{text}");
    // The stored jsonb is well formed: its keys are sorted as jsonb's
    // lookups (a binary search) need them, at every level.
    let space: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    let text_of_a: Option<Value> = c
        .query_one("SELECT attributes -> 'a' -> 'text' FROM kip.concepts WHERE space = $1 AND type = 'Probe' AND name = 'parameter'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(text_of_a, Some(json!("héllo ☃ \"quoted\"")));
    let row = c
        .query_one(
            "SELECT attributes -> 'int', attributes -> 'huge', attributes -> 'nothing', attributes #> '{object,k}', \
             attributes @> '{\"list\": [1]}' FROM kip.concepts WHERE space = $1 AND type = 'Probe' AND name = 'literal'",
            &[&space],
        )
        .unwrap();
    assert_eq!(row.get::<_, Option<Value>>(0), Some(json!(-5)));
    assert_eq!(row.get::<_, Option<Value>>(1), Some(json!(1.2345678901234568e29)));
    assert_eq!(row.get::<_, Option<Value>>(2), Some(Value::Null));
    assert_eq!(row.get::<_, Option<Value>>(3), Some(json!({"k": {}})));
    assert!(row.get::<_, bool>(4));
    // Numbers written by plain SQL: an element object, or an attribute that
    // is an object, is returned as stored (exact digits, trailing zeros),
    // not rounded through a double.
    c.execute(
        "UPDATE kip.concepts SET attributes = attributes || '{\"exact\": 123456789012345678901234567890.5, \"scaled\": 1.50, \"obj\": {\"n\": 0.10}}' \
         WHERE space = $1 AND type = 'Probe' AND name = 'literal'",
        &[&space],
    )
    .unwrap();
    for find in [
        r#"FIND(?p) WHERE { ?p {type: "Probe", name: "literal"} }"#,
        r#"FIND(?p.attributes) WHERE { ?p {type: "Probe", name: "literal"} }"#,
        r#"FIND(?p.attributes.obj) WHERE { ?p {type: "Probe", name: "literal"} }"#,
    ] {
        let text: String = c.query_one("SELECT (kip_execute($1::text) -> 'result')::text", &[&find]).unwrap().get(0);
        if !find.contains(".obj") {
            assert!(text.contains(r#""exact": 123456789012345678901234567890.5"#), "{find}: {text}");
            assert!(text.contains(r#""scaled": 1.50"#), "{find}: {text}");
        }
        assert!(text.contains(r#""n": 0.10"#), "{find}: {text}");
    }
}

/// In a read-only transaction kip_execute still reads: a new space is
/// reported missing (KIP_3002, not a refused INSERT), and a space at an
/// older capsule level is read without being upgraded.
#[test]
fn reads_in_a_read_only_transaction_neither_create_nor_upgrade_a_space() {
    let mut c = connect();
    let space = fresh_space(&mut c, "ro_tx");
    ok(kip(&mut c, REGISTER, json!({})));
    let level: i32 = c.query_one("SELECT capsule_level FROM kip.spaces WHERE name = $1", &[&space]).unwrap().get(0);
    c.execute("UPDATE kip.spaces SET capsule_level = 1 WHERE name = $1", &[&space]).unwrap();
    c.batch_execute("BEGIN READ ONLY").unwrap();
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!([]));
    let _ = fresh_space(&mut c, "ro_tx_new");
    let out = kip(&mut c, find_drugs(), json!({}));
    assert_eq!(err_code(&out), "KIP_3002", "{out}");
    assert!(out["error"]["hint"].as_str().unwrap().contains("read-only"), "{out}");
    c.batch_execute("ROLLBACK").unwrap();
    // Outside it, the next call upgrades the space as before.
    kip_integration_tests::use_space(&mut c, &space);
    ok(kip(&mut c, find_drugs(), json!({})));
    let upgraded: i32 = c.query_one("SELECT capsule_level FROM kip.spaces WHERE name = $1", &[&space]).unwrap().get(0);
    assert_eq!(upgraded, level);
}

/// In a read-only transaction every KML command is refused up front with
/// the reason and what to do (not Postgres's message about whichever
/// statement kip ran first), an UPSERT that would change nothing
/// included; a batch stops there; and the functions that raise SQL errors
/// carry the same reason with their hint as a HINT.
#[test]
fn kml_in_a_read_only_transaction_is_refused_with_the_reason() {
    let mut c = connect();
    let space = fresh_space(&mut c, "ro_kml");
    ok(kip(&mut c, REGISTER, json!({})));
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }"#, json!({})));
    c.batch_execute("BEGIN READ ONLY").unwrap();
    for kml in [
        r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }"#,
        r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Ibuprofen"} } }"#,
        r#"UPDATE ?d SET ATTRIBUTES { a: 1 } WHERE { ?d {type: "Drug"} }"#,
        r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Nothing"} }"#,
    ] {
        let out = kip(&mut c, kml, json!({}));
        assert_eq!(err_code(&out), "KIP_4003", "{kml}: {out}");
        assert!(out["error"]["message"].as_str().unwrap().contains("the transaction is read-only"), "{kml}: {out}");
        assert!(out["error"]["hint"].as_str().unwrap().contains("read-write transaction"), "{kml}: {out}");
    }
    let out = kip_request(
        &mut c,
        json!({"commands": [r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "X"} } }"#, find_drugs()]}),
    );
    let items = out["result"].as_array().unwrap();
    assert_eq!(items.len(), 1, "a batch stops at the refused write: {out}");
    // Reads still run.
    assert_eq!(ok(kip(&mut c, find_drugs(), json!({}))), json!(["Aspirin"]));
    let err = c.query_one("SELECT kip_create_space($1)", &[&format!("{space}_new")]).unwrap_err();
    let db = err.as_db_error().expect("an SQL error");
    assert!(db.message().contains("the transaction is read-only"), "{db:?}");
    assert!(db.hint().is_some_and(|h| h.contains("read-write transaction")), "the hint is a HINT: {db:?}");
    assert!(db.detail().is_none(), "{db:?}");
    c.batch_execute("ROLLBACK").unwrap();
}
