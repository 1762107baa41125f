//! UPSERT (RC10 §4.1): match-or-create, shallow merges, metadata
//! precedence, references, handles, uniqueness, EXPECT VERSION, capsules of
//! several statements, and statements that fail leaving no trace.

use super::common::{concept, error, exists, fails, link_count, medical, run, run_with, space};
use kip_integration_tests::{kip_request, ok};
use serde_json::{json, Value};

#[test]
fn metadata_precedence_is_item_over_block_over_statement_key_by_key() {
    let mut c = medical("ups");
    run(
        &mut c,
        r#"UPSERT {
             CONCEPT ?d {
               {type: "Drug", name: "Ibuprofen"}
               SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Fever"}) WITH METADATA { confidence: 0.7 } }
             }
             WITH METADATA { confidence: 0.9, note: null }
           }
           WITH METADATA { source: "statement", confidence: 0.5, note: "outer" }"#,
    );
    let d = concept(&mut c, "Drug", "Ibuprofen");
    assert_eq!(d["metadata"]["source"], "statement");
    assert_eq!(d["metadata"]["confidence"], 0.9);
    assert_eq!(d["metadata"]["note"], Value::Null, "a specified null is stored");
    assert!(d["metadata"].as_object().unwrap().contains_key("note"));
    let link = run(
        &mut c,
        r#"FIND(?l) WHERE { ?l ({type: "Drug", name: "Ibuprofen"}, "treats", {type: "Symptom", name: "Fever"}) }"#,
    );
    let meta = &link[0]["metadata"];
    assert_eq!((meta["source"].clone(), meta["confidence"].clone(), meta["note"].clone()), (json!("statement"), json!(0.7), Value::Null));
}

#[test]
fn set_attributes_is_a_shallow_merge_that_stores_nulls() {
    let mut c = medical("ups");
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { dosage: {"mg": 325}, risk_level: null } } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { dosage: {"form": "tablet"} } } }"#);
    let a = concept(&mut c, "Drug", "Aspirin");
    assert_eq!(a["attributes"], json!({"risk_level": null, "dosage": {"form": "tablet"}}), "objects are replaced whole at their key");
}

#[test]
fn versions_start_at_one_and_move_only_on_change() {
    let mut c = medical("ups");
    let cmd = r#"UPSERT { CONCEPT ?n { {type: "Drug", name: "Naproxen"} SET ATTRIBUTES { risk_level: 1 } } WITH METADATA { source: "x" } }"#;
    run(&mut c, cmd);
    assert_eq!(concept(&mut c, "Drug", "Naproxen")["metadata"]["_version"], 1);
    run(&mut c, cmd);
    assert_eq!(concept(&mut c, "Drug", "Naproxen")["metadata"]["_version"], 1, "an identical re-UPSERT is idempotent");
    run(&mut c, r#"UPSERT { CONCEPT ?n { {type: "Drug", name: "Naproxen"} SET ATTRIBUTES { risk_level: 2 } } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?n { {type: "Drug", name: "Naproxen"} } WITH METADATA { source: "y" } }"#);
    assert_eq!(concept(&mut c, "Drug", "Naproxen")["metadata"]["_version"], 3);
}

#[test]
fn several_statements_in_one_text_run_in_order() {
    let mut c = medical("ups");
    let out = run(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Gene"} SET ATTRIBUTES { description: "A gene" } } }
           UPSERT { CONCEPT ?g { {type: "Gene", name: "BRCA1"} } CONCEPT ?h { {type: "Gene", name: "TP53"} } }"#,
    );
    assert_eq!(out["blocks"], 2);
    assert_eq!(out["upsert_concept_nodes"].as_array().unwrap().len(), 3);
    assert!(exists(&mut c, "Gene", "TP53"));
}

#[test]
fn set_propositions_is_additive_and_unique_per_triple() {
    let mut c = medical("ups");
    let before = link_count(&mut c);
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"}
             SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Headache"}) WITH METADATA { reviewed: true } } } }"#,
    );
    assert_eq!(link_count(&mut c), before, "an existing (s, p, o) is updated, not duplicated");
    let link = run(&mut c, r#"FIND(?l) WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}) }"#);
    assert_eq!(link[0]["metadata"]["reviewed"], true);
    assert_eq!(link[0]["metadata"]["source"], "setup", "other keys stay");
    assert_eq!(link[0]["metadata"]["_version"], 2);
    // The other link of Aspirin is untouched: SET PROPOSITIONS never removes.
    let all = run(&mut c, r#"FIND(?o.name) WHERE { ({type: "Drug", name: "Aspirin"}, "treats", ?o) }"#);
    assert_eq!(all.as_array().unwrap().len(), 2);
}

#[test]
fn references_by_id_structure_and_handles_reach_higher_order_links() {
    let mut c = medical("ups");
    run(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Source"} SET ATTRIBUTES { description: "A source" } } }"#);
    let aspirin = concept(&mut c, "Drug", "Aspirin")["id"].as_str().unwrap().to_string();
    let link = run(&mut c, r#"FIND(?l.id) WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"}) }"#)[0]
        .as_str()
        .unwrap()
        .to_string();
    let out = run_with(
        &mut c,
        r#"UPSERT {
             CONCEPT ?who { {type: "Source", name: "WHO"}
               SET PROPOSITIONS {
                 ("stated", (id: :link))
                 ("stated", ({id: :aspirin}, "treats", {type: "Symptom", name: "Headache"}))
               }
             }
             PROPOSITION ?claim { (?who, "stated", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"})) SET ATTRIBUTES { year: 2020 } }
             CONCEPT ?lab { {type: "Source", name: "Lab"} SET PROPOSITIONS { ("stated", ?claim) } }
           }"#,
        json!({"link": link, "aspirin": aspirin}),
    );
    assert_eq!(out["upsert_proposition_links"].as_array().unwrap().len(), 1);
    let claim_id = out["upsert_proposition_links"][0].as_str().unwrap();
    assert!(claim_id.ends_with(":stated"), "{out}");
    let stated = run(&mut c, r#"FIND(?x) WHERE { ?x (?s, "stated", ?o) }"#);
    assert_eq!(stated.as_array().unwrap().len(), 3, "WHO stated two links (one twice), Lab stated WHO's claim: {stated}");
    let on_claim = run(&mut c, r#"FIND(?s.name) WHERE { ?s {type: "Source"} (?s, "stated", ?c) ?c (?w, "stated", ?f) }"#);
    assert_eq!(on_claim, json!(["Lab"]));
}

#[test]
fn proposition_block_by_id_updates_the_link() {
    let mut c = medical("ups");
    let link = run(&mut c, r#"FIND(?l.id) WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"}) }"#)[0].clone();
    let out = run_with(&mut c, r#"UPSERT { PROPOSITION ?p { (id: :id) SET ATTRIBUTES { effect: "strong" } } }"#, json!({"id": link}));
    assert_eq!(out["upsert_proposition_links"], json!([link]));
    let attrs = run_with(&mut c, "FIND(?l.attributes.effect) WHERE { ?l (id: :id) }", json!({"id": link}));
    assert_eq!(attrs, json!(["strong"]));
}

#[test]
fn concept_block_by_id_matches_only() {
    let mut c = medical("ups");
    let id = concept(&mut c, "Drug", "Aspirin")["id"].clone();
    let out = run_with(&mut c, r#"UPSERT { CONCEPT ?a { {id: :id} SET ATTRIBUTES { checked: true } } }"#, json!({"id": id}));
    assert_eq!(out["upsert_concept_nodes"], json!([id]));
    assert_eq!(concept(&mut c, "Drug", "Aspirin")["attributes"]["checked"], true);
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?a { {id: "C:999999999"} SET ATTRIBUTES { x: 1 } } }"#), "KIP_3002");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?a { {id: "P:1:treats"} } }"#), "KIP_1001");
}

#[test]
fn handles_must_be_defined_before_use() {
    let mut c = medical("ups");
    let e = error(
        &mut c,
        r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Later"} SET PROPOSITIONS { ("treats", ?s) } } CONCEPT ?s { {type: "Symptom", name: "Cough"} } }"#,
    );
    assert_eq!(e["code"], "KIP_3001");
    assert!(e["message"].as_str().unwrap().contains("?s"), "{e}");
    assert!(!exists(&mut c, "Drug", "Later"));
}

#[test]
fn a_missing_reference_aborts_the_whole_statement() {
    let mut c = medical("ups");
    let code = fails(
        &mut c,
        r#"UPSERT { CONCEPT ?n { {type: "Drug", name: "Naproxen"} SET ATTRIBUTES { risk_level: 1 } }
                    CONCEPT ?x { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { poisoned: true }
                      SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Nausea"}) } } }"#,
    );
    assert_eq!(code, "KIP_3002");
    assert!(!exists(&mut c, "Drug", "Naproxen"), "the earlier block was rolled back");
    assert!(concept(&mut c, "Drug", "Aspirin")["attributes"].get("poisoned").is_none());
    assert_eq!(fails(&mut c, r#"UPSERT { PROPOSITION ?p { ({type: "Drug", name: "Aspirin"}, "treats", (id: "P:999999999:treats")) } }"#), "KIP_3002");
}

#[test]
fn unknown_types_and_predicates_get_a_did_you_mean_hint() {
    let mut c = medical("ups");
    let e = error(&mut c, r#"UPSERT { CONCEPT ?d { {type: "drug", name: "Aspirin"} } }"#);
    assert_eq!(e["code"], "KIP_2001");
    assert!(e["hint"].as_str().unwrap().contains("\"Drug\""), "{e}");
    let e = error(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS { ("Treats", {type: "Symptom", name: "Fever"}) } } }"#);
    assert_eq!(e["code"], "KIP_2001");
    assert!(e["hint"].as_str().unwrap().contains("\"treats\""), "{e}");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "X"} SET PROPOSITIONS { ("treats", {type: "Sympton", name: "Fever"}) } } }"#), "KIP_2001");
}

#[test]
fn registering_types_and_predicates_follows_the_naming_rules() {
    let mut c = space("ups");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "medical_device"} } }"#), "KIP_1002");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "$Thing"} } }"#), "KIP_1002");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$PropositionType", name: "HasPart"} } }"#), "KIP_1002");
    // A type defined earlier in the same statement is usable right away.
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "MedicalDevice"} SET ATTRIBUTES { description: "A device" } }
                    CONCEPT ?p { {type: "$PropositionType", name: "has_part"} SET ATTRIBUTES { description: "Part of", subject_types: ["*"], object_types: ["*"] } }
                    CONCEPT ?m { {type: "MedicalDevice", name: "Stent"} }
                    CONCEPT ?n { {type: "MedicalDevice", name: "Mesh"} SET PROPOSITIONS { ("has_part", ?m) } } }"#,
    );
    assert!(exists(&mut c, "MedicalDevice", "Mesh"));
}

#[test]
fn expect_version_guards_take_parameters_and_abort_atomically() {
    let mut c = medical("ups");
    let v = concept(&mut c, "Drug", "Aspirin")["metadata"]["_version"].clone();
    run_with(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} EXPECT VERSION :v SET ATTRIBUTES { risk_level: 3 } } }"#, json!({"v": v}));
    let stale = r#"UPSERT { CONCEPT ?h { {type: "Symptom", name: "Headache"} SET ATTRIBUTES { severity: "mild" } }
                             CONCEPT ?a { {type: "Drug", name: "Aspirin"} EXPECT VERSION :v SET ATTRIBUTES { risk_level: 4 } } }"#;
    let out = kip_integration_tests::kip(&mut c, stale, json!({"v": v}));
    assert_eq!(out["error"]["code"], "KIP_3005", "{out}");
    assert_eq!(concept(&mut c, "Symptom", "Headache")["attributes"]["severity"], "moderate");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?x { {type: "Drug", name: "Ghost"} EXPECT VERSION 3 } }"#), "KIP_3005");
    assert!(!exists(&mut c, "Drug", "Ghost"));
    run(&mut c, r#"UPSERT { PROPOSITION ?p { ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}) EXPECT VERSION 1 } }"#);
    assert_eq!(fails(&mut c, r#"UPSERT { PROPOSITION ?p { ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}) EXPECT VERSION 0 } }"#), "KIP_3005");
}

#[test]
fn a_failing_kml_command_stops_the_batch_and_leaves_no_partial_write() {
    let mut c = medical("ups");
    let out = kip_request(
        &mut c,
        json!({"commands": [
            r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "First"} } }"#,
            r#"UPSERT { CONCEPT ?b { {type: "Drug", name: "Second"} } CONCEPT ?c { {type: "Drug", name: "Third"} SET PROPOSITIONS { ("cures", ?b) } } }"#,
            r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "Fourth"} } }"#
        ]}),
    );
    let items = out["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(items.len(), 2, "{out}");
    assert_eq!(items[1]["error"]["code"], "KIP_2001");
    assert!(exists(&mut c, "Drug", "First"));
    assert!(!exists(&mut c, "Drug", "Second"));
    assert!(!exists(&mut c, "Drug", "Fourth"));
    ok(kip_integration_tests::kip(&mut c, "DESCRIBE PRIMER", json!({})));
}

/// Consecutive concept blocks are written together (one statement) with the
/// result of writing them one by one: ids in block order, handles, a name
/// written twice merging in order, and a link that names a concept of a
/// later block still failing as it would have before that block ran.
#[test]
fn consecutive_concept_blocks_behave_as_one_by_one() {
    let mut c = medical("batch");
    let out = run(
        &mut c,
        r#"UPSERT {
             CONCEPT ?s { {type: "Symptom", name: "Cough"} SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?d { {type: "Drug", name: "Honey"} SET ATTRIBUTES { risk_level: 0 } SET PROPOSITIONS { ("treats", ?s) } }
             CONCEPT ?h { {type: "Symptom", name: "Headache"} SET ATTRIBUTES { severity: "high" } }
           } WITH METADATA { source: "batch", confidence: 0.7 }"#,
    );
    let ids = out["upsert_concept_nodes"].as_array().unwrap();
    assert_eq!(ids.len(), 3, "{out}");
    assert_eq!(ids[0], concept(&mut c, "Symptom", "Cough")["id"], "{out}");
    assert_eq!(ids[1], concept(&mut c, "Drug", "Honey")["id"], "{out}");
    assert_eq!(ids[2], concept(&mut c, "Symptom", "Headache")["id"], "{out}");
    assert_eq!(concept(&mut c, "Symptom", "Headache")["attributes"]["severity"], "high");
    assert_eq!(concept(&mut c, "Symptom", "Headache")["metadata"]["source"], "batch");
    let honey = run(&mut c, r#"FIND(COUNT(?l)) WHERE { ?l ({type: "Drug", name: "Honey"}, "treats", {type: "Symptom", name: "Cough"}) }"#);
    assert_eq!(honey, json!(1));
    // The same concept twice: the later block's values win, as one by one.
    run(
        &mut c,
        r#"UPSERT {
             CONCEPT ?a { {type: "Symptom", name: "Chill"} SET ATTRIBUTES { severity: "mild", note: "first" } }
             CONCEPT ?b { {type: "Symptom", name: "Chill"} SET ATTRIBUTES { severity: "severe" } }
           }"#,
    );
    let chill = concept(&mut c, "Symptom", "Chill");
    assert_eq!((chill["attributes"]["severity"].clone(), chill["attributes"]["note"].clone()), (json!("severe"), json!("first")));
    // A link to a concept that only a later block creates: KIP_3002, and
    // nothing of the statement is written.
    let code = fails(
        &mut c,
        r#"UPSERT {
             CONCEPT ?d { {type: "Drug", name: "Ginger"} SET ATTRIBUTES { risk_level: 0 } SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Nausea"}) } }
             CONCEPT ?n { {type: "Symptom", name: "Nausea"} SET ATTRIBUTES { severity: "mild" } }
           }"#,
    );
    assert_eq!(code, "KIP_3002");
    assert!(!exists(&mut c, "Drug", "Ginger"));
    assert!(!exists(&mut c, "Symptom", "Nausea"));
}

/// The links of a concept run (written after the run's concepts) give the
/// result of the blocks one by one: objects found among the run's own
/// concepts and the stored ones, layered link metadata, a link written
/// again merging its metadata, a triple repeated in a block merging in
/// order, the first missing object in block order reported with nothing
/// written, self-loops refused, and handles naming their latest definition.
#[test]
fn the_links_of_a_concept_run_behave_as_one_by_one() {
    let mut c = medical("runlinks");
    let capsule = r#"UPSERT {
             CONCEPT ?s { {type: "Symptom", name: "Nausea"} SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?d {
               {type: "Drug", name: "Ginger"} SET ATTRIBUTES { risk_level: 0 }
               SET PROPOSITIONS {
                 ("treats", ?s) WITH METADATA { confidence: 0.6 }
                 ("treats", {type: "Symptom", name: "Headache"})
                 ("treats", {type: "Symptom", name: "Nausea"}) WITH METADATA { note: "same as ?s: merged in order" }
               }
             } WITH METADATA { source: "block" }
           } WITH METADATA { source: "statement", confidence: 0.9 }"#;
    // The third link is the first one's triple again: the later entry's
    // metadata merges last.
    let out = run(&mut c, capsule);
    assert_eq!(out["upsert_concept_nodes"].as_array().map(Vec::len), Some(2), "{out}");
    let nausea = run(&mut c, r#"FIND(?l) WHERE { ?l ({type: "Drug", name: "Ginger"}, "treats", {type: "Symptom", name: "Nausea"}) }"#);
    let meta = &nausea[0]["metadata"];
    assert_eq!((meta["source"].clone(), meta["confidence"].clone(), meta["note"].clone()), (json!("block"), json!(0.9), json!("same as ?s: merged in order")));
    // Objects by handle (a concept the run creates), by `{type, name}` of a
    // stored concept and of one the run writes, with metadata layered
    // statement < block < link.
    let out = run(
        &mut c,
        r#"UPSERT {
             CONCEPT ?s { {type: "Symptom", name: "Dizziness"} SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?t { {type: "Symptom", name: "Vertigo"} SET ATTRIBUTES { severity: "high" } }
             CONCEPT ?d {
               {type: "Drug", name: "Meclizine"} SET ATTRIBUTES { risk_level: 1 }
               SET PROPOSITIONS {
                 ("treats", ?s) WITH METADATA { confidence: 0.6 }
                 ("treats", {type: "Symptom", name: "Headache"})
                 ("treats", {type: "Symptom", name: "Vertigo"})
               }
             } WITH METADATA { source: "block" }
           } WITH METADATA { source: "statement", confidence: 0.9 }"#,
    );
    let ids = out["upsert_concept_nodes"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(ids[2], concept(&mut c, "Drug", "Meclizine")["id"], "{out}");
    let links = run(
        &mut c,
        r#"FIND(?o.name, ?l.metadata) WHERE { ?l ({type: "Drug", name: "Meclizine"}, "treats", ?o) } ORDER BY ?o.name ASC"#,
    );
    // One column per projected variable, rows aligned.
    let (names, metas) = (links[0].as_array().unwrap_or_else(|| panic!("{links}")), links[1].as_array().unwrap_or_else(|| panic!("{links}")));
    let found: Vec<(Value, Value, Value)> =
        names.iter().zip(metas).map(|(n, m)| (n.clone(), m["source"].clone(), m["confidence"].clone())).collect();
    assert_eq!(
        found,
        vec![
            (json!("Dizziness"), json!("block"), json!(0.6)),
            (json!("Headache"), json!("block"), json!(0.9)),
            (json!("Vertigo"), json!("block"), json!(0.9)),
        ],
        "{links}"
    );
    // The same capsule again: the links are merged into, not repeated.
    let before = link_count(&mut c);
    run(
        &mut c,
        r#"UPSERT {
             CONCEPT ?s { {type: "Symptom", name: "Dizziness"} SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?d {
               {type: "Drug", name: "Meclizine"} SET ATTRIBUTES { risk_level: 1 }
               SET PROPOSITIONS { ("treats", ?s) WITH METADATA { confidence: 0.8 } ("treats", {type: "Symptom", name: "Headache"}) }
             }
           }"#,
    );
    assert_eq!(link_count(&mut c), before);
    let dizziness = run(&mut c, r#"FIND(?l.metadata) WHERE { ?l ({type: "Drug", name: "Meclizine"}, "treats", {type: "Symptom", name: "Dizziness"}) }"#);
    assert_eq!((dizziness[0]["confidence"].clone(), dizziness[0]["source"].clone()), (json!(0.8), json!("block")), "{dizziness}");
    // Missing objects: the first in block order is reported, and nothing
    // of the statement is written.
    let before = link_count(&mut c);
    let err = error(
        &mut c,
        r#"UPSERT {
             CONCEPT ?a { {type: "Drug", name: "Quinine"} SET ATTRIBUTES { risk_level: 3 }
               SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Fever"}) ("treats", {type: "Symptom", name: "Cramp"}) } }
             CONCEPT ?b { {type: "Drug", name: "Tonic"} SET ATTRIBUTES { risk_level: 0 }
               SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Ague"}) } }
           }"#,
    );
    assert_eq!(err["code"], "KIP_3002", "{err}");
    let message = err["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"{type: "Symptom", name: "Cramp"}"#), "{err}");
    assert!(!exists(&mut c, "Drug", "Quinine") && !exists(&mut c, "Drug", "Tonic"));
    assert_eq!(link_count(&mut c), before);
    // A self-loop, by handle or by identity, is refused.
    for target in ["?a", r#"{type: "Drug", name: "Sotalol"}"#] {
        let code = fails(
            &mut c,
            &format!(
                r#"UPSERT {{
                     CONCEPT ?s {{ {{type: "Symptom", name: "Palpitations"}} SET ATTRIBUTES {{ severity: "mild" }} }}
                     CONCEPT ?a {{ {{type: "Drug", name: "Sotalol"}} SET ATTRIBUTES {{ risk_level: 2 }} SET PROPOSITIONS {{ ("treats", {target}) }} }}
                   }}"#
            ),
        );
        assert_eq!(code, "KIP_1001", "self-loop through {target}");
        assert!(!exists(&mut c, "Drug", "Sotalol"));
    }
    // A handle defined before the run (here by a block with EXPECT VERSION),
    // then a handle defined twice in a run: the later definition holds.
    run(
        &mut c,
        r#"UPSERT {
             CONCEPT ?x { {type: "Symptom", name: "Insomnia"} EXPECT VERSION 0 SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?y { {type: "Symptom", name: "Anxiety"} SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?d { {type: "Drug", name: "Melatonin"} SET ATTRIBUTES { risk_level: 0 } SET PROPOSITIONS { ("treats", ?x) } }
           }"#,
    );
    let melatonin = run(&mut c, r#"FIND(?o.name) WHERE { ({type: "Drug", name: "Melatonin"}, "treats", ?o) }"#);
    assert_eq!(melatonin, json!(["Insomnia"]));
    // A handle defined by two blocks would bind the later ones to either
    // element: refused before anything is written.
    let out = error(
        &mut c,
        r#"UPSERT {
             CONCEPT ?y { {type: "Symptom", name: "Anxiety"} SET ATTRIBUTES { severity: "high" } }
             CONCEPT ?y { {type: "Symptom", name: "Restlessness"} SET ATTRIBUTES { severity: "mild" } }
             CONCEPT ?e { {type: "Drug", name: "Valerian"} SET ATTRIBUTES { risk_level: 0 } SET PROPOSITIONS { ("treats", ?y) } }
           }"#,
    );
    assert_eq!(out["code"], "KIP_1001", "{out}");
    assert!(out["message"].as_str().unwrap_or_default().contains("?y"), "{out}");
    let anxiety = run(&mut c, r#"FIND(?s.attributes.severity) WHERE { ?s {type: "Symptom", name: "Anxiety"} }"#);
    assert_eq!(anxiety, json!(["mild"]), "nothing written");
    let code = fails(
        &mut c,
        r#"UPSERT { CONCEPT ?y { {type: "Symptom", name: "Restlessness"} } PROPOSITION ?y { ({type: "Drug", name: "Melatonin"}, "treats", ?y) } }"#,
    );
    assert_eq!(code, "KIP_1001", "a concept's handle is no link's");
}
