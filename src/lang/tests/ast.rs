//! The AST produced for each construct of the language.

use kip_lang::ast::*;
use serde_json::json;

fn parse1(text: &str) -> Command {
    let mut s = kip_lang::parse(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
    assert_eq!(s.commands.len(), 1);
    s.commands.remove(0)
}

fn find(text: &str) -> FindQuery {
    match parse1(text) {
        Command::Find(q) => q,
        other => panic!("not a FIND: {other:?}"),
    }
}

fn filter(expr: &str) -> Expr {
    let q = find(&format!("FIND(?a) WHERE {{ FILTER({expr}) }}"));
    match q.where_clauses.into_iter().next() {
        Some(WhereClause::Filter(e)) => e,
        other => panic!("{other:?}"),
    }
}

fn lit(s: &str) -> StrArg {
    Bindable::Lit(s.to_string())
}

fn path(var: &str, field: PathField) -> Expr {
    Expr::Path(DotPath {
        var: var.into(),
        field,
    })
}

fn val(v: serde_json::Value) -> Expr {
    Expr::Value(ValueOrParam::Value(v))
}

#[test]
fn comments_whitespace_and_keys() {
    let a = kip_lang::parse(
        "// leading comment\nUPSERT { // after brace\n CONCEPT ?c // handle\n { {type: \"T\", // mid selector\n name: \"n\"}\n SET ATTRIBUTES { a: 1, // trailing\n \"b\": \"x // not a comment\" }\n } // end\n}\n// final comment",
    )
    .unwrap();
    let b = kip_lang::parse("UPSERT{CONCEPT ?c{{\"name\":\"n\",\"type\":\"T\"}SET ATTRIBUTES{\"a\":1,b:\"x // not a comment\"}}}").unwrap();
    assert_eq!(a, b);
}

#[test]
fn byte_order_mark_is_ignored() {
    assert_eq!(
        kip_lang::parse("\u{FEFF}DESCRIBE PRIMER").unwrap(),
        kip_lang::parse("DESCRIBE PRIMER").unwrap()
    );
}

#[test]
fn json_values() {
    let Command::Upsert(u) = parse1(
        r#"UPSERT { CONCEPT ?c { {type: "T", name: "n"} SET ATTRIBUTES {
            s: "tab\t quote\" slash\/ uni\u00e9 emoji\ud83d\ude00 :notparam",
            i: 42, n: -7, f: 3.25, e: 1.5e3, ne: -2E-2, z: 0, big: 18446744073709551615,
            t: true, fl: false, nul: null, arr: [1, "two", [3], {}], obj: {"k k": {inner: [true]}},
            p: :param, nested: [1, :inner]
        } } }"#,
    ) else {
        panic!()
    };
    let UpsertItem::Concept(c) = &u.items[0] else {
        panic!()
    };
    let attrs = c.set_attributes.as_ref().unwrap();
    let get = |k: &str| attrs.iter().find(|f| f.key == k).unwrap().value.clone();
    assert_eq!(
        get("s"),
        ValueOrParam::Value(json!("tab\t quote\" slash/ unié emoji😀 :notparam"))
    );
    assert_eq!(get("i"), ValueOrParam::Value(json!(42)));
    assert_eq!(get("n"), ValueOrParam::Value(json!(-7)));
    assert_eq!(get("f"), ValueOrParam::Value(json!(3.25)));
    assert_eq!(get("e"), ValueOrParam::Value(json!(1500.0)));
    assert_eq!(get("ne"), ValueOrParam::Value(json!(-0.02)));
    assert_eq!(get("z"), ValueOrParam::Value(json!(0)));
    assert_eq!(
        get("big"),
        ValueOrParam::Value(json!(18446744073709551615u64))
    );
    assert_eq!(get("t"), ValueOrParam::Value(json!(true)));
    assert_eq!(get("nul"), ValueOrParam::Value(json!(null)));
    assert_eq!(get("arr"), ValueOrParam::Value(json!([1, "two", [3], {}])));
    assert_eq!(
        get("obj"),
        ValueOrParam::Value(json!({"k k": {"inner": [true]}}))
    );
    assert_eq!(get("p"), ValueOrParam::Param("param".into()));
    assert_eq!(
        get("nested"),
        ValueOrParam::Array(vec![
            ValueOrParam::Value(json!(1)),
            ValueOrParam::Param("inner".into())
        ])
    );
    // Object key order is preserved.
    let keys: Vec<&str> = attrs.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys[..3], ["s", "i", "n"]);
}

#[test]
fn dot_paths() {
    let q = find("FIND(?a, ?a.id, ?a.type, ?a.name, ?l.subject, ?l.predicate, ?l.object, ?a.attributes, ?a.attributes.k, ?a.metadata, ?a.metadata._version) WHERE {}");
    let fields: Vec<PathField> = q
        .projections
        .into_iter()
        .map(|p| match p {
            Projection::Path(d) => d.field,
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        fields,
        vec![
            PathField::Whole,
            PathField::Id,
            PathField::Type,
            PathField::Name,
            PathField::Subject,
            PathField::Predicate,
            PathField::Object,
            PathField::Attributes(None),
            PathField::Attributes(Some("k".into())),
            PathField::Metadata(None),
            PathField::Metadata(Some("_version".into())),
        ]
    );
}

#[test]
fn aggregations_and_modifiers() {
    let q = find(
        "FIND(?d.name, COUNT(?s), COUNT(DISTINCT ?s), SUM(?s.attributes.n), AVG(?s.attributes.n), MIN(?s.attributes.n), MAX(?s.attributes.n)) WHERE { ?d {type: \"D\"} } ORDER BY COUNT(?s) DESC, ?d.name LIMIT 10 CURSOR \"c1\"",
    );
    let aggs: Vec<(AggFunc, bool)> = q
        .projections
        .iter()
        .filter_map(|p| match p {
            Projection::Aggregate(a) => Some((a.func, a.distinct)),
            _ => None,
        })
        .collect();
    assert_eq!(
        aggs,
        vec![
            (AggFunc::Count, false),
            (AggFunc::Count, true),
            (AggFunc::Sum, false),
            (AggFunc::Avg, false),
            (AggFunc::Min, false),
            (AggFunc::Max, false)
        ]
    );
    assert_eq!(q.order_by.len(), 2);
    assert_eq!(q.order_by[0].direction, SortDirection::Desc);
    assert!(matches!(q.order_by[0].expr, Projection::Aggregate(_)));
    assert_eq!(q.order_by[1].direction, SortDirection::Asc);
    assert_eq!(q.limit, Some(Bindable::Lit(10)));
    assert_eq!(q.cursor, Some(lit("c1")));
    // Modifiers in another order give the same query.
    let q2 = find(
        "FIND(?d.name, COUNT(?s), COUNT(DISTINCT ?s), SUM(?s.attributes.n), AVG(?s.attributes.n), MIN(?s.attributes.n), MAX(?s.attributes.n)) WHERE { ?d {type: \"D\"} } CURSOR \"c1\" LIMIT 10 ORDER BY COUNT(?s) DESC, ?d.name ASC",
    );
    assert_eq!(q, q2);
}

#[test]
fn concept_selectors() {
    let q = find(
        r#"FIND(?a) WHERE { ?a {id: "C:1"} ?b {type: "T", name: "n"} ?c {name: "n", type: "T"} ?d {type: "T"} ?e {name: :n} }"#,
    );
    let sels: Vec<ConceptSelector> = q
        .where_clauses
        .into_iter()
        .map(|c| match c {
            WhereClause::Concept { selector, .. } => selector,
            _ => panic!(),
        })
        .collect();
    assert_eq!(sels[0], ConceptSelector::Id(lit("C:1")));
    assert_eq!(
        sels[1],
        ConceptSelector::TypeName {
            type_name: lit("T"),
            name: lit("n")
        }
    );
    assert_eq!(sels[1], sels[2]);
    assert_eq!(sels[3], ConceptSelector::Type(lit("T")));
    assert_eq!(sels[4], ConceptSelector::Name(Bindable::Param("n".into())));
}

#[test]
fn proposition_clauses() {
    let q = find(
        r#"FIND(?l) WHERE {
            ?l (id: "P:1:treats")
            ?m (?a, "treats", {type: "S", name: "H"})
            (?a, ?p, ?b)
            (?u, "stated", (?s, "p", ?o))
            (?a, "follows"{1,5}, ?b)
            (?a, "follows"{2,}, ?b)
            (?a, "follows"{3}, ?b)
            (?a, "follows" | "connects" | "links", ?b)
            ("C:1", "p", :obj)
        }"#,
    );
    let pats: Vec<(Option<String>, PropPattern)> = q
        .where_clauses
        .into_iter()
        .map(|c| match c {
            WhereClause::Proposition { var, pattern } => (var, pattern),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        pats[0],
        (Some("l".into()), PropPattern::Id(lit("P:1:treats")))
    );
    assert_eq!(pats[1].0.as_deref(), Some("m"));
    let triple = |i: usize| match &pats[i].1 {
        PropPattern::Triple(t) => (**t).clone(),
        _ => panic!(),
    };
    assert_eq!(
        triple(1).object,
        Endpoint::Concept(ConceptSelector::TypeName {
            type_name: lit("S"),
            name: lit("H")
        })
    );
    assert_eq!(pats[2].0, None);
    assert_eq!(triple(2).predicate, Predicate::Var("p".into()));
    assert!(matches!(triple(3).object, Endpoint::Proposition(_)));
    assert_eq!(
        triple(4).predicate,
        Predicate::Hops {
            predicates: vec![lit("follows")],
            range: HopRange {
                min: 1,
                max: Some(5)
            }
        }
    );
    assert_eq!(
        triple(5).predicate,
        Predicate::Hops {
            predicates: vec![lit("follows")],
            range: HopRange { min: 2, max: None }
        }
    );
    assert_eq!(
        triple(6).predicate,
        Predicate::Hops {
            predicates: vec![lit("follows")],
            range: HopRange {
                min: 3,
                max: Some(3)
            }
        }
    );
    assert_eq!(
        triple(7).predicate,
        Predicate::Alternatives(vec![lit("follows"), lit("connects"), lit("links")])
    );
    assert_eq!(triple(8).subject, Endpoint::Id(lit("C:1")));
    assert_eq!(
        triple(8).object,
        Endpoint::Id(Bindable::Param("obj".into()))
    );
}

/// A hop range after alternatives quantifies the whole alternation; the
/// parenthesized group is the same walk.
#[test]
fn hops_over_predicate_alternatives() {
    let predicate = |p: &str| {
        let q = find(&format!("FIND(?b) WHERE {{ (?a, {p}, ?b) }}"));
        match q.where_clauses.into_iter().next() {
            Some(WhereClause::Proposition {
                pattern: PropPattern::Triple(t),
                ..
            }) => t.predicate,
            other => panic!("{other:?}"),
        }
    };
    let walk = Predicate::Hops {
        predicates: vec![lit("follows"), lit("knows")],
        range: HopRange {
            min: 1,
            max: Some(3),
        },
    };
    assert_eq!(predicate(r#""follows" | "knows"{1,3}"#), walk);
    assert_eq!(predicate(r#"("follows" | "knows"){1,3}"#), walk);
    assert_eq!(predicate(r#"( "follows"|"knows" ) {1,3}"#), walk);
    assert_eq!(
        predicate(r#"("a" | :b | "c"){0,}"#),
        Predicate::Hops {
            predicates: vec![lit("a"), Bindable::Param("b".into()), lit("c")],
            range: HopRange { min: 0, max: None },
        }
    );
    // A group without a range is a plain literal / alternation.
    assert_eq!(predicate(r#"("a")"#), Predicate::Literal(lit("a")));
    assert_eq!(
        predicate(r#"("a" | "b")"#),
        Predicate::Alternatives(vec![lit("a"), lit("b")])
    );
    assert_eq!(
        predicate(r#"("a"){2}"#),
        Predicate::Hops {
            predicates: vec![lit("a")],
            range: HopRange {
                min: 2,
                max: Some(2)
            },
        }
    );
    // Canonical printing uses the parenthesized group.
    let q = kip_lang::parse(r#"FIND(?b) WHERE { (?a, "follows" | "knows"{1,3}, ?b) }"#).unwrap();
    assert!(
        kip_lang::print(&q).contains(r#"("follows" | "knows"){1,3}"#),
        "{}",
        kip_lang::print(&q)
    );
}

#[test]
fn filter_precedence() {
    let a = || path("a", PathField::Name);
    let cmp = |op, l: Expr, r: Expr| Expr::Compare {
        op,
        left: Box::new(l),
        right: Box::new(r),
    };
    // && binds tighter than ||.
    assert_eq!(
        filter(r#"?a.name == "x" || ?a.name == "y" && ?a.id != "z""#),
        Expr::Or(vec![
            cmp(CompareOp::Eq, a(), val(json!("x"))),
            Expr::And(vec![
                cmp(CompareOp::Eq, a(), val(json!("y"))),
                cmp(CompareOp::Ne, path("a", PathField::Id), val(json!("z")))
            ]),
        ])
    );
    // ! binds tighter than comparison.
    assert_eq!(
        filter("!?a.name == true"),
        cmp(CompareOp::Eq, Expr::Not(Box::new(a())), val(json!(true)))
    );
    // Parentheses regroup; chains flatten.
    assert_eq!(
        filter("(?a.name < 1 || ?a.name > 2) && ?a.name <= 3 && ?a.name >= 0"),
        Expr::And(vec![
            Expr::Or(vec![
                cmp(CompareOp::Lt, a(), val(json!(1))),
                cmp(CompareOp::Gt, a(), val(json!(2)))
            ]),
            cmp(CompareOp::Le, a(), val(json!(3))),
            cmp(CompareOp::Ge, a(), val(json!(0))),
        ])
    );
    // Functions.
    assert_eq!(
        filter(
            r#"IN(?a.name, ["x", "y"]) && !IS_NULL(?a.id) && IS_NOT_NULL(?a.type) && CONTAINS(?a.name, "x") && STARTS_WITH(?a.name, "x") && ENDS_WITH(?a.name, "x") && REGEX(?a.name, "^x")"#
        ),
        Expr::And(vec![
            Expr::Call {
                func: FilterFunc::In,
                args: vec![a(), val(json!(["x", "y"]))]
            },
            Expr::Not(Box::new(Expr::Call {
                func: FilterFunc::IsNull,
                args: vec![path("a", PathField::Id)]
            })),
            Expr::Call {
                func: FilterFunc::IsNotNull,
                args: vec![path("a", PathField::Type)]
            },
            Expr::Call {
                func: FilterFunc::Contains,
                args: vec![a(), val(json!("x"))]
            },
            Expr::Call {
                func: FilterFunc::StartsWith,
                args: vec![a(), val(json!("x"))]
            },
            Expr::Call {
                func: FilterFunc::EndsWith,
                args: vec![a(), val(json!("x"))]
            },
            Expr::Call {
                func: FilterFunc::Regex,
                args: vec![a(), val(json!("^x"))]
            },
        ])
    );
    // A predicate variable compared bare.
    assert_eq!(
        filter(r#"?p != "belongs_to_domain""#),
        cmp(
            CompareOp::Ne,
            path("p", PathField::Whole),
            val(json!("belongs_to_domain"))
        )
    );
}

#[test]
fn nested_blocks() {
    let q = find(
        r#"FIND(?d) WHERE { ?d {type: "D"} OPTIONAL { (?d, "p", ?x) NOT { (?x, "q", ?y) } } UNION { ?d {type: "E"} UNION { ?d {type: "F"} } } }"#,
    );
    assert!(
        matches!(&q.where_clauses[1], WhereClause::Optional(b) if matches!(b[1], WhereClause::Not(_)))
    );
    assert!(
        matches!(&q.where_clauses[2], WhereClause::Union(b) if matches!(b[1], WhereClause::Union(_)))
    );
}

#[test]
fn upsert_blocks() {
    let s = kip_lang::parse(
        r#"UPSERT {
            CONCEPT ?a {
                {type: "T", name: "a"}
                EXPECT VERSION 0
                SET ATTRIBUTES { x: 1 }
                SET PROPOSITIONS {
                    ("p", ?b)
                    ("q", {type: "T", name: "z"}) WITH METADATA { confidence: 0.5 }
                    ("r", {id: "C:1"}), ("s", (id: "P:1:p")), ("t", (?a, "p", {type: "T", name: "z"}))
                }
            }
            WITH METADATA { m: 1 }
            PROPOSITION ?l { (?a, "p", ?b) EXPECT VERSION :v SET ATTRIBUTES { w: 2 } } WITH METADATA { m: 2 }
            PROPOSITION { (id: "P:9:x") }
        }
        WITH METADATA { source: "s" }
        UPSERT { CONCEPT ?z { {id: "C:2"} } }"#,
    )
    .unwrap();
    assert_eq!(s.commands.len(), 2);
    let Command::Upsert(u) = &s.commands[0] else {
        panic!()
    };
    assert_eq!(u.items.len(), 3);
    let UpsertItem::Concept(c) = &u.items[0] else {
        panic!()
    };
    assert_eq!(c.handle, "a");
    assert_eq!(c.expect_version, Some(Bindable::Lit(0)));
    let props = c.set_propositions.as_ref().unwrap();
    assert_eq!(props.len(), 5);
    assert_eq!(props[0].target, Endpoint::Var("b".into()));
    assert!(props[1].metadata.is_some());
    assert_eq!(
        props[2].target,
        Endpoint::Concept(ConceptSelector::Id(lit("C:1")))
    );
    assert_eq!(
        props[3].target,
        Endpoint::Proposition(Box::new(PropPattern::Id(lit("P:1:p"))))
    );
    assert!(
        matches!(&props[4].target, Endpoint::Proposition(p) if matches!(**p, PropPattern::Triple(_)))
    );
    assert_eq!(c.metadata.as_ref().unwrap()[0].key, "m");
    let UpsertItem::Proposition(p) = &u.items[1] else {
        panic!()
    };
    assert_eq!(p.handle.as_deref(), Some("l"));
    assert_eq!(p.expect_version, Some(Bindable::Param("v".into())));
    let UpsertItem::Proposition(p) = &u.items[2] else {
        panic!()
    };
    assert_eq!(p.handle, None);
    assert_eq!(p.identity, PropPattern::Id(lit("P:9:x")));
    assert!(u.metadata.is_some());
    assert!(s.commands.iter().all(Command::is_kml));
}

#[test]
fn update_merge_delete() {
    let Command::Update(u) = parse1(
        "UPDATE ?p SET ATTRIBUTES { n: ADD(COALESCE(?p.attributes.n, 0), 1), s: \"x\" } WHERE { ?p {type: \"P\"} } LIMIT 5",
    ) else {
        panic!()
    };
    assert_eq!(u.target, "p");
    assert!(u.set_metadata.is_none());
    let f = &u.set_attributes.as_ref().unwrap()[0];
    assert_eq!(
        f.value,
        UpdateExpr::Call {
            func: UpdateFunc::Add,
            args: vec![
                UpdateExpr::Call {
                    func: UpdateFunc::Coalesce,
                    args: vec![
                        UpdateExpr::Path(DotPath {
                            var: "p".into(),
                            field: PathField::Attributes(Some("n".into()))
                        }),
                        UpdateExpr::Value(ValueOrParam::Value(json!(0)))
                    ]
                },
                UpdateExpr::Value(ValueOrParam::Value(json!(1)))
            ]
        }
    );
    assert_eq!(u.limit, Some(Bindable::Lit(5)));

    let Command::Merge(m) = parse1("MERGE CONCEPT ?dup INTO ?c WHERE { ?dup {type: \"S\", name: \"JS\"} ?c {type: \"S\", name: \"JavaScript\"} }") else {
        panic!()
    };
    assert_eq!(
        (m.source.as_str(), m.target.as_str(), m.where_clauses.len()),
        ("dup", "c", 2)
    );

    assert!(matches!(
        parse1(r#"DELETE ATTRIBUTES {"a", b} FROM ?x WHERE { ?x {type: "T"} }"#),
        Command::Delete(Delete::Attributes { ref keys, ref target, .. }) if keys == &vec![lit("a"), lit("b")] && target == "x"
    ));
    assert!(matches!(
        parse1(r#"DELETE METADATA {"m"} FROM ?x WHERE { ?x {type: "T"} }"#),
        Command::Delete(Delete::Metadata { .. })
    ));
    assert!(matches!(
        parse1(r#"DELETE PROPOSITIONS ?l WHERE { ?l (?s, "p", ?o) }"#),
        Command::Delete(Delete::Propositions { .. })
    ));
    assert!(matches!(
        parse1(r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "T"} }"#),
        Command::Delete(Delete::Concept { .. })
    ));
}

#[test]
fn meta_commands() {
    assert_eq!(
        parse1("DESCRIBE PRIMER"),
        Command::Describe(Describe::Primer)
    );
    assert_eq!(
        parse1("DESCRIBE DOMAINS"),
        Command::Describe(Describe::Domains)
    );
    assert_eq!(
        parse1("DESCRIBE CONCEPT TYPES"),
        Command::Describe(Describe::ConceptTypes {
            limit: None,
            cursor: None
        })
    );
    assert_eq!(
        parse1("DESCRIBE PROPOSITION TYPES LIMIT 5 CURSOR :c"),
        Command::Describe(Describe::PropositionTypes {
            limit: Some(Bindable::Lit(5)),
            cursor: Some(Bindable::Param("c".into()))
        })
    );
    assert_eq!(
        parse1("DESCRIBE CONCEPT TYPE \"Drug\""),
        Command::Describe(Describe::ConceptType(lit("Drug")))
    );
    assert_eq!(
        parse1("DESCRIBE PROPOSITION TYPE \"treats\""),
        Command::Describe(Describe::PropositionType(lit("treats")))
    );
    assert_eq!(
        parse1("SEARCH CONCEPT \"headache relief\" LIMIT 10 THRESHOLD 0.75 MODE \"semantic\" WITH TYPE \"Drug\""),
        Command::Search(Search {
            target: SearchTarget::Concept,
            term: lit("headache relief"),
            with_type: Some(lit("Drug")),
            mode: Some(Bindable::Lit(SearchMode::Semantic)),
            threshold: Some(Bindable::Lit(0.75)),
            limit: Some(Bindable::Lit(10)),
        })
    );
    assert!(matches!(
        parse1("SEARCH PROPOSITION \"treats\""),
        Command::Search(Search {
            target: SearchTarget::Proposition,
            ..
        })
    ));
    let Command::Export(e) = parse1(
        "EXPORT ?x WHERE { ?x {type: \"D\"} UNION { ?x (?s, \"p\", ?o) } } LIMIT 500 CURSOR \"t\"",
    ) else {
        panic!()
    };
    assert_eq!(
        (e.target.as_str(), e.limit, e.cursor),
        ("x", Some(Bindable::Lit(500)), Some(lit("t")))
    );
}

#[test]
fn serializes_to_json() {
    let s = kip_lang::parse("FIND(?a.name) WHERE { ?a {type: \"T\"} } LIMIT :n").unwrap();
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["commands"][0]["Find"]["limit"], json!({"Param": "n"}));
}
