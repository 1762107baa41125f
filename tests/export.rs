//! META EXPORT (RC10 §5.3): knowledge capsules that reproduce the exported
//! subgraph on another space, idempotently, page by page.
//! Needs the test cluster (scripts/cluster.sh start) with kip installed.

use kip_integration_tests::{connect, err_code, fresh_space, kip, kip_readonly, ok, use_space};
use postgres::Client;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

fn run(c: &mut Client, command: &str) -> Value {
    ok(kip(c, command, json!({})))
}

/// An EXPORT through kip_execute_readonly: (result, next_cursor).
fn export(c: &mut Client, command: &str) -> (Value, Option<String>) {
    let envelope = kip_readonly(c, command, json!({}));
    let cursor = envelope.get("next_cursor").and_then(Value::as_str).map(str::to_string);
    (ok(envelope), cursor)
}

fn capsule(result: &Value) -> String {
    result["capsule"].as_str().unwrap_or_else(|| panic!("no capsule in {result}")).to_string()
}

fn find(c: &mut Client, command: &str) -> Vec<Value> {
    ok(kip_readonly(c, command, json!({}))).as_array().cloned().unwrap_or_default()
}

/// Author metadata only (reserved `_` keys are per-engine bookkeeping).
fn author_metadata(element: &Value) -> Value {
    let mut meta = element["metadata"].as_object().cloned().unwrap_or_default();
    meta.retain(|k, _| !k.starts_with('_'));
    Value::Object(meta)
}

/// The whole space as id-free lines: every concept (type, name, attributes,
/// author metadata) and every proposition (endpoints by identity,
/// recursively), plus each element's `_version` keyed by identity.
fn dump(c: &mut Client) -> (BTreeSet<String>, BTreeMap<String, Value>) {
    let mut elements: BTreeMap<String, Value> = BTreeMap::new();
    let types = find(c, r#"FIND(?t.name) WHERE { ?t {type: "$ConceptType"} } LIMIT 1000"#);
    for t in types {
        let query = format!("FIND(?x) WHERE {{ ?x {{type: {t}}} }} LIMIT 1000");
        for x in find(c, &query) {
            elements.insert(x["id"].as_str().unwrap().to_string(), x);
        }
    }
    for l in find(c, "FIND(?l) WHERE { ?l (?s, ?p, ?o) } LIMIT 5000") {
        elements.insert(l["id"].as_str().unwrap().to_string(), l);
    }
    fn identity(id: &str, all: &BTreeMap<String, Value>) -> String {
        let e = &all[id];
        match e["_type"].as_str() {
            Some("ConceptNode") => format!("{{{}:{}}}", e["type"], e["name"]),
            _ => format!(
                "({}, {}, {})",
                identity(e["subject"].as_str().unwrap(), all),
                e["predicate"],
                identity(e["object"].as_str().unwrap(), all)
            ),
        }
    }
    let mut lines = BTreeSet::new();
    let mut versions = BTreeMap::new();
    for (id, e) in &elements {
        let ident = identity(id, &elements);
        lines.insert(format!("{ident} attributes={} metadata={}", e.get("attributes").cloned().unwrap_or(json!({})), author_metadata(e)));
        versions.insert(ident, e["metadata"]["_version"].clone());
    }
    (lines, versions)
}

/// Elements the exported subgraph points to without exporting them; both
/// the source and the destination hold them.
const OUTSIDE: [&str; 3] = [
    r#"UPSERT { CONCEPT ?h { {type: "$ConceptType", name: "Herb"} } CONCEPT ?c { {type: "$ConceptType", name: "Condition"} }
                CONCEPT ?t { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { description: "Treatment" } } }"#,
    r#"UPSERT { CONCEPT ?n { {type: "Condition", name: "Nausea"} }
                CONCEPT ?g { {type: "Herb", name: "Ginger"} SET PROPOSITIONS { ("treats", ?n) } } }"#,
    r#"UPSERT { CONCEPT ?s { {type: "$ConceptType", name: "Symptom"} SET ATTRIBUTES { description: "Medical symptom" } } }"#,
];

/// The subgraph that gets exported.
const EXPORTED: [&str; 5] = [
    r#"UPSERT { CONCEPT ?d { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "Pharmaceutical \"drug\"" } }
                CONCEPT ?s { {type: "$PropositionType", name: "stated"} } }"#,
    r#"UPSERT { CONCEPT ?h { {type: "Symptom", name: "Headache"} SET ATTRIBUTES { severity: "moderate", "odd key": "a \"quoted\"\nline", "ünï": [1, {"x": null}] } }
                CONCEPT ?f { {type: "Symptom", name: "Fever"} } }"#,
    r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk_level: 2, tags: ["nsaid"] }
                SET PROPOSITIONS { ("treats", {type: "Symptom", name: "Headache"}) WITH METADATA { confidence: 0.8 }
                                   ("treats", {type: "Symptom", name: "Fever"})
                                   ("treats", {type: "Condition", name: "Nausea"}) } }
                WITH METADATA { source: "setup", confidence: 0.9 } }"#,
    r#"UPSERT { CONCEPT ?i { {type: "Drug", name: "Ibuprofen"} }
                PROPOSITION ?s1 { (?i, "stated", ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})) SET ATTRIBUTES { note: "in-set" } }
                PROPOSITION ?s2 { (?i, "stated", ({type: "Herb", name: "Ginger"}, "treats", {type: "Condition", name: "Nausea"})) SET ATTRIBUTES { note: "outside" } } WITH METADATA { author: "tester" } }"#,
    // A merge leaves engine bookkeeping (`_merged_from`) on Aspirin.
    r#"UPSERT { CONCEPT ?x { {type: "Drug", name: "ASA"} SET ATTRIBUTES { alias_of: "Aspirin" } } }"#,
];

const EXPORT_ALL: &str = r#"EXPORT ?x WHERE {
  ?x {type: "$ConceptType", name: "Drug"}
  UNION { ?x {type: "$PropositionType", name: "stated"} }
  UNION { ?x {type: "Drug"} }
  UNION { ?x {type: "Symptom"} }
  UNION { ?x (?d, "treats", ?o) ?d {type: "Drug"} }
  UNION { ?x (?a, "stated", ?b) }
} LIMIT 1000"#;

fn source_space(c: &mut Client) -> String {
    let space = fresh_space(c, "export_src");
    for cmd in OUTSIDE.iter().chain(EXPORTED.iter()) {
        run(c, cmd);
    }
    run(c, r#"MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Drug", name: "ASA"} ?t {type: "Drug", name: "Aspirin"} }"#);
    space
}

#[test]
fn capsule_round_trips_into_a_fresh_space() {
    let mut c = connect();
    source_space(&mut c);
    let aspirin = find(&mut c, r#"FIND(?x) WHERE { ?x {type: "Drug", name: "Aspirin"} }"#);
    assert!(aspirin[0]["metadata"].get("_merged_from").is_some(), "setup must leave _merged_from: {aspirin:?}");
    let (source, _) = dump(&mut c);

    let (result, cursor) = export(&mut c, EXPORT_ALL);
    assert!(cursor.is_none());
    // $ConceptType Drug, $PropositionType stated, Aspirin, Ibuprofen, Headache, Fever.
    assert_eq!(result["concepts"], json!(6), "{result}");
    // 3 × treats from Aspirin, 2 × stated.
    assert_eq!(result["propositions"], json!(5), "{result}");
    let text = capsule(&result);
    for reserved in ["_version", "_created_at", "_updated_at", "_merged_from"] {
        assert!(!text.contains(reserved), "{reserved} leaked into the capsule:\n{text}");
    }
    // Outside endpoints by identity, outside propositions structurally.
    assert!(text.contains(r#"{type: "Condition", name: "Nausea"}"#), "{text}");
    assert!(text.contains(r#"({type: "Herb", name: "Ginger"}, "treats", {type: "Condition", name: "Nausea"})"#), "{text}");
    // Deterministic.
    assert_eq!(capsule(&export(&mut c, EXPORT_ALL).0), text);

    // A fresh space lacking the outside elements cannot take the capsule.
    fresh_space(&mut c, "export_bare");
    let code = err_code(&kip(&mut c, &text, json!({})));
    assert!(code == "KIP_3002" || code == "KIP_2001", "{code}");

    fresh_space(&mut c, "export_dst");
    for cmd in OUTSIDE {
        run(&mut c, cmd);
    }
    let imported = run(&mut c, &text);
    assert_eq!(imported["upsert_concept_nodes"].as_array().unwrap().len(), 6);
    let (copy, versions) = dump(&mut c);
    assert_eq!(copy, source, "the imported graph differs from the source");

    // Importing again changes nothing.
    let again = run(&mut c, &text);
    assert_eq!(again, imported);
    let (copy2, versions2) = dump(&mut c);
    assert_eq!(copy2, copy);
    assert_eq!(versions2, versions, "re-import bumped versions");
}

#[test]
fn pages_are_independent_capsules() {
    let mut c = connect();
    let source = fresh_space(&mut c, "export_pages");
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "$ConceptType", name: "Drug"} } CONCEPT ?p { {type: "$PropositionType", name: "interacts_with"} } }"#);
    for i in 1..=5 {
        run(&mut c, &format!(r#"UPSERT {{ CONCEPT ?d {{ {{type: "Drug", name: "D{i}"}} SET ATTRIBUTES {{ rank: {i} }} }} WITH METADATA {{ batch: "b{i}" }} }}"#));
    }
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "D1"} SET PROPOSITIONS { ("interacts_with", {type: "Drug", name: "D5"}) ("interacts_with", {type: "Drug", name: "D3"}) } } }"#);

    let query = r#"EXPORT ?x WHERE { ?x {type: "Drug"} } LIMIT 2"#;
    let (first, cursor1) = export(&mut c, query);
    assert_eq!(first["concepts"], json!(2));
    let cursor1 = cursor1.expect("next_cursor on page 1");
    let (second, cursor2) = export(&mut c, &format!("{} CURSOR {:?}", query, cursor1));
    assert_eq!(second["concepts"], json!(2));
    let cursor2 = cursor2.expect("next_cursor on page 2");
    let (third, cursor3) = export(&mut c, &format!("{} CURSOR {:?}", query, cursor2));
    assert_eq!(third["concepts"], json!(1));
    assert!(cursor3.is_none());
    let all: Vec<String> = [&first, &second, &third].iter().map(|r| capsule(r)).collect();
    for (i, name) in ["D1", "D2", "D3", "D4", "D5"].iter().enumerate() {
        assert!(all[i / 2].contains(&format!("name: \"{name}\"")), "{name} not on page {}", i / 2 + 1);
    }

    // Tampered or foreign cursors are refused.
    let mut bad = cursor1.clone();
    let last = bad.pop().unwrap();
    bad.push(if last == 'A' { 'B' } else { 'A' });
    let tampered = kip_readonly(&mut c, &format!("{query} CURSOR {bad:?}"), json!({}));
    assert_eq!(err_code(&tampered), "KIP_1001");
    let foreign = kip_readonly(&mut c, &format!(r#"EXPORT ?x WHERE {{ ?x {{type: "$ConceptType"}} }} LIMIT 2 CURSOR {cursor1:?}"#), json!({}));
    assert_eq!(err_code(&foreign), "KIP_1001");

    // Concepts and links, two elements a page, applied in order.
    let with_links = r#"EXPORT ?x WHERE { ?x {type: "Drug"} UNION { ?x (?a, "interacts_with", ?b) } } LIMIT 2"#;
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let cmd = match &cursor {
            Some(t) => format!("{with_links} CURSOR {t:?}"),
            None => with_links.to_string(),
        };
        let (page, next) = export(&mut c, &cmd);
        pages.push(capsule(&page));
        cursor = next;
        if cursor.is_none() {
            break;
        }
        assert!(pages.len() < 10, "pagination does not end");
    }
    assert_eq!(pages.len(), 4);
    // Links come last, referring to concepts of earlier pages by identity.
    assert!(pages[3].contains(r#"{type: "Drug", name: "D"#), "{}", pages[3]);
    let (expected, _) = dump(&mut c);

    fresh_space(&mut c, "export_pages_dst");
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "$ConceptType", name: "Drug"} } CONCEPT ?p { {type: "$PropositionType", name: "interacts_with"} } }"#);
    for page in &pages {
        run(&mut c, page);
    }
    assert_eq!(dump(&mut c).0, expected);
    use_space(&mut c, &source);
}

/// Pages continue after the previous page's last element (keyset tokens):
/// elements deleted or added before that point during a walk neither make
/// the walk skip an element nor repeat one, and a page may span the end of
/// one rank (schema definitions, concepts, links) and the start of the next.
#[test]
fn pages_continue_after_the_last_element() {
    let mut c = connect();
    fresh_space(&mut c, "export_keyset");
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "$ConceptType", name: "Drug"} } CONCEPT ?p { {type: "$PropositionType", name: "interacts_with"} } }"#);
    for i in 1..=6 {
        run(&mut c, &format!(r#"UPSERT {{ CONCEPT ?d {{ {{type: "Drug", name: "D{i}"}} }} }}"#));
    }
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "D1"} SET PROPOSITIONS { ("interacts_with", {type: "Drug", name: "D6"}) } } }"#);
    let walk = r#"EXPORT ?x WHERE { ?x {type: "Drug"} UNION { ?x {type: "$ConceptType", name: "Drug"} } UNION { ?x (?a, "interacts_with", ?b) } } LIMIT 3"#;
    let page = |c: &mut Client, cursor: &Option<String>| {
        export(c, &cursor.as_ref().map_or(walk.to_string(), |t| format!("{walk} CURSOR {t:?}")))
    };
    // Page 1: the Drug type, D1, D2.
    let (first, cursor) = page(&mut c, &None);
    let first = capsule(&first);
    assert!(first.contains(r#"{type: "$ConceptType", name: "Drug"}"#) && first.contains("D1") && first.contains("D2"), "{first}");
    // D1 and D2, already exported, go; a D7 is added: it comes after D6.
    run(&mut c, r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Drug"} FILTER(IN(?x.name, ["D1", "D2"])) }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "D7"} } }"#);
    let (second, cursor) = page(&mut c, &cursor);
    let second = capsule(&second);
    for name in ["D3", "D4", "D5"] {
        assert!(second.contains(&format!("name: \"{name}\"")), "{name} missing from page 2: {second}");
    }
    // Page 3 ends the concepts; D1's link went with it, so no link follows.
    let (third, cursor) = page(&mut c, &cursor);
    let third = capsule(&third);
    assert!(third.contains(r#"name: "D6""#) && third.contains(r#"name: "D7""#), "{third}");
    assert!(cursor.is_none(), "a page after the last element");
    // With a D8 and a link, the last page spans concepts and links.
    run(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "D8"} } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "D3"} SET PROPOSITIONS { ("interacts_with", {type: "Drug", name: "D7"}) } } }"#);
    let (_, cursor) = page(&mut c, &None);
    let (_, cursor) = page(&mut c, &cursor);
    let (last, cursor) = page(&mut c, &cursor);
    assert!(capsule(&last).contains(r#"name: "D8""#) && capsule(&last).contains("interacts_with"), "{last}");
    assert_eq!((&last["concepts"], &last["propositions"]), (&json!(1), &json!(1)), "{last}");
    assert!(cursor.is_none());
}

#[test]
fn spec_example_exports_a_domain() {
    let mut c = connect();
    fresh_space(&mut c, "export_domain");
    run(&mut c, r#"UPSERT {
        CONCEPT ?m { {type: "Domain", name: "Medical"} SET ATTRIBUTES { description: "Health knowledge" } }
        CONCEPT ?dt { {type: "$ConceptType", name: "Drug"} SET PROPOSITIONS { ("belongs_to_domain", ?m) } }
        CONCEPT ?st { {type: "$ConceptType", name: "Symptom"} SET PROPOSITIONS { ("belongs_to_domain", ?m) } }
        CONCEPT ?tt { {type: "$PropositionType", name: "treats"} SET PROPOSITIONS { ("belongs_to_domain", ?m) } }
    }"#);
    run(&mut c, r#"UPSERT {
        CONCEPT ?h { {type: "Symptom", name: "Headache"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Medical"}) } }
        CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk_level: 2 }
                     SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Medical"}) ("treats", ?h) } }
    } WITH METADATA { source: "spec-example" }"#);
    let example = r#"
EXPORT ?x
WHERE {
  (?x, "belongs_to_domain", {type: "Domain", name: "Medical"})

  UNION {
    (?s, "belongs_to_domain", {type: "Domain", name: "Medical"})
    (?o, "belongs_to_domain", {type: "Domain", name: "Medical"})
    ?x (?s, ?p, ?o)
  }

  UNION {
    ?x (?m, "belongs_to_domain", {type: "Domain", name: "Medical"})
  }

  UNION {
    ?x {type: "Domain", name: "Medical"}
  }
}
LIMIT 500"#;
    let (result, cursor) = export(&mut c, example);
    assert!(cursor.is_none());
    // Medical, 3 type definitions, Aspirin, Headache.
    assert_eq!(result["concepts"], json!(6), "{result}");
    // 5 memberships and Aspirin treats Headache.
    assert_eq!(result["propositions"], json!(6), "{result}");
    let text = capsule(&result);

    fresh_space(&mut c, "export_domain_dst");
    run(&mut c, "DESCRIBE PRIMER"); // bootstraps the space
    run(&mut c, &text);
    let treats = find(&mut c, r#"FIND(?a) WHERE { ?a {type: "Drug"} (?a, "treats", {type: "Symptom", name: "Headache"}) (?a, "belongs_to_domain", {type: "Domain", name: "Medical"}) }"#);
    assert_eq!(treats.len(), 1);
    assert_eq!(treats[0]["attributes"], json!({"risk_level": 2}));
    assert_eq!(treats[0]["metadata"]["source"], json!("spec-example"));
}

#[test]
fn bad_targets_are_reported() {
    let mut c = connect();
    fresh_space(&mut c, "export_errors");
    run(&mut c, "DESCRIBE PRIMER");
    let unbound = kip_readonly(&mut c, r#"EXPORT ?y WHERE { ?x {type: "Domain"} }"#, json!({}));
    assert_eq!(err_code(&unbound), "KIP_3001");
    let predicate = kip_readonly(&mut c, r#"EXPORT ?p WHERE { ({type: "Domain", name: "CoreSchema"}, ?p, ?o) }"#, json!({}));
    assert_eq!(err_code(&predicate), "KIP_1001");
    // Nothing matched: an empty, still valid capsule.
    let (empty, cursor) = export(&mut c, r#"EXPORT ?x WHERE { ?x {type: "Domain", name: "Nowhere"} }"#);
    assert!(cursor.is_none());
    assert_eq!(empty["concepts"], json!(0));
    run(&mut c, &capsule(&empty));
}

/// A value nested as deep as a value may be (100 levels) exports into
/// a capsule that reads back; and a page's `propositions` counts its own
/// links, not the identity-only blocks of links outside it that a long
/// chain of links about links needs.
#[test]
fn deep_values_and_long_chains_read_back_and_count_right() {
    let mut c = connect();
    let source = fresh_space(&mut c, "export_deep");
    run(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Thing"} SET ATTRIBUTES { description: "a thing" } }
                            CONCEPT ?p { {type: "$PropositionType", name: "rel"} SET ATTRIBUTES { description: "a relation" } } }"#);
    let deep: Value = serde_json::from_str(&format!("{}1{}", "[".repeat(100), "]".repeat(100))).unwrap();
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Thing", name: "Deep"} SET ATTRIBUTES { k: :v } } }"#, json!({"v": deep})));
    // l1 = (A rel B), l2 = (l1 rel A), … l5 = (l4 rel B).
    run(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Thing", name: "A"} } CONCEPT ?b { {type: "Thing", name: "B"} }
                            PROPOSITION ?l1 { (?a, "rel", ?b) } PROPOSITION ?l2 { (?l1, "rel", ?a) } PROPOSITION ?l3 { (?l2, "rel", ?b) }
                            PROPOSITION ?l4 { (?l3, "rel", ?a) } PROPOSITION ?l5 { (?l4, "rel", ?b) } }"#);
    let (deep_page, _) = export(&mut c, r#"EXPORT ?x WHERE { ?x {type: "Thing", name: "Deep"} }"#);
    let (last_link, _) = export(&mut c, r#"EXPORT ?l WHERE { ?l (?s, "rel", {type: "Thing", name: "B"}) ?s (?x, "rel", ?y) ?x (?u, "rel", ?v) ?u (?w, "rel", ?z) ?w (?i, "rel", ?j) }"#);
    assert_eq!((last_link["concepts"].clone(), last_link["propositions"].clone()), (json!(0), json!(1)), "{last_link}");
    fresh_space(&mut c, "export_deep_copy");
    run(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Thing"} SET ATTRIBUTES { description: "a thing" } }
                            CONCEPT ?p { {type: "$PropositionType", name: "rel"} SET ATTRIBUTES { description: "a relation" } }
                            CONCEPT ?a { {type: "Thing", name: "A"} } CONCEPT ?b { {type: "Thing", name: "B"} } }"#);
    run(&mut c, &capsule(&deep_page));
    assert_eq!(find(&mut c, r#"FIND(?d.attributes.k) WHERE { ?d {type: "Thing", name: "Deep"} }"#), vec![deep]);
    // The last link's capsule names the links it rests on, which must
    // exist where it is read: in its own space it reads back unchanged.
    use_space(&mut c, &source);
    let before = dump(&mut c);
    run(&mut c, &capsule(&last_link));
    assert_eq!(dump(&mut c), before);
}
