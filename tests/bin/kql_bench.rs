//! KQL benchmark: compiled KIP (through `kip_execute`) vs the best
//! hand-written SQL for the same answer, on a generated graph of 100,000
//! concepts and ~1,000,000 propositions. Prints timings, ratios and the
//! `kip_explain` plans; asserts nothing (figures, not tests).
//!
//!     cargo run --release -p kip-integration-tests --bin kql-bench
//!
//! The graph lives in memory space `kql_bench` of database `kip_bench`
//! (created on first run; `KQL_BENCH_REBUILD=1` regenerates it). Every
//! Node has 10 `links` to pseudo-random Nodes and one `tagged` link to a Tag;
//! each concept has a numeric `score` attribute in 0..99.

use kip_integration_tests::{dsn_for, ensure_database, port};
use postgres::{Client, NoTls};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SPACE: &str = "kql_bench";
const CONCEPTS: i64 = 100_000;
/// Timed runs per query (`KQL_BENCH_RUNS` overrides).
const RUNS: usize = 101;

fn generate(c: &mut Client) {
    let have: i64 = c
        .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1", &[&SPACE])
        .unwrap()
        .get(0);
    if have >= 1_000_000 && std::env::var("KQL_BENCH_REBUILD").is_err() {
        println!("graph present: {have} propositions");
        return;
    }
    let t = Instant::now();
    c.batch_execute(&format!(
        "DELETE FROM kip.spaces WHERE name = '{SPACE}';
         SELECT kip_create_space('{SPACE}');
         INSERT INTO kip.concepts (space, type, name, attributes)
           SELECT '{SPACE}', CASE WHEN g % 10 = 0 THEN 'Tag' ELSE 'Node' END, 'n' || g,
                  jsonb_build_object('score', (g * 7919) % 100)
           FROM generate_series(1, {CONCEPTS}) g;
         CREATE TEMP TABLE idmap AS
           SELECT substr(name, 2)::bigint AS g, id FROM kip.concepts WHERE space = '{SPACE}' AND name ~ '^n[0-9]+$';
         CREATE INDEX ON idmap (g);
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{SPACE}', s.id, 'links', o.id
           FROM idmap s CROSS JOIN generate_series(1, 10) k
           JOIN idmap o ON o.g = ((s.g * 31 + k * 7919 + k * k * 104729) % {CONCEPTS}) + 1
           WHERE s.g % 10 <> 0 AND o.id <> s.id
           ON CONFLICT DO NOTHING;
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{SPACE}', s.id, 'tagged', o.id
           FROM idmap s JOIN idmap o ON o.g = ((s.g * 13) % ({CONCEPTS} / 10)) * 10 + 10
           WHERE s.g % 10 <> 0
           ON CONFLICT DO NOTHING;
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{SPACE}', s.id, 'links', o.id
           FROM idmap s JOIN idmap o ON o.g = s.g + 1
           WHERE s.g % 10 = 0
           ON CONFLICT DO NOTHING;
         DROP TABLE idmap;
         ANALYZE kip.concepts; ANALYZE kip.propositions;"
    ))
    .unwrap();
    let n: i64 = c.query_one("SELECT count(*) FROM kip.propositions WHERE space = $1", &[&SPACE]).unwrap().get(0);
    println!("generated {CONCEPTS} concepts and {n} propositions in {:.1?}", t.elapsed());
    vacuum(c);
}

/// VACUUM the element tables (each in its own statement: VACUUM cannot run
/// in a transaction block).
fn vacuum(c: &mut Client) {
    c.batch_execute("VACUUM kip.concepts").unwrap();
    c.batch_execute("VACUUM kip.propositions").unwrap();
}

const PRIMER_SPACE: &str = "kql_bench_primer";

/// A Formation-like memory for DESCRIBE PRIMER: 6,000 `Topic` concepts in 10
/// domains (600 members each), each with 4 `relates_to` links; the session is
/// left in that space. Generated on first run.
fn primer_memory(c: &mut Client) {
    c.batch_execute(&format!("SET kip.space = '{PRIMER_SPACE}'")).unwrap();
    let have: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Topic'", &[&PRIMER_SPACE])
        .unwrap()
        .get(0);
    if have >= 6000 {
        return;
    }
    let out: Value = c
        .query_one(
            r#"SELECT kip_execute('UPSERT {
                 CONCEPT ?t { {type: "$ConceptType", name: "Topic"} SET ATTRIBUTES { description: "a topic" } }
                 CONCEPT ?p { {type: "$PropositionType", name: "relates_to"} SET ATTRIBUTES { description: "related" } }
               }')"#,
            &[],
        )
        .unwrap()
        .get(0);
    assert!(out.get("error").is_none(), "{out}");
    c.batch_execute(&format!(
        "INSERT INTO kip.concepts (space, type, name) SELECT '{PRIMER_SPACE}', 'Domain', 'Area' || g FROM generate_series(0, 9) g;
         INSERT INTO kip.concepts (space, type, name, attributes)
           SELECT '{PRIMER_SPACE}', 'Topic', 't' || g, jsonb_build_object('description', 'topic ' || g) FROM generate_series(0, 5999) g;
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{PRIMER_SPACE}', t.id, 'belongs_to_domain', d.id
           FROM kip.concepts t JOIN kip.concepts d ON d.space = t.space AND d.type = 'Domain'
             AND d.name = 'Area' || (substr(t.name, 2)::int % 10)
           WHERE t.space = '{PRIMER_SPACE}' AND t.type = 'Topic';
         INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
           SELECT '{PRIMER_SPACE}', a.id, 'relates_to', b.id
           FROM kip.concepts a CROSS JOIN generate_series(1, 4) k
           JOIN kip.concepts b ON b.space = a.space AND b.type = 'Topic'
             AND b.name = 't' || ((substr(a.name, 2)::int * 7 + k * 131) % 6000)
           WHERE a.space = '{PRIMER_SPACE}' AND a.type = 'Topic'
           ON CONFLICT DO NOTHING;
         ANALYZE kip.concepts; ANALYZE kip.propositions;"
    ))
    .unwrap();
}

struct Case {
    name: &'static str,
    kip: &'static str,
    sql: &'static str,
    anchor: Anchor,
}

/// What `:anchor` (KIP) and `$2` (SQL) are in a case.
#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    /// A Node's name.
    Name,
    /// A Node's id: `"C:<id>"` for KIP, the bigint for SQL.
    Id,
    /// A `score` value (0..99), a number for both.
    Score,
}

const CASES: &[Case] = &[
    Case {
        name: "1-hop",
        kip: r#"FIND(?o.name) WHERE { ?s {type: "Node", name: :anchor} (?s, "links", ?o) }"#,
        sql: "SELECT coalesce(jsonb_agg(o.name ORDER BY o.id), '[]') FROM kip.concepts s \
              JOIN kip.propositions p ON p.space = $1 AND p.subject = s.id AND p.predicate = 'links' \
              JOIN kip.concepts o ON o.id = p.object \
              WHERE s.space = $1 AND s.type = 'Node' AND s.name = $2",
        anchor: Anchor::Name,
    },
    Case {
        name: "2-hop",
        kip: r#"FIND(?o.name) WHERE { ?s {type: "Node", name: :anchor} (?s, "links", ?m) (?m, "links", ?o) } LIMIT 5000"#,
        sql: "SELECT coalesce(jsonb_agg(o.name ORDER BY o.id), '[]') FROM kip.concepts o WHERE o.id IN ( \
              SELECT p2.object FROM kip.concepts s \
              JOIN kip.propositions p1 ON p1.space = $1 AND p1.subject = s.id AND p1.predicate = 'links' \
              JOIN kip.propositions p2 ON p2.space = $1 AND p2.subject = p1.object AND p2.predicate = 'links' \
              WHERE s.space = $1 AND s.type = 'Node' AND s.name = $2)",
        anchor: Anchor::Name,
    },
    Case {
        name: "{1,3}",
        kip: r#"FIND(?o.name) WHERE { ?s {type: "Node", name: :anchor} (?s, "links"{1,3}, ?o) } LIMIT 5000"#,
        sql: "WITH RECURSIVE w(node, depth) AS ( \
                SELECT s.id, 0 FROM kip.concepts s WHERE s.space = $1 AND s.type = 'Node' AND s.name = $2 \
                UNION SELECT p.object, w.depth + 1 FROM w JOIN kip.propositions p \
                  ON p.space = $1 AND p.subject = w.node AND p.predicate = 'links' WHERE w.depth < 3) \
              SELECT coalesce(jsonb_agg(c.name ORDER BY c.id), '[]') FROM kip.concepts c \
              WHERE c.id IN (SELECT node FROM w WHERE depth >= 1)",
        anchor: Anchor::Name,
    },
    Case {
        name: "OPTIONAL+FILTER+ORDER BY",
        kip: r#"FIND(?o.name, ?o.attributes.score, ?x.name) WHERE { ?s {type: "Node", name: :anchor} (?s, "links", ?o) FILTER(?o.attributes.score >= 30) OPTIONAL { (?o, "tagged", ?x) } } ORDER BY ?o.attributes.score DESC LIMIT 20"#,
        sql: "SELECT coalesce(jsonb_agg(jsonb_build_array(r.name, r.score, r.tag) ORDER BY r.score DESC, r.oid, r.xid), '[]') FROM ( \
                SELECT o.name, o.attributes -> 'score' AS score, x.name AS tag, o.id AS oid, x.id AS xid \
                FROM kip.concepts s \
                JOIN kip.propositions p ON p.space = $1 AND p.subject = s.id AND p.predicate = 'links' \
                JOIN kip.concepts o ON o.id = p.object \
                LEFT JOIN kip.propositions t ON t.space = $1 AND t.subject = o.id AND t.predicate = 'tagged' \
                LEFT JOIN kip.concepts x ON x.id = t.object \
                WHERE s.space = $1 AND s.type = 'Node' AND s.name = $2 AND (o.attributes ->> 'score')::numeric >= 30 \
                ORDER BY (o.attributes ->> 'score')::numeric DESC, o.id, x.id LIMIT 20) r",
        anchor: Anchor::Name,
    },
    Case {
        name: "reverse COUNT",
        kip: r#"FIND(COUNT(?s)) WHERE { ?o {type: "Node", name: :anchor} (?s, "links", ?o) }"#,
        sql: "SELECT count(DISTINCT p.subject) FROM kip.concepts o \
              JOIN kip.propositions p ON p.space = $1 AND p.object = o.id AND p.predicate = 'links' \
              WHERE o.space = $1 AND o.type = 'Node' AND o.name = $2",
        anchor: Anchor::Name,
    },
    Case {
        // The fixed cost of a call: the smallest FIND against a primary-key
        // SELECT returning the same element as JSON.
        name: "element by id",
        kip: r#"FIND(?x) WHERE { ?x {id: :anchor} }"#,
        // The same JSON object as kip's element (checked below).
        sql: "SELECT jsonb_build_object('_type', 'ConceptNode', 'id', 'C:' || c.id, 'type', c.type, 'name', c.name) \
                || CASE WHEN c.attributes = '{}' THEN '{}' ELSE jsonb_build_object('attributes', c.attributes) END \
                || jsonb_build_object('metadata', c.metadata || jsonb_build_object('_version', c.version, \
                   '_created_at', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), \
                   '_updated_at', to_char(c.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))) \
              FROM kip.concepts c WHERE c.id = $2 AND c.space = $1",
        anchor: Anchor::Id,
    },
    Case {
        name: "attribute == over one type",
        kip: r#"FIND(?t.name) WHERE { ?t {type: "Tag"} FILTER(?t.attributes.score == :anchor) } LIMIT 5000"#,
        sql: "SELECT coalesce(jsonb_agg(c.name ORDER BY c.id), '[]') FROM kip.concepts c \
              WHERE c.space = $1 AND c.type = 'Tag' AND c.attributes @> jsonb_build_object('score', $2::int)",
        anchor: Anchor::Score,
    },
];

fn runs() -> usize {
    std::env::var("KQL_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(RUNS)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn anchor(i: usize) -> String {
    // Nodes only (g % 10 != 0).
    let g = 1 + (i * 7_927) % 99_990;
    format!("n{}", if g % 10 == 0 { g + 1 } else { g })
}

/// A case's `$2`.
enum SqlAnchor {
    Text(String),
    Int(i64),
    Int4(i32),
}

/// The anchor of run `i` as a KIP parameter value and as the SQL `$2`.
fn anchor_values(c: &mut Client, kind: Anchor, name: &str, i: usize) -> (Value, SqlAnchor) {
    match kind {
        Anchor::Name => (json!(name), SqlAnchor::Text(name.to_string())),
        Anchor::Id => {
            let id: i64 = c
                .query_one("SELECT id FROM kip.concepts WHERE space = $1 AND type = 'Node' AND name = $2", &[&SPACE, &name])
                .unwrap()
                .get(0);
            (json!(format!("C:{id}")), SqlAnchor::Int(id))
        }
        Anchor::Score => {
            // Tags carry the scores 0, 10, …, 90 (the generator's formula).
            let score = (i * 37 % 10 * 10) as i32;
            (json!(score), SqlAnchor::Int4(score))
        }
    }
}

/// `SELECT` of a PL/pgSQL function that runs `case`'s hand-written
/// statement in a block with an EXCEPTION clause (a subtransaction, as
/// kip's command runs in), created for the run: the cost of any function
/// API around the same statement.
fn wrapped_function(c: &mut Client, k: usize, case: &Case) -> String {
    let anchor_type = match case.anchor {
        Anchor::Name => "text",
        Anchor::Id => "bigint",
        Anchor::Score => "int",
    };
    let name = format!("pg_temp.kql_bench_wrapped_{k}");
    // The statement's text is the bench's own; in PL/pgSQL its $1 and $2
    // are the function's arguments.
    c.batch_execute(&format!(
        "CREATE OR REPLACE FUNCTION {name}(text, {anchor_type}) RETURNS jsonb LANGUAGE plpgsql AS $fn$ \
         BEGIN RETURN to_jsonb(({})); EXCEPTION WHEN others THEN RETURN NULL; END $fn$",
        case.sql
    ))
    .unwrap();
    format!("SELECT {name}($1, $2)")
}

/// The role of [`governed_fixed_cost`].
const READER: &str = "kql_bench_reader";

/// The fixed per-call cost for a role that is not a superuser, as an
/// application connects in production: a member of `kip_reader` with a read
/// grant on the space. Both sides run under row-level security (the hand
/// SELECT reads the same tables as that role), so the figure is kip's own
/// cost around a statement, the access check of each call included.
fn governed_fixed_cost(c: &mut Client) {
    c.batch_execute(&format!(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN \
           CREATE ROLE {READER} LOGIN IN ROLE kip_reader; END IF; END $$"
    ))
    .unwrap();
    c.execute("SELECT kip_grant($1, $2::name, 'read')", &[&SPACE, &READER]).unwrap();
    let dsn = format!("host=localhost port={} user={READER} dbname=kip_bench", port());
    let mut r = Client::connect(&dsn, NoTls).expect("connect as the reader role");
    r.batch_execute(&format!("SET kip.space = '{SPACE}'")).unwrap();
    let case = CASES.iter().find(|c| c.name == "element by id").expect("the element-by-id case");
    let stmt = r.prepare(case.sql).unwrap();
    let kip_stmt = r.prepare("SELECT kip_execute_readonly($1::text, $2::jsonb)").unwrap();
    let (mut tk, mut ts) = (Vec::new(), Vec::new());
    for i in 0..runs() + 3 {
        let (kip_anchor, sql_anchor) = anchor_values(c, case.anchor, &anchor(i), i);
        let SqlAnchor::Int(id) = sql_anchor else { unreachable!("the element-by-id case anchors on an id") };
        let params = json!({"anchor": kip_anchor});
        r.query_one(&kip_stmt, &[&case.kip, &params]).unwrap();
        r.query_one(&stmt, &[&SPACE, &id]).unwrap();
        let t = Instant::now();
        let kip_row = r.query_one(&kip_stmt, &[&case.kip, &params]);
        let dk = t.elapsed();
        let t = Instant::now();
        let sql_row = r.query_one(&stmt, &[&SPACE, &id]);
        let ds = t.elapsed();
        let (out, sql_value): (Value, Value) = (kip_row.unwrap().get(0), sql_row.unwrap().get(0));
        assert_eq!(out["result"][0], sql_value, "as {READER}: KIP and SQL answers differ");
        if i >= 3 {
            tk.push(dk);
            ts.push(ds);
        }
    }
    let mut differences: Vec<f64> = tk.iter().zip(&ts).map(|(k, s)| k.as_secs_f64() - s.as_secs_f64()).collect();
    differences.sort_by(f64::total_cmp);
    println!(
        "Fixed per-call cost as a kip_reader role with a read grant (row-level security on both sides; KIP median {:.2?}, SQL median {:.2?}): {:.1} µs",
        median(tk),
        median(ts),
        differences[differences.len() / 2] * 1e6
    );
}

fn main() {
    let _awake = kip_integration_tests::hold_cpus_awake();
    ensure_database("kip_bench");
    let mut c = Client::connect(&dsn_for("kip_bench"), NoTls).expect("connect kip_bench");
    if std::env::args().nth(1).as_deref() == Some("walks") {
        // Only the large type's first page and the CURSOR walks.
        large_type(&mut c);
        return;
    }
    c.batch_execute(&format!("SET kip.space = '{SPACE}'")).unwrap();
    generate(&mut c);
    // Each timed KIP call is followed at once by its hand-written
    // statement: "pair ratio" is the median of those pairs' ratios, which a
    // change of the host's speed during the run (common on a shared virtual
    // machine) moves less than it moves the ratio of the two medians.
    println!(
        "\n{:<28} {:>12} {:>12} {:>8} {:>11} {:>9}   rows",
        "query", "KIP median", "SQL median", "ratio", "pair ratio", "in a fn"
    );
    let mut fixed_cost = None;
    for (k, case) in CASES.iter().enumerate() {
        let (mut tk, mut ts, mut tw) = (Vec::new(), Vec::new(), Vec::new());
        let mut rows = 0;
        // Both sides run prepared plans: kip_execute caches its plans per
        // SQL shape, the hand-written statement is prepared once here.
        let stmt = c.prepare(case.sql).unwrap();
        let kip_stmt = c.prepare("SELECT kip_execute($1::text, $2::jsonb)").unwrap();
        let wrapped_sql = wrapped_function(&mut c, k, case);
        let wrapped = c.prepare(&wrapped_sql).unwrap();
        for i in 0..runs() + 3 {
            let a = anchor(i);
            let (kip_anchor, sql_anchor) = anchor_values(&mut c, case.anchor, &a, i);
            // Both sides once untimed first: the pages of this anchor are in
            // the buffer cache for both timings, whichever runs first.
            let run_sql = |c: &mut Client| match &sql_anchor {
                SqlAnchor::Text(v) => c.query_one(&stmt, &[&SPACE, v]),
                SqlAnchor::Int(v) => c.query_one(&stmt, &[&SPACE, v]),
                SqlAnchor::Int4(v) => c.query_one(&stmt, &[&SPACE, v]),
            };
            // Each side's parameters are built, and its answer decoded,
            // outside its timing: both sides time the round trip alone.
            let params = json!({"anchor": kip_anchor});
            c.query_one(&kip_stmt, &[&case.kip, &params]).unwrap();
            run_sql(&mut c).unwrap();
            let t = Instant::now();
            let kip_row = c.query_one(&kip_stmt, &[&case.kip, &params]);
            let dk = t.elapsed();
            let out: Value = kip_row.unwrap().get(0);
            assert!(out.get("error").is_none(), "{}: {out}", case.name);
            let t = Instant::now();
            let row = run_sql(&mut c);
            let ds = t.elapsed();
            let t = Instant::now();
            match &sql_anchor {
                SqlAnchor::Text(v) => c.query_one(&wrapped, &[&SPACE, v]),
                SqlAnchor::Int(v) => c.query_one(&wrapped, &[&SPACE, v]),
                SqlAnchor::Int4(v) => c.query_one(&wrapped, &[&SPACE, v]),
            }
            .unwrap();
            let dw = t.elapsed();
            let sql_value = row.unwrap().try_get::<_, Value>(0).ok();
            if matches!(case.anchor, Anchor::Id) {
                // The one row of the result column.
                assert_eq!(Some(&out["result"][0]), sql_value.as_ref(), "{}: KIP and SQL answers differ", case.name);
            }
            rows = match sql_value {
                Some(Value::Array(a)) => a.len(),
                _ => 1,
            };
            if i >= 3 {
                tk.push(dk);
                ts.push(ds);
                tw.push(dw);
            }
        }
        if matches!(case.anchor, Anchor::Id) {
            let mut differences: Vec<f64> = tk.iter().zip(&ts).map(|(k, s)| k.as_secs_f64() - s.as_secs_f64()).collect();
            differences.sort_by(f64::total_cmp);
            fixed_cost = Some(differences[differences.len() / 2]);
        }
        let mut pairs: Vec<f64> = tk.iter().zip(&ts).map(|(k, s)| k.as_secs_f64() / s.as_secs_f64().max(1e-9)).collect();
        pairs.sort_by(f64::total_cmp);
        let pair_ratio = pairs[pairs.len() / 2];
        let mut in_function: Vec<f64> = tw.iter().zip(&ts).map(|(w, s)| w.as_secs_f64() / s.as_secs_f64().max(1e-9)).collect();
        in_function.sort_by(f64::total_cmp);
        let (mk, ms) = (median(tk), median(ts));
        println!(
            "{:<28} {:>10.2?} {:>10.2?} {:>8.2} {:>11.2} {:>9.2}   {rows}",
            case.name,
            mk,
            ms,
            mk.as_secs_f64() / ms.as_secs_f64().max(1e-9),
            pair_ratio,
            in_function[in_function.len() / 2]
        );
    }
    println!("\n(KIP time includes parsing, binding, compiling, the subtransaction and the JSON envelope.)");
    println!(
        "(\"in a fn\": the hand-written statement run by a PL/pgSQL function in a block with an EXCEPTION clause, \
         as kip runs its statement in a subtransaction, timed right after the statement itself: the median of those pairs' ratios, \
         what calling any function that runs the statement costs.)"
    );
    if let Some(d) = fixed_cost {
        println!(
            "Fixed per-call cost (element by id, KIP minus the primary-key SELECT of the same JSON, median of pairs): {:.1} µs",
            d * 1e6
        );
    }
    governed_fixed_cost(&mut c);
    rare_predicate(&mut c);
    primer_memory(&mut c);
    // Measured on a vacuumed memory, as autovacuum leaves one in steady use:
    // index-only scans then skip the heap. A space loaded in bulk into a
    // large table stays below autovacuum's insert threshold, and its member
    // counts read every heap page (about 8 ms instead of 4 here).
    vacuum(&mut c);
    let primer: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let out: Value = c.query_one("SELECT kip_execute('DESCRIBE PRIMER')", &[]).unwrap().get(0);
            assert!(out.get("error").is_none(), "DESCRIBE PRIMER: {out}");
            t.elapsed()
        })
        .collect();
    println!(
        "DESCRIBE PRIMER median {:.2?} (space {PRIMER_SPACE}: 6,000 concepts in 10 domains, 4 links each)",
        median(primer)
    );
    large_type(&mut c);
    c.batch_execute(&format!("SET kip.space = '{SPACE}'")).unwrap();
    for case in CASES {
        let (kip_anchor, _) = anchor_values(&mut c, case.anchor, &anchor(5), 5);
        let cmd = case.kip.replace(":anchor", &kip_anchor.to_string());
        let plan: String = c.query_one("SELECT kip_explain($1, '{}'::jsonb, true)", &[&cmd]).unwrap().get(0);
        println!("\n===== kip_explain: {} =====\n{}", case.name, plan.split("-- plan\n").nth(1).unwrap_or(&plan));
    }
    c.batch_execute(&format!("SET kip.space = '{LARGE}'")).unwrap();
    let plan: String = c.query_one("SELECT kip_explain($1, '{}'::jsonb, true)", &[&LARGE_FIRST_PAGE]).unwrap().get(0);
    println!("\n===== kip_explain: {LARGE_FIRST_PAGE} over 1,000,000 Items =====\n{}", plan.split("-- plan\n").nth(1).unwrap_or(&plan));
}

/// A predicate with few links (the 29 `belongs_to_domain` links of the
/// bootstrap) among the space's million, matched with no anchor: planned
/// once for its value (`engine::rare_values`), where the generic plan walked
/// every link of the space in endpoint order. Against the hand-written
/// statement with the predicate written in it; then its plan.
fn rare_predicate(c: &mut Client) {
    const KIP: &str = r#"FIND(?a.name, ?d.name) WHERE { (?a, "belongs_to_domain", ?d) } LIMIT 10"#;
    let sql = c
        .prepare(
            "SELECT coalesce(jsonb_agg(jsonb_build_array(a.name, d.name) ORDER BY p.subject, p.object), '[]') FROM ( \
               SELECT subject, object FROM kip.propositions WHERE space = $1 AND predicate = 'belongs_to_domain' \
               ORDER BY subject, object LIMIT 10) p \
             JOIN kip.concepts a ON a.id = p.subject JOIN kip.concepts d ON d.id = p.object",
        )
        .unwrap();
    let (mk, ms) = time_against_sql(c, KIP, |out| out["result"][0].as_array().map(Vec::len) == Some(10), &sql, SPACE);
    println!(
        "Rare predicate, no anchor (`{KIP}`, 29 of 1,000,028 links): {mk:.2?} (hand-written SQL {ms:.2?}, {:.2}x)",
        mk.as_secs_f64() / ms.as_secs_f64().max(1e-9)
    );
    let plan: String = c.query_one("SELECT kip_explain($1, '{}'::jsonb, true)", &[&KIP]).unwrap().get(0);
    println!("\n===== kip_explain: rare predicate, no anchor =====\n{}", plan.split("-- plan\n").nth(1).unwrap_or(&plan));
}

/// Medians of `RUNS` pairs (after three untimed): the KIP command `kip`
/// through `kip_execute`, each answer checked by `check`, then the
/// prepared hand-written statement `sql` with the space `space` as `$1`.
fn time_against_sql(
    c: &mut Client,
    kip: &str,
    check: impl Fn(&Value) -> bool,
    sql: &postgres::Statement,
    space: &str,
) -> (Duration, Duration) {
    let kip_stmt = c.prepare("SELECT kip_execute($1::text, '{}'::jsonb)").unwrap();
    let (mut tk, mut ts) = (Vec::new(), Vec::new());
    for i in 0..RUNS + 3 {
        let t = Instant::now();
        let kip_row = c.query_one(&kip_stmt, &[&kip]);
        let dk = t.elapsed();
        let out: Value = kip_row.unwrap().get(0);
        assert!(check(&out), "{kip}: {out}");
        let t = Instant::now();
        c.query_one(sql, &[&space]).unwrap();
        let ds = t.elapsed();
        if i >= 3 {
            tk.push(dk);
            ts.push(ds);
        }
    }
    (median(tk), median(ts))
}

/// A type of a million members (space `kql_bench_million`, created on first
/// run): the first page of `FIND … LIMIT 10`, and walks of every page of
/// its first 10,000 and 100,000 members with CURSOR (1,000 rows a page),
/// then of EXPORT, DESCRIBE CONCEPT TYPES and an ordered FIND.
/// The space of [`large_type`] and the first page it times.
const LARGE: &str = "kql_bench_million";
const LARGE_FIRST_PAGE: &str = r#"FIND(?x.name) WHERE { ?x {type: "Item"} } LIMIT 10"#;

fn large_type(c: &mut Client) {
    const MEMBERS: i64 = 1_000_000;
    let have: i64 =
        c.query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Item'", &[&LARGE]).unwrap().get(0);
    if have < MEMBERS {
        let t = Instant::now();
        c.batch_execute(&format!(
            "DELETE FROM kip.spaces WHERE name = '{LARGE}';
             SELECT kip_create_space('{LARGE}');
             INSERT INTO kip.concepts (space, type, name, attributes)
               SELECT '{LARGE}', 'Item', 'item_' || g, jsonb_build_object('rank', g % 1000)
               FROM generate_series(1, {MEMBERS}) g;
             ANALYZE kip.concepts;"
        ))
        .unwrap();
        println!("generated {MEMBERS} Items in {:.1?}", t.elapsed());
    }
    c.batch_execute(&format!("SET kip.space = '{LARGE}'")).unwrap();
    let kip_stmt = c.prepare("SELECT kip_execute($1::text, $2::jsonb)").unwrap();
    let sql = c
        .prepare(
            "SELECT coalesce(jsonb_agg(c.name ORDER BY c.id), '[]') FROM ( \
               SELECT c.id, c.name FROM kip.concepts c WHERE c.space = $1 AND c.type = 'Item' ORDER BY c.id LIMIT 10) c",
        )
        .unwrap();
    let ten = |out: &Value| out["result"].as_array().map(Vec::len) == Some(10);
    let (mk, ms) = time_against_sql(c, LARGE_FIRST_PAGE, ten, &sql, LARGE);
    println!(
        "\n`FIND(?x.name) WHERE {{ ?x {{type: \"Item\"}} }} LIMIT 10` over 1,000,000 Items: {mk:.2?} (hand-written SQL {ms:.2?}, {:.2}x)",
        mk.as_secs_f64() / ms.as_secs_f64().max(1e-9)
    );
    // A value a thousandth of the Items hold, under LIMIT 10: planned for
    // its value and ordered by space and id, the statement walks the
    // space's own index; the hand-written one walks the table's primary key
    // from its start, through the other spaces' rows (DESIGN §7, "Planning
    // of a FIND").
    const COMMON_VALUE: &str = r#"FIND(?x.name) WHERE { ?x {type: "Item"} FILTER(?x.attributes.rank == 5) } LIMIT 10"#;
    let sql = c
        .prepare(
            "SELECT coalesce(jsonb_agg(c.name ORDER BY c.id), '[]') FROM ( \
               SELECT c.id, c.name FROM kip.concepts c WHERE c.space = $1 AND c.type = 'Item' \
               AND c.attributes @> '{\"rank\": 5}' ORDER BY c.id LIMIT 10) c",
        )
        .unwrap();
    let (mk, ms) = time_against_sql(c, COMMON_VALUE, ten, &sql, LARGE);
    println!(
        "`{COMMON_VALUE}` over 1,000,000 Items (1,000 hold it): {mk:.2?} (hand-written SQL {ms:.2?}, {:.2}x)",
        mk.as_secs_f64() / ms.as_secs_f64().max(1e-9)
    );
    for rows in [10_000usize, 100_000] {
        let t = Instant::now();
        let mut cursor: Option<String> = None;
        let mut seen = 0;
        while seen < rows {
            let cmd = match &cursor {
                None => r#"FIND(?x.name) WHERE { ?x {type: "Item"} } LIMIT 1000"#.to_string(),
                Some(token) => format!(r#"FIND(?x.name) WHERE {{ ?x {{type: "Item"}} }} LIMIT 1000 CURSOR "{token}""#),
            };
            let out: Value = c.query_one(&kip_stmt, &[&cmd, &json!({})]).unwrap().get(0);
            seen += out["result"].as_array().map_or(0, Vec::len);
            cursor = out["next_cursor"].as_str().map(str::to_string);
            assert!(cursor.is_some(), "{out}");
        }
        let d = t.elapsed();
        println!(
            "CURSOR walk of the first {rows} Items, 1,000 a page: {d:.2?} ({:.2} µs a row)",
            d.as_secs_f64() * 1e6 / rows as f64
        );
    }
    walk_kinds(c, &kip_stmt);
}

/// Walks every page of 10,000- and 100,000-row listings with CURSOR, 1,000
/// a page, in a space of 100,000 `$ConceptType` nodes (`kql_bench_types`,
/// created on first run): EXPORT capsules, DESCRIBE CONCEPT TYPES, and a
/// FIND ordered by name. A linear walk costs the same time a row at both
/// sizes.
fn walk_kinds(c: &mut Client, kip_stmt: &postgres::Statement) {
    const TYPES: &str = "kql_bench_types";
    let have: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = '$ConceptType'", &[&TYPES])
        .unwrap()
        .get(0);
    if have < 100_000 {
        c.batch_execute(&format!(
            "DELETE FROM kip.spaces WHERE name = '{TYPES}';
             SELECT kip_create_space('{TYPES}');
             INSERT INTO kip.concepts (space, type, name)
               SELECT '{TYPES}', '$ConceptType', 'Type' || lpad(g::text, 6, '0')
               FROM generate_series(1, 100000) g
             ON CONFLICT DO NOTHING;
             ANALYZE kip.concepts;"
        ))
        .unwrap();
    }
    c.batch_execute(&format!("SET kip.space = '{TYPES}'")).unwrap();
    // Each listing whole, at 10,000 rows (a FILTER on the name, or the
    // first 10 pages of DESCRIBE) and at 100,000.
    let tenth = r#"FILTER(?t.name <= "Type010000")"#;
    let walks = [
        ("EXPORT", r#"EXPORT ?t WHERE { ?t {type: "$ConceptType"} %F } LIMIT 1000"#),
        ("DESCRIBE CONCEPT TYPES", "DESCRIBE CONCEPT TYPES LIMIT 1000"),
        ("FIND ORDER BY ?t.name DESC", r#"FIND(?t.name) WHERE { ?t {type: "$ConceptType"} %F } ORDER BY ?t.name DESC LIMIT 1000"#),
    ];
    for (what, template) in walks {
        for rows in [10_000usize, 100_000] {
            let first = template.replace("%F", if rows == 10_000 { tenth } else { "" });
            let t = Instant::now();
            let (mut cursor, mut seen): (Option<String>, usize) = (None, 0);
            while seen < rows {
                let cmd = match &cursor {
                    None => first.clone(),
                    Some(token) => format!("{first} CURSOR \"{token}\""),
                };
                let out: Value = c.query_one(kip_stmt, &[&cmd, &json!({})]).unwrap().get(0);
                assert!(out.get("error").is_none(), "{what}: {out}");
                seen += out["result"]["concepts"].as_u64().map_or_else(|| out["result"].as_array().map_or(0, Vec::len), |n| n as usize);
                cursor = out["next_cursor"].as_str().map(str::to_string);
                if cursor.is_none() {
                    break;
                }
            }
            let d = t.elapsed();
            println!(
                "CURSOR walk of {seen} rows of {what}, 1,000 a page: {d:.2?} ({:.2} µs a row)",
                d.as_secs_f64() * 1e6 / seen.max(1) as f64
            );
        }
    }
}
