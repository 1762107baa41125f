//! Error codes, positions and readable messages.

use kip_lang::{ErrorCode, KipError};

fn err(text: &str) -> KipError {
    kip_lang::parse(text).expect_err(text)
}

#[test]
fn all_codes_have_wire_names() {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        codes,
        [
            "KIP_1001", "KIP_1002", "KIP_2001", "KIP_2002", "KIP_2003", "KIP_3001", "KIP_3002",
            "KIP_3003", "KIP_3004", "KIP_3005", "KIP_4001", "KIP_4002", "KIP_4003"
        ]
    );
    for c in ErrorCode::ALL {
        assert_eq!(ErrorCode::from_code(c.as_str()), Some(c));
        assert!(!c.default_hint().is_empty());
        assert!(!c.name().is_empty());
    }
    assert_eq!(ErrorCode::from_code("KIP_9999"), None);
}

#[test]
fn json_shape() {
    let e = KipError::new(ErrorCode::NotFound, "no such node");
    assert_eq!(
        e.to_json(),
        serde_json::json!({"code": "KIP_3002", "message": "no such node"})
    );
    let e = KipError::syntax("bad").with_hint("fix it");
    assert_eq!(
        e.to_json(),
        serde_json::json!({"code": "KIP_1001", "message": "bad", "hint": "fix it"})
    );
    assert_eq!(e.to_string(), "KIP_1001: bad (hint: fix it)");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().starts_with("KIP_1001"));
}

#[test]
fn syntax_errors_name_position_and_expectation() {
    let cases: &[(&str, &str)] = &[
        ("FIND ?x WHERE {{{", "line 1, column 6: expected '('"),
        ("FIND(?x) WHERE {\n  ?x {type: \"Drug\"}\n", "line 3, column 1: expected a WHERE clause"),
        ("find(?x) WHERE { ?x {type: \"Drug\"} }", "expected a command"),
        ("", "found end of input"),
        ("FIND(?x) WHERE { ?x {type: \"Drug\"} } LIMIT \"a\"", "expected a parameter like :name or a number"),
        ("DESCRIBE CONCEPT TYPE", "expected a string or :parameter"),
        ("FIND(?x) WHERE { ?x {type: \"Drug\"} FILTER(?x.name == ) }", "expected an expression"),
        ("UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} SET ATTRIBUTES { a: 1 } EXPECT VERSION 2 } }", "expected SET or '}'"),
        // Words that depend on the command: WITH TYPE in SEARCH, and no
        // other command after one that must stand alone.
        ("SEARCH CONCEPT \"x\" WITH TYP \"Drug\"", "expected TYPE, found `TYP`"),
        ("DESCRIBE CONCEPT FOO", "expected TYPES or TYPE"),
        ("DESCRIBE NOTHING", "DOMAINS"),
    ];
    for (text, needle) in cases {
        let e = err(text);
        assert_eq!(e.code, ErrorCode::InvalidSyntax, "{text}");
        assert!(
            e.message.contains(needle),
            "{text}\n  got: {}\n  want: {needle}",
            e.message
        );
        assert!(!e.message.contains("Rule::"), "{}", e.message);
        assert!(e.hint.is_some());
    }
}

#[test]
fn no_other_command_is_offered_after_one_that_stands_alone() {
    let e = err("SEARCH CONCEPT \"x\" LIMIT 2 FOO");
    assert!(e.message.contains("WITH TYPE") && !e.message.contains("WITH METADATA"), "{}", e.message);
    for text in ["SEARCH CONCEPT \"x\" LIMIT 2 FOO", "FIND(?x) WHERE { ?x {type: \"D\"} } FOO"] {
        let e = err(text);
        for other in ["UPSERT", "UPDATE", "EXPORT"] {
            assert!(!e.message.contains(other), "{text}: {}", e.message);
        }
    }
    // After an UPSERT, another UPSERT may follow, and nothing else.
    let e = err("UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} } } FOO");
    assert!(e.message.contains("UPSERT") && !e.message.contains("FIND"), "{}", e.message);
    // A comment before the command changes nothing.
    let e = err("// a note\n  // another\nSEARCH CONCEPT \"x\" LIMIT 2 FOO");
    assert!(e.message.contains("WITH TYPE") && !e.message.contains("UPSERT"), "{}", e.message);
}

#[test]
fn a_number_cut_short_gets_the_json_number_hint() {
    for text in [
        "FIND(?x) WHERE { ?x {type: \"T\"} FILTER(?x.attributes.n == 007) }",
        "FIND(?x) WHERE { ?x {type: \"T\"} FILTER(?x.attributes.n == 1.) }",
        "FIND(?x) WHERE { ?x {type: \"T\"} FILTER(?x.attributes.n == 1e) }",
    ] {
        assert!(err(text).hint.unwrap().contains("Numbers are written as in JSON"), "{text}");
    }
    assert!(!err("FIND(?x) WHERE { ?x {type: \"T\"} FILTER(?x.name == \"a\" ?) }").hint.unwrap().contains("Numbers"));
}

#[test]
fn hints_for_common_mistakes() {
    assert!(err("find(?x) WHERE {}").hint.unwrap().contains("uppercase"));
    assert!(err("FIND(?x) WHERE { ?x {type: 'Drug'} }")
        .hint
        .unwrap()
        .contains("double quotes"));
    assert!(err(
        "UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} SET ATTRIBUTES {} EXPECT VERSION 1 } }"
    )
    .hint
    .unwrap()
    .contains("EXPECT VERSION"));
    assert!(err("DESCRIBE DOMAINS LIMIT 2").hint.unwrap().contains("Only DESCRIBE CONCEPT TYPES"));
    assert!(err("DESCRIBE PRIMER CURSOR \"x\"").hint.unwrap().contains("take LIMIT and CURSOR"));
}

#[test]
fn structural_errors() {
    let cases: &[(&str, &str)] = &[
        ("FIND(?x) WHERE { ?x {type: \"Drug\", color: \"red\"} }", "unknown key 'color'"),
        ("FIND(?x) WHERE { ?x {id: \"C:1\", type: \"Drug\"} }", "cannot also have"),
        ("FIND(?x) WHERE { ?x {} }", "empty concept clause"),
        ("FIND(?x) WHERE { ?x {type: 3} }", "must be a string"),
        ("FIND(?x) WHERE { ?x {type: \"A\", type: \"B\"} }", "more than once"),
        ("FIND(?x) WHERE { (?x, ?p{1,3}, ?y) }", "predicate variable"),
        ("FIND(?x) WHERE { (?x, ?p | \"a\", ?y) }", "predicate variable"),
        ("FIND(?x) WHERE { (?x, ?p | \"a\"{1,2}, ?y) }", "predicate variable"),
        ("FIND(?x) WHERE { (?x, \"a\"{1,2} | \"b\", ?y) }", "hop range must come last"),
        ("FIND(?x) WHERE { (?x, \"a\"{1,2}{3}, ?y) }", "hop range must come last"),
        ("FIND(?x) WHERE { (?x, (\"a\" | \"b\"){1,2} | \"c\", ?y) }", "hop range must come last"),
        ("FIND(?x) WHERE { (?x, (\"a\" | \"b\"){2,1}, ?y) }", "minimum above its maximum"),
        ("UPSERT { PROPOSITION { (?a, (\"p\" | \"q\"){1,2}, ?b) } }", "single literal predicate"),
        ("FIND(?x) WHERE { (?x, \"p\"{3,1}, ?y) }", "minimum above its maximum"),
        ("FIND(?x) WHERE { (?x, \"p\"{1.5}, ?y) }", "hop count"),
        ("FIND(?x.foo) WHERE { ?x {type: \"Drug\"} }", "unknown field 'foo'"),
        ("FIND(?x.name.first) WHERE { ?x {type: \"Drug\"} }", "no sub-fields"),
        ("FIND(?x.attributes.a.b) WHERE { ?x {type: \"Drug\"} }", "nested keys"),
        ("FIND(SUM(DISTINCT ?x)) WHERE { ?x {type: \"Drug\"} }", "DISTINCT is only allowed in COUNT"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} } LIMIT -1", "non-negative integer"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} } LIMIT 2.5", "non-negative integer"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} } LIMIT 1 LIMIT 2", "LIMIT given more than once"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} FILTER(IS_NULL(?x.name, 1)) }", "IS_NULL takes 1 argument, got 2"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} FILTER(CONTAINS(?x.name)) }", "CONTAINS takes 2 arguments"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} FILTER(IN(?x.name, \"a\")) }", "second argument of IN"),
        ("FIND(?x) WHERE { ?x {name: \"bad \\q escape\"} }", "invalid escape"),
        ("FIND(?x) WHERE { ?x {name: \"\\ud800\"} }", "surrogate"),
        ("FIND(?x) WHERE { ?x {type: \"T\"} FILTER(?x.attributes.n > 1e999) }", "out of range"),
        ("DELETE CONCEPT ?x WHERE { ?x {type: \"Drug\"} }", "requires DETACH"),
        ("UPSERT { CONCEPT ?x { {type: \"Drug\"} } }", "{type: …, name: …} or {id: …}"),
        ("UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} SET ATTRIBUTES {} SET ATTRIBUTES {} } }", "more than once"),
        ("UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} SET PROPOSITIONS { (\"p\", {type: \"T\"}) } } }", "concept reference"),
        ("UPSERT { PROPOSITION { (?a, ?p, ?b) } }", "single literal predicate"),
        ("UPSERT { PROPOSITION { (?a, \"p\"{1,2}, ?b) } }", "single literal predicate"),
        ("UPSERT { PROPOSITION { (?a, \"p\", ?b) SET PROPOSITIONS { (\"q\", ?a) } } }", "only valid in a CONCEPT block"),
        ("UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} EXPECT VERSION -1 } }", "EXPECT VERSION must be a non-negative integer"),
        ("UPDATE ?x SET ATTRIBUTES { a: ADD(?y.attributes.a, 1) } WHERE { ?x {type: \"A\"} }", "only read the target ?x"),
        ("UPDATE ?x SET ATTRIBUTES { a: CLAMP(1, 2) } WHERE { ?x {type: \"A\"} }", "CLAMP takes 3 arguments"),
        ("UPDATE ?x SET METADATA {} SET METADATA {} WHERE { ?x {type: \"A\"} }", "SET METADATA given more than once"),
        ("SEARCH CONCEPT \"x\" MODE \"fast\"", "unknown search MODE"),
        ("SEARCH CONCEPT \"x\" THRESHOLD 1.5", "between 0 and 1"),
        ("SEARCH CONCEPT \"x\" LIMIT 1 LIMIT 2", "more than once"),
        ("DESCRIBE CONCEPT TYPES LIMIT 1 LIMIT 2", "more than once"),
        ("FIND(?x) WHERE { ?x {type: \"D\"} } FIND(?y) WHERE { ?y {type: \"D\"} }", "must be the only command"),
        ("UPSERT {} SEARCH CONCEPT \"x\"", "SEARCH must be the only command"),
    ];
    for (text, needle) in cases {
        let e = err(text);
        assert_eq!(e.code, ErrorCode::InvalidSyntax, "{text}: {e}");
        assert!(
            e.message.contains(needle),
            "{text}\n  got: {}\n  want: {needle}",
            e.message
        );
        assert!(e.message.starts_with("line "), "no position: {}", e.message);
        // Every parse error tells the agent how to mend the command.
        assert!(e.hint.is_some(), "no hint: {text}: {}", e.message);
    }
}

#[test]
fn illegal_identifiers_are_kip_1002() {
    let cases: &[(&str, &str)] = &[
        ("FIND(?1x) WHERE { ?1x {type: \"Drug\"} }", "'1x'"),
        ("FIND(?x) WHERE { ?x {type: :9p} }", "'9p'"),
        (
            "FIND(?x.attributes.2nd) WHERE { ?x {type: \"Drug\"} }",
            "'2nd'",
        ),
        ("FIND(?né) WHERE { ?né {type: \"Drug\"} }", "'né'"),
        (
            "UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} SET ATTRIBUTES { 1a: 1 } } }",
            "'1a'",
        ),
        (
            "DELETE ATTRIBUTES {9lives} FROM ?x WHERE { ?x {type: \"D\"} }",
            "'9lives'",
        ),
    ];
    for (text, needle) in cases {
        let e = err(text);
        assert_eq!(e.code, ErrorCode::InvalidIdentifier, "{text}: {e}");
        assert!(e.message.contains(needle), "{}", e.message);
        assert!(e.hint.is_some(), "no hint: {text}: {}", e.message);
    }
    // Quoted keys may hold anything.
    assert!(kip_lang::parse(
        "UPSERT { CONCEPT ?x { {type: \"D\", name: \"A\"} SET ATTRIBUTES { \"1a-b c\": 1 } } }"
    )
    .is_ok());
}

#[test]
fn positions_are_line_and_column() {
    let text = "FIND(?x)\nWHERE {\n  ?x {type: \"Drug\"}\n  FILTER(?x.bogus == 1)\n}";
    let e = err(text);
    assert!(e.message.starts_with("line 4, column 10:"), "{}", e.message);
}

#[test]
fn deep_nesting_is_kip_1001() {
    let e = err(&format!(
        "FIND(?x) WHERE {{ ?x {{type: {}\"a\"{} }} }}",
        "[".repeat(200),
        "]".repeat(200)
    ));
    assert_eq!(e.code, ErrorCode::InvalidSyntax);
    assert!(
        e.message.contains("nesting deeper than 160"),
        "{}",
        e.message
    );
}
