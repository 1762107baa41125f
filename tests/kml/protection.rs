//! Protected system structure (KIP_3004) and the reserved `_` namespace
//! (KIP_2002): the schema's foundations and the system actors' identities
//! cannot be removed; ordinary $self attributes evolve.

use super::common::{concept, error, exists, fails, run, space};
use serde_json::json;

#[test]
fn foundations_cannot_be_deleted() {
    let mut c = space("prot");
    for (t, n) in [
        ("$ConceptType", "$ConceptType"),
        ("$ConceptType", "$PropositionType"),
        ("$ConceptType", "Domain"),
        ("$PropositionType", "belongs_to_domain"),
        ("Domain", "CoreSchema"),
        ("Domain", "System"),
        ("Person", "$self"),
        ("Person", "$system"),
    ] {
        let cmd = format!(r#"DELETE CONCEPT ?x DETACH WHERE {{ ?x {{type: "{t}", name: "{n}"}} }}"#);
        assert_eq!(fails(&mut c, &cmd), "KIP_3004", "{t}:{n}");
        assert!(exists(&mut c, t, n));
    }
    // A broad pattern that includes a protected node is refused as a whole.
    assert_eq!(fails(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Domain"} }"#), "KIP_3004");
    assert!(exists(&mut c, "Domain", "Unsorted"));
    assert_eq!(fails(&mut c, r#"DELETE ATTRIBUTES {"description"} FROM ?t WHERE { ?t {type: "$ConceptType", name: "$ConceptType"} }"#), "KIP_3004");
}

#[test]
fn core_directives_are_immutable_but_self_evolves() {
    let mut c = space("prot");
    let directives = concept(&mut c, "Person", "$self")["attributes"]["core_directives"].clone();
    assert!(directives.as_array().is_some_and(|d| !d.is_empty()));
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { core_directives: [] } } }"#), "KIP_3004");
    assert_eq!(fails(&mut c, r#"DELETE ATTRIBUTES {"core_directives"} FROM ?s WHERE { ?s {type: "Person", name: "$system"} }"#), "KIP_3004");
    // Re-asserting the same value (e.g. replaying the capsule) is allowed.
    kip_integration_tests::ok(kip_integration_tests::kip(
        &mut c,
        r#"UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { core_directives: :d } } }"#,
        json!({"d": directives}),
    ));
    run(&mut c, r#"UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { persona: "A careful helper.", strengths: ["Rust"] } } }"#);
    run(&mut c, r#"DELETE ATTRIBUTES {"weaknesses"} FROM ?s WHERE { ?s {type: "Person", name: "$self"} }"#);
    let me = concept(&mut c, "Person", "$self");
    assert_eq!(me["attributes"]["persona"], "A careful helper.");
    assert!(me["attributes"].get("weaknesses").is_none());
    assert_eq!(me["attributes"]["core_directives"], directives);
}

#[test]
fn schema_evolves_through_upsert() {
    let mut c = space("prot");
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "$ConceptType", name: "Domain"} SET ATTRIBUTES { display_hint: "🗺️" } } }"#);
    assert_eq!(concept(&mut c, "$ConceptType", "Domain")["attributes"]["display_hint"], "🗺️");
}

#[test]
fn reserved_metadata_is_engine_owned() {
    let mut c = space("prot");
    assert_eq!(fails(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Domain", name: "Medical"} } WITH METADATA { _merged_from: [] } }"#), "KIP_2002");
    assert_eq!(
        fails(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Domain", name: "Medical"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Unsorted"}) WITH METADATA { _version: 1 } } } }"#),
        "KIP_2002"
    );
    assert!(!exists(&mut c, "Domain", "Medical"));
    assert_eq!(fails(&mut c, r#"DELETE METADATA {"_version"} FROM ?d WHERE { ?d {type: "Domain", name: "Unsorted"} }"#), "KIP_2002");
}

/// The immutable core: meta-types, belongs_to_domain, CoreSchema and the
/// links anchoring them refuse every write path, while re-asserting their
/// stored content (the Genesis capsule) changes nothing.
#[test]
fn the_immutable_core_refuses_every_write_path() {
    let mut c = space("prot");
    let genesis = include_str!("../../capsules/Genesis.kip");
    let before = concept(&mut c, "$ConceptType", "$ConceptType");
    for cmd in [
        r#"UPSERT { CONCEPT ?c { {type: "Domain", name: "CoreSchema"} } WITH METADATA { note: "mine" } }"#,
        r#"UPSERT { CONCEPT ?c { {type: "$ConceptType", name: "$ConceptType"} SET ATTRIBUTES { display_hint: "X" } } }"#,
        r#"UPSERT { CONCEPT ?c { {type: "$ConceptType", name: "$PropositionType"} SET ATTRIBUTES { extra: 1 } } }"#,
        r#"UPSERT { CONCEPT ?c { {type: "$PropositionType", name: "belongs_to_domain"} } WITH METADATA { confidence: 0.1 } }"#,
        r#"UPSERT { CONCEPT ?c { {type: "$ConceptType", name: "$ConceptType"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) WITH METADATA { confidence: 0.2 } } } }"#,
        r#"UPDATE ?l SET METADATA { x: 1 } WHERE { ?c {type: "$ConceptType", name: "$PropositionType"} ?l (?c, "belongs_to_domain", ?d) }"#,
        r#"DELETE PROPOSITIONS ?l WHERE { ?c {type: "$ConceptType", name: "$ConceptType"} ?l (?c, "belongs_to_domain", ?d) }"#,
        r#"DELETE METADATA {"source"} FROM ?l WHERE { ?c {type: "$ConceptType", name: "$ConceptType"} ?l (?c, "belongs_to_domain", ?d) }"#,
        r#"UPDATE ?c SET ATTRIBUTES { description: "changed" } WHERE { ?c {type: "Domain", name: "CoreSchema"} }"#,
        // The core gains no links: filed under another domain, or any other.
        r#"UPSERT { CONCEPT ?c { {type: "$ConceptType", name: "$ConceptType"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Unsorted"}) } } }"#,
        r#"UPSERT { PROPOSITION ?l { ({type: "Domain", name: "CoreSchema"}, "belongs_to_domain", {type: "Domain", name: "Unsorted"}) } }"#,
    ] {
        assert_eq!(fails(&mut c, cmd), "KIP_3004", "{cmd}");
    }
    let e = error(&mut c, r#"UPSERT { CONCEPT ?c { {type: "$ConceptType", name: "$ConceptType"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Unsorted"}) } } }"#);
    assert!(e["message"].as_str().unwrap().contains("cannot add a \"belongs_to_domain\" link from"), "{e}");
    let by_id = kip_integration_tests::ok(kip_integration_tests::kip(&mut c, r#"FIND(?c.id) WHERE { ?c {type: "$ConceptType", name: "$PropositionType"} }"#, json!({})));
    let by_id = format!(r#"UPSERT {{ CONCEPT ?c {{ {{id: "{}"}} SET PROPOSITIONS {{ ("belongs_to_domain", {{type: "Domain", name: "Unsorted"}}) }} }} }}"#, by_id[0].as_str().unwrap());
    assert_eq!(fails(&mut c, &by_id), "KIP_3004");
    // The same link by id is refused too.
    let link = kip_integration_tests::ok(kip_integration_tests::kip(
        &mut c,
        r#"FIND(?l) WHERE { ?c {type: "$ConceptType", name: "$ConceptType"} ?l (?c, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }"#,
        json!({}),
    ));
    let id = link[0]["id"].as_str().unwrap().to_string();
    let by_id = format!(r#"UPSERT {{ PROPOSITION ?l {{ (id: "{id}") }} WITH METADATA {{ confidence: 0.3 }} }}"#);
    assert_eq!(fails(&mut c, &by_id), "KIP_3004");
    // A merge into a protected node is refused.
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Domain", name: "CoreSchema2"} } }"#);
    assert_eq!(fails(&mut c, r#"MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Domain", name: "CoreSchema2"} ?b {type: "Domain", name: "CoreSchema"} }"#), "KIP_3004");
    // Nothing changed, and the Genesis capsule is still re-runnable.
    assert_eq!(concept(&mut c, "$ConceptType", "$ConceptType"), before);
    kip_integration_tests::ok(kip_integration_tests::kip(&mut c, genesis, json!({})));
    assert_eq!(concept(&mut c, "$ConceptType", "$ConceptType")["metadata"]["_version"], before["metadata"]["_version"]);
    let anchors = kip_integration_tests::ok(kip_integration_tests::kip(
        &mut c,
        r#"FIND(COUNT(?l)) WHERE { ?c {type: "$ConceptType"} ?l (?c, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) FILTER(?c.name == "$ConceptType" || ?c.name == "$PropositionType") }"#,
        json!({}),
    ));
    assert_eq!(anchors, json!(2));
}

/// UPDATE and DELETE check every target before touching any: one protected
/// target among many ordinary ones refuses the whole command, names the
/// protected element, and leaves every other target unchanged.
#[test]
fn one_refused_target_leaves_every_other_target_unchanged() {
    let mut c = space("prot");
    for i in 0..30 {
        run(&mut c, &format!(r#"UPSERT {{ CONCEPT ?d {{ {{type: "Domain", name: "Topic{i}"}} SET ATTRIBUTES {{ n: 1 }} }} }}"#));
    }
    let e = error(&mut c, r#"UPDATE ?d SET ATTRIBUTES { n: 2 } WHERE { ?d {type: "Domain"} }"#);
    assert_eq!(e["code"], "KIP_3004", "{e}");
    assert!(e["message"].as_str().unwrap().contains(r#"{type: "Domain", name: "#), "{e}");
    let e = error(&mut c, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Domain"} }"#);
    assert_eq!(e["code"], "KIP_3004", "{e}");
    let e = error(&mut c, r#"DELETE ATTRIBUTES {"n"} FROM ?d WHERE { ?d {type: "Domain"} }"#);
    assert_eq!(e["code"], "KIP_3004", "{e}");
    for i in 0..30 {
        assert_eq!(concept(&mut c, "Domain", &format!("Topic{i}"))["attributes"]["n"], 1, "Topic{i}");
    }
    // The system actors: their directives are refused by name, their
    // identity cannot be deleted, and nothing else moved.
    run(&mut c, r#"UPSERT { CONCEPT ?p { {type: "Person", name: "Ann"} } }"#);
    let e = error(&mut c, r#"UPDATE ?p SET ATTRIBUTES { core_directives: [] } WHERE { ?p {type: "Person"} }"#);
    assert!(e["message"].as_str().unwrap().contains("core_directives of $s"), "{e}");
    let e = error(&mut c, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person"} }"#);
    assert!(e["message"].as_str().unwrap().contains("system actor"), "{e}");
    assert!(exists(&mut c, "Person", "Ann"));
    // Filtered to ordinary targets, the same commands succeed.
    let out = run(&mut c, r#"UPDATE ?d SET ATTRIBUTES { n: 2 } WHERE { ?d {type: "Domain"} FILTER(?d.attributes.n == 1) }"#);
    assert_eq!(out, json!({"updated": 30, "matched": 30}));
}

/// A target of the wrong kind is a syntax error naming the variable, and
/// nothing is removed.
#[test]
fn bulk_deletes_refuse_targets_of_the_wrong_kind() {
    let mut c = space("prot");
    run(&mut c, r#"UPSERT { CONCEPT ?p { {type: "Person", name: "Ann"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Unsorted"}) } } }"#);
    let e = error(&mut c, r#"DELETE PROPOSITIONS ?p WHERE { ?p {type: "Person", name: "Ann"} }"#);
    assert_eq!(e["code"], "KIP_1001", "{e}");
    assert!(e["message"].as_str().unwrap().contains("?p binds concept nodes"), "{e}");
    let e = error(&mut c, r#"DELETE CONCEPT ?l DETACH WHERE { ?l ({type: "Person", name: "Ann"}, "belongs_to_domain", ?d) }"#);
    assert_eq!(e["code"], "KIP_1001", "{e}");
    assert!(e["message"].as_str().unwrap().contains("?l binds proposition links"), "{e}");
    let links = run(&mut c, r#"FIND(COUNT(?l)) WHERE { ?l ({type: "Person", name: "Ann"}, "belongs_to_domain", ?d) }"#);
    assert_eq!(links, json!(1));
}
