//! DELETE (RC10 §4.2): keys, links and concepts, with the cascade audit.

use super::common::{concept, error, exists, fails, link_count, medical, run};
use serde_json::json;

fn with_claims(prefix: &str) -> postgres::Client {
    let mut c = medical(prefix);
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Source"} SET ATTRIBUTES { description: "A source" } }
                    CONCEPT ?who { {type: "Source", name: "WHO"} }
                    PROPOSITION ?c1 { (?who, "stated", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"})) }
                    CONCEPT ?lab { {type: "Source", name: "Lab"} SET PROPOSITIONS { ("stated", ?c1) } } }"#,
    );
    c
}

#[test]
fn delete_attributes_and_metadata_count_mutated_elements() {
    let mut c = medical("del");
    let out = run(&mut c, r#"DELETE ATTRIBUTES {"severity", "nothing"} FROM ?s WHERE { ?s {type: "Symptom"} }"#);
    assert_eq!(out, json!({"updated_concepts": 1, "updated_propositions": 0}));
    assert!(concept(&mut c, "Symptom", "Headache").get("attributes").is_none());
    let out = run(&mut c, r#"DELETE METADATA {"confidence"} FROM ?l WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", ?o) }"#);
    assert_eq!(out, json!({"updated_concepts": 0, "updated_propositions": 2}));
    let left = run(&mut c, r#"FIND(?l.metadata.confidence, ?l.metadata.source) WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", ?o) }"#);
    assert_eq!(left, json!([[null, "setup"], [null, "setup"]]));
    assert_eq!(fails(&mut c, r#"DELETE METADATA {"_updated_at"} FROM ?s WHERE { ?s {type: "Symptom"} }"#), "KIP_2002");
}

#[test]
fn delete_propositions_cascades_to_higher_order_links() {
    let mut c = with_claims("del");
    let before = link_count(&mut c);
    let out = run(&mut c, r#"DELETE PROPOSITIONS ?l WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"}) }"#);
    // The link, WHO's claim about it, and Lab's claim about that claim.
    assert_eq!(out, json!({"deleted_propositions": 3}));
    assert_eq!(link_count(&mut c), before - 3);
    assert!(exists(&mut c, "Source", "WHO"));
}

#[test]
fn delete_concept_detach_reports_the_cascade() {
    let mut c = with_claims("del");
    let out = run(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Aspirin"} }"#);
    assert_eq!(out, json!({"deleted_concepts": 1, "deleted_propositions": 4}));
    assert!(!exists(&mut c, "Drug", "Aspirin"));
    assert_eq!(run(&mut c, r#"FIND(?x) WHERE { ?x (?s, "stated", ?o) }"#), json!([]));
    assert_eq!(fails(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Aspirin"} }"#), "KIP_3002");
    let out = run(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} }"#);
    assert_eq!(out, json!({"deleted_concepts": 0, "deleted_propositions": 0}));
}

#[test]
fn delete_targets_must_have_the_right_kind() {
    let mut c = medical("del");
    assert_eq!(fails(&mut c, r#"DELETE PROPOSITIONS ?d WHERE { ?d {type: "Drug"} }"#), "KIP_1001");
    assert_eq!(fails(&mut c, r#"DELETE CONCEPT ?l DETACH WHERE { ?l (?s, "treats", ?o) }"#), "KIP_1001");
}

/// A type or predicate definition still in use is not deleted (nor merged
/// away): its instances would keep a type no UPSERT accepts any more.
#[test]
fn definitions_in_use_stay() {
    let mut c = medical("del");
    let e = error(&mut c, r#"DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$ConceptType", name: "Drug"} }"#);
    assert_eq!(e["code"], "KIP_2002", "{e}");
    assert!(e["message"].as_str().unwrap().contains("\"Drug\""), "{e}");
    let e = error(&mut c, r#"DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$PropositionType", name: "treats"} }"#);
    assert_eq!(e["code"], "KIP_2002", "{e}");
    run(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Remedy"} SET ATTRIBUTES { description: "A remedy" } } }"#);
    let e = error(&mut c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "$ConceptType", name: "Drug"} ?t {type: "$ConceptType", name: "Remedy"} }"#);
    assert_eq!(e["code"], "KIP_2002", "{e}");
    assert!(exists(&mut c, "$ConceptType", "Drug"));
    // Once its instances are gone (here in the same command), it goes.
    run(&mut c, r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Symptom"} }"#);
    let out = run(&mut c, r#"DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$ConceptType"} FILTER(?t.name == "Symptom" || ?t.name == "Remedy") }"#);
    assert_eq!(out["deleted_concepts"], 2, "{out}");
    // A predicate whose links all end at deleted concepts goes with them.
    let out = run(&mut c, r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Drug"} UNION { ?x {type: "$ConceptType", name: "Drug"} } UNION { ?x {type: "$PropositionType", name: "treats"} } }"#);
    assert!(out["deleted_concepts"].as_i64().unwrap() >= 3, "{out}");
    assert!(!exists(&mut c, "$ConceptType", "Drug") && !exists(&mut c, "$PropositionType", "treats"));
}
