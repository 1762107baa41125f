//! Helpers shared by the KML tests.

use kip_integration_tests::{connect, err_code, fresh_space, kip, ok};
use postgres::Client;
use serde_json::{json, Value};

/// A small medical schema and graph (the conformance fixtures' setup).
pub const MEDICAL: [&str; 6] = [
    r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "Pharmaceutical drug" } } }"#,
    r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Symptom"} SET ATTRIBUTES { description: "Medical symptom" } } }"#,
    r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { description: "Treatment relationship" } } }"#,
    r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "stated"} SET ATTRIBUTES { description: "Someone stated a fact (higher-order)" } } }"#,
    r#"UPSERT { CONCEPT ?h { {type: "Symptom", name: "Headache"} SET ATTRIBUTES { severity: "moderate" } }
                CONCEPT ?f { {type: "Symptom", name: "Fever"} } }"#,
    r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk_level: 2 }
                SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Headache"}) ("treats", {type: "Symptom", name: "Fever"}) } } }
       WITH METADATA { source: "setup", confidence: 0.9 }"#,
];

/// A client on a fresh, bootstrapped space.
pub fn space(prefix: &str) -> Client {
    let mut c = connect();
    fresh_space(&mut c, prefix);
    c
}

/// A fresh space holding the medical graph.
pub fn medical(prefix: &str) -> Client {
    let mut c = space(prefix);
    for cmd in MEDICAL {
        run(&mut c, cmd);
    }
    c
}

/// The result of a command that must succeed.
pub fn run(c: &mut Client, command: &str) -> Value {
    ok(kip(c, command, json!({})))
}

/// The result of a command with parameters that must succeed.
pub fn run_with(c: &mut Client, command: &str, params: Value) -> Value {
    ok(kip(c, command, params))
}

/// The error code of a command that must fail.
pub fn fails(c: &mut Client, command: &str) -> String {
    err_code(&kip(c, command, json!({})))
}

/// The whole error object of a command that must fail.
pub fn error(c: &mut Client, command: &str) -> Value {
    let out = kip(c, command, json!({}));
    assert!(out.get("error").is_some(), "expected an error from {command}, got {out}");
    out["error"].clone()
}

/// `FIND(?x)` of one concept `{type, name}` as an element object.
pub fn concept(c: &mut Client, type_name: &str, name: &str) -> Value {
    let found = run_with(
        c,
        "FIND(?x) WHERE { ?x {type: :t, name: :n} }",
        json!({"t": type_name, "n": name}),
    );
    found.as_array().and_then(|a| a.first()).cloned().unwrap_or(Value::Null)
}

/// Whether concept `{type, name}` exists (straight from storage).
pub fn exists(c: &mut Client, type_name: &str, name: &str) -> bool {
    c.query_one(
        "SELECT count(*) FROM kip.concepts WHERE space = current_setting('kip.space') AND type = $1 AND name = $2",
        &[&type_name, &name],
    )
    .unwrap()
    .get::<_, i64>(0)
        == 1
}

/// Number of propositions in the current space (straight from storage).
pub fn link_count(c: &mut Client) -> i64 {
    c.query_one("SELECT count(*) FROM kip.propositions WHERE space = current_setting('kip.space')", &[])
        .unwrap()
        .get(0)
}
