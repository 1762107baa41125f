//! Protected system structure (KIP_3004) and the reserved `_` namespace
//! (KIP_2002): the schema's foundations and the system actors' identities
//! cannot be removed; ordinary $self attributes evolve.

use super::common::{concept, exists, fails, run, space};
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
