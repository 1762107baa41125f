//! MERGE CONCEPT (RC10 §4.4): repointing keeps link ids (higher-order
//! references survive), collisions keep the target's link, provenance
//! chains, and replays say "already merged".

use super::common::{concept, error, exists, fails, medical, run};
use serde_json::{json, Value};

fn merge(source: &str, target: &str) -> String {
    format!(
        r#"MERGE CONCEPT ?s INTO ?t WHERE {{ ?s {{type: "Drug", name: "{source}"}} ?t {{type: "Drug", name: "{target}"}} }}"#
    )
}

fn link_id(c: &mut postgres::Client, drug: &str, symptom: &str) -> Value {
    let q = format!(r#"FIND(?l.id) WHERE {{ ?l ({{type: "Drug", name: "{drug}"}}, "treats", {{type: "Symptom", name: "{symptom}"}}) }}"#);
    run(c, &q).as_array().and_then(|a| a.first()).cloned().unwrap_or(Value::Null)
}

#[test]
fn repointed_links_keep_their_ids_and_higher_order_references() {
    let mut c = medical("mrg");
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Source"} SET ATTRIBUTES { description: "A source" } }
                    CONCEPT ?s { {type: "Symptom", name: "Toothache"} }
                    CONCEPT ?asa { {type: "Drug", name: "ASA"} SET PROPOSITIONS { ("treats", ?s) ("treats", {type: "Symptom", name: "Fever"}) WITH METADATA { note: "asa" } } }
                    CONCEPT ?who { {type: "Source", name: "WHO"} SET PROPOSITIONS {
                        ("stated", ({type: "Drug", name: "ASA"}, "treats", {type: "Symptom", name: "Toothache"}))
                        ("stated", ({type: "Drug", name: "ASA"}, "treats", {type: "Symptom", name: "Fever"})) } } }"#,
    );
    let toothache_link = link_id(&mut c, "ASA", "Toothache");
    let aspirin_fever = link_id(&mut c, "Aspirin", "Fever");
    let out = run(&mut c, &merge("ASA", "Aspirin"));
    // Repointed: ASA→Toothache, and WHO's statement about the dropped
    // ASA→Fever link (moved onto Aspirin→Fever). Deduplicated: ASA→Fever.
    assert_eq!(out, json!({"merged": true, "links_repointed": 2, "links_deduplicated": 1, "attributes_filled": 0}));
    assert_eq!(link_id(&mut c, "Aspirin", "Toothache"), toothache_link, "the repointed link kept its id");
    assert_eq!(link_id(&mut c, "Aspirin", "Fever"), aspirin_fever, "the target's link survived the collision");
    // WHO's statements now point at Aspirin's links: the repointed one by its
    // old id, the deduplicated one moved onto the survivor.
    let stated = run(&mut c, r#"FIND(?o) WHERE { ({type: "Source", name: "WHO"}, "stated", ?o) }"#);
    let objects: Vec<&str> = stated.as_array().unwrap().iter().filter_map(|o| o["id"].as_str()).collect();
    assert_eq!(objects.len(), 2, "{stated}");
    assert!(objects.contains(&toothache_link.as_str().unwrap()) && objects.contains(&aspirin_fever.as_str().unwrap()), "{stated}");
    let survivor = run(&mut c, r#"FIND(?l.metadata) WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Fever"}) }"#);
    assert_eq!(survivor[0]["note"], "asa", "missing keys filled from the dropped link");
    assert_eq!(survivor[0]["source"], "setup", "the survivor's own keys win");
}

#[test]
fn links_about_two_colliding_links_collapse_as_well() {
    // A and B both treat S, and each has a statement about its own link.
    // Merging A into B drops A→S onto B→S; the statement about A→S then
    // says what the statement about B→S says and is deduplicated too, by
    // the recursive move, before the outer loop reaches it.
    let mut c = medical("mrg");
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "about"} SET ATTRIBUTES { description: "A note about a link" } }
                    CONCEPT ?a { {type: "Drug", name: "A"} } CONCEPT ?b { {type: "Drug", name: "B"} } CONCEPT ?s { {type: "Symptom", name: "S"} }
                    PROPOSITION ?l1 { (?a, "treats", ?s) } PROPOSITION ?l2 { (?b, "treats", ?s) }
                    PROPOSITION ?h { (?a, "about", ?l1) } PROPOSITION ?g { (?b, "about", ?l2) } }"#,
    );
    let b_link = link_id(&mut c, "B", "S");
    let out = run(&mut c, &merge("A", "B"));
    // Deduplicated: A→S (onto B→S), then (A, about, A→S), which the
    // recursive move repointed to (A, about, B→S) and the merge then found
    // equal to (B, about, B→S). It failed on the unique key before. No
    // link survives with an endpoint moved: none is counted repointed.
    assert_eq!(out, json!({"merged": true, "links_repointed": 0, "links_deduplicated": 2, "attributes_filled": 0}));
    let notes = run(&mut c, r#"FIND(?o.id) WHERE { ({type: "Drug", name: "B"}, "about", ?o) }"#);
    assert_eq!(notes, json!([b_link]));
}

/// The report counts each link once, as the merge leaves it: a link moved
/// on both of its sides (its subject link deduplicated, its object the
/// source) is one repointed link, and the links about a would-be
/// self-loop, which go with it, are counted removed.
#[test]
fn each_link_is_counted_once_as_the_merge_leaves_it() {
    let mut c = medical("mrg");
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "about"} SET ATTRIBUTES { description: "A note about a link" } }
                    CONCEPT ?s { {type: "Drug", name: "S"} } CONCEPT ?t { {type: "Drug", name: "T"} } CONCEPT ?x { {type: "Symptom", name: "X"} }
                    PROPOSITION ?l1 { (?x, "about", ?s) } PROPOSITION ?l2 { (?x, "about", ?t) } PROPOSITION ?a { (?l1, "about", ?s) } }"#,
    );
    let out = run(&mut c, &merge("S", "T"));
    assert_eq!(out, json!({"merged": true, "links_repointed": 1, "links_deduplicated": 1, "attributes_filled": 0}));
    let left = run(&mut c, r#"FIND(COUNT(?l)) WHERE { ?l (?a, "about", ?b) }"#);
    assert_eq!(left, json!(2), "(X about T) and the note moved onto it");

    let mut c = medical("mrg");
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "about"} SET ATTRIBUTES { description: "A note about a link" } }
                    CONCEPT ?s { {type: "Drug", name: "S"} } CONCEPT ?t { {type: "Drug", name: "T"} } CONCEPT ?y { {type: "Symptom", name: "Y"} }
                    PROPOSITION ?l1 { (?s, "about", ?t) } PROPOSITION ?a { (?l1, "about", ?y) SET ATTRIBUTES { note: "goes with it" } } }"#,
    );
    let out = run(&mut c, &merge("S", "T"));
    assert_eq!(out, json!({"merged": true, "links_repointed": 0, "links_deduplicated": 2, "attributes_filled": 0}));
    assert_eq!(run(&mut c, r#"FIND(COUNT(?l)) WHERE { ?l (?a, "about", ?b) }"#), json!(0));
}

#[test]
fn provenance_chains_and_replays_say_already_merged() {
    let mut c = medical("mrg");
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} SET ATTRIBUTES { aliases: ["a1"] } } CONCEPT ?b { {type: "Drug", name: "B"} } CONCEPT ?x { {type: "Drug", name: "C"} } }"#);
    run(&mut c, &merge("A", "B"));
    run(&mut c, &merge("B", "C"));
    let survivor = concept(&mut c, "Drug", "C");
    assert_eq!(survivor["metadata"]["_merged_from"], json!(["Drug:A", "Drug:B"]));
    assert_eq!(survivor["attributes"]["aliases"], json!(["a1", "A", "B"]));
    assert!(!exists(&mut c, "Drug", "A") && !exists(&mut c, "Drug", "B"));
    let e = error(&mut c, &merge("B", "C"));
    assert_eq!(e["code"], "KIP_3002");
    assert!(e["hint"].as_str().unwrap().contains("already"), "{e}");
}

#[test]
fn a_link_between_source_and_target_collapses() {
    let mut c = medical("mrg");
    run(&mut c, r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "same_as"} SET ATTRIBUTES { description: "Same entity" } }
                            CONCEPT ?d { {type: "Drug", name: "Acetylsalicylic acid"} SET PROPOSITIONS { ("same_as", {type: "Drug", name: "Aspirin"}) } } }"#);
    let out = run(&mut c, &merge("Acetylsalicylic acid", "Aspirin"));
    assert_eq!(out["links_deduplicated"], 1, "{out}");
    assert_eq!(run(&mut c, r#"FIND(?l) WHERE { ?l (?a, "same_as", ?b) }"#), json!([]));
}

#[test]
fn merge_requires_one_concept_per_side_and_unprotected_nodes() {
    let mut c = medical("mrg");
    assert_eq!(fails(&mut c, &merge("Nothing", "Aspirin")), "KIP_3002");
    assert_eq!(fails(&mut c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Drug", name: "Aspirin"} ?t {type: "Symptom"} }"#), "KIP_3003");
    assert_eq!(fails(&mut c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Person", name: "$system"} ?t {type: "Person", name: "$self"} }"#), "KIP_3004");
    run(&mut c, r#"UPSERT { CONCEPT ?p { {type: "Person", name: "alice"} SET ATTRIBUTES { person_class: "Human" } } }"#);
    assert_eq!(fails(&mut c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Person", name: "alice"} ?t {type: "Person", name: "$self"} }"#), "KIP_3004");
    assert_eq!(fails(&mut c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Domain", name: "Unsorted"} ?t {type: "Domain", name: "Archived"} }"#), "KIP_3004");
    assert!(exists(&mut c, "Person", "alice"));
}

/// Of two identical MERGEs racing, the one that waited for the other's
/// locks says the source was already merged (RC10 §4.4), not merely that
/// it no longer exists.
#[test]
fn the_loser_of_two_racing_merges_says_already_merged() {
    let mut first = medical("mrg_race");
    let space: String = first.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    run(&mut first, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "A"} } CONCEPT ?b { {type: "Drug", name: "B"} } }"#);
    first.batch_execute("BEGIN").unwrap();
    run(&mut first, &merge("A", "B"));
    let mut second = kip_integration_tests::connect();
    kip_integration_tests::use_space(&mut second, &space);
    let pid: i32 = second.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let call = std::thread::spawn(move || kip_integration_tests::kip(&mut second, &merge("A", "B"), json!({})));
    // Commit the first once the second waits for its locks.
    let mut watcher = kip_integration_tests::connect();
    let waited = (0..400).any(|_| {
        let waiting: bool = watcher
            .query_one("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock')", &[&pid])
            .unwrap()
            .get(0);
        if !waiting {
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        waiting
    });
    first.batch_execute("COMMIT").unwrap();
    let out = call.join().unwrap();
    assert!(waited, "the second MERGE never waited for the first's locks: {out}");
    assert_eq!(out["error"]["code"], "KIP_3002", "{out}");
    assert!(out["error"]["hint"].as_str().unwrap().contains("already happened"), "{out}");
}
