//! UPDATE (RC10 §4.3): bulk mutation from the element's own state, skipped
//! keys, LIMIT, protection, and no creation.

use super::common::{concept, error, fails, medical, run};
use serde_json::json;

#[test]
fn null_or_non_numeric_operands_skip_only_that_key() {
    let mut c = medical("upd");
    let out = run(
        &mut c,
        r#"UPDATE ?s SET ATTRIBUTES { score: ADD(?s.attributes.missing, 1), doubled: MUL(?s.name, 2), touched: true }
           WHERE { ?s {type: "Symptom"} }"#,
    );
    assert_eq!(out, json!({"updated": 2, "matched": 2}));
    let h = concept(&mut c, "Symptom", "Headache");
    assert_eq!(h["attributes"], json!({"severity": "moderate", "touched": true}));
    // Every key skipped: matched but not updated, and the version stays.
    let v = h["metadata"]["_version"].clone();
    let out = run(&mut c, r#"UPDATE ?s SET ATTRIBUTES { score: ADD(?s.attributes.missing, 1) } WHERE { ?s {type: "Symptom"} }"#);
    assert_eq!(out, json!({"updated": 0, "matched": 2}));
    assert_eq!(concept(&mut c, "Symptom", "Headache")["metadata"]["_version"], v);
    // A result beyond a double's range skips its key, like a null operand;
    // it aborted the whole UPDATE.
    run(&mut c, r#"UPDATE ?s SET ATTRIBUTES { big: 1e308 } WHERE { ?s {type: "Symptom", name: "Headache"} }"#);
    let out = run(
        &mut c,
        r#"UPDATE ?s SET ATTRIBUTES { big: MUL(?s.attributes.big, 10), sum: ADD(?s.attributes.big, ?s.attributes.big), ok: ADD(0.1, 0.2) }
           WHERE { ?s {type: "Symptom", name: "Headache"} }"#,
    );
    assert_eq!(out, json!({"updated": 1, "matched": 1}));
    let h = concept(&mut c, "Symptom", "Headache");
    assert_eq!((h["attributes"]["big"].clone(), h["attributes"].get("sum"), h["attributes"]["ok"].clone()), (json!(1e308), None, json!(0.3)));
    // A value the elements already hold mutates nothing (RC10 §4.3).
    let out = run(&mut c, r#"UPDATE ?s SET ATTRIBUTES { touched: true } WHERE { ?s {type: "Symptom"} }"#);
    assert_eq!(out, json!({"updated": 0, "matched": 2}));
    let out = run(&mut c, r#"UPDATE ?s SET ATTRIBUTES { severity: "moderate" } WHERE { ?s {type: "Symptom"} }"#);
    assert_eq!(out, json!({"updated": 1, "matched": 2}), "only the symptom without that value changes");
}

#[test]
fn clamp_mul_and_coalesce_compute_from_the_element_itself() {
    let mut c = medical("upd");
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { weight: null } } }"#);
    run(
        &mut c,
        r#"UPDATE ?d SET ATTRIBUTES {
             risk_level: CLAMP(MUL(?d.attributes.risk_level, 10), 0, 5),
             weight: COALESCE(?d.attributes.weight, 1.5),
             seen_version: ?d.metadata._version,
             label: ?d.name
           } WHERE { ?d {type: "Drug", name: "Aspirin"} }"#,
    );
    let a = concept(&mut c, "Drug", "Aspirin");
    assert_eq!(a["attributes"]["risk_level"], json!(5));
    assert_eq!(a["attributes"]["weight"], json!(1.5));
    assert_eq!(a["attributes"]["seen_version"], json!(2));
    assert_eq!(a["attributes"]["label"], json!("Aspirin"));
    assert_eq!(a["metadata"]["_version"], json!(3));
    // Bounds the wrong way round are refused, not applied.
    let e = error(&mut c, r#"UPDATE ?d SET ATTRIBUTES { risk_level: CLAMP(?d.attributes.risk_level, 5, 0) } WHERE { ?d {type: "Drug"} }"#);
    assert_eq!(e["code"], "KIP_1001", "{e}");
    assert_eq!(concept(&mut c, "Drug", "Aspirin")["attributes"]["risk_level"], json!(5));
}

#[test]
fn limit_caps_the_updated_elements() {
    let mut c = medical("upd");
    let out = run(&mut c, r#"UPDATE ?s SET METADATA { swept: true } WHERE { ?s {type: "Symptom"} } LIMIT 1"#);
    assert_eq!(out, json!({"updated": 1, "matched": 1}));
    let swept = run(&mut c, r#"FIND(COUNT(?s)) WHERE { ?s {type: "Symptom"} FILTER(?s.metadata.swept == true) }"#);
    assert_eq!(swept, json!(1));
}

#[test]
fn update_never_creates_and_reports_missing_identities() {
    let mut c = medical("upd");
    assert_eq!(fails(&mut c, r#"UPDATE ?x SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "Drug", name: "Nothing"} }"#), "KIP_3002");
    let out = run(&mut c, r#"UPDATE ?x SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "Drug"} FILTER(?x.attributes.risk_level > 100) }"#);
    assert_eq!(out, json!({"updated": 0, "matched": 0}));
    assert_eq!(fails(&mut c, r#"UPDATE ?x SET METADATA { _merged_from: [] } WHERE { ?x {type: "Drug"} }"#), "KIP_2002");
    assert_eq!(fails(&mut c, r#"UPDATE ?y SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "Drug"} }"#), "KIP_3001");
    // Matching nothing because a name is misspelled is reported, not hidden.
    assert_eq!(fails(&mut c, r#"UPDATE ?x SET ATTRIBUTES { a: 1 } WHERE { ?x {type: "drug"} }"#), "KIP_2001");
    assert_eq!(fails(&mut c, r#"UPDATE ?l SET METADATA { a: 1 } WHERE { ?l (?s, "Treats", ?o) }"#), "KIP_2001");
}

#[test]
fn update_refuses_protected_structure_but_lets_self_evolve() {
    let mut c = medical("upd");
    assert_eq!(fails(&mut c, r#"UPDATE ?t SET ATTRIBUTES { reviewed: true } WHERE { ?t {type: "$ConceptType"} }"#), "KIP_3004");
    assert_eq!(fails(&mut c, r#"UPDATE ?d SET METADATA { reviewed: true } WHERE { ?d {type: "Domain", name: "CoreSchema"} }"#), "KIP_3004");
    assert_eq!(fails(&mut c, r#"UPDATE ?p SET ATTRIBUTES { core_directives: [] } WHERE { ?p {type: "Person", name: "$self"} }"#), "KIP_3004");
    let out = run(&mut c, r#"UPDATE ?p SET ATTRIBUTES { persona: "curious" } WHERE { ?p {type: "Person", name: "$self"} }"#);
    assert_eq!(out, json!({"updated": 1, "matched": 1}));
    // The links anchoring protected structure in CoreSchema are protected,
    // so a sweep that reaches them is refused as a whole …
    assert_eq!(
        fails(&mut c, r#"UPDATE ?l SET METADATA { checked: true } WHERE { ?l (?s, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }"#),
        "KIP_3004"
    );
    // … while the links of ordinary types are not.
    let out = run(&mut c, r#"UPDATE ?l SET METADATA { checked: true } WHERE { ?s {type: "$ConceptType", name: "Person"} ?l (?s, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }"#);
    assert_eq!(out["updated"], 1);
}

#[test]
fn a_filter_before_a_union_narrows_only_the_block_before_it() {
    let mut c = medical("upd");
    // The FILTER narrows the Symptoms before the UNION; the branch's Drugs
    // are targets too, and the FILTER's second check on each written row
    // does not drop them.
    let out = run(
        &mut c,
        r#"UPDATE ?x SET ATTRIBUTES { picked: true }
           WHERE { ?x {type: "Symptom"} FILTER(?x.name == "Headache") UNION { ?x {type: "Drug"} } }"#,
    );
    let drugs = run(&mut c, r#"FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }"#);
    let n = drugs.as_u64().unwrap() + 1;
    assert_eq!(out, json!({"updated": n, "matched": n}));
    let picked = run(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Symptom"} FILTER(?x.attributes.picked == true) }"#);
    assert_eq!(picked, json!(["Headache"]));
}

/// ADD, MUL and CLAMP store the same numbers whatever the session's
/// `extra_float_digits` (at -15 a float8 printed 123.456789 as 100), keep
/// the numbers as written (ADD(x, 0) is x), and keep a double's 17
/// significant digits, so repeated products do not grow without bound.
#[test]
fn arithmetic_is_exact_and_ignores_session_float_formatting() {
    let mut c = medical("upd_float");
    for digits in ["-15", "0", "3"] {
        c.batch_execute(&format!("SET extra_float_digits = {digits}")).unwrap();
        run(&mut c, r#"UPSERT { CONCEPT ?s { {type: "Symptom", name: "Headache"} SET ATTRIBUTES { c: 123.456789, x: 1.2345678901234567, d: 0.95 } } }"#);
        run(
            &mut c,
            r#"UPDATE ?s SET ATTRIBUTES { clamped: CLAMP(?s.attributes.c, 0, 1000), same: ADD(?s.attributes.x, 0),
                                          product: MUL(?s.attributes.c, 2), sum: ADD(0.1, 0.2) }
               WHERE { ?s {type: "Symptom", name: "Headache"} }"#,
        );
        for _ in 0..40 {
            run(&mut c, r#"UPDATE ?s SET ATTRIBUTES { d: MUL(?s.attributes.d, 0.95) } WHERE { ?s {type: "Symptom", name: "Headache"} }"#);
        }
        let h = concept(&mut c, "Symptom", "Headache");
        let a = &h["attributes"];
        assert_eq!(
            (a["clamped"].clone(), a["same"].clone(), a["product"].clone(), a["sum"].clone()),
            (json!(123.456789), json!(1.2345678901234567), json!(246.913578), json!(0.3)),
            "extra_float_digits = {digits}: {h}"
        );
        let d = a["d"].as_f64().unwrap();
        assert!((d - 0.95f64.powi(41)).abs() < 1e-15, "extra_float_digits = {digits}: {d}");
        assert!(a["d"].to_string().len() <= 24, "17 significant digits at most: {}", a["d"]);
    }
    c.batch_execute("RESET extra_float_digits").unwrap();
}
