//! Database-free tests of the compiler: each clause kind compiled from KIP
//! text with hand-made catalog facts, and the generated SQL and bind
//! parameters compared with what they must be.

use super::env::{Env, Facts, Limits};
use super::export::{page_sql, rank_page_sql, Rank};
use super::find::compile_find;
use super::kml_bulk::{bulk_sql, BulkAction};
use super::kml_match::{pair_sql, targets_sql};
use super::pattern::compile_pattern;
use super::{Params, SqlParam};
use kip_lang::ast::{Command, WhereClause};
use kip_lang::{ErrorCode, KipError};

const SPACE: &str = "s";

fn command(text: &str) -> Command {
    let script = kip_lang::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    let bound = kip_lang::bind(script, &serde_json::Map::new()).unwrap();
    bound.commands.into_iter().next().unwrap()
}

fn clauses(body: &str) -> Vec<WhereClause> {
    match command(&format!("FIND(?x) WHERE {{ {body} }}")) {
        Command::Find(q) => q.where_clauses,
        _ => unreachable!(),
    }
}

fn env(facts: &Facts) -> Env<'_> {
    Env { space: SPACE, limits: Limits::default(), facts }
}

/// The pattern SQL and its parameters.
fn pattern(body: &str, facts: &Facts) -> Result<(String, Vec<SqlParam>), KipError> {
    let mut params = Params::new();
    let p = compile_pattern(&clauses(body), env(facts), &mut params)?;
    Ok((p.sql, params.values().to_vec()))
}

fn text(s: &str) -> SqlParam {
    SqlParam::Text(s.to_string())
}

fn facts() -> Facts {
    Facts::default().with_concept(3).with_proposition(4, "treats")
}

fn assert_pattern(body: &str, sql: &str, params: Vec<SqlParam>) {
    let (got_sql, got_params) = pattern(body, &facts()).unwrap_or_else(|e| panic!("{body}: {e:?}"));
    assert_eq!(got_sql, sql, "{body}");
    assert_eq!(got_params, params, "{body}");
}

fn pattern_error(body: &str, facts: &Facts) -> KipError {
    pattern(body, facts).expect_err(body)
}

// ------------------------------------------------------------ concept clauses

#[test]
fn concept_clause_by_identity() {
    assert_pattern(
        r#"?x {type: "Drug", name: "A"}"#,
        "SELECT DISTINCT s.v_1 FROM (SELECT c1.id AS v_1 FROM kip.concepts c1 WHERE c1.space = $1::text AND c1.type = $2::text AND c1.name = $3::text) s",
        vec![text(SPACE), text("Drug"), text("A")],
    );
}

#[test]
fn concept_clause_by_id_uses_the_resolved_fact() {
    assert_pattern(
        r#"?x {id: "C:3"}"#,
        "SELECT DISTINCT s.v_1 FROM (SELECT c1.id AS v_1 FROM kip.concepts c1 WHERE c1.space = $1::text AND c1.id = $2::bigint) s",
        vec![text(SPACE), SqlParam::Int(3)],
    );
    // An id that resolve found absent is KIP_3002 in the mandatory pattern...
    let absent = Facts { concepts: [(5, false)].into(), ..Facts::default() };
    assert_eq!(pattern_error(r#"?x {id: "C:5"}"#, &absent).code, ErrorCode::NotFound);
    // ...and matches nothing (row id 0) inside OPTIONAL.
    let (sql, params) = pattern(r#"?y {type: "Drug"} OPTIONAL { (?y, "treats", {id: "C:5"}) }"#, &absent).unwrap();
    assert!(sql.contains("LEFT JOIN LATERAL"), "{sql}");
    assert!(params.contains(&SqlParam::Int(5)), "{params:?}");
    // A link's id where a concept's belongs is malformed there, wherever.
    let link = Facts { propositions: [(9, None)].into(), ..Facts::default() };
    assert_eq!(pattern(r#"?y {type: "Drug"} OPTIONAL { (?y, "treats", {id: "P:9"}) }"#, &link).unwrap_err().code, ErrorCode::InvalidSyntax);
    // An id resolve never looked up is a bug, not a user error.
    assert_eq!(pattern_error(r#"?x {id: "C:6"}"#, &Facts::default()).code, ErrorCode::InternalError);
}

// -------------------------------------------------------- proposition clauses

#[test]
fn proposition_clause() {
    assert_pattern(
        r#"(?x, "treats", ?y)"#,
        "SELECT DISTINCT s.v_1, s.v_2 FROM (SELECT p1.subject AS v_1, p1.object AS v_2 FROM kip.propositions p1 WHERE p1.space = $1::text AND p1.predicate = $2::text) s",
        vec![text(SPACE), text("treats")],
    );
}

#[test]
fn proposition_clause_by_id_checks_the_predicate_part() {
    assert_pattern(
        r#"?l (id: "P:4:treats")"#,
        "SELECT DISTINCT s.v_1 FROM (SELECT p1.id AS v_1 FROM kip.propositions p1 WHERE p1.space = $1::text AND p1.id = $2::bigint) s",
        vec![text(SPACE), SqlParam::Int(4)],
    );
    assert_eq!(pattern_error(r#"?l (id: "P:4:causes")"#, &facts()).code, ErrorCode::NotFound);
}

#[test]
fn unanchored_scan_is_refused_on_large_spaces() {
    let large = Facts { unanchored_over_cap: Some(true), ..Facts::default() };
    assert_eq!(pattern_error("(?s, ?p, ?o)", &large).code, ErrorCode::ResourceExhausted);
    let small = Facts { unanchored_over_cap: Some(false), ..Facts::default() };
    let (sql, _) = pattern("(?s, ?p, ?o)", &small).unwrap();
    assert!(sql.contains("p1.predicate AS v_2"), "{sql}");
    // Anchored through an earlier clause: no guard needed.
    assert!(pattern(r#"?s {type: "Drug"} (?s, ?p, ?o)"#, &Facts::default()).is_ok());
}

// ------------------------------------------------------------------ hop walks

#[test]
fn hop_walk() {
    assert_pattern(
        r#"?x {type: "Drug"} (?x, "treats"{1,3}, ?y)"#,
        "SELECT DISTINCT s.v_1, s.v_2 FROM (SELECT c1.id AS v_1, h2.node AS v_2 FROM kip.concepts c1 CROSS JOIN LATERAL (WITH RECURSIVE w(node, depth) AS (SELECT (c1.id)::bigint AS node, 0 AS depth WHERE (c1.id) IS NOT NULL UNION SELECT p.object, w.depth + 1 FROM w JOIN kip.propositions p ON p.space = $1::text AND p.subject = w.node AND p.predicate = $3::text WHERE w.depth < $5::int) SELECT DISTINCT w.node FROM w WHERE w.depth >= $4::int) h2 WHERE c1.space = $1::text AND c1.type = $2::text) s",
        vec![text(SPACE), text("Drug"), text("treats"), SqlParam::Int(1), SqlParam::Int(3)],
    );
}

#[test]
fn hop_bounds_follow_the_limits() {
    let f = Facts::default();
    let tight = Env { space: SPACE, limits: Limits { max_hops: 2, ..Limits::default() }, facts: &f };
    let mut params = Params::new();
    let err = compile_pattern(&clauses(r#"?x {type: "Drug"} (?x, "treats"{1,3}, ?y)"#), tight, &mut params).unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceExhausted);
    assert!(err.message.contains("exceeds the limit of 2 hops"), "{}", err.message);
    // An open walk explores one level past the cap to detect a deeper graph.
    let mut params = Params::new();
    let open = compile_pattern(&clauses(r#"?x {type: "Drug"} (?x, "treats"{1,}, ?y)"#), tight, &mut params).unwrap();
    assert!(open.sql.contains("kip.hops_exceeded("), "{}", open.sql);
    assert!(params.values().contains(&SqlParam::Int(3)), "{:?}", params.values());
}

#[test]
fn multi_hop_needs_a_grounded_end() {
    assert_eq!(pattern_error(r#"(?x, "treats"{1,3}, ?y)"#, &facts()).code, ErrorCode::InvalidSyntax);
}

// ------------------------------------------------------ OPTIONAL, NOT, UNION

#[test]
fn optional_block() {
    assert_pattern(
        r#"?x {type: "Drug"} OPTIONAL { (?x, "treats", ?y) }"#,
        "SELECT DISTINCT s.v_1, s.v_2 FROM (SELECT c1.id AS v_1, o3.v_1 AS v_2 FROM kip.concepts c1 LEFT JOIN LATERAL (SELECT p2.object AS v_1 FROM kip.propositions p2 WHERE p2.space = $1::text AND p2.subject = c1.id AND p2.predicate = $3::text) o3 ON true WHERE c1.space = $1::text AND c1.type = $2::text) s",
        vec![text(SPACE), text("Drug"), text("treats")],
    );
}

#[test]
fn not_block() {
    assert_pattern(
        r#"?x {type: "Drug"} NOT { (?x, "treats", ?y) }"#,
        "SELECT DISTINCT s.v_1 FROM (SELECT c1.id AS v_1 FROM kip.concepts c1 WHERE c1.space = $1::text AND c1.type = $2::text AND NOT EXISTS (SELECT p2.object AS v_1 FROM kip.propositions p2 WHERE p2.space = $1::text AND p2.subject = c1.id AND p2.predicate = $3::text)) s",
        vec![text(SPACE), text("Drug"), text("treats")],
    );
}

#[test]
fn union_block() {
    assert_pattern(
        r#"?x {type: "Drug"} UNION { ?x {type: "Symptom"} }"#,
        "SELECT DISTINCT s.v_1 FROM (SELECT u3.u_1 AS v_1 FROM (SELECT s.v_1 AS u_1, s.ord AS ord FROM (SELECT c1.id AS v_1, 0 AS ord FROM kip.concepts c1 WHERE c1.space = $1::text AND c1.type = $2::text) s UNION ALL SELECT s.v_1 AS u_1, 1 AS ord FROM (SELECT c2.id AS v_1 FROM kip.concepts c2 WHERE c2.space = $1::text AND c2.type = $3::text) s) u3) s",
        vec![text(SPACE), text("Drug"), text("Symptom")],
    );
}

#[test]
fn independent_clause_groups_are_full_joined() {
    let (sql, _) = pattern(r#"?x {type: "Drug"} ?y {type: "Symptom"}"#, &facts()).unwrap();
    assert!(sql.contains("FULL JOIN"), "{sql}");
}

// ------------------------------------------------------------------- FILTER

#[test]
fn filter_comparisons_and_functions() {
    assert_pattern(
        r#"?x {type: "Drug"} FILTER(?x.attributes.level > 3 && REGEX(?x.name, "^a"))"#,
        "SELECT DISTINCT s.v_1 FROM (SELECT c1.id AS v_1 FROM kip.concepts c1 WHERE c1.space = $1::text AND c1.type = $2::text AND ((coalesce(CASE WHEN jsonb_typeof((c1.attributes -> $3::text)) = 'number' THEN ((c1.attributes -> $3::text))::numeric > $4::numeric ELSE false END, false)) AND (coalesce(c1.name ~ $5::text, false)))) s",
        vec![text(SPACE), text("Drug"), text("level"), SqlParam::Numeric("3".into()), text("^a")],
    );
}

#[test]
fn filter_on_the_name_column_stays_sargable() {
    let (sql, params) = pattern(r#"?x {type: "Drug"} FILTER(?x.name == "A" || IN(?x.type, ["Drug", "Symptom"]))"#, &facts()).unwrap();
    assert!(sql.contains("c1.name = $3::text"), "{sql}");
    assert!(sql.contains("c1.type = ANY($4::text[])"), "{sql}");
    assert_eq!(params[3], SqlParam::TextArray(vec!["Drug".into(), "Symptom".into()]));
}

#[test]
fn attribute_equality_and_in_add_an_indexable_containment() {
    // The containment is the comparison: no type-guarded CASE beside it.
    let (sql, params) = pattern(r#"?x {type: "Drug"} FILTER(?x.attributes.level == 3)"#, &facts()).unwrap();
    assert!(sql.contains("(c1.attributes @> $3::jsonb AND coalesce(c1.attributes @> $3::jsonb, false))"), "{sql}");
    assert!(!sql.contains("CASE"), "{sql}");
    assert_eq!(params[2], SqlParam::Json(serde_json::json!({"level": 3})));
    // Literal on the left, and IN over several values.
    let (sql, params) = pattern(r#"?x {type: "Drug"} FILTER("a" == ?x.attributes.k || IN(?x.attributes.k, ["b", 2]))"#, &facts()).unwrap();
    assert!(sql.contains("(c1.attributes @> $3::jsonb AND coalesce(c1.attributes @> $3::jsonb, false))"), "{sql}");
    let any = "c1.attributes @> ANY (ARRAY(SELECT jsonb_array_elements($4::jsonb)))";
    assert!(sql.contains(&format!("({any} AND coalesce({any}, false))")), "{sql}");
    assert!(!sql.contains("CASE"), "{sql}");
    assert_eq!(params[2], SqlParam::Json(serde_json::json!({"k": "a"})));
    assert_eq!(params[3], SqlParam::Json(serde_json::json!([{"k": "b"}, {"k": 2}])));
    // Not for ranges, null, composite values, metadata or propositions.
    for filter in [
        "?x.attributes.level > 3",
        "?x.attributes.level == null",
        "?x.attributes.tags == [1]",
        "?x.metadata.source == \"a\"",
    ] {
        let (sql, _) = pattern(&format!(r#"?x {{type: "Drug"}} FILTER({filter})"#), &facts()).unwrap();
        assert!(!sql.contains("@> $"), "{filter}: {sql}");
    }
    let (sql, _) = pattern(r#"(?x, "treats", ?y) FILTER(?x.attributes.level == 3)"#, &facts()).unwrap();
    assert!(!sql.contains("attributes @>"), "{sql}");
}

#[test]
fn a_grouped_page_reads_group_values_from_the_rows_its_solutions_carry() {
    // ?d's row is the concept clause's own: its description comes with
    // each solution instead of a lookup by id per solution.
    let sql = find(
        r#"FIND(?d.attributes.description, COUNT(?n)) WHERE { ?d {type: "Domain"} OPTIONAL { (?n, "belongs_to_domain", ?d) } }"#,
        10,
        0,
    )
    .unwrap()
    .sql;
    assert!(sql.contains("c1.attributes AS v_1_attributes"), "{sql}");
    assert!(sql.contains("s.v_1_attributes AS attributes"), "{sql}");
    assert!(!sql.contains("JOIN kip.concepts"), "{sql}");
    // A variable bound inside OPTIONAL carries nothing: its row is still
    // looked up.
    let sql = find(r#"FIND(?n.name, COUNT(?d)) WHERE { ?d {type: "Domain"} OPTIONAL { (?n, "belongs_to_domain", ?d) } }"#, 10, 0)
        .unwrap()
        .sql;
    assert!(sql.contains("JOIN kip.concepts"), "{sql}");
}

#[test]
fn a_group_of_one_element_is_keyed_by_its_id() {
    // A name unique within the type its clause fixes: grouped by the id,
    // the name read once per group.
    let sql = find(r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Domain"} OPTIONAL { (?n, "belongs_to_domain", ?d) } }"#, 10, 0)
        .unwrap()
        .sql;
    assert!(sql.contains("coalesce(s.v_1, 0) AS gk"), "{sql}");
    assert!(sql.contains("GROUP BY t.gk)") && !sql.contains("jsonb_build_array"), "{sql}");
    assert!(sql.contains("r.id = grp.i0") || sql.contains(".id = grp.i0"), "{sql}");
    // Each (domain, member) is one solution: counted without a DISTINCT,
    // in the grouping itself.
    assert!(sql.contains("FROM (SELECT gk, ord, i0, ak1 AS k, ax1 AS x FROM b) t GROUP BY t.gk)"), "{sql}");
    // Read from the group's row, not joined back to the grouping.
    assert!(sql.contains("LEFT JOIN LATERAL (SELECT grp.val AS val) a1 ON true") && !sql.contains("a1 AS ("), "{sql}");
    // A member counted through two links to one domain needs the DISTINCT.
    let sql = find(
        r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Domain"} (?n, "belongs_to_domain" | "mentions", ?d) }"#,
        10,
        0,
    )
    .unwrap()
    .sql;
    assert!(sql.contains("FROM (SELECT DISTINCT gk, ak1 AS k"), "{sql}");
    // The element itself, or its id.
    for find_expr in ["?d", "?d.id"] {
        let q = format!(r#"FIND({find_expr}, COUNT(?n)) WHERE {{ ?d {{type: "Domain"}} (?n, "belongs_to_domain", ?d) }}"#);
        assert!(find(&q, 10, 0).unwrap().sql.contains("AS gk"), "{q}");
        assert!(!find(&q, 10, 0).unwrap().sql.contains("jsonb_build_array(to_jsonb"), "{q}");
    }
    // Not by the id when two elements may share the values: a name whose
    // type no clause fixes, an attribute, or paths of two variables.
    for q in [
        r#"FIND(?d.name, COUNT(?n)) WHERE { (?n, "belongs_to_domain", ?d) }"#,
        r#"FIND(?d.attributes.k, COUNT(?n)) WHERE { ?d {type: "Domain"} (?n, "belongs_to_domain", ?d) }"#,
        r#"FIND(?d.name, ?e.name, COUNT(?n)) WHERE { ?d {type: "Domain"} ?e {type: "Domain"} (?n, "belongs_to_domain", ?d) (?n, "belongs_to_domain", ?e) }"#,
    ] {
        let sql = find(q, 10, 0).unwrap().sql;
        assert!(sql.contains("jsonb_build_array("), "{q}: {sql}");
    }
}

#[test]
fn conditions_only_a_set_expires_at_passes_add_the_expiring_column() {
    for (filter, added) in [
        ("IS_NOT_NULL(?l.metadata.expires_at)", true),
        (r#"?l.metadata.expires_at < "2025""#, true),
        (r#""2025" >= ?l.metadata.expires_at"#, true),
        (r#"?l.metadata.expires_at == "2025""#, true),
        (r#"?l.metadata.expires_at != "2025""#, false),
        ("?l.metadata.expires_at == null", false),
        ("IS_NULL(?l.metadata.expires_at)", false),
        (r#"?l.metadata.valid_until < "2025""#, false),
    ] {
        let (sql, _) = pattern(&format!(r#"?l (?s, "treats", ?o) FILTER({filter})"#), &facts()).unwrap();
        assert_eq!(sql.contains("p1.expires_at IS NOT NULL AND"), added, "{filter}: {sql}");
    }
    let (sql, _) = pattern(r#"?x {type: "Drug"} FILTER(?x.metadata.expires_at > "2025")"#, &facts()).unwrap();
    assert!(sql.contains("c1.expires_at IS NOT NULL AND"), "{sql}");
    // An endpoint that may be a concept or a link reads a coalesce of both
    // rows, which no index serves.
    let (sql, _) = pattern(r#"(?s, "treats", ?o) FILTER(IS_NOT_NULL(?o.metadata.expires_at))"#, &facts()).unwrap();
    assert!(!sql.contains("expires_at IS NOT NULL"), "{sql}");
}

#[test]
fn a_named_concept_whose_id_was_looked_up_also_compares_its_id() {
    let mut known = facts();
    known.named_ids = vec![(("Person".into(), "$self".into()), 42)];
    let body = r#"?m {type: "Event"} (?m, "involves", {type: "Person", name: "$self"}) (?m, "involves", {type: "Person", name: "Bob"})
        OPTIONAL { (?m, "mentions", {type: "Person", name: "$self"}) }"#;
    let (sql, params) = pattern(body, &known).unwrap();
    let k = params.iter().position(|p| *p == SqlParam::Int(42)).expect("the id is a parameter") + 1;
    assert!(sql.contains(&format!(".id = ${k}::bigint")), "{sql}");
    // Only $self's selector of the mandatory pattern: not Bob's, and not
    // the one inside OPTIONAL.
    assert_eq!(sql.matches(".id = $").count(), 1, "{sql}");
    // Without looked-up ids, the selectors compare type and name alone.
    let (sql, _) = pattern(body, &facts()).unwrap();
    assert!(!sql.contains(".id = $"), "{sql}");
}

#[test]
fn only_a_statement_with_an_attribute_containment_is_planned_per_call() {
    let plan_per_call = |text: &str| find(text, 10, 0).unwrap().plan_per_call;
    assert!(plan_per_call(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.attributes.level == 3) } LIMIT 10"#));
    assert!(plan_per_call(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} OPTIONAL { ?y {type: "Drug"} FILTER(IN(?y.attributes.k, ["a", "b"])) } }"#));
    assert!(!plan_per_call(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.attributes.level > 3) } LIMIT 10"#));
    assert!(!plan_per_call(r#"FIND(?y.name) WHERE { ?x {type: "Drug", name: "A"} (?x, "treats", ?y) }"#));
}

#[test]
fn a_type_scan_planned_per_call_is_ordered_by_its_space_then_its_id() {
    // Only the space's own indexes give that order, not the primary key.
    let sql = find(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.attributes.level == 3) } LIMIT 10"#, 10, 0).unwrap().sql;
    assert!(sql.contains("c1.space = ANY(ARRAY[$1::text])"), "{sql}");
    assert!(sql.contains("ORDER BY d.v_1_space ASC NULLS LAST, d.v_1 ASC NULLS LAST LIMIT"), "{sql}");
    // On its generic plan, or in an optional part, as before.
    let sql = find(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.attributes.level > 3) } LIMIT 10"#, 10, 0).unwrap().sql;
    assert!(sql.contains("c1.space = $1::text") && !sql.contains("ANY(ARRAY["), "{sql}");
    let sql = find(
        r#"FIND(?x.name, ?y.name) WHERE { ?x {type: "Drug"} OPTIONAL { ?y {type: "Drug"} FILTER(?y.attributes.k == 1) } }"#,
        10,
        0,
    )
    .unwrap()
    .sql;
    assert!(sql.contains("c3.space = $1::text AND c3.type"), "{sql}");
}

#[test]
fn filter_literals_fold_except_regular_expressions() {
    let (sql, _) = pattern(r#"?x {type: "Drug"} FILTER(CONTAINS("abc", "b"))"#, &facts()).unwrap();
    assert!(sql.contains("(true)"), "{sql}");
    // Postgres's regular expressions, evaluated in SQL.
    let (sql, params) = pattern(r#"?x {type: "Drug"} FILTER(REGEX("abc", "^a"))"#, &facts()).unwrap();
    assert!(sql.contains("coalesce($4::text ~ $3::text, false)"), "{sql}");
    assert_eq!(params[2..], [text("^a"), text("abc")]);
}

#[test]
fn filter_errors() {
    assert_eq!(pattern_error(r#"?x {type: "Drug"} FILTER(?z.name == "A")"#, &facts()).code, ErrorCode::ReferenceError);
    assert_eq!(pattern_error(r#"?x {type: "Drug"} FILTER(?x.attributes == "A")"#, &facts()).code, ErrorCode::InvalidSyntax);
}

// --------------------------------------------------------------------- FIND

fn find(text: &str, limit: u64, offset: u64) -> Result<super::find::FindSql, KipError> {
    let Command::Find(q) = command(text) else { unreachable!() };
    compile_find(&q, env(&facts()), limit, offset, None)
}

/// The sort keys of an ORDER BY on an attribute: a number key, a string key
/// and a boolean key, except where a FILTER of the top block compares the
/// same path with a literal, which only values of the literal's type pass.
#[test]
fn order_keys_follow_the_type_a_filter_proves() {
    let keys = |text: &str| {
        let sql = find(text, 10, 0).unwrap().sql;
        ["'number'", "'string'", "'boolean'"].iter().map(|t| sql.matches(&format!("= {t} THEN")).count()).collect::<Vec<_>>()
    };
    let unfiltered = r#"FIND(?x.name) WHERE { ?x {type: "Drug"} } ORDER BY ?x.attributes.score DESC"#;
    assert_eq!(keys(unfiltered), vec![1, 1, 1]);
    // The FILTER's own comparison is the one `= 'number' THEN` more.
    for filter in ["?x.attributes.score >= 30", "30 < ?x.attributes.score", "?x.attributes.score != 2 && ?x.name != \"a\""] {
        let text = format!(r#"FIND(?x.name) WHERE {{ ?x {{type: "Drug"}} FILTER({filter}) }} ORDER BY ?x.attributes.score DESC"#);
        assert_eq!(keys(&text), vec![2, 0, 0], "{filter}");
    }
    let text = r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.metadata.source == "a") } ORDER BY ?x.metadata.source"#;
    assert_eq!(keys(text), vec![0, 2, 0]);
    // An attribute `==` is its containment alone: the sort key is the only
    // CASE.
    let text = r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.attributes.ok == true) } ORDER BY ?x.attributes.ok"#;
    assert_eq!(keys(text), vec![0, 0, 1]);
    // Comparisons that let other values through keep every key: under
    // `||` or `!`, with null, inside OPTIONAL, or on another path.
    for (filter, expected) in [
        ("?x.attributes.score >= 30 || ?x.name == \"a\"", vec![2, 1, 1]),
        ("!(?x.attributes.score >= 30)", vec![2, 1, 1]),
        ("?x.attributes.score != null", vec![1, 1, 1]),
        ("?x.attributes.rank >= 30", vec![2, 1, 1]),
    ] {
        let text = format!(r#"FIND(?x.name) WHERE {{ ?x {{type: "Drug"}} FILTER({filter}) }} ORDER BY ?x.attributes.score DESC"#);
        assert_eq!(keys(&text), expected, "{filter}");
    }
    let optional = r#"FIND(?x.name) WHERE { ?x {type: "Drug"} OPTIONAL { ?x {type: "Drug"} FILTER(?x.attributes.score >= 30) } } ORDER BY ?x.attributes.score DESC"#;
    assert_eq!(keys(optional), vec![2, 1, 1]);
}

/// `ord` numbers the UNION branches; without a UNION it is a constant,
/// which a grouped page neither aggregates nor orders by (the planner sorted
/// the grouped solutions a second time for it).
#[test]
fn a_constant_ord_is_left_out_of_the_order() {
    let two_hops = find(r#"FIND(?o.name) WHERE { ?s {type: "Drug", name: "a"} (?s, "treats", ?m) (?m, "treats", ?o) }"#, 10, 0).unwrap().sql;
    assert!(two_hops.contains("0 AS ord FROM s GROUP BY"), "{two_hops}");
    assert!(!two_hops.contains("min(s.ord)") && !two_hops.contains("ord ASC"), "{two_hops}");
    let ordered = find(r#"FIND(?o.name) WHERE { ?s {type: "Drug"} (?s, "treats", ?o) } ORDER BY ?o.name"#, 10, 0).unwrap().sql;
    assert!(!ordered.contains("ord ASC"), "{ordered}");
    let union = find(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} UNION { ?x {type: "Symptom"} } }"#, 10, 0).unwrap().sql;
    assert!(union.contains("min(s.ord) AS ord") && union.contains("d.ord ASC NULLS LAST"), "{union}");
}

/// The row a FILTER of the block reads joins before an OPTIONAL that does
/// not bind its variable (so the FILTER can drop a solution before the
/// OPTIONAL's lookups run), and after the OPTIONAL that binds it.
#[test]
fn a_filtered_row_joins_before_a_later_optional() {
    let (sql, _) = pattern(
        r#"?s {type: "Drug", name: "a"} (?s, "treats", ?o) FILTER(?o.attributes.score >= 30) OPTIONAL { (?o, "treats", ?x) }"#,
        &facts(),
    )
    .unwrap();
    let row = sql.find("LEFT JOIN kip.concepts rc").expect(&sql);
    let optional = sql.find("LEFT JOIN LATERAL (SELECT p").expect(&sql);
    assert!(row < optional, "{sql}");
    let (sql, _) = pattern(
        r#"?s {type: "Drug", name: "a"} OPTIONAL { (?s, "treats", ?x) } FILTER(IS_NULL(?x.attributes.score))"#,
        &facts(),
    )
    .unwrap();
    let optional = sql.find("LEFT JOIN LATERAL (SELECT p").expect(&sql);
    let row = sql.find("LEFT JOIN kip.concepts rc").expect(&sql);
    assert!(optional < row, "{sql}");
}

#[test]
fn find_pages_with_one_extra_row() {
    let plan = find(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} } ORDER BY ?x.name DESC"#, 10, 20).unwrap();
    // Distinct solutions carry their rows, ordered or not.
    assert!(plan.sql.starts_with("WITH s AS (SELECT c1.id AS v_1, c1.space AS v_1_space"), "{}", plan.sql);
    assert!(plan.sql.contains("DESC NULLS LAST"), "{}", plan.sql);
    // Every entry is a page column: the page's rows are the statement's rows.
    assert!(!plan.sql.contains("jsonb_agg"), "{}", plan.sql);
    let ints: Vec<&SqlParam> = plan.params.values().iter().filter(|p| matches!(p, SqlParam::Int(_))).collect();
    assert_eq!(ints, vec![&SqlParam::Int(11), &SqlParam::Int(20)]);
    assert_eq!(plan.shape, vec![super::find::Out::Column(0)]);
    assert_eq!(plan.layout, super::find::Layout::Rows);
}

#[test]
fn find_aggregations() {
    use super::find::{Layout, Out};
    let global = find(r#"FIND(COUNT(?x)) WHERE { ?x {type: "Drug"} }"#, 10, 0).unwrap();
    assert_eq!(global.shape, vec![Out::Scalar(0)]);
    assert_eq!(global.layout, Layout::OneRow { count_col: None });
    let grouped = find(r#"FIND(?d.name, COUNT(?x)) WHERE { ?x {type: "Drug"} (?x, "treats", ?d) } ORDER BY COUNT(?x) DESC"#, 10, 0).unwrap();
    assert!(grouped.sql.contains("grp AS (SELECT gk"), "{}", grouped.sql);
    assert!(grouped.sql.contains("coalesce(a1.val, CASE WHEN true THEN to_jsonb(0) END)"), "{}", grouped.sql);
    assert_eq!(grouped.shape, vec![Out::Column(0), Out::Column(1)]);
    assert_eq!(grouped.layout, Layout::Rows);
    // A column next to an aggregation over all solutions: one row of arrays.
    // (`?x` is projected, so COUNT(?x) is over all solutions.)
    let mixed = find(r#"FIND(?x.name, COUNT(?x)) WHERE { ?x {type: "Drug"} }"#, 10, 0).unwrap();
    assert_eq!(mixed.shape, vec![Out::Column(0), Out::Scalar(1)]);
    assert_eq!(mixed.layout, Layout::OneRow { count_col: Some(2) });
    assert!(mixed.sql.contains("(SELECT count(*) FROM page)"), "{}", mixed.sql);
}

#[test]
fn find_projection_of_an_unbound_variable_is_a_reference_error() {
    assert_eq!(find(r#"FIND(?y) WHERE { ?x {type: "Drug"} }"#, 10, 0).unwrap_err().code, ErrorCode::ReferenceError);
}

// ----------------------------------------------------------------------- KML

fn kml_clauses(text: &str) -> Vec<WhereClause> {
    match command(text) {
        Command::Update(u) => u.where_clauses,
        Command::Delete(kip_lang::ast::Delete::Concept { where_clauses, .. }) => where_clauses,
        Command::Merge(m) => m.where_clauses,
        other => panic!("{other:?}"),
    }
}

#[test]
fn update_and_delete_targets() {
    let f = facts();
    let clauses = kml_clauses(r#"UPDATE ?x SET ATTRIBUTES { level: 2 } WHERE { ?x {type: "Drug", name: "A"} } LIMIT 5"#);
    let t = targets_sql(&clauses, env(&f), "x", Some(5)).unwrap();
    assert_eq!(
        t.sql,
        "SELECT t.id, c.type, c.name FROM (SELECT DISTINCT m.v_1 AS id FROM (SELECT DISTINCT s.v_1 FROM (SELECT c1.id AS v_1 FROM kip.concepts c1 WHERE c1.space = $1::text AND c1.type = $2::text AND c1.name = $3::text) s) m WHERE m.v_1 IS NOT NULL LIMIT $4::bigint) t LEFT JOIN kip.concepts c ON c.id = t.id"
    );
    assert_eq!(t.params.values(), [text(SPACE), text("Drug"), text("A"), SqlParam::Int(5)]);
    let clauses = kml_clauses(r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Drug"} }"#);
    assert_eq!(targets_sql(&clauses, env(&f), "y", None).unwrap_err().code, ErrorCode::ReferenceError);
}

#[test]
fn update_and_delete_are_one_statement_guarded_by_the_refusal() {
    let f = facts();
    let refusal = "SELECT 2 AS reason, t.id, t.type, t.name FROM t WHERE t.name = 'x'";
    let clauses = kml_clauses(r#"UPDATE ?x SET ATTRIBUTES { level: 2 } WHERE { ?x {type: "Drug"} }"#);
    let action = BulkAction::Update { attributes: None, metadata: None };
    let b = bulk_sql(&clauses, env(&f), "x", None, refusal, action).unwrap();
    assert!(b.sql.starts_with("WITH t AS MATERIALIZED (SELECT t.id, c.type, c.name FROM "), "{}", b.sql);
    assert!(b.sql.contains(&format!("refusal AS MATERIALIZED ({refusal})")), "{}", b.sql);
    // Both rewrites wait for the refusal check, and the space is $1.
    assert_eq!(b.sql.matches("FROM t, allowed WHERE allowed.ok AND x.id = t.id").count(), 2, "{}", b.sql);
    assert_eq!(b.params.values()[0], text(SPACE));
    let clauses = kml_clauses(r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "Drug"} }"#);
    let b = bulk_sql(&clauses, env(&f), "x", None, refusal, BulkAction::DeleteConcepts).unwrap();
    assert!(b.sql.starts_with("WITH RECURSIVE t AS MATERIALIZED ("), "{}", b.sql);
    assert!(b.sql.contains("gone AS (DELETE FROM kip.concepts x USING t, allowed WHERE allowed.ok"), "{}", b.sql);
    let keys = BulkAction::DeleteKeys { keys: vec!["k".into()], metadata: true };
    let b = bulk_sql(&clauses, env(&f), "x", None, refusal, keys).unwrap();
    assert!(b.sql.contains("SET metadata = x.metadata - $"), "{}", b.sql);
    assert_eq!(b.params.values().last(), Some(&SqlParam::TextArray(vec!["k".into()])));
}

#[test]
fn merge_pair() {
    let f = facts();
    let clauses = kml_clauses(r#"MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Drug", name: "A"} ?b {type: "Drug", name: "B"} }"#);
    let p = pair_sql(&clauses, env(&f), "a", "b").unwrap();
    assert!(p.sql.starts_with("SELECT count(DISTINCT m.v_1), min(m.v_1), count(DISTINCT m.v_2), min(m.v_2) FROM ("), "{}", p.sql);
}

// -------------------------------------------------------------------- EXPORT

#[test]
fn export_page() {
    let Command::Export(e) = command(r#"EXPORT ?x WHERE { ?x {type: "Drug"} } LIMIT 2"#) else { unreachable!() };
    let f = facts();
    let page = page_sql(&e.where_clauses, &e.target, env(&f), 4, 2).unwrap();
    assert!(page.sql.contains("ORDER BY CASE WHEN c.id IS NULL THEN 2 WHEN c.type = ANY($3::text[]) THEN 0 ELSE 1 END, t.id"), "{}", page.sql);
    assert!(page.sql.ends_with("OFFSET $5::bigint LIMIT $6::bigint"), "{}", page.sql);
    assert_eq!(page.params.values()[4..], [SqlParam::Int(4), SqlParam::Int(3)]);
}

// ------------------------------------------------- checks made in the statement

#[test]
fn find_verifies_named_concepts_and_literal_ids_without_a_lookup() {
    use super::env::InStatement;
    use super::find::Layout;
    let checks = InStatement { named_concepts: vec![("Drug".into(), "A".into())] };
    // No fact about C:7: without the checks it would be unresolved.
    let facts = Facts { verified_in_statement: Some(checks), ..Facts::default() };
    let compile = |text: &str| {
        let Command::Find(q) = command(text) else { unreachable!() };
        compile_find(&q, env(&facts), 10, 0, None).unwrap()
    };
    let body = r#"WHERE { ?x {type: "Drug", name: "A"} ?y {id: "C:7"} OPTIONAL { ?z {id: "C:8"} } }"#;

    // Rows: no guard in the statement; the engine checks on an empty page.
    let plan = compile(&format!("FIND(?y) {body}"));
    assert_eq!(plan.layout, Layout::Rows);
    let guard = plan.guard.as_ref().expect("required elements");
    assert!(!plan.sql.contains("WITH ORDINALITY"), "{}", plan.sql);
    // The lookup the engine runs when the page is empty.
    let (sql, params) = guard.standalone("s");
    assert!(sql.starts_with("SELECT (SELECT min(g.i) FROM (SELECT x.i FROM unnest($2::text[], $3::text[])"), "{sql}");
    assert!(sql.contains("1 + y.i FROM unnest($4::bigint[])"), "{sql}");
    assert_eq!(params.values()[0], SqlParam::Text("s".into()));
    assert_eq!(params.values()[3], SqlParam::IntArray(vec![7]));
    // Only the mandatory id is required: C:8 sits in OPTIONAL.
    assert_eq!(guard.concept_ids, vec![(7, "C:7".to_string())]);
    assert!(guard.failure(None).is_none());
    assert!(guard.failure(Some(&serde_json::Value::Null)).is_none());
    let named = guard.failure(Some(&serde_json::json!(1))).unwrap();
    assert_eq!(named.code, ErrorCode::NotFound);
    assert!(named.message.contains(r#"{type: "Drug", name: "A"}"#), "{}", named.message);
    let id = guard.failure(Some(&serde_json::json!(2))).unwrap();
    assert!(id.message.contains(r#""C:7""#), "{}", id.message);

    // One row (an aggregation over all solutions, which has a value even
    // when nothing matched): the same, the engine checking when the
    // aggregations show no solution.
    let plan = compile(&format!("FIND(COUNT(?y)) {body}"));
    let guard = plan.guard.as_ref().expect("required elements");
    assert_eq!(guard.concept_ids, vec![(7, "C:7".to_string())]);
    assert!(!plan.sql.contains("WITH ORDINALITY"), "{}", plan.sql);

    // Without in-statement checks the literal id comes from the facts, and
    // nothing is left to check.
    let Command::Find(q) = command(&format!("FIND(?y) {body}")) else { unreachable!() };
    let plan = compile_find(&q, env(&Facts::default().with_concept(7)), 10, 0, None).unwrap();
    assert!(plan.guard.is_none());
}

#[test]
fn a_streaming_find_reads_each_element_row_once() {
    // The scan that finds the solutions brings the rows' columns along; the
    // projection reads them without a second lookup by primary key.
    let plan = find(r#"FIND(?x, ?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.attributes.risk == 2) } LIMIT 10"#, 10, 0).unwrap();
    assert!(plan.sql.contains("c1.attributes AS v_1_attributes"), "{}", plan.sql);
    assert!(plan.sql.contains("d AS (SELECT s.v_1, s.v_1_space, s.v_1_type"), "{}", plan.sql);
    assert!(plan.sql.contains("LEFT JOIN LATERAL (SELECT d.v_1 AS id, d.v_1_space AS space"), "{}", plan.sql);
    assert!(!plan.sql.contains("FROM kip.concepts r"), "{}", plan.sql);
    // An ORDER BY too: the rows are read before the sort either way.
    let plan = find(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} } ORDER BY ?x.name"#, 10, 0).unwrap();
    assert!(plan.sql.contains("LEFT JOIN LATERAL (SELECT d.v_1 AS id, d.v_1_space AS space"), "{}", plan.sql);
    assert!(!plan.sql.contains("FROM kip.concepts r"), "{}", plan.sql);
    // Solutions that are grouped (several links per ?x) or aggregated do
    // not carry rows.
    for text in [
        r#"FIND(?x.name) WHERE { ?x {type: "Drug"} (?x, "treats", ?y) }"#,
        r#"FIND(?x.name, COUNT(?x)) WHERE { ?x {type: "Drug"} }"#,
    ] {
        let plan = find(text, 10, 0).unwrap();
        assert!(!plan.sql.contains("v_1_attributes"), "{text}: {}", plan.sql);
    }
}

#[test]
fn the_links_of_one_anchor_stream_without_dedup() {
    // `(space, subject, predicate, object)` is unique and the anchor is one
    // concept: each ?o is one solution, so there is nothing to group.
    let plan = find(r#"FIND(?o.name) WHERE { ?s {type: "Drug", name: "Aspirin"} (?s, "treats", ?o) }"#, 10, 0).unwrap();
    assert!(!plan.sql.contains("GROUP BY"), "{}", plan.sql);
    assert_eq!(plan.keyset, Some(vec![1]), "{}", plan.sql);
    // ?o may be a concept or a link; its name is only a concept's, so the
    // page looks up no link row.
    assert!(plan.sql.contains("FROM kip.concepts r"), "{}", plan.sql);
    assert!(!plan.sql.contains("FROM kip.propositions r"), "{}", plan.sql);
    // Two hops may reach ?o twice.
    let plan = find(r#"FIND(?o.name) WHERE { ?s {type: "Drug", name: "Aspirin"} (?s, "treats", ?m) (?m, "treats", ?o) }"#, 10, 0).unwrap();
    assert!(plan.sql.contains("GROUP BY"), "{}", plan.sql);
}

#[test]
fn an_element_of_either_kind_reads_the_link_table_only_when_no_concept_has_its_id() {
    // ?o may be a concept or a link: its link row is a LATERAL lookup
    // gated on the concept row's absence, in the pattern (FILTER) and in
    // the projection alike.
    let plan = find(
        r#"FIND(?o.attributes.score) WHERE { ?s {type: "Drug", name: "Aspirin"} (?s, "treats", ?o) FILTER(?o.attributes.score > 1) }"#,
        10,
        0,
    )
    .unwrap();
    let gated = plan.sql.matches("FROM kip.propositions r WHERE r.id = ").count();
    assert_eq!(gated, 1, "{}", plan.sql);
    assert!(plan.sql.contains(".id IS NULL OFFSET 0) rp"), "{}", plan.sql);
    // The FILTER's rows are carried to the projection, which reads them
    // without a second lookup: the concept row's id and columns, then the
    // link row's.
    assert!(plan.sql.contains("rc3.id AS v_2_cid"), "{}", plan.sql);
    assert!(plan.sql.contains("rp4.attributes AS v_2_p_attributes"), "{}", plan.sql);
    assert!(plan.sql.contains("(SELECT d.v_2_cid AS id, d.v_2_space AS space"), "{}", plan.sql);
    assert!(!plan.sql.contains("FROM kip.concepts r "), "{}", plan.sql);
    // Grouped solutions read them again.
    let plan = find(
        r#"FIND(?o.attributes.score) WHERE { ?s {type: "Drug"} (?s, "treats", ?o) FILTER(?o.attributes.score > 1) }"#,
        10,
        0,
    )
    .unwrap();
    assert_eq!(plan.sql.matches("FROM kip.propositions r WHERE r.id = ").count(), 2, "{}", plan.sql);
    assert!(plan.sql.contains(".id IS NULL OFFSET 0) ep"), "{}", plan.sql);
}

#[test]
fn a_count_over_distinct_solutions_needs_no_distinct() {
    let facts = Facts { verified_in_statement: Some(super::env::InStatement { named_concepts: vec![] }), ..Facts::default() };
    let compile = |text: &str| {
        let Command::Find(q) = command(text) else { unreachable!() };
        compile_find(&q, env(&facts), 10, 0, None).unwrap().sql
    };
    // The subjects of the links to one anchor are distinct.
    let sql = compile(r#"FIND(COUNT(?s)) WHERE { ?o {id: "C:3"} (?s, "treats", ?o) }"#);
    assert!(sql.contains("(SELECT s.v_") && !sql.contains("SELECT DISTINCT"), "{sql}");
    // Two hops may reach one ?x twice: counted once.
    let sql = compile(r#"FIND(COUNT(?x)) WHERE { ?o {id: "C:3"} (?s, "treats", ?o) (?x, "treats", ?s) }"#);
    assert!(sql.contains("SELECT DISTINCT"), "{sql}");
}

#[test]
fn a_streaming_find_pages_by_keyset() {
    let Command::Find(q) = command(r#"FIND(?x.name) WHERE { ?x {type: "Drug"} FILTER(?x.name != "B") } LIMIT 10"#) else {
        unreachable!()
    };
    // First page: the natural order, no dedup, cut before the element rows.
    let first = compile_find(&q, env(&facts()), 10, 0, None).unwrap();
    assert_eq!(first.keyset, Some(vec![1]), "{}", first.sql);
    assert!(!first.sql.contains("GROUP BY"), "{}", first.sql);
    assert!(first.sql.contains("(SELECT * FROM d ORDER BY d.v_1 ASC NULLS LAST LIMIT"), "{}", first.sql);
    assert!(first.sql.contains("LEFT JOIN LATERAL"), "{}", first.sql);
    // Next page: after the last id, no OFFSET.
    let next = compile_find(&q, env(&facts()), 10, 10, Some(&[42])).unwrap();
    assert!(next.sql.contains("(SELECT * FROM d WHERE (d.v_1) > ($"), "{}", next.sql);
    assert!(!next.sql.contains("OFFSET $"), "{}", next.sql);
    assert!(next.params.values().contains(&SqlParam::Int(42)));

    // Solutions that may repeat (a link clause), or an ORDER BY: offsets.
    for text in [
        r#"FIND(?x.name) WHERE { ?x {type: "Drug"} (?x, "treats", ?y) }"#,
        r#"FIND(?x.name) WHERE { ?x {type: "Drug"} } ORDER BY ?x.name"#,
    ] {
        let Command::Find(q) = command(text) else { unreachable!() };
        let plan = compile_find(&q, env(&facts()), 10, 10, Some(&[42])).unwrap();
        assert_eq!(plan.keyset, None, "{text}");
        assert!(plan.sql.contains("OFFSET $"), "{text}: {}", plan.sql);
        assert!(!plan.params.values().contains(&SqlParam::Int(42)), "{text}");
    }
}

/// Not a check: prints the time one parse and one compile of two small
/// FINDs take, for work on the compiler's speed. Run with
/// `cargo test --release -p kip --lib -- --ignored compile_and_parse_time --nocapture`.
#[test]
#[ignore]
fn compile_and_parse_time_per_call() {
    for text in [
        r#"FIND(?x) WHERE { ?x {id: "C:5"} }"#,
        r#"FIND(?o.name) WHERE { ?s {type: "Node", name: "n1"} (?s, "links", ?o) }"#,
    ] {
        let Command::Find(q) = command(text) else { unreachable!() };
        let checks = super::env::InStatement { named_concepts: vec![("Node".into(), "n1".into())] };
        let f = Facts { verified_in_statement: Some(checks), ..Facts::default() };
        let n = 20000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            let p = compile_find(&q, env(&f), 100, 0, None).unwrap();
            std::hint::black_box(p);
        }
        let parse_t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(kip_lang::parse(text).unwrap());
        }
        let compile = (parse_t - t) / n;
        println!("{text}: compile {:?}/call, parse {:?}/call", compile, parse_t.elapsed() / n);
    }
}

#[test]
fn an_ordered_page_that_may_read_many_solutions_is_cut_before_its_columns_are_built() {
    // A type scan under ORDER BY … LIMIT: the window (sort keys, ids) is
    // cut first, and the page's array of paths is built for its rows alone.
    let plan = find(
        r#"FIND(?e.name, ?e.attributes.summary) WHERE { ?e {type: "Event"} FILTER(?e.attributes.t >= "2025") } ORDER BY ?e.attributes.t DESC LIMIT 50"#,
        50,
        0,
    )
    .unwrap();
    let window = plan.sql.find("FROM (SELECT d.*, ").unwrap_or_else(|| panic!("{}", plan.sql));
    let built = plan.sql.find("jsonb_build_array(").unwrap();
    assert!(built < window, "the array is built outside the window: {}", plan.sql);
    assert!(!plan.sql[window..].contains("jsonb_build_array("), "{}", plan.sql);
    // A whole element around an anchor likewise.
    let plan = find(r#"FIND(?e) WHERE { ?e {type: "Event"} (?e, "involves", {type: "Person", name: "p"}) } ORDER BY ?e.name LIMIT 5"#, 5, 0).unwrap();
    assert!(plan.sql.contains("FROM (SELECT d.*, "), "{}", plan.sql);
    // A few solutions around an anchor: one level.
    let plan = find(
        r#"FIND(?o.name, ?o.attributes.score) WHERE { ?s {type: "Node", name: "n"} (?s, "links", ?o) } ORDER BY ?o.attributes.score DESC LIMIT 20"#,
        20,
        0,
    )
    .unwrap();
    assert!(!plan.sql.contains("FROM (SELECT d.*, "), "{}", plan.sql);
}

#[test]
fn an_export_reads_only_the_concept_rank_its_type_can_be_in() {
    let f = facts();
    let ranks = |body: &str| -> Vec<Rank> {
        Rank::ALL
            .into_iter()
            .filter(|&r| rank_page_sql(&clauses(body), "x", env(&f), r, None, 10).unwrap().is_some())
            .collect()
    };
    assert_eq!(ranks(r#"?x {type: "Drug"}"#), vec![Rank::Concept]);
    assert_eq!(ranks(r#"?x {type: "$ConceptType"}"#), vec![Rank::Schema]);
    assert_eq!(ranks(r#"?x {type: "$PropositionType", name: "treats"}"#), vec![Rank::Schema]);
    // No type, or a UNION that may bind the target otherwise: both ranks.
    assert_eq!(ranks(r#"?x {name: "Aspirin"}"#), vec![Rank::Schema, Rank::Concept]);
    assert_eq!(ranks(r#"?x {type: "Drug"} UNION { ?x {type: "$ConceptType"} }"#), vec![Rank::Schema, Rank::Concept]);
}
