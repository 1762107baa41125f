//! Placeholder binding: every position, literal text inside strings,
//! missing parameters and wrong kinds.

use kip_lang::ast::*;
use serde_json::{json, Map, Value};

fn params(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn bind(text: &str, p: Value) -> Result<Script, kip_lang::KipError> {
    kip_lang::bind(kip_lang::parse(text).expect("parses"), &params(p))
}

/// Binding then printing must equal parsing the literal text directly.
fn assert_binds_to(text: &str, p: Value, expected_text: &str) {
    let bound = bind(text, p).unwrap_or_else(|e| panic!("bind failed for {text}: {e}"));
    assert!(
        bound.is_bound(),
        "params left in {text}: {:?}",
        bound.params()
    );
    let expected = kip_lang::parse(expected_text).expect("expected text parses");
    assert_eq!(
        bound,
        expected,
        "\nbound:    {}\nexpected: {}",
        kip_lang::print(&bound),
        kip_lang::print(&expected)
    );
}

#[test]
fn every_placeholder_position() {
    // KQL: selector strings, id, predicate (literal, alternatives, hops),
    // endpoint id, FILTER operands, IN list and list items, LIMIT, CURSOR.
    assert_binds_to(
        r#"FIND(?a) WHERE {
            ?a {type: :t, name: :n}
            ?b {id: :id}
            ?c {type: :t2}
            ?d {name: :n2}
            ?l (id: :lid)
            (?a, :pred, ?b)
            (?a, :p1 | "x", ?b)
            (?a, :hop{1,2}, ?b)
            (?a, ("x" | :hop){0,3}, ?b)
            (:subj, "p", {type: :t, name: :n})
            FILTER(?a.attributes.x > :min && IN(?a.name, :names) && IN(?a.type, [:one, "two"]))
            FILTER(CONTAINS(?a.name, :frag))
        } LIMIT :limit CURSOR :cursor"#,
        json!({"t": "Drug", "n": "Aspirin", "id": "C:1", "t2": "Symptom", "n2": "Fever", "lid": "P:1:treats",
               "pred": "treats", "p1": "cures", "hop": "follows", "subj": "C:9", "min": 2.5,
               "names": ["a", "b"], "one": "One", "frag": "asp", "limit": 10, "cursor": "tok"}),
        r#"FIND(?a) WHERE {
            ?a {type: "Drug", name: "Aspirin"}
            ?b {id: "C:1"}
            ?c {type: "Symptom"}
            ?d {name: "Fever"}
            ?l (id: "P:1:treats")
            (?a, "treats", ?b)
            (?a, "cures" | "x", ?b)
            (?a, "follows"{1,2}, ?b)
            (?a, ("x" | "follows"){0,3}, ?b)
            ("C:9", "p", {type: "Drug", name: "Aspirin"})
            FILTER(?a.attributes.x > 2.5 && IN(?a.name, ["a", "b"]) && IN(?a.type, ["One", "two"]))
            FILTER(CONTAINS(?a.name, "asp"))
        } LIMIT 10 CURSOR "tok""#,
    );

    // KML UPSERT: identity, EXPECT VERSION, attribute values (nested in
    // arrays/objects), SET PROPOSITIONS predicate/target/metadata, block and
    // statement metadata, PROPOSITION identity.
    assert_binds_to(
        r#"UPSERT {
            CONCEPT ?c {
                {type: "Person", name: :name}
                EXPECT VERSION :v
                SET ATTRIBUTES { prefs: :prefs, tags: ["x", :tag], info: {age: :age} }
                SET PROPOSITIONS { (:rel, {type: "Domain", name: :domain}) WITH METADATA { confidence: :conf } }
            }
            WITH METADATA { source: :src }
            PROPOSITION ?p { (?c, "knows", {id: :other}) EXPECT VERSION 0 }
        } WITH METADATA { author: :author }"#,
        json!({"name": "Alice", "v": 3, "prefs": {"dark": true}, "tag": "y", "age": 30, "rel": "belongs_to_domain",
               "domain": "Core", "conf": 0.9, "src": "chat", "other": "C:2", "author": "$self"}),
        r#"UPSERT {
            CONCEPT ?c {
                {type: "Person", name: "Alice"}
                EXPECT VERSION 3
                SET ATTRIBUTES { prefs: {dark: true}, tags: ["x", "y"], info: {age: 30} }
                SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "Core"}) WITH METADATA { confidence: 0.9 } }
            }
            WITH METADATA { source: "chat" }
            PROPOSITION ?p { (?c, "knows", {id: "C:2"}) EXPECT VERSION 0 }
        } WITH METADATA { author: "$self" }"#,
    );

    // UPDATE expressions and LIMIT; DELETE keys; MERGE where.
    assert_binds_to(
        r#"UPDATE ?l SET METADATA { confidence: CLAMP(MUL(?l.metadata.confidence, :f), :lo, 1.0), at: :now }
           WHERE { ?l (?s, :p, ?o) FILTER(?l.metadata.created_at < :cut) } LIMIT :lim"#,
        json!({"f": 0.9, "lo": 0, "now": "2025-01-01", "p": "prefers", "cut": "2024", "lim": 500}),
        r#"UPDATE ?l SET METADATA { confidence: CLAMP(MUL(?l.metadata.confidence, 0.9), 0, 1.0), at: "2025-01-01" }
           WHERE { ?l (?s, "prefers", ?o) FILTER(?l.metadata.created_at < "2024") } LIMIT 500"#,
    );
    assert_binds_to(
        r#"DELETE ATTRIBUTES {:k, "b"} FROM ?x WHERE { ?x {type: "T", name: :n} }"#,
        json!({"k": "a", "n": "N"}),
        r#"DELETE ATTRIBUTES {"a", "b"} FROM ?x WHERE { ?x {type: "T", name: "N"} }"#,
    );
    assert_binds_to(
        r#"MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: :t, name: :x} ?b {type: :t, name: :y} }"#,
        json!({"t": "Skill", "x": "JS", "y": "JavaScript"}),
        r#"MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Skill", name: "JS"} ?b {type: "Skill", name: "JavaScript"} }"#,
    );

    // META.
    assert_binds_to(
        "SEARCH CONCEPT :term WITH TYPE :type MODE :mode THRESHOLD :th LIMIT :limit",
        json!({"term": "dark mode", "type": "Preference", "mode": "semantic", "th": 0.75, "limit": 5}),
        r#"SEARCH CONCEPT "dark mode" WITH TYPE "Preference" MODE "semantic" THRESHOLD 0.75 LIMIT 5"#,
    );
    assert_binds_to(
        "DESCRIBE CONCEPT TYPE :t",
        json!({"t": "Drug"}),
        r#"DESCRIBE CONCEPT TYPE "Drug""#,
    );
    assert_binds_to(
        "DESCRIBE PROPOSITION TYPE :p",
        json!({"p": "treats"}),
        r#"DESCRIBE PROPOSITION TYPE "treats""#,
    );
    assert_binds_to(
        "DESCRIBE CONCEPT TYPES LIMIT :l CURSOR :c",
        json!({"l": 2, "c": "x"}),
        r#"DESCRIBE CONCEPT TYPES LIMIT 2 CURSOR "x""#,
    );
    assert_binds_to(
        r#"EXPORT ?x WHERE { ?x {type: :t} } LIMIT :l CURSOR :c"#,
        json!({"t": "Drug", "l": 100, "c": "p2"}),
        r#"EXPORT ?x WHERE { ?x {type: "Drug"} } LIMIT 100 CURSOR "p2""#,
    );
}

#[test]
fn params_are_listed_in_order() {
    let s = kip_lang::parse(
        r#"FIND(?a) WHERE { ?a {type: :t, name: :n} FILTER(?a.x == :t) } LIMIT :limit"#,
    );
    // `?a.x` is not a valid path; use a valid one.
    assert!(s.is_err());
    let s = kip_lang::parse(
        r#"FIND(?a) WHERE { ?a {type: :t, name: :n} FILTER(?a.name == :t) } LIMIT :limit"#,
    )
    .unwrap();
    assert_eq!(s.params(), vec!["t", "n", "limit"]);
    assert!(!s.is_bound());
}

#[test]
fn placeholder_inside_string_stays_literal() {
    let s = bind(
        r#"FIND(?a) WHERE { ?a {type: "Drug", name: "Hello :name"} }"#,
        json!({"name": "X"}),
    )
    .unwrap();
    let expected =
        kip_lang::parse(r#"FIND(?a) WHERE { ?a {type: "Drug", name: "Hello :name"} }"#).unwrap();
    assert_eq!(s, expected);
    // And it is not reported as a parameter.
    assert!(kip_lang::parse(
        r#"UPSERT { CONCEPT ?c { {type: "T", name: ":x"} SET ATTRIBUTES { a: "b :y" } } }"#
    )
    .unwrap()
    .is_bound());
}

#[test]
fn values_cannot_change_structure() {
    // A hostile value is data, not text: it ends up as one string literal.
    let s = bind(
        r#"FIND(?a) WHERE { ?a {type: "Drug", name: :n} }"#,
        json!({"n": "x\"} } DELETE CONCEPT ?a DETACH WHERE { ?a {type: \"Drug\""}),
    )
    .unwrap();
    assert_eq!(s.commands.len(), 1);
    let again = kip_lang::parse(&kip_lang::print(&s)).unwrap();
    assert_eq!(again, s);
}

#[test]
fn missing_parameter_names_it() {
    let e = bind(
        r#"FIND(?a) WHERE { ?a {type: "Drug", name: :drug_name} }"#,
        json!({}),
    )
    .unwrap_err();
    assert_eq!(e.code.as_str(), "KIP_1001");
    assert!(e.message.contains(":drug_name"), "{}", e.message);
    assert!(e.hint.is_some());
    let e = bind(
        r#"UPSERT { CONCEPT ?c { {type: "T", name: "n"} SET ATTRIBUTES { a: [1, {b: :deep}] } } }"#,
        json!({"other": 1}),
    )
    .unwrap_err();
    assert!(e.message.contains(":deep"), "{}", e.message);
}

#[test]
fn wrong_kind_is_refused() {
    let cases: &[(&str, Value, &str)] = &[
        (
            r#"FIND(?a) WHERE { ?a {type: "T"} } LIMIT :limit"#,
            json!({"limit": "ten"}),
            ":limit",
        ),
        (
            r#"FIND(?a) WHERE { ?a {type: "T"} } LIMIT :limit"#,
            json!({"limit": -1}),
            ":limit",
        ),
        (
            r#"FIND(?a) WHERE { ?a {type: "T"} } LIMIT :limit"#,
            json!({"limit": 1.5}),
            ":limit",
        ),
        (r#"FIND(?a) WHERE { ?a {type: :t} }"#, json!({"t": 3}), ":t"),
        (
            r#"FIND(?a) WHERE { (?a, :p, ?b) }"#,
            json!({"p": ["x"]}),
            ":p",
        ),
        (
            r#"FIND(?a) WHERE { ?a {type: "T"} } CURSOR :c"#,
            json!({"c": null}),
            ":c",
        ),
        (
            r#"FIND(?a) WHERE { ?a {type: "T"} FILTER(IN(?a.name, :xs)) }"#,
            json!({"xs": "a"}),
            ":xs",
        ),
        ("SEARCH CONCEPT :term", json!({"term": 1}), ":term"),
        (r#"SEARCH CONCEPT "x" MODE :m"#, json!({"m": "fast"}), ":m"),
        (r#"SEARCH CONCEPT "x" THRESHOLD :t"#, json!({"t": 2}), ":t"),
        (
            r#"SEARCH CONCEPT "x" THRESHOLD :t"#,
            json!({"t": "high"}),
            ":t",
        ),
        (
            r#"UPSERT { CONCEPT ?c { {type: "T", name: "n"} EXPECT VERSION :v } }"#,
            json!({"v": "1"}),
            ":v",
        ),
    ];
    for (text, p, name) in cases {
        let e = bind(text, p.clone()).unwrap_err();
        assert_eq!(e.code.as_str(), "KIP_1001", "{text}");
        assert!(e.message.contains(name), "{text}: {}", e.message);
        let hint = e.hint.as_deref().unwrap_or_default();
        assert!(hint.contains(&format!("\"{}\"", &name[1..])), "{text}: the hint names the parameter: {hint:?}");
    }
    // Integral floats are accepted where an integer is expected.
    let s = bind(
        r#"FIND(?a) WHERE { ?a {type: "T"} } LIMIT :limit"#,
        json!({"limit": 10.0}),
    )
    .unwrap();
    let Command::Find(q) = &s.commands[0] else {
        panic!()
    };
    assert_eq!(q.limit, Some(Bindable::Lit(10)));
}

#[test]
fn extra_parameters_are_ignored() {
    let s = bind(r#"DESCRIBE PRIMER"#, json!({"unused": 1})).unwrap();
    assert_eq!(s.commands, vec![Command::Describe(Describe::Primer)]);
}
