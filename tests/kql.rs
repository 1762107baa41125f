//! KQL read path against a live server: hop walks (cycles, a 6-hop chain,
//! alternatives), higher-order patterns, OPTIONAL / NOT / UNION scoping,
//! JSON-typed FILTER semantics, aggregation, cursor pagination over 1,000
//! rows, DESCRIBE, kip_explain, and every error code the read path returns.

use kip_integration_tests::{connect, err_code, fresh_space, kip, ok};
use kip_integration_tests::brain::{finds, sample_params, Names, PROMPTS};
use postgres::Client;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A fresh, bootstrapped space with the given UPSERT statements applied.
fn space_with(setup: &[&str]) -> Client {
    let mut c = connect();
    fresh_space(&mut c, "kql");
    for cmd in setup {
        let out = kip(&mut c, cmd, json!({}));
        assert!(out.get("error").is_none(), "setup failed: {cmd}\n{out}");
    }
    c
}

fn find(c: &mut Client, cmd: &str) -> Value {
    ok(kip(c, cmd, json!({})))
}

fn names(v: &Value) -> BTreeSet<String> {
    v.as_array().unwrap_or_else(|| panic!("expected an array, got {v}")).iter().map(|x| x.as_str().unwrap_or("<null>").to_string()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

const TYPES: &str = r#"UPSERT {
  CONCEPT ?n { {type: "$ConceptType", name: "Node"} SET ATTRIBUTES { description: "test node" } }
  CONCEPT ?p1 { {type: "$PropositionType", name: "next"} SET ATTRIBUTES { description: "chain link" } }
  CONCEPT ?p2 { {type: "$PropositionType", name: "alt"} SET ATTRIBUTES { description: "other link" } }
  CONCEPT ?p3 { {type: "$PropositionType", name: "stated"} SET ATTRIBUTES { description: "assertion" } }
  CONCEPT ?p4 { {type: "$PropositionType", name: "supported_by"} SET ATTRIBUTES { description: "evidence" } }
  CONCEPT ?t2 { {type: "$ConceptType", name: "Area"} SET ATTRIBUTES { description: "a grouping" } }
  CONCEPT ?p5 { {type: "$PropositionType", name: "in_area"} SET ATTRIBUTES { description: "membership" } }
}"#;

fn chain(c: &mut Client, prefix: &str, len: usize, predicate: &str) {
    let mut cmd = String::from("UPSERT {");
    for i in 0..=len {
        cmd.push_str(&format!(" CONCEPT ?n{i} {{ {{type: \"Node\", name: \"{prefix}{i}\"}} }}"));
    }
    for i in 0..len {
        cmd.push_str(&format!(" PROPOSITION {{ (?n{i}, \"{predicate}\", ?n{}) }}", i + 1));
    }
    cmd.push('}');
    ok(kip(c, &cmd, json!({})));
}

#[test]
fn open_walks_terminate_on_cycles_without_duplicates() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "A", 2, "next"); // A0 -> A1 -> A2
    ok(kip(&mut c, r#"UPSERT { PROPOSITION { ({type: "Node", name: "A2"}, "next", {type: "Node", name: "A0"}) } }"#, json!({})));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "A0"} (?a, "next"{1,}, ?x) }"#);
    assert_eq!(r.as_array().unwrap().len(), 3, "each node once: {r}");
    assert_eq!(names(&r), set(&["A0", "A1", "A2"]));
    // Backward over the same cycle, and a bounded walk around it.
    let r = find(&mut c, r#"FIND(?x.name) WHERE { (?x, "next"{1,}, {type: "Node", name: "A1"}) }"#);
    assert_eq!(names(&r), set(&["A0", "A1", "A2"]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "A0"} (?a, "next"{2,8}, ?x) }"#);
    assert_eq!(r.as_array().unwrap().len(), 3);
    // A two-node cycle on another predicate.
    ok(kip(&mut c, r#"UPSERT { PROPOSITION { ({type: "Node", name: "A1"}, "alt", {type: "Node", name: "A2"}) } PROPOSITION { ({type: "Node", name: "A2"}, "alt", {type: "Node", name: "A1"}) } }"#, json!({})));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "A1"} (?a, "alt"{1,}, ?x) }"#);
    assert_eq!(names(&r), set(&["A1", "A2"]));
    assert_eq!(r.as_array().unwrap().len(), 2);
}

#[test]
fn six_hop_chain() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "N", 6, "next");
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "N0"} (?a, "next"{6}, ?x) }"#);
    assert_eq!(r, json!(["N6"]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "N0"} (?a, "next"{1,6}, ?x) }"#);
    assert_eq!(names(&r), set(&["N1", "N2", "N3", "N4", "N5", "N6"]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "N0"} (?a, "next"{7,9}, ?x) }"#);
    assert_eq!(r, json!([]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { (?x, "next"{1,6}, {type: "Node", name: "N6"}) }"#);
    assert_eq!(names(&r), set(&["N0", "N1", "N2", "N3", "N4", "N5"]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {type: "Node", name: "N0"} (?a, "next"{0,2}, ?x) } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["N0", "N1", "N2"]));
    // Both ends grounded: a reachability test.
    let r = find(&mut c, r#"FIND(?a.name) WHERE { ?a {type: "Node", name: "N0"} ?b {type: "Node", name: "N6"} (?a, "next"{1,}, ?b) }"#);
    assert_eq!(r, json!(["N0"]));
    // 6 hops spelled as six clauses give the same end.
    let r = find(&mut c, r#"FIND(?g.name) WHERE { ?a {type: "Node", name: "N0"} (?a, "next", ?b) (?b, "next", ?c2) (?c2, "next", ?d) (?d, "next", ?e) (?e, "next", ?f) (?f, "next", ?g) }"#);
    assert_eq!(r, json!(["N6"]));
}

#[test]
fn hops_combine_with_alternatives() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "M", 3, "next");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?s { {type: "Node", name: "S"} SET PROPOSITIONS { ("alt", {type: "Node", name: "M0"}) ("next", {type: "Node", name: "M1"}) } } }"#, json!({})));
    // Alternatives pick the first link, the walk continues from it.
    let r = find(&mut c, r#"FIND(?y.name, ?z.name) WHERE { ?s {type: "Node", name: "S"} (?s, "alt" | "next", ?y) (?y, "next"{1,2}, ?z) } ORDER BY ?y.name ASC, ?z.name ASC"#);
    assert_eq!(r, json!([["M0", "M0", "M1", "M1"], ["M1", "M2", "M2", "M3"]]));
    // A walk feeding an alternatives clause.
    let r = find(&mut c, r#"FIND(?s.name) WHERE { ?m {type: "Node", name: "M0"} (?m, "next"{0,1}, ?y) (?s, "alt" | "next", ?y) FILTER(?s.name == "S") }"#);
    assert_eq!(r, json!(["S"]));
}

#[test]
fn higher_order_propositions_match_as_subject_and_object() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?d { {type: "Node", name: "Aspirin"} }
          CONCEPT ?s { {type: "Node", name: "Headache"} }
          CONCEPT ?u { {type: "Node", name: "John"} }
          CONCEPT ?e { {type: "Node", name: "Study42"} }
          PROPOSITION ?fact { (?d, "next", ?s) }
          PROPOSITION ?st { (?u, "stated", ?fact) } WITH METADATA { confidence: 0.7 }
          PROPOSITION ?sup { (?fact, "supported_by", ?e) }
        }"#,
    ]);
    let r = find(&mut c, r#"FIND(?u.name, ?d.name) WHERE { (?u, "stated", (?d, "next", {type: "Node", name: "Headache"})) }"#);
    assert_eq!(r, json!([["John"], ["Aspirin"]]));
    let r = find(&mut c, r#"FIND(?e.name) WHERE { ((?d, "next", ?s), "supported_by", ?e) }"#);
    assert_eq!(r, json!(["Study42"]));
    let r = find(
        &mut c,
        r#"FIND(?st.metadata.confidence) WHERE { ?fact ({type: "Node", name: "Aspirin"}, "next", {type: "Node", name: "Headache"}) ?st ({type: "Node", name: "John"}, "stated", ?fact) }"#,
    );
    assert_eq!(r, json!([0.7]));
    // An endpoint variable bound to a link projects the link.
    let r = find(&mut c, r#"FIND(?x) WHERE { (?u, "stated", ?x) }"#);
    assert_eq!(r[0]["_type"], json!("PropositionLink"));
    assert_eq!(r[0]["predicate"], json!("next"));
    // Predicate variables unify and can be filtered.
    let r = find(&mut c, r#"FIND(?p, ?o.name) WHERE { ?a {type: "Node", name: "Aspirin"} (?a, ?p, ?o) FILTER(?p != "alt") }"#);
    assert_eq!(r, json!([["next"], ["Headache"]]));
    let r = find(&mut c, r#"FIND(?o) WHERE { ?x {type: "Node", name: "John"} (?x, ?p, ?o) (?f, ?p, {type: "Node", name: "Headache"}) }"#);
    assert_eq!(r, json!([]));
    // A link by id, and a bare id endpoint.
    let link = find(&mut c, r#"FIND(?l.id) WHERE { ?l ({type: "Node", name: "John"}, "stated", ?f) }"#);
    let id = link[0].as_str().unwrap().to_string();
    let r = ok(kip(&mut c, r#"FIND(?l.predicate) WHERE { ?l (id: :id) }"#, json!({"id": id})));
    assert_eq!(r, json!(["stated"]));
    // FILTER on an id accepts the forms a clause accepts: a link's id
    // without its predicate too, for a link variable or an endpoint.
    let fact = find(&mut c, r#"FIND(?f.id) WHERE { ?f ({type: "Node", name: "Aspirin"}, "next", ?s) }"#)[0].as_str().unwrap().to_string();
    let short = fact.rsplit_once(':').unwrap().0.to_string();
    for form in [&fact, &short] {
        let r = ok(kip(&mut c, r#"FIND(?o.id) WHERE { (?u, "stated", ?o) FILTER(?o.id == :id) }"#, json!({"id": form})));
        assert_eq!(r, json!([fact]), "{form}");
        let r = ok(kip(&mut c, r#"FIND(?f.predicate) WHERE { ?f (?a, "next", ?b) FILTER(?f.id == :id) }"#, json!({"id": form})));
        assert_eq!(r, json!(["next"]), "{form}");
        let r = ok(kip(&mut c, r#"FIND(?f.predicate) WHERE { ?f (?a, "next", ?b) FILTER(?f.id != :id) }"#, json!({"id": form})));
        assert_eq!(r, json!([]), "{form}");
    }
    let r = ok(kip(&mut c, r#"FIND(?f.predicate) WHERE { ?f (?a, "next", ?b) FILTER(?f.id == :id) }"#, json!({"id": format!("{short}:alt")})));
    assert_eq!(r, json!([]), "a full id with another predicate names no link");
    // IN compares each item as == does, and a link's endpoint (`.object`)
    // names the same element with the same forms as its id.
    for form in [&fact, &short] {
        let r = ok(kip(&mut c, r#"FIND(?f.predicate) WHERE { ?f (?a, "next", ?b) FILTER(IN(?f.id, [:id, "C:1"])) }"#, json!({"id": form})));
        assert_eq!(r, json!(["next"]), "IN {form}");
        let r = ok(kip(&mut c, r#"FIND(?m.predicate) WHERE { ?m (?u, ?p, ?o) FILTER(?m.object == :id) }"#, json!({"id": form})));
        assert_eq!(r, json!(["stated"]), ".object == {form}");
        let r = ok(kip(&mut c, r#"FIND(?m.predicate) WHERE { ?m (?u, ?p, ?o) FILTER(IN(?m.subject, [:id])) }"#, json!({"id": form})));
        assert_eq!(r, json!(["supported_by"]), "IN .subject {form}");
        // `!=` holds for every other endpoint, a concept's included.
        let r = ok(kip(&mut c, r#"FIND(?m.predicate) WHERE { ?m (?u, ?p, ?o) FILTER(?m.subject != :id && ?p != "belongs_to_domain") } ORDER BY ?m.predicate"#, json!({"id": form})));
        assert_eq!(r, json!(["next", "stated"]), ".subject != {form}");
    }
    // A link's fields of an endpoint that may be either kind, read alone
    // (its concept row had been left out of the statement): null for a
    // concept, the link's for a link.
    let r = find(&mut c, r#"FIND(?o.predicate) WHERE { (?u, "stated", ?o) }"#);
    assert_eq!(r, json!(["next"]));
    let r = find(&mut c, r#"FIND(?o.predicate) WHERE { ({type: "Node", name: "Aspirin"}, "next", ?o) }"#);
    assert_eq!(r, json!([null]));
    let r = find(&mut c, r#"FIND(?o.subject) WHERE { (?u, "stated", ?o) } ORDER BY ?o.object"#);
    assert_eq!(r, json!([format!("C:{}", concept_id_of(&mut c, "Aspirin"))]));
    let r = find(&mut c, r#"FIND(COUNT(DISTINCT ?o.subject)) WHERE { (?u, ?p, ?o) }"#);
    assert_eq!(r, json!(1));
}

fn concept_id_of(c: &mut Client, name: &str) -> i64 {
    c.query_one("SELECT id FROM kip.concepts WHERE space = current_setting('kip.space') AND name = $1", &[&name]).unwrap().get(0)
}

/// A UNION inside OPTIONAL or NOT may bind a variable of the enclosing
/// block: the branch binds it independently (RC10 §3.4.7.3), and its rows
/// join the enclosing solution only where they agree with it. (The
/// branch's value replaced the enclosing one: the FIND answered another
/// element, and a DELETE of that pattern deleted another concept.)
#[test]
fn a_union_nested_in_optional_or_not_keeps_the_enclosing_binding() {
    let setup = [
        TYPES,
        r#"UPSERT {
          CONCEPT ?a { {type: "Node", name: "a"} }
          CONCEPT ?b { {type: "Node", name: "b"} }
          CONCEPT ?c { {type: "Node", name: "c"} }
          PROPOSITION { (?a, "next", ?b) }
          PROPOSITION { (?b, "alt", ?c) }
        }"#,
    ];
    let mut c = space_with(&setup);
    let optional = |x: &str| format!(r#"FIND(?x.name, ?y.name) WHERE {{ ?x {{name: "{x}"}} OPTIONAL {{ (?x, "alt", ?y) UNION {{ (?x, "next", ?y) }} }} }}"#);
    // The branch matches for ?x = a only; the block before it for b only.
    assert_eq!(find(&mut c, &optional("a")), json!([["a"], ["b"]]));
    assert_eq!(find(&mut c, &optional("b")), json!([["b"], ["c"]]));
    assert_eq!(find(&mut c, &optional("c")), json!([["c"], [null]]));
    // A branch binding only the enclosing variable, to another element.
    let r = find(&mut c, r#"FIND(?x.name, ?y.name) WHERE { ?x {name: "c"} OPTIONAL { (?x, "alt", ?y) UNION { ?x {name: "a"} } } }"#);
    assert_eq!(r, json!([["c"], [null]]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} NOT { (?x, "alt", ?y) UNION { (?x, "next", ?y) } } }"#);
    assert_eq!(r, json!(["c"]));
    // A predicate variable of the enclosing block against a branch's node.
    let r = kip(&mut c, r#"FIND(?x.name) WHERE { (?x, ?p, ?y) OPTIONAL { ?q {name: "a"} UNION { ?p {name: "a"} } } }"#, json!({}));
    assert_eq!(err_code(&r), "KIP_1001", "{r}");
    // The write path compiles the same pattern.
    let out = ok(kip(&mut c, r#"DELETE CONCEPT ?x DETACH WHERE { ?x {name: "c"} OPTIONAL { (?x, "alt", ?y) UNION { ?x {name: "a"} } } }"#, json!({})));
    assert_eq!(out["deleted_concepts"], json!(1), "{out}");
    let left = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} } ORDER BY ?x.name ASC"#);
    assert_eq!(left, json!(["a", "b"]));
}

#[test]
fn optional_not_union_scoping() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?a { {type: "Node", name: "a"} }
          CONCEPT ?b { {type: "Node", name: "b"} }
          CONCEPT ?c { {type: "Node", name: "c"} }
          PROPOSITION { (?a, "next", ?b) }
          PROPOSITION { (?b, "alt", ?c) }
        }"#,
    ]);
    // NOT: inner variables are private.
    let r = kip(&mut c, r#"FIND(?y) WHERE { ?x {type: "Node"} NOT { (?x, "next", ?y) } }"#, json!({}));
    assert_eq!(err_code(&r), "KIP_3001");
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} NOT { (?x, "next", ?y) } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["b", "c"]));
    // NOT sees outer bindings, including ones bound after it in the block.
    let r = find(&mut c, r#"FIND(?x.name) WHERE { NOT { (?x, "alt", ?z) } ?x {type: "Node"} } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["a", "c"]));
    // OPTIONAL: inner variables visible, null on a miss, IS_NULL true.
    let r = find(&mut c, r#"FIND(?x.name, ?y.name) WHERE { ?x {type: "Node"} OPTIONAL { (?x, "next", ?y) } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!([["a", "b", "c"], ["b", null, null]]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} OPTIONAL { (?x, "next", ?y) } FILTER(IS_NULL(?y)) } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["b", "c"]));
    // Nested: NOT inside OPTIONAL, OPTIONAL inside UNION.
    let r = find(&mut c, r#"FIND(?x.name, ?y.name) WHERE { ?x {type: "Node"} OPTIONAL { (?x, ?p, ?y) NOT { (?y, "alt", ?w) } } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!([["a", "b", "c"], [null, "c", null]]));
    let r = find(&mut c, r#"FIND(?x.name, ?y.name) WHERE { ?x {name: "a"} UNION { ?x {name: "b"} OPTIONAL { (?x, "alt", ?y) } } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!([["a", "b"], [null, "c"]]));
    // UNION: an independent scope — the outer ?x does not constrain the branch.
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {name: "a"} UNION { ?x {name: "c"} } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["a", "c"]));
    let r = find(&mut c, r#"FIND(?x.name, ?z.name) WHERE { ?x {name: "a"} UNION { ?z {name: "c"} } }"#);
    assert_eq!(r, json!([["a", null], [null, "c"]]));
    // Duplicates across branches collapse.
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {name: "a"} UNION { ?x {type: "Node"} FILTER(?x.name == "a") } }"#);
    assert_eq!(r, json!(["a"]));
    // The block before a UNION is its own operand: a FILTER or NOT written
    // there narrows that block, not the branch's rows (RC10 §3.4.7.3)...
    let r = find(&mut c, r#"FIND(?x.name, ?z.name) WHERE { ?x {type: "Node"} FILTER(?x.name == "a") UNION { ?z {name: "c"} } }"#);
    assert_eq!(r, json!([["a", null], [null, "c"]]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} NOT { (?x, "next", ?y) } UNION { ?x {name: "a"} } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["a", "b", "c"]));
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(?x.name != "b") UNION { ?x {name: "b"} } } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["a", "b", "c"]));
    // ...while one written after it applies to every branch's rows.
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} UNION { ?x {name: "b"} } FILTER(?x.name != "b") } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!(["a", "c"]));
    // Nor does it say anything of the branch's values: ordering by the path
    // it compares still ranks the branch's strings among themselves.
    let mut typed = space_with(&[
        TYPES,
        r#"UPSERT { CONCEPT ?n { {type: "Node", name: "num"} SET ATTRIBUTES { score: 5 } }
                    CONCEPT ?z { {type: "Node", name: "str_zz"} SET ATTRIBUTES { score: "zz" } }
                    CONCEPT ?a { {type: "Node", name: "str_aa"} SET ATTRIBUTES { score: "aa" } } }"#,
    ]);
    let r = find(
        &mut typed,
        r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(?x.attributes.score > 1) UNION { ?x {type: "Node"} FILTER(?x.name != "num") } } ORDER BY ?x.attributes.score ASC"#,
    );
    assert_eq!(r, json!(["num", "str_aa", "str_zz"]));
    // A FILTER before a UNION over a variable bound only after it still
    // applies to the whole block.
    let r = find(&mut c, r#"FIND(?x.name, ?z.name) WHERE { ?x {name: "a"} FILTER(?z.name == "b") UNION { ?x {name: "c"} } ?z {name: "b"} } ORDER BY ?x.name ASC"#);
    assert_eq!(r, json!([["a", "c"], ["b", "b"]]));
}

#[test]
fn filter_compares_json_types_strictly() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?a { {type: "Node", name: "num"} SET ATTRIBUTES { x: 5, t: "2025-03-01T00:00:00Z", tag: ["red", "blue"] } }
          CONCEPT ?b { {type: "Node", name: "str"} SET ATTRIBUTES { x: "5", t: "2024-12-31T23:59:59Z", q: "é\"z" } }
          CONCEPT ?c { {type: "Node", name: "bool"} SET ATTRIBUTES { x: true } }
          CONCEPT ?d { {type: "Node", name: "null"} SET ATTRIBUTES { x: null } }
          CONCEPT ?e { {type: "Node", name: "none"} }
          CONCEPT ?f { {type: "Node", name: "big"} SET ATTRIBUTES { x: 10.5 } }
        }"#,
    ]);
    let q = |c: &mut Client, f: &str| names(&find(c, &format!(r#"FIND(?n.name) WHERE {{ ?n {{type: "Node"}} FILTER({f}) }}"#)));
    assert_eq!(q(&mut c, "?n.attributes.x > 3"), set(&["num", "big"]));
    assert_eq!(q(&mut c, "?n.attributes.x < 10"), set(&["num"]));
    assert_eq!(q(&mut c, r#"?n.attributes.x == "5""#), set(&["str"]));
    assert_eq!(q(&mut c, "?n.attributes.x == 5"), set(&["num"]));
    assert_eq!(q(&mut c, "?n.attributes.x == 5.0"), set(&["num"]));
    assert_eq!(q(&mut c, "!(?n.attributes.x == 5)"), set(&["str", "bool", "null", "none", "big"]));
    // An array holding the value is not equal to it.
    assert_eq!(q(&mut c, r#"?n.attributes.tag == "red""#), set(&[]));
    assert_eq!(q(&mut c, r#"IN(?n.attributes.tag, ["red", "blue"])"#), set(&[]));
    assert_eq!(q(&mut c, r#"!IN(?n.attributes.x, [5, "5"])"#), set(&["bool", "null", "none", "big"]));
    assert_eq!(q(&mut c, r#"?n.attributes.x != "5""#), set(&[]));
    assert_eq!(q(&mut c, "?n.attributes.x == true"), set(&["bool"]));
    assert_eq!(q(&mut c, "?n.attributes.x > false"), set(&["bool"]));
    assert_eq!(q(&mut c, "?n.attributes.x == null"), set(&["null", "none"]));
    assert_eq!(q(&mut c, "IS_NULL(?n.attributes.x)"), set(&["null", "none"]));
    assert_eq!(q(&mut c, "!(?n.attributes.x > 3)"), set(&["str", "bool", "null", "none"]));
    assert_eq!(q(&mut c, r#"?n.attributes.t > "2025-01-01T00:00:00Z""#), set(&["num"]));
    assert_eq!(q(&mut c, r#"?n.name >= "o""#), set(&["str"]));
    assert_eq!(q(&mut c, r#"?n.name < 5"#), set(&[]));
    assert_eq!(q(&mut c, r#"IN(?n.attributes.x, [5, "x", true])"#), set(&["num", "bool"]));
    // null in the list matches what `== null` matches: absent or null.
    assert_eq!(q(&mut c, r#"IN(?n.attributes.x, [null, 5])"#), set(&["num", "null", "none"]));
    assert_eq!(q(&mut c, r#"IN(?n.name, ["str", null])"#), set(&["str"]));
    assert_eq!(q(&mut c, r#"CONTAINS(?n.attributes.tag, "red")"#), set(&["num"]));
    // A string value is read as its unescaped text; numbers compare by
    // value whatever their literal's form.
    assert_eq!(q(&mut c, r#"CONTAINS(?n.attributes.t, "2025-03")"#), set(&["num"]));
    assert_eq!(q(&mut c, r#"?n.attributes.q >= "é\"" && ?n.attributes.q < "é#""#), set(&["str"]));
    assert_eq!(q(&mut c, r#"STARTS_WITH(?n.attributes.q, "é\"")"#), set(&["str"]));
    assert_eq!(q(&mut c, "?n.attributes.x > 10.25"), set(&["big"]));
    assert_eq!(q(&mut c, "?n.attributes.x >= 1e1"), set(&["big"]));
    assert_eq!(q(&mut c, "?n.attributes.x > -0.5 && ?n.attributes.x <= 5.0"), set(&["num"]));
    assert_eq!(q(&mut c, r#"STARTS_WITH(?n.name, "n") && ENDS_WITH(?n.name, "e")"#), set(&["none"]));
    assert_eq!(q(&mut c, r#"REGEX(?n.name, "^(num|str)$")"#), set(&["num", "str"]));
    // Cross-variable comparison: same types only.
    let r = find(&mut c, r#"FIND(?a.name, ?b.name) WHERE { ?a {type: "Node"} ?b {type: "Node"} FILTER(?a.attributes.x < ?b.attributes.x) }"#);
    assert_eq!(r, json!([["num"], ["big"]]));
    // A missing key is null on either side: two nulls are equal (an absent
    // and an explicit one alike), a null beside another value is not.
    assert_eq!(q(&mut c, "?n.attributes.x == ?n.attributes.nope"), set(&["null", "none"]));
    assert_eq!(q(&mut c, "?n.attributes.nope == ?n.attributes.nope"), set(&["num", "str", "bool", "null", "none", "big"]));
    assert_eq!(q(&mut c, "?n.attributes.x != ?n.attributes.nope"), set(&[]));
    assert_eq!(q(&mut c, "?n.attributes.x >= ?n.attributes.nope"), set(&["null", "none"]));
    // ORDER BY on a path of mixed types: numbers, then strings, then
    // booleans, then nulls; a FILTER comparing the path with a literal
    // leaves values of that type only, ordered by that type's key.
    let ordered = |c: &mut Client, f: &str, dir: &str| {
        find(c, &format!(r#"FIND(?n.name) WHERE {{ ?n {{type: "Node"}} FILTER({f}) }} ORDER BY ?n.attributes.x {dir}, ?n.name ASC"#))
    };
    assert_eq!(ordered(&mut c, "true", "ASC"), json!(["num", "big", "str", "bool", "none", "null"]));
    assert_eq!(ordered(&mut c, "true", "DESC"), json!(["big", "num", "str", "bool", "none", "null"]));
    assert_eq!(ordered(&mut c, "?n.attributes.x >= 0", "DESC"), json!(["big", "num"]));
    assert_eq!(ordered(&mut c, "?n.attributes.x != 7 && ?n.name != \"x\"", "ASC"), json!(["num", "big"]));
    assert_eq!(ordered(&mut c, r#"?n.attributes.x >= "0""#, "DESC"), json!(["str"]));
    assert_eq!(ordered(&mut c, "?n.attributes.x == true", "ASC"), json!(["bool"]));
    assert_eq!(ordered(&mut c, r#"?n.attributes.x > 3 || ?n.name == "str""#, "DESC"), json!(["big", "num", "str"]));
    // Whole objects are not comparable.
    let r = kip(&mut c, r#"FIND(?n.name) WHERE { ?n {type: "Node"} FILTER(?n.attributes == 1) }"#, json!({}));
    assert_eq!(err_code(&r), "KIP_1001");
}

/// One group per distinct value: an attribute stored as JSON null and one
/// that is absent are the same null group (they were two, each showing the
/// aggregation of both), and a name shared by concepts of two types bound
/// by the two sides of a UNION is one group (grouping by the element, as a
/// type fixed for every solution allows, split it).
#[test]
fn groups_are_distinct_values() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?a { {type: "Node", name: "a1"} SET ATTRIBUTES { s: null } }
          CONCEPT ?b { {type: "Node", name: "a2"} }
          CONCEPT ?n { {type: "Area", name: "a2"} }
          CONCEPT ?c { {type: "Node", name: "c"} SET PROPOSITIONS { ("next", ?a) ("next", ?b) ("in_area", ?n) } }
          CONCEPT ?d { {type: "Node", name: "d"} SET PROPOSITIONS { ("next", ?b) } }
        }"#,
    ]);
    let r = find(&mut c, r#"FIND(?x.attributes.s, COUNT(?y)) WHERE { ?x {type: "Node"} (?y, "next", ?x) }"#);
    assert_eq!(r, json!([[null], [2]]));
    let r = find(&mut c, r#"FIND(?x.attributes.s, ?x.attributes.t, COUNT(?y)) WHERE { ?x {type: "Node"} (?y, "next", ?x) }"#);
    assert_eq!(r, json!([[[null, null]], [2]]));
    let r = find(
        &mut c,
        r#"FIND(?x.name, COUNT(?y)) WHERE { ?x {type: "Node"} (?y, "next", ?x) UNION { ?x {type: "Area"} (?y, "in_area", ?x) } } ORDER BY ?x.name"#,
    );
    assert_eq!(r, json!([["a1", "a2"], [1, 2]]));
}

/// Groups keyed by an element's id (DESIGN §7 "Keyed groups") answer as
/// groups of values: an empty group counts 0, an unbound group variable is
/// one group of its own (null, last in first-appearance order), a member
/// reached twice is counted once, and several aggregations each read
/// their own inputs.
#[test]
fn groups_keyed_by_an_element_answer_as_groups_of_values() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?d1 { {type: "Area", name: "D1"} }
          CONCEPT ?d2 { {type: "Area", name: "D2"} }
          CONCEPT ?d3 { {type: "Area", name: "D3"} }
          CONCEPT ?a { {type: "Node", name: "a"} SET ATTRIBUTES { v: 1 } SET PROPOSITIONS { ("in_area", ?d1) ("next", ?d1) } }
          CONCEPT ?b { {type: "Node", name: "b"} SET ATTRIBUTES { v: 3 } SET PROPOSITIONS { ("in_area", ?d1) } }
          CONCEPT ?x { {type: "Node", name: "x"} SET ATTRIBUTES { v: 5 } SET PROPOSITIONS { ("in_area", ?d2) } }
          CONCEPT ?y { {type: "Node", name: "y"} SET ATTRIBUTES { v: 7 } }
        }"#,
    ]);
    let r = find(&mut c, r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Area"} OPTIONAL { (?n, "in_area", ?d) } } ORDER BY ?d.name"#);
    assert_eq!(r, json!([["D1", "D2", "D3"], [2, 1, 0]]));
    let r = find(&mut c, r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Area"} OPTIONAL { (?n, "in_area", ?d) } } ORDER BY COUNT(?n) DESC"#);
    assert_eq!(r, json!([["D1", "D2", "D3"], [2, 1, 0]]));
    // Reached by two predicates, `a` is one member of D1.
    let r = find(&mut c, r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Area"} (?n, "in_area" | "next", ?d) } ORDER BY ?d.name"#);
    assert_eq!(r, json!([["D1", "D2"], [2, 1]]));
    // Two aggregations over the same groups.
    let r = find(
        &mut c,
        r#"FIND(?d.name, COUNT(?n), SUM(?n.attributes.v)) WHERE { ?d {type: "Area"} (?n, "in_area", ?d) } ORDER BY ?d.name"#,
    );
    assert_eq!(r, json!([["D1", "D2"], [2, 1], [4, 5]]));
    // The group variable unbound for `y`: one null group.
    let r = find(&mut c, r#"FIND(?d.id, COUNT(?n)) WHERE { ?n {type: "Node"} OPTIONAL { (?n, "in_area", ?d) } }"#);
    let ids = r[0].as_array().unwrap();
    assert_eq!(ids.len(), 3, "{r}");
    assert_eq!(ids[2], json!(null), "{r}");
    assert_eq!(r[1], json!([2, 1, 1]), "{r}");
    // By the whole element.
    let r = find(&mut c, r#"FIND(?d, COUNT(?n)) WHERE { ?d {type: "Area", name: "D1"} (?n, "in_area", ?d) }"#);
    assert_eq!(r[0][0]["name"], json!("D1"), "{r}");
    assert_eq!(r[1], json!([2]), "{r}");
}

#[test]
fn aggregation_groups_and_counts_optional_misses_as_zero() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?d1 { {type: "Area", name: "D1"} }
          CONCEPT ?d2 { {type: "Area", name: "D2"} }
          CONCEPT ?a { {type: "Node", name: "a"} SET ATTRIBUTES { v: 1 } SET PROPOSITIONS { ("in_area", ?d1) } }
          CONCEPT ?b { {type: "Node", name: "b"} SET ATTRIBUTES { v: 3 } SET PROPOSITIONS { ("in_area", ?d1) } }
        }"#,
    ]);
    let r = find(&mut c, r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Area", name: "D1"} OPTIONAL { (?n, "in_area", ?d) } }"#);
    assert_eq!(r, json!([["D1"], [2]]));
    let r = find(&mut c, r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Area"} OPTIONAL { (?n, "in_area", ?d) } } ORDER BY COUNT(?n) ASC"#);
    assert_eq!(r, json!([["D2", "D1"], [0, 2]]));
    let r = find(&mut c, r#"FIND(SUM(?n.attributes.v), AVG(?n.attributes.v), MIN(?n.attributes.v), MAX(?n.attributes.v), COUNT(DISTINCT ?n.attributes.v)) WHERE { ?n {type: "Node"} }"#);
    assert_eq!(r, json!([4, 2.0, 1, 3, 2]));
    // Grouped by a predicate variable (RC10 §6.2.2's associative recall):
    // one count per predicate, not one count over all links.
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?p { {type: "$PropositionType", name: "near"} SET ATTRIBUTES { description: "Close to" } }
                          CONCEPT ?a { {type: "Node", name: "a"} SET PROPOSITIONS { ("near", {type: "Area", name: "D2"}) ("near", {type: "Node", name: "b"}) } } }"#, json!({})));
    let r = find(&mut c, r#"FIND(?p, COUNT(?o)) WHERE { ?s {type: "Node", name: "a"} (?s, ?p, ?o) } ORDER BY ?p"#);
    assert_eq!(r, json!([["in_area", "near"], [1, 2]]));
    let r = find(&mut c, r#"FIND(COUNT(?n)) WHERE { ?n {type: "Node"} FILTER(?n.name == "zzz") }"#);
    assert_eq!(r, json!(0));
    // A named concept that does not exist is not an empty match but KIP_3002.
    assert_eq!(err_code(&kip(&mut c, r#"FIND(COUNT(?n)) WHERE { ?n {type: "Node", name: "zzz"} }"#, json!({}))), "KIP_3002");
    assert_eq!(err_code(&kip(&mut c, r#"FIND(SUM(?n.attributes.v), MAX(?n.name)) WHERE { ?n {type: "Node", name: "zzz"} }"#, json!({}))), "KIP_3002");
    assert_eq!(err_code(&kip(&mut c, r#"FIND(COUNT(?x)) WHERE { ?n {id: "C:999999999"} (?x, "in_area", ?n) }"#, json!({}))), "KIP_3002");
    // The named concept exists and nothing links to it: a count of zero.
    let r = find(&mut c, r#"FIND(COUNT(?x), MAX(?x.name)) WHERE { ?n {type: "Node", name: "a"} (?x, "in_area", ?n) }"#);
    assert_eq!(r, json!([0, null]));
}

#[test]
fn cursor_pagination_returns_every_row_once() {
    let mut c = space_with(&[TYPES]);
    let mut cmd = String::from("UPSERT {");
    for i in 0..1000 {
        cmd.push_str(&format!(" CONCEPT ?n{i} {{ {{type: \"Node\", name: \"row{i:04}\"}} SET ATTRIBUTES {{ bucket: {} }} }}", i % 7));
    }
    cmd.push('}');
    ok(kip(&mut c, &cmd, json!({})));
    for query in [
        r#"FIND(?n.name) WHERE { ?n {type: "Node"} } LIMIT :limit"#,
        r#"FIND(?n.name, ?n.attributes.bucket) WHERE { ?n {type: "Node"} } ORDER BY ?n.attributes.bucket DESC LIMIT :limit"#,
        // Ordered, with a key that may be null: pages by offset (its later
        // pages are known to have no ranking). One column per variable.
        r#"FIND(?n.name, ?m.name) WHERE { ?n {type: "Node"} OPTIONAL { (?n, "next", ?m) } } ORDER BY ?n.name DESC LIMIT :limit"#,
    ] {
        let columnar = query.contains("?m.name");
        let mut seen = BTreeSet::new();
        let mut total = 0;
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let (cmd, params) = match &cursor {
                Some(t) => (format!("{query} CURSOR :cursor"), json!({"limit": 90, "cursor": t})),
                None => (query.to_string(), json!({"limit": 90})),
            };
            let out = kip(&mut c, &cmd, params);
            let page = ok(out.clone());
            let rows = if columnar { page[0].as_array().unwrap() } else { page.as_array().unwrap() };
            for row in rows {
                let name = if row.is_array() { row[0].clone() } else { row.clone() };
                seen.insert(name.as_str().unwrap().to_string());
                total += 1;
            }
            pages += 1;
            match out.get("next_cursor").and_then(Value::as_str) {
                Some(t) => cursor = Some(t.to_string()),
                None => break,
            }
        }
        assert_eq!((total, seen.len(), pages), (1000, 1000, 12), "{query}");
    }
    // Tokens are bound to their query and tamper-evident.
    let out = kip(&mut c, r#"FIND(?n.name) WHERE { ?n {type: "Node"} } LIMIT 10"#, json!({}));
    let token = out["next_cursor"].as_str().unwrap().to_string();
    let other = kip(&mut c, r#"FIND(?n.type) WHERE { ?n {type: "Node"} } LIMIT 10 CURSOR :c"#, json!({"c": token}));
    assert_eq!(err_code(&other), "KIP_1001");
    let mut bad = token.clone();
    bad.replace_range(2..3, if &token[2..3] == "A" { "B" } else { "A" });
    let tampered = kip(&mut c, r#"FIND(?n.name) WHERE { ?n {type: "Node"} } LIMIT 10 CURSOR :c"#, json!({"c": bad}));
    assert_eq!(err_code(&tampered), "KIP_1001");
    let same = kip(&mut c, r#"FIND(?n.name) WHERE { ?n {type: "Node"} } LIMIT 10 CURSOR :c"#, json!({"c": token}));
    assert_eq!(ok(same).as_array().unwrap().len(), 10);
    // No next_cursor when the page is the last one.
    let out = kip(&mut c, r#"FIND(?n.name) WHERE { ?n {type: "Node"} FILTER(?n.name < "row0005") } LIMIT 5"#, json!({}));
    assert!(out.get("next_cursor").is_none(), "{out}");
}

/// A FIND with ORDER BY pages from a ranking its backend keeps after the
/// first CURSOR page: the walk lists every solution once in order, rows
/// deleted from pages already read make it skip nothing, a solution that
/// stops matching is left out, values are current, and a token taken to
/// another connection resumes at its offset.
#[test]
fn an_ordered_walk_pages_from_its_ranking() {
    let mut c = connect();
    let space = fresh_space(&mut c, "kql_walk");
    ok(kip(&mut c, TYPES, json!({})));
    let mut cmd = String::from("UPSERT {");
    for i in 0..12 {
        // Ranks descend as names ascend, with ties broken by id.
        cmd.push_str(&format!(" CONCEPT ?n{i} {{ {{type: \"Node\", name: \"w{i:02}\"}} SET ATTRIBUTES {{ rank: {} }} }}", 100 - i / 2));
    }
    cmd.push('}');
    ok(kip(&mut c, &cmd, json!({})));
    let query = r#"FIND(?n.name, ?n.attributes.rank) WHERE { ?n {type: "Node"} FILTER(?n.attributes.rank > 0) } ORDER BY ?n.attributes.rank DESC LIMIT 3"#;
    let all = ok(kip(&mut c, &query.replace("LIMIT 3", "LIMIT 100"), json!({})));
    let names = |page: &Value| page.as_array().unwrap().iter().map(|row| row[0].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let expected = names(&all);
    assert_eq!(expected.len(), 12);
    let next = |c: &mut Client, token: &Value| kip(c, &format!("{query} CURSOR :c"), json!({"c": token}));
    // Unchanged data: the walk is the one big page.
    let mut walked = Vec::new();
    let mut out = kip(&mut c, query, json!({}));
    loop {
        walked.extend(names(&ok(out.clone())));
        match out.get("next_cursor") {
            Some(token) => out = next(&mut c, &token.clone()),
            None => break,
        }
    }
    assert_eq!(walked, expected);
    // Pages 1 and 2, then: w00 (page 1) and w07 (page 3) deleted, w06
    // (page 3) no longer matching, w08's rank (page 3) changed.
    let first = kip(&mut c, query, json!({}));
    let second = next(&mut c, &first["next_cursor"]);
    assert_eq!(names(&ok(second.clone())), expected[3..6].to_vec());
    for cmd in [
        r#"DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Node"} FILTER(IN(?n.name, ["w00", "w07"])) }"#,
        r#"UPDATE ?n SET ATTRIBUTES { rank: 0 } WHERE { ?n {type: "Node", name: "w06"} }"#,
        r#"UPDATE ?n SET ATTRIBUTES { rank: 5 } WHERE { ?n {type: "Node", name: "w08"} }"#,
    ] {
        ok(kip(&mut c, cmd, json!({})));
    }
    let third = ok(next(&mut c, &second["next_cursor"]));
    assert_eq!(third, json!([["w08", 5]]), "page 3 keeps its ranked rows that still match, with current values");
    // The same token on another connection resumes at its offset (6), over
    // the memory as it now is: w01…w05, w09 (96), then w10, w11 (95), w08 (5).
    let mut other = connect();
    other.batch_execute(&format!("SET kip.space = '{space}'")).unwrap();
    let elsewhere = ok(next(&mut other, &second["next_cursor"]));
    assert_eq!(names(&elsewhere), vec!["w10".to_string(), "w11".to_string(), "w08".to_string()]);
    // Two key variables a solution, ties in the order broken by both ids.
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Node", name: "w01"} SET PROPOSITIONS { ("next", {type: "Node", name: "w02"}) ("next", {type: "Node", name: "w03"}) ("alt", {type: "Node", name: "w04"}) } } CONCEPT ?b { {type: "Node", name: "w05"} SET PROPOSITIONS { ("next", {type: "Node", name: "w02"}) ("alt", {type: "Node", name: "w03"}) } } }"#, json!({})));
    let pairs = r#"FIND(?a.name, ?b.name) WHERE { (?a, ?p, ?b) ?a {type: "Node"} } ORDER BY ?b.name DESC LIMIT 2"#;
    let whole = ok(kip(&mut c, &pairs.replace("LIMIT 2", "LIMIT 100"), json!({})));
    // One column per FIND expression.
    assert_eq!(whole[0].as_array().map(Vec::len), Some(5), "{whole}");
    let (mut subjects, mut objects) = (Vec::new(), Vec::new());
    let mut out = kip(&mut c, pairs, json!({}));
    loop {
        let page = ok(out.clone());
        subjects.extend(page[0].as_array().unwrap().clone());
        objects.extend(page[1].as_array().unwrap().clone());
        match out.get("next_cursor") {
            Some(token) => out = kip(&mut c, &format!("{pairs} CURSOR :c"), json!({"c": token})),
            None => break,
        }
    }
    assert_eq!(json!([subjects, objects]), whole);
}

#[test]
fn a_streaming_cursor_resumes_after_the_last_row_even_when_earlier_rows_go() {
    // FIND over one type in its natural order continues after the previous
    // page's last element (keyset), so deleting rows of pages already read
    // neither skips nor repeats the rows still to come (an offset would
    // skip as many rows as were deleted).
    let mut c = space_with(&[TYPES]);
    let mut cmd = String::from("UPSERT {");
    for i in 0..30 {
        cmd.push_str(&format!(" CONCEPT ?n{i} {{ {{type: \"Node\", name: \"row{i:02}\"}} }}"));
    }
    cmd.push('}');
    ok(kip(&mut c, &cmd, json!({})));
    let query = r#"FIND(?n.name) WHERE { ?n {type: "Node"} } LIMIT 10"#;
    let first = kip(&mut c, query, json!({}));
    let expected: Vec<String> = (0..10).map(|i| format!("row{i:02}")).collect();
    assert_eq!(ok(first.clone()), json!(expected));
    let token = first["next_cursor"].as_str().expect("next_cursor").to_string();
    ok(kip(&mut c, r#"DELETE CONCEPT ?n DETACH WHERE { ?n {type: "Node"} FILTER(?n.name < "row05") }"#, json!({})));
    let second = kip(&mut c, &format!("{query} CURSOR :c"), json!({"c": token}));
    let expected: Vec<String> = (10..20).map(|i| format!("row{i:02}")).collect();
    assert_eq!(ok(second.clone()), json!(expected), "{second}");
    let third = kip(&mut c, &format!("{query} CURSOR :c"), json!({"c": second["next_cursor"].as_str().unwrap()}));
    let expected: Vec<String> = (20..30).map(|i| format!("row{i:02}")).collect();
    assert_eq!(ok(third.clone()), json!(expected), "{third}");
    assert!(third.get("next_cursor").is_none(), "{third}");
}

#[test]
fn describe_lists_and_definitions() {
    let mut c = space_with(&[TYPES]);
    let types = ok(kip(&mut c, "DESCRIBE CONCEPT TYPES LIMIT 1000", json!({})));
    assert!(names(&types).contains("Node"), "{types}");
    let preds = ok(kip(&mut c, "DESCRIBE PROPOSITION TYPES", json!({})));
    assert!(names(&preds).contains("next"));
    let page = kip(&mut c, "DESCRIBE CONCEPT TYPES LIMIT 1", json!({}));
    let token = page["next_cursor"].as_str().expect("next_cursor").to_string();
    let next = ok(kip(&mut c, "DESCRIBE CONCEPT TYPES LIMIT 1 CURSOR :c", json!({"c": token})));
    assert_ne!(ok(page), next);
    let node = ok(kip(&mut c, r#"DESCRIBE CONCEPT TYPE "Node""#, json!({})));
    assert_eq!(node["name"], json!("Node"));
    assert_eq!(node["attributes"]["description"], json!("test node"));
    assert_eq!(err_code(&kip(&mut c, r#"DESCRIBE PROPOSITION TYPE "nope""#, json!({}))), "KIP_3002");
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    assert!(primer.get("domain_map").is_some() && primer.get("total_domains").is_some(), "{primer}");
    assert!(ok(kip(&mut c, "DESCRIBE DOMAINS", json!({}))).is_array());
}

/// DESCRIBE CONCEPT TYPES lists names in byte order and continues each page
/// after the previous page's last name: definitions deleted before that
/// name during a walk make it skip nothing, and one added before it is
/// not listed twice.
#[test]
fn describe_pages_continue_after_the_last_name() {
    let defined = ["Apple", "Banana", "Cherry", "Damson", "Elder", "ZZTop", "Zeta"];
    let upserts: Vec<String> =
        defined.iter().map(|n| format!(r#"UPSERT {{ CONCEPT ?t {{ {{type: "$ConceptType", name: "{n}"}} }} }}"#)).collect();
    let mut c = space_with(&upserts.iter().map(String::as_str).collect::<Vec<_>>());
    let all: Vec<String> = serde_json::from_value(ok(kip(&mut c, "DESCRIBE CONCEPT TYPES LIMIT 1000", json!({})))).unwrap();
    let mut sorted = all.clone();
    sorted.sort(); // Rust compares strings byte by byte, as "C" does.
    assert_eq!(all, sorted, "not in byte order");
    let at = |name: &str| all.iter().position(|n| n == name).unwrap_or_else(|| panic!("{name} not listed: {all:?}"));
    // Byte order, not a linguistic one ("Zeta" before "ZZTop" there).
    assert!(at("Apple") < at("Banana") && at("Elder") < at("ZZTop") && at("ZZTop") < at("Zeta"), "{all:?}");
    // Page 1 ends at "Banana" (the Genesis types sort before or after).
    let limit = at("Banana") + 1;
    let query = format!("DESCRIBE CONCEPT TYPES LIMIT {limit}");
    let first = kip(&mut c, &query, json!({}));
    assert_eq!(ok(first.clone()).as_array().unwrap().last(), Some(&json!("Banana")), "{first}");
    // "Apple" and "Banana", already listed, go; an "Aardvark" is added before them.
    for cmd in [
        r#"DELETE CONCEPT ?t DETACH WHERE { ?t {type: "$ConceptType"} FILTER(IN(?t.name, ["Apple", "Banana"])) }"#,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Aardvark"} } }"#,
    ] {
        ok(kip(&mut c, cmd, json!({})));
    }
    let mut rest: Vec<String> = Vec::new();
    let mut token = first["next_cursor"].as_str().map(str::to_string);
    while let Some(t) = token {
        let page = kip(&mut c, &format!("{query} CURSOR :c"), json!({"c": t}));
        rest.extend(serde_json::from_value::<Vec<String>>(ok(page.clone())).unwrap());
        token = page["next_cursor"].as_str().map(str::to_string);
    }
    assert_eq!(rest, all[limit..].to_vec(), "the pages after the first");
}

#[test]
fn primer_key_concepts_are_types_then_the_most_connected_recent_members() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?d { {type: "Domain", name: "Lab"} }
          CONCEPT ?t { {type: "$ConceptType", name: "Node"} SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
          CONCEPT ?hub { {type: "Node", name: "hub"} SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
          CONCEPT ?loop { {type: "Node", name: "loop"} SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
          CONCEPT ?leaf { {type: "Node", name: "leaf"} SET PROPOSITIONS { ("belongs_to_domain", ?d) ("next", ?hub) } }
          CONCEPT ?x { {type: "Node", name: "x"} SET PROPOSITIONS { ("next", ?hub) ("alt", ?hub) } }
        }"#,
    ]);
    // Degrees (links as subject or object): hub 4, leaf 2, loop 1; x is no member.
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    let lab = primer["domain_map"].as_array().unwrap().iter().find(|d| d["name"] == "Lab").expect("Lab in the map").clone();
    assert_eq!(lab["member_count"], json!(4), "{lab}");
    assert_eq!(lab["key_concepts"], json!(["Node", "hub", "leaf", "loop"]), "{lab}");
    assert_eq!(lab["key_propositions"], json!([]), "{lab}");

    // The domain's predicates are its key propositions (RC10 §5.1.1), the
    // most used first, then by name; they are no key concepts, however
    // connected their definitions are.
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?d { {type: "Domain", name: "Lab"} }
          CONCEPT ?n { {type: "$PropositionType", name: "next"} SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
          CONCEPT ?a { {type: "$PropositionType", name: "alt"} SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
          CONCEPT ?s { {type: "$PropositionType", name: "stated"} SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
        }"#,
        json!({}),
    ));
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    let lab = primer["domain_map"].as_array().unwrap().iter().find(|d| d["name"] == "Lab").expect("Lab in the map").clone();
    // next: 2 links, alt: 1, stated: none.
    assert_eq!(lab["key_propositions"], json!(["next", "alt", "stated"]), "{lab}");
    // A Domain's scope_note, which the Brain's Maintenance writes for the map.
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?d { {type: "Domain", name: "Lab"} SET ATTRIBUTES { scope_note: "bench work only" } } }"#, json!({})));
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    let lab = primer["domain_map"].as_array().unwrap().iter().find(|d| d["name"] == "Lab").expect("Lab in the map").clone();
    assert_eq!(lab["scope_note"], json!("bench work only"), "{lab}");
    assert_eq!(lab["key_concepts"], json!(["Node", "hub", "leaf", "loop"]), "{lab}");
    // Every Genesis predicate is in the map, under CoreSchema.
    let core = primer["domain_map"].as_array().unwrap().iter().find(|d| d["name"] == "CoreSchema").expect("CoreSchema").clone();
    for predicate in ["belongs_to_domain", "prefers"] {
        assert!(core["key_propositions"].as_array().unwrap().contains(&json!(predicate)), "{predicate} missing: {core}");
    }
}

#[test]
fn read_path_error_codes() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "E", 6, "next");
    chain(&mut c, "F", 6, "alt");
    let code = |c: &mut Client, cmd: &str| err_code(&kip(c, cmd, json!({})));
    // KIP_1001: syntax, malformed cursor, invalid regex, unanchored walk, bad id, bad comparison.
    assert_eq!(code(&mut c, "FIND(?x WHERE {"), "KIP_1001");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} } LIMIT 1 CURSOR "zzzz""#), "KIP_1001");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(REGEX(?x.name, "(")) }"#), "KIP_1001");
    // The error names the pattern at fault, also among several.
    let e = kip(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(REGEX(?x.name, "^E") || REGEX(?x.name, "x[")) }"#, json!({}));
    assert_eq!(err_code(&e), "KIP_1001", "{e}");
    assert!(e["error"]["message"].as_str().unwrap().starts_with(r#"REGEX pattern "x[": invalid regular expression"#), "{e}");
    assert!(e["error"]["hint"].is_string(), "{e}");
    assert_eq!(code(&mut c, r#"FIND(?a.name) WHERE { (?a, "next"{1,3}, ?b) }"#), "KIP_1001");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {id: "X:1"} }"#), "KIP_1001");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(?x.metadata > 1) }"#), "KIP_1001");
    // A string field alone is no condition (an attribute alone is one: true
    // when it holds true).
    let e = kip(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(?x.name) }"#, json!({}));
    assert_eq!(err_code(&e), "KIP_1001", "{e}");
    assert!(e["error"]["message"].as_str().unwrap().starts_with("?x.name is a string"), "{e}");
    assert!(e["error"]["hint"].as_str().unwrap().contains("IS_NOT_NULL(?x.name)"), "{e}");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(!?x.type || ?x.id) }"#), "KIP_1001");
    // A literal that is no boolean is no condition; a pattern, prefix or
    // suffix is a string; an aggregation needs values of its kind (each
    // answered an empty list or null).
    for cmd in [
        r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(5) }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER("yes") }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(REGEX(?x.name, 5)) }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(STARTS_WITH(?x.name, 1)) }"#,
        r#"FIND(SUM(?x)) WHERE { ?x {type: "Node"} }"#,
        r#"FIND(MIN(?x)) WHERE { ?x {type: "Node"} }"#,
        r#"FIND(AVG(?x.name)) WHERE { ?x {type: "Node"} }"#,
        r#"FIND(SUM(?x.attributes)) WHERE { ?x {type: "Node"} }"#,
    ] {
        let e = kip(&mut c, cmd, json!({}));
        assert_eq!(err_code(&e), "KIP_1001", "{cmd}: {e}");
        assert!(e["error"]["hint"].is_string(), "{e}");
    }
    // An optional parameter left null matches nothing.
    assert_eq!(ok(kip(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(STARTS_WITH(?x.name, :p)) }"#, json!({"p": null}))), json!([]));
    // What has values of its kind still runs.
    for cmd in [
        r#"FIND(MIN(?x.name), COUNT(?x)) WHERE { ?x {type: "Node"} }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(CONTAINS(?x.attributes.tags, 5) || true) }"#,
        r#"FIND(MAX(?p)) WHERE { ?x {type: "Node"} (?x, ?p, ?y) }"#,
    ] {
        assert!(kip(&mut c, cmd, json!({})).get("error").is_none(), "{cmd}");
    }
    // A grouped FIND's ORDER BY key that is not among its expressions is named.
    let e = kip(&mut c, r#"FIND(?x.name, COUNT(?y)) WHERE { ?x {type: "Node"} (?x, "next", ?y) } ORDER BY SUM(?y.attributes.w)"#, json!({}));
    assert_eq!(err_code(&e), "KIP_1001", "{e}");
    assert!(e["error"]["message"].as_str().unwrap().starts_with("ORDER BY SUM(?y.attributes.w): "), "{e}");
    assert_eq!(code(&mut c, r#"FIND(?p) WHERE { ?x {name: "E0"} (?x, ?p, ?y) (?p, "next", ?y) }"#), "KIP_1001");
    // KIP_3001: unbound variable in FIND, ORDER BY or FILTER.
    assert_eq!(code(&mut c, r#"FIND(?nope) WHERE { ?x {type: "Node"} }"#), "KIP_3001");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} } ORDER BY ?nope.name"#), "KIP_3001");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} FILTER(?nope.name == "a") }"#), "KIP_3001");
    // KIP_3002: dangling ids, unknown type definitions.
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?x {id: "C:999999999"} }"#), "KIP_3002");
    assert_eq!(code(&mut c, r#"FIND(?l) WHERE { ?l (id: "P:999999999:next") }"#), "KIP_3002");
    assert_eq!(code(&mut c, r#"FIND(?x) WHERE { (?x, "next", "C:999999999") }"#), "KIP_3002");
    assert_eq!(code(&mut c, r#"DESCRIBE CONCEPT TYPE "NoSuchType""#), "KIP_3002");
    // A missing named concept or id of the mandatory pattern, whether the
    // result is rows or one row of aggregations (checked when the answer
    // shows no solution), also in a clause group of its own, which leaves
    // the other groups' solutions (checked always), or after a UNION (joined
    // to both operands); an existing one that matches nothing is an empty
    // answer.
    for cmd in [
        r#"FIND(?y.name) WHERE { ?x {type: "Node", name: "nope"} (?x, "next", ?y) }"#,
        r#"FIND(COUNT(?y)) WHERE { ?x {type: "Node", name: "nope"} (?x, "next", ?y) }"#,
        r#"FIND(COUNT(?y)) WHERE { ?x {type: "Node", name: "E0"} ?z {id: "C:999999999"} (?x, "next", ?y) }"#,
        r#"FIND(?y.name) WHERE { ?x {type: "Node", name: "E0"} ?z {id: "C:999999999"} (?x, "next", ?y) }"#,
        r#"FIND(?y.name, ?z) WHERE { ?x {type: "Node", name: "E0"} ?z {type: "Node", name: "nope"} (?x, "next", ?y) }"#,
        r#"FIND(?y.name) WHERE { ?y {type: "Node", name: "E0"} UNION { ?y {type: "Node", name: "E1"} } (?y, "next", {type: "Node", name: "nope"}) }"#,
    ] {
        assert_eq!(err_code(&kip(&mut c, cmd, json!({}))), "KIP_3002", "{cmd}");
    }
    // The two operands of a UNION are alike: a concept named in either one
    // may be missing while the other matches, whichever is written first.
    for cmd in [
        r#"FIND(?y.name) WHERE { ?x {type: "Node", name: "nope"} (?x, "next", ?y) UNION { ?y {type: "Node", name: "E0"} } }"#,
        r#"FIND(?y.name) WHERE { ?y {type: "Node", name: "E0"} UNION { ?x {type: "Node", name: "nope"} (?x, "next", ?y) } }"#,
    ] {
        assert_eq!(find(&mut c, cmd), json!(["E0"]), "{cmd}");
    }
    assert_eq!(find(&mut c, r#"FIND(?y.name) WHERE { ?x {type: "Node", name: "E6"} (?x, "next", ?y) }"#), json!([]));
    assert_eq!(find(&mut c, r#"FIND(COUNT(?y)) WHERE { ?x {type: "Node", name: "E6"} (?x, "next", ?y) }"#), json!(0));
    // KIP_2001: a FIND that finds nothing names a concept type that is not
    // registered (RC10 §2.8.2), before KIP_3002, with a "did you mean".
    for cmd in [
        r#"FIND(?x.name) WHERE { ?x {type: "node"} }"#,
        r#"FIND(COUNT(?x)) WHERE { ?x {type: "node"} }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "node", name: "E0"} }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "Node", name: "E0"} (?x, "next", {type: "node", name: "E1"}) }"#,
    ] {
        let e = kip(&mut c, cmd, json!({}));
        assert_eq!(err_code(&e), "KIP_2001", "{cmd}: {e}");
        assert!(e["error"]["hint"].as_str().unwrap_or_default().contains("\"Node\""), "{cmd}: {e}");
    }
    // An unregistered predicate matches nothing (kip-conformance,
    // kql-optional.json), and a type nobody matched in OPTIONAL is no error.
    assert_eq!(find(&mut c, r#"FIND(?y.name) WHERE { ?x {type: "Node", name: "E0"} (?x, "Next", ?y) }"#), json!([]));
    assert_eq!(find(&mut c, r#"FIND(?y.name) WHERE { ?y {type: "Node", name: "E0"} OPTIONAL { ?z {type: "node"} } }"#), json!(["E0"]));
    // An id of the other kind in a selector is malformed there, wherever
    // it is written (it named an element that "does not exist").
    let link = find(&mut c, r#"FIND(?l) WHERE { ?l ({type: "Node", name: "E0"}, "next", ?y) }"#)[0]["id"].as_str().unwrap().to_string();
    let node = find(&mut c, r#"FIND(?x) WHERE { ?x {type: "Node", name: "E0"} }"#)[0]["id"].as_str().unwrap().to_string();
    for cmd in [
        format!(r#"FIND(?x) WHERE {{ ?x {{id: "{link}"}} }}"#),
        format!(r#"FIND(?l) WHERE {{ ?l (id: "{node}") }}"#),
        format!(r#"FIND(?x.name) WHERE {{ ?x {{type: "Node", name: "E0"}} OPTIONAL {{ ?z {{id: "{link}"}} }} }}"#),
    ] {
        let e = kip(&mut c, &cmd, json!({}));
        assert_eq!(err_code(&e), "KIP_1001", "{cmd}: {e}");
    }
    // KIP_4002: hop bounds beyond kip.max_hops, an open walk that would go
    // deeper, and an unanchored scan of a large space.
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?a {name: "E0"} (?a, "next"{1,50}, ?x) }"#), "KIP_4002");
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?a {name: "E0"} (?a, "next"{60,}, ?x) }"#), "KIP_4002");
    c.batch_execute("SET kip.max_hops = 3").unwrap();
    assert_eq!(code(&mut c, r#"FIND(?x.name) WHERE { ?a {name: "E0"} (?a, "next"{1,}, ?x) }"#), "KIP_4002");
    let r = find(&mut c, r#"FIND(?x.name) WHERE { ?a {name: "E4"} (?a, "next"{1,}, ?x) }"#);
    assert_eq!(names(&r), set(&["E5", "E6"]));
    c.batch_execute("RESET kip.max_hops; SET kip.max_limit = 1").unwrap();
    assert_eq!(code(&mut c, r#"FIND(?p) WHERE { (?s, ?p, ?o) }"#), "KIP_4002");
    c.batch_execute("RESET kip.max_limit").unwrap();
    assert!(find(&mut c, r#"FIND(COUNT(?l)) WHERE { ?l (?s, ?p, ?o) }"#).as_u64().unwrap() >= 12);
    // KIP_4001: statement timeout.
    let mut cmd = String::from("UPSERT {");
    for i in 0..400 {
        cmd.push_str(&format!(" CONCEPT ?n{i} {{ {{type: \"Node\", name: \"t{i}\"}} }}"));
    }
    cmd.push('}');
    ok(kip(&mut c, &cmd, json!({})));
    c.batch_execute("SET statement_timeout = '200ms'").unwrap();
    assert_eq!(code(&mut c, r#"FIND(COUNT(?a)) WHERE { ?a {type: "Node"} ?b {type: "Node"} ?d {type: "Node"} FILTER(?a.name != ?b.name && ?b.name != ?d.name) }"#), "KIP_4001");
    c.batch_execute("RESET statement_timeout").unwrap();
}

#[test]
fn explain_shows_sql_and_an_index_plan() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "X", 2, "next");
    let text: String = c
        .query_one("SELECT kip_explain($1, '{}'::jsonb)", &[&r#"FIND(?y.name) WHERE { ?x {type: "Node", name: "X0"} (?x, "next", ?y) }"#])
        .unwrap()
        .get(0);
    assert!(text.contains("-- SQL") && text.contains("-- plan"), "{text}");
    assert!(text.contains("kip.propositions"), "{text}");
    // The plan kip_execute runs: its saved statement's generic plan, whose
    // conditions read the parameters (an EXPLAIN of the text would plan it
    // for the values, as constants).
    let plan = text.split("-- plan\n").nth(1).unwrap_or_default();
    assert!(plan.contains("space = $1"), "{text}");
    assert!(!plan.contains("X0"), "{text}");
    let text: String = c.query_one("SELECT kip_explain('UPSERT { }')", &[]).unwrap().get(0);
    assert!(text.starts_with("KIP_1001"), "{text}");
}

#[test]
fn attribute_equality_is_served_by_the_attributes_index_without_jit() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?a { {type: "Node", name: "a"} SET ATTRIBUTES { color: "red", n: 1 } }
          CONCEPT ?b { {type: "Node", name: "b"} SET ATTRIBUTES { color: "blue", n: 1.0 } }
          CONCEPT ?c { {type: "Node", name: "c"} SET ATTRIBUTES { color: ["red"], n: "1" } }
        }"#,
    ]);
    // Same answers as the exact comparison: containment of a scalar is
    // equality (1 == 1.0), never array membership or another JSON type.
    let q = |c: &mut Client, f: &str| names(&find(c, &format!(r#"FIND(?n.name) WHERE {{ ?n {{type: "Node"}} FILTER({f}) }}"#)));
    assert_eq!(q(&mut c, r#"?n.attributes.color == "red""#), set(&["a"]));
    assert_eq!(q(&mut c, "?n.attributes.n == 1"), set(&["a", "b"]));
    assert_eq!(q(&mut c, r#"IN(?n.attributes.color, ["blue", "green"])"#), set(&["b"]));
    assert_eq!(q(&mut c, r#"!(?n.attributes.color == "red")"#), set(&["b", "c"]));
    // Among 20,000 other values the index finds the one match (with fewer,
    // and other tests' rows in the statistics, the (space, type) btree can
    // look as cheap). With JIT
    // forced on for every plan in this session, kip's statements still run
    // without it, and the session keeps its setting.
    let space: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    c.execute(
        "INSERT INTO kip.concepts (space, type, name, attributes) \
         SELECT $1, 'Node', 'bulk' || g, jsonb_build_object('color', 'c' || g) FROM generate_series(1, 20000) g",
        &[&space],
    )
    .unwrap();
    c.batch_execute("ANALYZE kip.concepts; SET jit = on; SET jit_above_cost = 0").unwrap();
    let text: String = c
        .query_one(
            "SELECT kip_explain($1, '{}'::jsonb, true)",
            &[&r#"FIND(?n.name) WHERE { ?n {type: "Node"} FILTER(?n.attributes.color == "red") }"#],
        )
        .unwrap()
        .get(0);
    // Under row-level security (a role that is not the tables' owner) the
    // planner may not evaluate a non-leakproof operator such as jsonb `@>`
    // before the policy, so no index serves it (DESIGN §16).
    let rls: bool = c.query_one("SELECT row_security_active('kip.concepts')", &[]).unwrap().get(0);
    if !rls {
        assert!(text.contains("concepts_attributes_idx"), "{text}");
    }
    assert!(text.contains("attributes @>"), "{text}");
    // Planned for the value: a generic plan, which cannot tell a rare value
    // from a common one, walked the type's 20,000 members in id order.
    let plan = text.split("-- plan\n").nth(1).unwrap_or_default();
    assert!(plan.contains(r#"'{"color": "red"}'"#), "{text}");
    assert!(!text.contains("JIT:"), "{text}");
    let jit: String = c.query_one("SHOW jit", &[]).unwrap().get(0);
    assert_eq!(jit, "on");
    c.batch_execute("RESET jit; RESET jit_above_cost").unwrap();
    // The 20,000 rows would stay in the shared test database's embedding
    // backlog for every later kip_embed_pending().
    c.execute("SELECT kip_drop_space($1)", &[&space]).unwrap();
}

/// A FIND planned for its values (an attribute equality) orders a scan of
/// a type by space and id, so that no plan walks the whole table's primary
/// key looking for the space's rows: with a value common in the table, the
/// planner took that walk, through every other space's rows first.
#[test]
fn a_common_value_is_not_looked_for_along_the_whole_table() {
    let mut c = space_with(&[TYPES]);
    let space: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    c.execute(
        "INSERT INTO kip.concepts (space, type, name, attributes) \
         SELECT $1, 'Node', 'common' || g, '{\"kind\": \"common\"}' FROM generate_series(1, 3000) g",
        &[&space],
    )
    .unwrap();
    c.batch_execute("ANALYZE kip.concepts").unwrap();
    let q = r#"FIND(?n.name) WHERE { ?n {type: "Node"} FILTER(?n.attributes.kind == "common") } LIMIT 5"#;
    assert_eq!(find(&mut c, q).as_array().map(Vec::len), Some(5));
    let text: String = c.query_one("SELECT kip_explain($1, '{}'::jsonb, true)", &[&q]).unwrap().get(0);
    let plan = text.split("-- plan\n").nth(1).unwrap_or_default();
    assert!(!plan.contains("concepts_pkey on concepts c1"), "{text}");
    assert!(text.contains("c1.space = ANY(ARRAY[$1::text])"), "{text}");
    c.execute("SELECT kip_drop_space($1)", &[&space]).unwrap();
}

/// Conditions only a set `metadata.expires_at` passes also ask the stored
/// `expires_at` column, which the partial `*_expiring_idx` indexes serve:
/// the answers are those of the conditions alone, on concepts and links.
#[test]
fn expires_at_conditions_answer_as_the_metadata_says() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?a { {type: "Node", name: "a"} } WITH METADATA { expires_at: "2020-01-01T00:00:00Z" }
          CONCEPT ?b { {type: "Node", name: "b"} } WITH METADATA { expires_at: "2030-01-01T00:00:00Z" }
          CONCEPT ?c { {type: "Node", name: "c"} } WITH METADATA { source: "test" }
          CONCEPT ?d { {type: "Node", name: "d"} SET PROPOSITIONS { ("next", ?a) } }
        }"#,
        r#"UPSERT {
          PROPOSITION ?l { ({type: "Node", name: "a"}, "next", {type: "Node", name: "b"}) }
          WITH METADATA { expires_at: "2020-06-01T00:00:00Z" }
        }"#,
    ]);
    let q = |c: &mut Client, f: &str| names(&find(c, &format!(r#"FIND(?n.name) WHERE {{ ?n {{type: "Node"}} FILTER({f}) }}"#)));
    assert_eq!(q(&mut c, "IS_NOT_NULL(?n.metadata.expires_at)"), set(&["a", "b"]));
    assert_eq!(q(&mut c, "IS_NULL(?n.metadata.expires_at)"), set(&["c", "d"]));
    assert_eq!(q(&mut c, "?n.metadata.expires_at == null"), set(&["c", "d"]));
    assert_eq!(q(&mut c, r#"?n.metadata.expires_at < "2025-01-01T00:00:00Z""#), set(&["a"]));
    assert_eq!(q(&mut c, r#"?n.metadata.expires_at >= "2025-01-01T00:00:00Z""#), set(&["b"]));
    assert_eq!(q(&mut c, r#"?n.metadata.expires_at == "2030-01-01T00:00:00Z""#), set(&["b"]));
    // A comparison with a missing value is false, `!=` too (DESIGN §7).
    assert_eq!(q(&mut c, r#"?n.metadata.expires_at != "2030-01-01T00:00:00Z""#), set(&["a"]));
    assert_eq!(q(&mut c, r#"!(?n.metadata.expires_at < "2025-01-01T00:00:00Z")"#), set(&["b", "c", "d"]));
    assert_eq!(q(&mut c, r#"IS_NULL(?n.metadata.expires_at) || ?n.metadata.expires_at > "2025-01-01T00:00:00Z""#), set(&["b", "c", "d"]));
    let links = |c: &mut Client, f: &str| {
        names(&find(c, &format!(r#"FIND(?s.name) WHERE {{ ?l (?s, "next", ?o) FILTER({f}) }}"#)))
    };
    assert_eq!(links(&mut c, "IS_NOT_NULL(?l.metadata.expires_at)"), set(&["a"]));
    assert_eq!(links(&mut c, r#"?l.metadata.expires_at < "2025-01-01T00:00:00Z""#), set(&["a"]));
    assert_eq!(links(&mut c, "IS_NULL(?l.metadata.expires_at)"), set(&["d"]));
    // The condition the partial indexes serve is in the statement.
    let text: String = c
        .query_one("SELECT kip_explain($1)", &[&r#"FIND(?s.name) WHERE { ?l (?s, "next", ?o) FILTER(?l.metadata.expires_at < "2025") }"#])
        .unwrap()
        .get(0);
    assert!(text.contains("p1.expires_at IS NOT NULL"), "{text}");
}

/// A FIND planned for its values (an attribute equality) is planned with
/// its named concepts' ids, looked up first, and answers as without them:
/// solutions, no solution (asked again without the ids), and a name that
/// names nothing (`KIP_3002`).
#[test]
fn a_find_planned_per_call_knows_its_named_concepts_ids() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?hub { {type: "Node", name: "hub"} }
          CONCEPT ?a { {type: "Node", name: "a"} SET ATTRIBUTES { kind: "rare" } SET PROPOSITIONS { ("next", ?hub) } }
          CONCEPT ?b { {type: "Node", name: "b"} SET ATTRIBUTES { kind: "common" } SET PROPOSITIONS { ("next", ?hub) } }
          CONCEPT ?d { {type: "Node", name: "d"} SET ATTRIBUTES { kind: "rare" } }
        }"#,
    ]);
    let per_call = |kind: &str, hub: &str| {
        format!(r#"FIND(?x.name) WHERE {{ ?x {{type: "Node"}} (?x, "next", {{type: "Node", name: "{hub}"}}) FILTER(?x.attributes.kind == "{kind}") }}"#)
    };
    assert_eq!(names(&find(&mut c, &per_call("rare", "hub"))), set(&["a"]));
    assert_eq!(names(&find(&mut c, &per_call("none", "hub"))), set(&[]));
    assert_eq!(err_code(&kip(&mut c, &per_call("rare", "nohub"), json!({}))), "KIP_3002");
    let hub: i64 = c
        .query_one("SELECT id FROM kip.concepts WHERE space = current_setting('kip.space') AND name = 'hub'", &[])
        .unwrap()
        .get(0);
    let sql_and_params = |c: &mut Client, q: &str| -> String {
        let text: String = c.query_one("SELECT kip_explain($1)", &[&q]).unwrap().get(0);
        text.split("-- plan").next().unwrap_or_default().to_string()
    };
    let text = sql_and_params(&mut c, &per_call("rare", "hub"));
    assert!(text.contains(".id = $") && text.contains(&format!(" = {hub}\n")), "{text}");
    // A statement on its generic plan gains nothing from the ids.
    let text = sql_and_params(&mut c, r#"FIND(?x.name) WHERE { ?x {type: "Node"} (?x, "next", {type: "Node", name: "hub"}) }"#);
    assert!(!text.contains(".id = $"), "{text}");
}

/// A FIND that may scan a predicate's links (no named concept or id
/// reaches them) is planned for its values when the predicate has few links
/// in a space of many: a generic plan walked every link of the space in
/// endpoint order, looking for them. That plan is made once for the space
/// and the predicate (their parameters fixed), and kept for them: another
/// rare predicate, in a statement of the same text, gets a plan of its own.
/// A common predicate, or a rare one reached from a named concept, keeps
/// the generic plan.
#[test]
fn a_rare_predicate_of_a_large_space_is_planned_for_its_value() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "R", 2, "alt"); // R0 -alt-> R1 -alt-> R2
    chain(&mut c, "S", 1, "stated"); // S0 -stated-> S1
    let space: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    c.execute("INSERT INTO kip.concepts (space, type, name) SELECT $1, 'Node', 'bulk' || g FROM generate_series(1, 150) g", &[&space])
        .unwrap();
    c.execute(
        "INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept) \
         SELECT $1, a.id, 'next', b.id FROM kip.concepts a JOIN kip.concepts b ON a.space = b.space AND a.id <> b.id \
         WHERE a.space = $1 AND a.name LIKE 'bulk%' AND b.name LIKE 'bulk%'",
        &[&space],
    )
    .unwrap();
    c.batch_execute("ANALYZE kip.propositions").unwrap();
    let plan = |c: &mut Client, q: &str| -> String {
        let text: String = c.query_one("SELECT kip_explain($1)", &[&q]).unwrap().get(0);
        text.split("-- plan\n").nth(1).unwrap_or_default().to_string()
    };
    let rare = r#"FIND(?a.name, ?b.name) WHERE { (?a, "alt", ?b) } ORDER BY ?a.name LIMIT 10"#;
    assert_eq!(find(&mut c, rare), json!([["R0", "R1"], ["R1", "R2"]]));
    let text = plan(&mut c, rare);
    assert!(text.contains("'alt'"), "{text}");
    // kip_explain says which plan it shows: the space ($1) and the
    // predicate ($2) are its constants.
    let whole: String = c.query_one("SELECT kip_explain($1)", &[&rare]).unwrap().get(0);
    assert!(whole.contains("-- planning: generic, made for the values of $1, $2 (once per statement shape and values)\n-- plan\n"), "{whole}");
    assert!(text.contains(&format!("'{space}'")), "{text}");
    // The same statement for another rare predicate: a plan of its own, not
    // the one kept for "alt" (whose constants would answer R's links).
    let other = r#"FIND(?a.name, ?b.name) WHERE { (?a, "stated", ?b) } ORDER BY ?a.name LIMIT 10"#;
    for _ in 0..2 {
        assert_eq!(find(&mut c, rare), json!([["R0", "R1"], ["R1", "R2"]]));
        assert_eq!(find(&mut c, other), json!([["S0"], ["S1"]]));
    }
    let sql = |c: &mut Client, q: &str| -> String {
        let text: String = c.query_one("SELECT kip_explain($1)", &[&q]).unwrap().get(0);
        text.split("-- parameters").next().unwrap_or_default().to_string()
    };
    assert_eq!(sql(&mut c, rare), sql(&mut c, other), "one statement text for both predicates");
    assert!(plan(&mut c, other).contains("'stated'"));
    // A plan invalidated (DISCARD PLANS, which any role may run) is made
    // again with the same constants: the parser meets them again.
    c.batch_execute("DISCARD PLANS").unwrap();
    assert_eq!(find(&mut c, rare), json!([["R0", "R1"], ["R1", "R2"]]));
    assert_eq!(find(&mut c, other), json!([["S0"], ["S1"]]));
    let whole: String = c.query_one("SELECT kip_explain($1)", &[&r#"FIND(?a.name) WHERE { (?a, "next", ?b) } LIMIT 1"#]).unwrap().get(0);
    assert!(whole.contains("-- planning: generic"), "{whole}");
    // A predicate with no link at all.
    let text = plan(&mut c, r#"FIND(COUNT(?a)) WHERE { (?a, "in_area", ?b) }"#);
    assert!(text.contains("'in_area'"), "{text}");
    // 22,350 links of `next` in the space: its generic plan.
    let text = plan(&mut c, r#"FIND(?a.name) WHERE { (?a, "next", ?b) } LIMIT 1"#);
    assert!(!text.contains("'next'") && text.contains("predicate = $"), "{text}");
    // Reached from a named concept, the rare predicate's links are read
    // from it: the generic plan.
    let text = plan(&mut c, r#"FIND(?b.name) WHERE { ?a {type: "Node", name: "R0"} (?a, "alt", ?b) }"#);
    assert!(!text.contains("'alt'"), "{text}");
    c.execute("SELECT kip_drop_space($1)", &[&space]).unwrap();
}

/// A FIND that may read a type's every member (a concept clause selecting
/// by type alone, which no anchor reaches) is planned for the type when it
/// has few members in a space of many: the generic plan took it for an
/// average type and, under the page's LIMIT, walked the whole table in id
/// order for its members. The plan is made for the space and every type
/// and predicate the query names, once. A common type keeps the generic
/// plan, and so does an aggregation, which reads every solution anyway.
#[test]
fn a_rare_type_of_a_large_space_is_planned_for_its_value() {
    let mut c = space_with(&[TYPES]);
    chain(&mut c, "R", 2, "next"); // R0 -next-> R1 -next-> R2
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Area", name: "North"} } CONCEPT ?b { {type: "Area", name: "South"} SET PROPOSITIONS { ("in_area", ?a) } } }"#, json!({})));
    let space: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    c.execute("INSERT INTO kip.concepts (space, type, name) SELECT $1, 'Node', 'bulk' || g FROM generate_series(1, 20500) g", &[&space])
        .unwrap();
    c.batch_execute("ANALYZE kip.concepts").unwrap();
    let explain = |c: &mut Client, q: &str| -> String { c.query_one("SELECT kip_explain($1)", &[&q]).unwrap().get(0) };
    let rare = r#"FIND(?a.name) WHERE { ?a {type: "Area"} NOT { (?a, "in_area", ?x) } } LIMIT 10"#;
    for _ in 0..2 {
        assert_eq!(find(&mut c, rare), json!(["North"]));
    }
    let text = explain(&mut c, rare);
    // The space ($1), the type ($2) and the predicate of the NOT block ($3).
    assert!(text.contains("-- planning: generic, made for the values of $1, $2, $3 ("), "{text}");
    let plan = text.split("-- plan\n").nth(1).unwrap_or_default();
    assert!(plan.contains("'Area'") && plan.contains("'in_area'") && plan.contains(&format!("'{space}'")), "{plan}");
    // An aggregation over the same type, and a common type: generic plans.
    let count = r#"FIND(COUNT(?a)) WHERE { ?a {type: "Area"} }"#;
    assert_eq!(find(&mut c, count), json!(2));
    assert!(explain(&mut c, count).contains("-- planning: generic (once per statement shape)"));
    let common = r#"FIND(?a.name) WHERE { ?a {type: "Node"} NOT { (?a, "next", ?x) } } LIMIT 2"#;
    assert_eq!(find(&mut c, common).as_array().map(Vec::len), Some(2));
    assert!(explain(&mut c, common).contains("-- planning: generic (once per statement shape)"));
    c.execute("SELECT kip_drop_space($1)", &[&space]).unwrap();
}

/// Every FIND in the Brain Recall / Maintenance / Formation prompts runs
/// without error on a bootstrapped space holding sample memories.
#[test]
fn brain_prompt_finds_execute() {
    let Some(shared) = kip_integration_tests::shared_dir() else {
        println!("../shared absent: skipped");
        return;
    };
    let mut c = connect();
    fresh_space(&mut c, "brain");
    // The space is bootstrapped with kip's own capsules, which define every
    // type and predicate the Brain prompts use. (Replaying the reference
    // Genesis would try to change the immutable core: KIP_3004.)
    let memories = r#"UPSERT {
      CONCEPT ?d { {type: "Domain", name: "Projects"} SET ATTRIBUTES { description: "Work projects" } }
      CONCEPT ?alice { {type: "Person", name: "Alice"} SET ATTRIBUTES { person_class: "Human", interaction_summary: {} } SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
      CONCEPT ?e { {type: "Event", name: "Conversation with Alice 2025-06-01"}
        SET ATTRIBUTES { event_class: "Conversation", start_time: "2025-06-01T10:00:00Z", content_summary: "Planned Aurora", participants: ["Alice"] }
        SET PROPOSITIONS { ("belongs_to_domain", ?d) ("involves", ?alice) ("mentions", ?alice) } }
      CONCEPT ?c { {type: "Commitment", name: "Send Alice the report"} SET ATTRIBUTES { status: "pending", due_at: "2025-06-05T00:00:00Z", beneficiary: "Alice" } SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
    } WITH METADATA { source: "test", author: "$self", confidence: 0.9, created_at: "2025-06-01T10:00:00Z" }"#;
    let out = kip(&mut c, memories, json!({}));
    assert!(out.get("error").is_none(), "memories: {out}");
    let mut total = 0;
    let names = Names { name: "Alice", domain: "CoreSchema", date: "2025-01-01T00:00:00Z" };
    for file in PROMPTS {
        let text = std::fs::read_to_string(shared.join("reference/brain").join(file)).unwrap();
        for s in finds(&text) {
            total += 1;
            let params = sample_params(&s, &names);
            let out = kip(&mut c, &s, params.clone());
            // A sample name may name no concept: the mandatory pattern
            // then answers KIP_3002, which is a correct execution too.
            let missing_named = out["error"]["code"] == "KIP_3002"
                && out["error"]["message"].as_str().is_some_and(|m| m.contains("does not exist"));
            assert!(out.get("error").is_none() || missing_named, "{file}: {s}\nparams {params}\n=> {out}");
        }
    }
    assert!(total >= 40, "found only {total} FIND commands");
}

/// `("a" | "b"){m,n}`: each hop may follow any listed predicate. The path
/// X -next-> Y -alt-> Z -next-> W alternates predicates, so only the
/// alternation walks it end to end.
#[test]
fn hop_walks_over_predicate_alternatives() {
    let mut c = space_with(&[
        TYPES,
        r#"UPSERT {
          CONCEPT ?x { {type: "Node", name: "X"} }
          CONCEPT ?y { {type: "Node", name: "Y"} }
          CONCEPT ?z { {type: "Node", name: "Z"} }
          CONCEPT ?w { {type: "Node", name: "W"} }
          PROPOSITION { (?x, "next", ?y) }
          PROPOSITION { (?y, "alt", ?z) }
          PROPOSITION { (?z, "next", ?w) }
        }"#,
    ]);
    let from_x = |c: &mut Client, predicate: &str| {
        find(c, &format!(r#"FIND(?t.name) WHERE {{ ?x {{type: "Node", name: "X"}} (?x, {predicate}, ?t) }}"#))
    };
    // Both surface forms are the same walk; a single predicate stops at Y.
    let r = from_x(&mut c, r#"("next" | "alt"){1,3}"#);
    assert_eq!(r.as_array().unwrap().len(), 3, "each node once: {r}");
    assert_eq!(names(&r), set(&["Y", "Z", "W"]));
    assert_eq!(names(&from_x(&mut c, r#""next" | "alt"{1,3}"#)), set(&["Y", "Z", "W"]));
    assert_eq!(names(&from_x(&mut c, r#""next"{1,3}"#)), set(&["Y"]));
    assert_eq!(names(&from_x(&mut c, r#"("next" | "alt"){2,3}"#)), set(&["Z", "W"]));
    assert_eq!(from_x(&mut c, r#"("next" | "alt"){3}"#), json!(["W"]));
    // {1} over alternatives is a single link (and may bind a link variable).
    assert_eq!(from_x(&mut c, r#"("next" | "alt"){1}"#), json!(["Y"]));
    let r = find(&mut c, r#"FIND(?l.predicate) WHERE { ?y {type: "Node", name: "Y"} ?l (?y, ("next" | "alt"){1}, ?t) }"#);
    assert_eq!(r, json!(["alt"]));
    // m == 0 includes the start (zero-hop reflexive match).
    let r = from_x(&mut c, r#"("next" | "alt"){0,2}"#);
    assert_eq!(r.as_array().unwrap().len(), 3, "{r}");
    assert_eq!(names(&r), set(&["X", "Y", "Z"]));
    // Backward from a grounded object.
    let r = find(&mut c, r#"FIND(?s.name) WHERE { (?s, ("next" | "alt"){1,3}, {type: "Node", name: "W"}) }"#);
    assert_eq!(names(&r), set(&["X", "Y", "Z"]));
    let r = find(&mut c, r#"FIND(?s.name) WHERE { (?s, "next"{1,3}, {type: "Node", name: "W"}) }"#);
    assert_eq!(names(&r), set(&["Z"]));
    let r = find(&mut c, r#"FIND(?s.name) WHERE { (?s, "next" | "alt"{0,}, {type: "Node", name: "W"}) }"#);
    assert_eq!(names(&r), set(&["X", "Y", "Z", "W"]));
    // Predicates as parameters.
    let r = ok(kip(
        &mut c,
        r#"FIND(?t.name) WHERE { ?x {type: "Node", name: "X"} (?x, (:a | :b){1,3}, ?t) }"#,
        json!({"a": "next", "b": "alt"}),
    ));
    assert_eq!(names(&r), set(&["Y", "Z", "W"]));

    // A cycle that crosses predicates (W -alt-> X) terminates, each node once.
    ok(kip(&mut c, r#"UPSERT { PROPOSITION { ({type: "Node", name: "W"}, "alt", {type: "Node", name: "X"}) } }"#, json!({})));
    let r = from_x(&mut c, r#"("next" | "alt"){1,}"#);
    assert_eq!(r.as_array().unwrap().len(), 4, "each node once: {r}");
    assert_eq!(names(&r), set(&["X", "Y", "Z", "W"]));
    let r = from_x(&mut c, r#"("next" | "alt"){2,9}"#);
    assert_eq!(r.as_array().unwrap().len(), 4, "each node once: {r}");
    let r = find(&mut c, r#"FIND(?s.name) WHERE { (?s, ("alt" | "next"){1,}, {type: "Node", name: "Y"}) }"#);
    assert_eq!(names(&r), set(&["X", "Y", "Z", "W"]));
    // Single predicates still see no cycle.
    assert_eq!(names(&from_x(&mut c, r#""next"{1,}"#)), set(&["Y"]));

    // kip.max_hops: a closed bound above it is refused; an open walk that
    // would find a new answer deeper fails with KIP_4002, but going around
    // the cycle back to answers already found does not. With 3 links X is
    // not yet an answer of {1,} (it is reached by the 4-link cycle only), so
    // stopping there would silently drop it; {0,} has X at depth 0.
    let code = |c: &mut Client, cmd: &str| err_code(&kip(c, cmd, json!({})));
    let q = |p: &str| format!(r#"FIND(?t.name) WHERE {{ ?x {{type: "Node", name: "X"}} (?x, {p}, ?t) }}"#);
    assert_eq!(code(&mut c, &q(r#"("next" | "alt"){1,50}"#)), "KIP_4002");
    assert_eq!(code(&mut c, &q(r#""next" | "alt"{60,}"#)), "KIP_4002");
    c.batch_execute("SET kip.max_hops = 2").unwrap();
    assert_eq!(code(&mut c, &q(r#"("next" | "alt"){1,}"#)), "KIP_4002");
    c.batch_execute("SET kip.max_hops = 3").unwrap();
    assert_eq!(code(&mut c, &q(r#"("next" | "alt"){1,}"#)), "KIP_4002");
    assert_eq!(names(&find(&mut c, &q(r#"("next" | "alt"){0,}"#))), set(&["X", "Y", "Z", "W"]));
    c.batch_execute("SET kip.max_hops = 4").unwrap();
    let r = find(&mut c, &q(r#"("next" | "alt"){1,}"#));
    assert_eq!(r.as_array().unwrap().len(), 4, "each node once: {r}");
    assert_eq!(names(&r), set(&["X", "Y", "Z", "W"]));
    c.batch_execute("RESET kip.max_hops").unwrap();

    // KIP_1001: both ends free, a variable on a walk, quantified predicate variables.
    assert_eq!(code(&mut c, r#"FIND(?a.name) WHERE { (?a, ("next" | "alt"){1,3}, ?b) }"#), "KIP_1001");
    assert_eq!(code(&mut c, &format!(r#"FIND(?l) WHERE {{ ?x {{type: "Node", name: "X"}} ?l (?x, ("next" | "alt"){{1,3}}, ?t) }}"#)), "KIP_1001");
    assert_eq!(code(&mut c, &q(r#"?p | "alt"{1,3}"#)), "KIP_1001");
    assert_eq!(code(&mut c, &q(r#""next"{1,2} | "alt""#)), "KIP_1001");
}

/// A FIND text sent again with other values goes straight to the template
/// its first call left (`engine::templates::direct`): it answers as the
/// whole way does (a text sent once, padded with spaces to be new), reports
/// the same errors for parameters that are missing, of another kind or that
/// name nothing, follows the settings, and its cursors continue.
#[test]
fn a_find_sent_again_answers_as_its_first_call() {
    let mut c = space_with(&[TYPES]);
    let home: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    chain(&mut c, "d", 12, "next");
    let text = r#"FIND(?o.name, ?o.id) WHERE { ?s {type: "Node", name: :a} (?s, "next"{1,3}, ?o) } ORDER BY ?o.name"#;
    let by_id = r#"FIND(?x.name) WHERE { ?x {id: :id} }"#;
    let mut new_text = 0;
    let mut first_call = |c: &mut Client, text: &str, params: Value| {
        new_text += 1;
        kip(c, &format!("{text}{}", " ".repeat(new_text)), params)
    };
    for i in [0, 3, 11, 12, 5] {
        let params = json!({"a": format!("d{i}")});
        let again = kip(&mut c, text, params.clone());
        assert_eq!(again, first_call(&mut c, text, params), "d{i}");
        // The first row's id (rows are [name, id]).
        let id = ok(again)[0][1].as_str().map(str::to_string);
        if let Some(id) = id {
            assert!(id.starts_with("C:"), "{id}");
            let params = json!({"id": id});
            let found = kip(&mut c, by_id, params.clone());
            assert!(found.get("error").is_none(), "{found}");
            assert_eq!(found, first_call(&mut c, by_id, params));
        }
    }
    // A FILTER's string value ordered against an attribute is a hole too.
    let mut events = String::from("UPSERT {");
    for i in 0..10 {
        events.push_str(&format!(" CONCEPT ?e{i} {{ {{type: \"Node\", name: \"e{i}\"}} SET ATTRIBUTES {{ t: \"2025-0{i}\", n: {i} }} }}"));
    }
    events.push('}');
    ok(kip(&mut c, &events, json!({})));
    let since = r#"FIND(?n.name) WHERE { ?n {type: "Node"} FILTER(?n.attributes.t >= :since && ?n.attributes.n < 8) } ORDER BY ?n.attributes.t DESC"#;
    for value in [json!("2025-03"), json!("2025-07"), json!(""), json!("2026"), json!("2025-05"), json!(4), json!("2025-01")] {
        let params = json!({"since": value});
        assert_eq!(kip(&mut c, since, params.clone()), first_call(&mut c, since, params), "since {value}");
    }
    assert_eq!(ok(kip(&mut c, since, json!({"since": "2025-05"}))), json!(["e7", "e6", "e5"]));
    // Another space: the same text answers from it (where the type is not
    // registered: KIP_2001).
    let space = kip_integration_tests::fresh_space(&mut c, "kql_again");
    let params = json!({"a": "d3"});
    let elsewhere = kip(&mut c, text, params.clone());
    assert_eq!(err_code(&elsewhere), "KIP_2001", "{elsewhere}");
    assert_eq!(elsewhere, first_call(&mut c, text, params));
    ok(kip(&mut c, TYPES, json!({})));
    chain(&mut c, "d", 4, "next");
    assert_eq!(ok(kip(&mut c, text, json!({"a": "d3"})))[0][0], json!("d4"), "in {space}");
    // And back: the first space's answer.
    c.execute("SELECT set_config('kip.space', $1, false)", &[&home]).unwrap();
    // Errors, each as a first call reports it.
    for params in [json!({}), json!({"a": 7}), json!({"a": "nobody"}), json!({"id": "P:1"}), json!({"id": "C:0"}), json!({"id": "C:x"})] {
        for text in [text, by_id] {
            let again = kip(&mut c, text, params.clone());
            assert_eq!(again, first_call(&mut c, text, params.clone()), "{text} with {params}");
            assert!(again.get("error").is_some(), "{text} with {params}: {again}");
        }
    }
    // A changed setting: the page follows it, and its cursor continues.
    let walk = r#"FIND(?m.name) WHERE { ?n {type: "Node", name: :a} (?n, "next"{1,5}, ?m) }"#;
    for _ in 0..3 {
        assert_eq!(ok(kip(&mut c, walk, json!({"a": "d0"}))).as_array().map(Vec::len), Some(5));
    }
    c.batch_execute("SET kip.default_limit = 2").unwrap();
    // A shape's template is made on its second call; the third call
    // reaches it directly.
    for _ in 0..2 {
        ok(kip(&mut c, walk, json!({"a": "d0"})));
    }
    let mut seen = Vec::new();
    let mut out = kip(&mut c, walk, json!({"a": "d0"}));
    loop {
        let page = ok(out.clone());
        let page = page.as_array().unwrap_or_else(|| panic!("{out}"));
        assert!(page.len() <= 2, "{out}");
        seen.extend(page.iter().map(|v| v.as_str().unwrap().to_string()));
        match out.get("next_cursor").and_then(Value::as_str) {
            Some(t) => out = kip(&mut c, &format!("{walk} CURSOR :c"), json!({"a": "d0", "c": t})),
            None => break,
        }
    }
    c.batch_execute("RESET kip.default_limit").unwrap();
    seen.sort();
    assert_eq!(seen, ["d1", "d2", "d3", "d4", "d5"]);
}
