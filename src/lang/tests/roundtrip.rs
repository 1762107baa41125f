//! Round-trip property: for every corpus block and fixture command that
//! parses, `parse(print(ast)) == ast`, and printing is idempotent.

mod common;

fn check(origin: &str, text: &str, failures: &mut Vec<String>) -> bool {
    let Ok(ast) = kip_lang::parse(text) else {
        return false;
    };
    let printed = kip_lang::print(&ast);
    match kip_lang::parse(&printed) {
        Ok(again) if again == ast => {
            let reprinted = kip_lang::print(&again);
            if reprinted != printed {
                failures.push(format!("{origin}: printing is not idempotent"));
            }
        }
        Ok(_) => failures.push(format!("{origin}: AST changed after print\n{printed}")),
        Err(e) => failures.push(format!(
            "{origin}: printed text does not parse: {e}\n{printed}"
        )),
    }
    true
}

/// Inputs that exercise printer corner cases (precedence, escapes,
/// placeholders nested in JSON, unusual keys, every command form).
const EDGE_CASES: &[&str] = &[
    r#"FIND(?a) WHERE { ?a {type: "T"} FILTER((?a.name == "x" || ?a.name == "y") && !(?a.attributes.n > 3)) }"#,
    r#"FIND(?a) WHERE { ?a {type: "T"} FILTER(?a.name == "x" || (?a.name == "y" || ?a.name == "z")) }"#,
    r#"FIND(?a) WHERE { ?a {type: "T"} FILTER(((?a.attributes.x == 1) && (?a.attributes.y == 2)) && ?a.attributes.z) }"#,
    r#"FIND(?a) WHERE { ?a {type: "T"} FILTER(!!IS_NULL(?a.metadata.expires_at) == !true) }"#,
    r#"FIND(?a) WHERE { ?a {type: "T"} FILTER(IN(?a.name, ["a", :b, [1, {k: :c}]])) }"#,
    r#"FIND(?a) WHERE { ?a {name: "tab\there \"quoted\" \u00e9 \ud83d\ude00 :notparam"} }"#,
    r#"UPSERT { CONCEPT ?c { {type: "T", name: "n"} SET ATTRIBUTES { "odd-key": 1, "": null, true: false, nested: {"a b": [1.5, -2, 3e10, {}]}, p: :param, arr: [:x, {y: :y}] } } }"#,
    r#"FIND(COUNT(DISTINCT ?a), SUM(?a.attributes.n), ?b.attributes) WHERE { ?a {type: "T"} (?a, "p"{0,}, ?b) (?a, "q"{3}, ?b) (?a, "r"{1,2}, ?b) (?a, "s" | "t" | :u, ?b) } ORDER BY COUNT(DISTINCT ?a) DESC, ?b.name LIMIT :l CURSOR :c"#,
    r#"FIND(?b) WHERE { ?a {type: "T"} (?a, "p" | "q"{1,3}, ?b) (?a, ("p" | :q | "r"){0,}, ?b) (?b, ("p"){2}, ?a) (?b, ("p" | "q"), ?a) (?b, ("p"), ?a) }"#,
    r#"FIND(?l) WHERE { ?l (id: :pid) ((?x, "stated", (?s, ?p, {id: "C:1"})), "q", "C:2") UNION { OPTIONAL { NOT { ?x {id: "C:3"} } } } }"#,
    r#"UPDATE ?t SET METADATA { c: CLAMP(MUL(COALESCE(?t.metadata.c, 0.5), :f), 0.0, 1.0), d: :now } SET ATTRIBUTES { n: ADD(?t.attributes.n, -1) } WHERE { ?t {type: "T"} } LIMIT 5"#,
    r#"DELETE ATTRIBUTES {"a", b, :c} FROM ?x WHERE { ?x {type: "T"} }"#,
    r#"DELETE METADATA {} FROM ?x WHERE {}"#,
    r#"SEARCH PROPOSITION :term WITH TYPE :t MODE :m THRESHOLD :th LIMIT :l"#,
    r#"SEARCH CONCEPT "x" LIMIT 3 THRESHOLD 1 MODE "semantic""#,
    r#"DESCRIBE PROPOSITION TYPES CURSOR "abc" LIMIT 2"#,
    r#"EXPORT ?x WHERE { ?x {type: "T"} } CURSOR :c"#,
    r#"UPSERT { PROPOSITION { ((?a, "p", {id: "C:1"}), "q", (id: "P:1:p")) EXPECT VERSION :v } WITH METADATA {} CONCEPT ?z { {id: :zid} SET PROPOSITIONS {} } } WITH METADATA { s: 1 } UPSERT {}"#,
];

#[test]
fn edge_cases_round_trip() {
    let mut failures = Vec::new();
    for (i, t) in EDGE_CASES.iter().enumerate() {
        if let Err(e) = kip_lang::parse(t) {
            failures.push(format!("edge case {i} does not parse: {e}"));
            continue;
        }
        check(&format!("edge case {i}"), t, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_and_fixtures_round_trip() {
    if !common::shared_available() {
        eprintln!("skip: {} is absent", common::SHARED);
        return;
    }
    let mut failures = Vec::new();
    let mut n = 0;
    for (_, samples) in common::corpus() {
        for s in samples {
            n += check(&s.origin, &s.text, &mut failures) as usize;
        }
    }
    for c in common::fixture_commands() {
        n += check(&c.origin, &c.text, &mut failures) as usize;
    }
    println!("round-tripped {n} scripts");
    assert!(n > 300);
    assert!(
        failures.is_empty(),
        "{} round-trip failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
