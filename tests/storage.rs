//! Storage invariants enforced by the database itself, exercised with plain
//! SQL (no KIP): cascading deletes through higher-order links, uniqueness per
//! space, same-space endpoints, version bookkeeping — and pg_dump/pg_restore.

use kip_integration_tests::{connect, dsn_for, ensure_database, unique_space};
use postgres::{Client, NoTls};

/// Message and constraint of a database error (the crate's Display says only "db error").
fn db_err<T: std::fmt::Debug>(r: Result<T, postgres::Error>) -> String {
    let e = r.expect_err("expected a database error");
    match e.as_db_error() {
        Some(d) => format!("{} [{}]", d.message(), d.constraint().unwrap_or("")),
        None => e.to_string(),
    }
}

fn new_space(client: &mut Client) -> String {
    let space = unique_space("sql");
    client.execute("INSERT INTO kip.spaces (name) VALUES ($1)", &[&space]).unwrap();
    space
}

fn concept(client: &mut Client, space: &str, ty: &str, name: &str) -> i64 {
    client
        .query_one("INSERT INTO kip.concepts (space, type, name) VALUES ($1, $2, $3) RETURNING id", &[&space, &ty, &name])
        .unwrap()
        .get(0)
}

/// Insert a link; `s`/`o` are (id, is_link).
fn link(client: &mut Client, space: &str, s: (i64, bool), p: &str, o: (i64, bool)) -> Result<i64, postgres::Error> {
    let (sc, sl) = if s.1 { (None, Some(s.0)) } else { (Some(s.0), None) };
    let (oc, ol) = if o.1 { (None, Some(o.0)) } else { (Some(o.0), None) };
    client
        .query_one(
            "INSERT INTO kip.propositions (space, subject_concept, subject_link, predicate, object_concept, object_link)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[&space, &sc, &sl, &p, &oc, &ol],
        )
        .map(|r| r.get(0))
}

fn count(client: &mut Client, sql: &str, space: &str) -> i64 {
    client.query_one(sql, &[&space]).unwrap().get(0)
}

#[test]
fn deleting_a_concept_cascades_through_higher_order_links() {
    let mut c = connect();
    let s = new_space(&mut c);
    let a = concept(&mut c, &s, "T", "a");
    let b = concept(&mut c, &s, "T", "b");
    let d = concept(&mut c, &s, "T", "d");
    let p1 = link(&mut c, &s, (a, false), "p", (b, false)).unwrap();
    // A link whose subject is a link, and one whose object is that link.
    let p2 = link(&mut c, &s, (p1, true), "q", (d, false)).unwrap();
    let _p3 = link(&mut c, &s, (d, false), "r", (p2, true)).unwrap();
    // An unrelated link that must survive.
    let keep = link(&mut c, &s, (b, false), "p", (d, false)).unwrap();
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.propositions WHERE space = $1", &s), 4);

    c.execute("DELETE FROM kip.concepts WHERE id = $1", &[&a]).unwrap();

    let remaining: Vec<i64> = c
        .query("SELECT id FROM kip.propositions WHERE space = $1", &[&s])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(remaining, vec![keep]);
    let dangling = count(
        &mut c,
        "SELECT count(*) FROM kip.propositions p WHERE p.space = $1 AND (
            NOT EXISTS (SELECT 1 FROM kip.concepts x WHERE x.id = p.subject UNION ALL SELECT 1 FROM kip.propositions y WHERE y.id = p.subject)
         OR NOT EXISTS (SELECT 1 FROM kip.concepts x WHERE x.id = p.object UNION ALL SELECT 1 FROM kip.propositions y WHERE y.id = p.object))",
        &s,
    );
    assert_eq!(dangling, 0);
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.concepts WHERE space = $1", &s), 2);
}

#[test]
fn uniqueness_holds_within_a_space_not_across_spaces() {
    let mut c = connect();
    let s1 = new_space(&mut c);
    let s2 = new_space(&mut c);
    let a = concept(&mut c, &s1, "Drug", "Aspirin");
    let b = concept(&mut c, &s1, "Symptom", "Headache");
    let dup = c.execute("INSERT INTO kip.concepts (space, type, name) VALUES ($1, 'Drug', 'Aspirin')", &[&s1]);
    assert!(db_err(dup).contains("concepts_space_type_name_key"));
    // Same (type, name) with another type is a different concept.
    concept(&mut c, &s1, "Person", "Aspirin");
    // Same (type, name) in another space is fine.
    let a2 = concept(&mut c, &s2, "Drug", "Aspirin");
    let b2 = concept(&mut c, &s2, "Symptom", "Headache");

    link(&mut c, &s1, (a, false), "treats", (b, false)).unwrap();
    let dup = link(&mut c, &s1, (a, false), "treats", (b, false));
    assert!(db_err(dup).contains("propositions_spo_key"));
    link(&mut c, &s2, (a2, false), "treats", (b2, false)).unwrap();

    // An endpoint in another space is refused by the composite foreign key.
    let cross = link(&mut c, &s1, (a, false), "treats", (b2, false));
    assert!(db_err(cross).contains("foreign key"));
    // So is an endpoint that does not exist, and a link with two subjects.
    assert!(link(&mut c, &s1, (a, false), "treats", (i64::MAX, false)).is_err());
    let both = c.execute(
        "INSERT INTO kip.propositions (space, subject_concept, subject_link, predicate, object_concept) VALUES ($1, $2, $2, 'p', $3)",
        &[&s1, &a, &b],
    );
    assert!(db_err(both).contains("proposition_one_subject"));
}

#[test]
fn versions_and_timestamps_are_maintained_by_the_database() {
    let mut c = connect();
    let s = new_space(&mut c);
    let a = concept(&mut c, &s, "T", "a");
    let v = |c: &mut Client| -> i32 { c.query_one("SELECT version FROM kip.concepts WHERE id = $1", &[&a]).unwrap().get(0) };
    assert_eq!(v(&mut c), 1);
    c.execute("UPDATE kip.concepts SET attributes = '{\"x\": 1}' WHERE id = $1", &[&a]).unwrap();
    assert_eq!(v(&mut c), 2);
    // A write that changes nothing is not a mutation.
    c.execute("UPDATE kip.concepts SET attributes = '{\"x\": 1}' WHERE id = $1", &[&a]).unwrap();
    assert_eq!(v(&mut c), 2);
    // Writers cannot set the version.
    c.execute("UPDATE kip.concepts SET version = 100, metadata = '{\"m\": true}' WHERE id = $1", &[&a]).unwrap();
    assert_eq!(v(&mut c), 3);
    let later: bool = c
        .query_one("SELECT updated_at > created_at FROM kip.concepts WHERE id = $1", &[&a])
        .unwrap()
        .get(0);
    assert!(later);
    // Content is compared with its type's equality, as IS DISTINCT FROM
    // does: the same jsonb written with another numeric scale is no change,
    // and neither updated_at nor created_at can be written.
    let stamps = |c: &mut Client| -> (i32, String, String) {
        let r = c
            .query_one("SELECT version, created_at::text, updated_at::text FROM kip.concepts WHERE id = $1", &[&a])
            .unwrap();
        (r.get(0), r.get(1), r.get(2))
    };
    let before = stamps(&mut c);
    c.execute(
        "UPDATE kip.concepts SET attributes = '{\"x\": 1.00}', updated_at = now() - interval '1 day', \
         created_at = now() - interval '1 day' WHERE id = $1",
        &[&a],
    )
    .unwrap();
    assert_eq!(stamps(&mut c), before, "a write of equal content changed the version or the timestamps");
    // A vector or the tsvector is not content.
    c.execute("UPDATE kip.concepts SET embedding = array_fill(0.5, ARRAY[384])::real[]::vector WHERE id = $1", &[&a]).unwrap();
    assert_eq!(stamps(&mut c), before);
    // Renaming is a change; the creation time stays.
    c.execute("UPDATE kip.concepts SET name = 'a2', created_at = now() + interval '1 day' WHERE id = $1", &[&a]).unwrap();
    let after = stamps(&mut c);
    assert_eq!((after.0, &after.1), (before.0 + 1, &before.1));
    assert!(after.2 > before.2, "updated_at not stamped: {after:?}");

    // Propositions: an endpoint, the predicate or the attributes are content.
    let b = concept(&mut c, &s, "T", "b");
    let d = concept(&mut c, &s, "T", "d");
    let p = link(&mut c, &s, (a, false), "p", (b, false)).unwrap();
    let pv = |c: &mut Client| -> i32 { c.query_one("SELECT version FROM kip.propositions WHERE id = $1", &[&p]).unwrap().get(0) };
    c.execute("UPDATE kip.propositions SET object_concept = $2 WHERE id = $1", &[&p, &d]).unwrap();
    assert_eq!(pv(&mut c), 2);
    c.execute("UPDATE kip.propositions SET attributes = '{}', version = 7 WHERE id = $1", &[&p]).unwrap();
    assert_eq!(pv(&mut c), 2);
    c.execute("UPDATE kip.propositions SET attributes = '{\"w\": 0.5}' WHERE id = $1", &[&p]).unwrap();
    assert_eq!(pv(&mut c), 3);
}

/// A rename moves the elements one at a time, in an order the planner and
/// the table's layout choose: a link about a link, with a concept endpoint
/// too, may move before the link it names. Both orders rename (the endpoint
/// keys are checked when the rename's transaction commits), and a dangling
/// key is still refused at once outside a rename.
#[test]
fn a_rename_moves_links_about_links_in_either_order() {
    for concept_first in [true, false] {
        let mut c = connect();
        let s = new_space(&mut c);
        // The concepts of the space in both orders of their ids.
        let (a, b) = if concept_first {
            let a = concept(&mut c, &s, "T", "a");
            (a, concept(&mut c, &s, "T", "b"))
        } else {
            let b = concept(&mut c, &s, "T", "b");
            (concept(&mut c, &s, "T", "a"), b)
        };
        let p1 = link(&mut c, &s, (a, false), "p", (b, false)).unwrap();
        let p2 = link(&mut c, &s, (p1, true), "q", (p1, true)).unwrap();
        let p3 = link(&mut c, &s, (b, false), "r", (p2, true)).unwrap();
        let p4 = link(&mut c, &s, (p2, true), "s", (a, false)).unwrap();
        let renamed = unique_space("sql");
        c.execute("UPDATE kip.spaces SET name = $2 WHERE name = $1", &[&s, &renamed]).unwrap();
        let moved: i64 = c
            .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1 AND id = ANY($2)", &[&renamed, &vec![p1, p2, p3, p4]])
            .unwrap()
            .get(0);
        assert_eq!(moved, 4, "concept a first: {concept_first}");
        // Outside a rename the keys are checked by each statement, as before.
        assert!(db_err(link(&mut c, &renamed, (b, false), "p", (p1 + 1_000_000_000, true))).contains("foreign key"));
        c.execute("SELECT kip_drop_space($1)", &[&renamed]).unwrap();
    }
}

/// A proposition has no foreign key of its own to kip.spaces: its subject's
/// composite key ties it to its space's elements, so renaming a space
/// carries every link along (higher-order ones included), dropping it
/// removes them, and a link cannot name a space its endpoints are not in.
#[test]
fn a_space_rename_or_drop_carries_its_links() {
    let mut c = connect();
    let s = new_space(&mut c);
    let a = concept(&mut c, &s, "T", "a");
    let b = concept(&mut c, &s, "T", "b");
    let p1 = link(&mut c, &s, (a, false), "p", (b, false)).unwrap();
    let p2 = link(&mut c, &s, (p1, true), "q", (p1, true)).unwrap();
    let p3 = link(&mut c, &s, (b, false), "r", (p2, true)).unwrap();
    let renamed = unique_space("sql");
    c.execute("UPDATE kip.spaces SET name = $2 WHERE name = $1", &[&s, &renamed]).unwrap();
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.propositions WHERE space = $1", &s), 0);
    let moved: i64 = c
        .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1 AND id = ANY($2)", &[&renamed, &vec![p1, p2, p3]])
        .unwrap()
        .get(0);
    assert_eq!(moved, 3);
    // A link in a space that does not exist, or not its endpoints' space, is refused.
    assert!(db_err(link(&mut c, "no_such_space", (a, false), "p", (b, false))).contains("foreign key"));
    assert!(db_err(link(&mut c, &s, (a, false), "p", (b, false))).contains("foreign key"));
    let dropped: bool = c.query_one("SELECT kip_drop_space($1)", &[&renamed]).unwrap().get(0);
    assert!(dropped);
    let left: i64 = c.query_one("SELECT count(*) FROM kip.propositions WHERE id = ANY($1)", &[&vec![p1, p2, p3]]).unwrap().get(0);
    assert_eq!(left, 0);
}

/// No index of the element tables mentions `metadata` (in a key or a
/// predicate): an update that changes only metadata, which agents do all the
/// time, can then be HOT instead of writing into every index. The TTL
/// sweep's indexes are on the generated `expires_at`, which follows the key.
#[test]
fn metadata_is_in_no_index_and_expires_at_follows_it() {
    let mut c = connect();
    let indexes: Vec<String> = c
        .query(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index \
             WHERE indrelid IN ('kip.concepts'::regclass, 'kip.propositions'::regclass)",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(indexes.iter().any(|d| d.contains("expires_at IS NOT NULL")), "{indexes:#?}");
    let on_metadata: Vec<&String> = indexes.iter().filter(|d| d.contains("metadata")).collect();
    assert!(on_metadata.is_empty(), "indexes mentioning metadata: {on_metadata:#?}");
    let space = new_space(&mut c);
    let id = concept(&mut c, &space, "Event", "e1");
    let expires = |c: &mut Client| -> Option<String> {
        c.query_one("SELECT expires_at FROM kip.concepts WHERE id = $1", &[&id]).unwrap().get(0)
    };
    assert_eq!(expires(&mut c), None);
    c.execute("UPDATE kip.concepts SET metadata = metadata || '{\"expires_at\": \"2026-01-01T00:00:00Z\"}' WHERE id = $1", &[&id])
        .unwrap();
    assert_eq!(expires(&mut c).as_deref(), Some("2026-01-01T00:00:00Z"));
    c.execute("UPDATE kip.concepts SET metadata = metadata - 'expires_at' WHERE id = $1", &[&id]).unwrap();
    assert_eq!(expires(&mut c), None);
}

#[test]
fn bad_space_names_are_refused() {
    let mut c = connect();
    for bad in ["", "has space", "-dash", "x'; DROP TABLE kip.concepts; --", &"x".repeat(64)] {
        c.execute("SELECT set_config('kip.space', $1, false)", &[&bad]).unwrap();
        let out: serde_json::Value = c.query_one("SELECT kip_execute('DESCRIBE PRIMER')", &[]).unwrap().get(0);
        assert_eq!(out["error"]["code"], "KIP_1002", "{bad:?}: {out}");
        assert!(out["error"]["message"].as_str().unwrap().contains("space"), "{out}");
        assert!(c.execute("INSERT INTO kip.spaces (name) VALUES ($1)", &[&bad]).is_err());
    }
    let err = db_err(c.execute("SELECT kip_create_space('no spaces allowed')", &[]));
    assert!(err.contains("invalid memory space name"), "{err}");
}

#[test]
fn dropping_a_space_removes_its_memory_only() {
    let mut c = connect();
    let s1 = new_space(&mut c);
    let s2 = new_space(&mut c);
    let a = concept(&mut c, &s1, "T", "a");
    let b = concept(&mut c, &s1, "T", "b");
    link(&mut c, &s1, (a, false), "p", (b, false)).unwrap();
    concept(&mut c, &s2, "T", "a");
    let dropped: bool = c.query_one("SELECT kip_drop_space($1)", &[&s1]).unwrap().get(0);
    assert!(dropped);
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.concepts WHERE space = $1", &s1), 0);
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.propositions WHERE space = $1", &s1), 0);
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.concepts WHERE space = $1", &s2), 1);
    let again: bool = c.query_one("SELECT kip_drop_space($1)", &[&s1]).unwrap().get(0);
    assert!(!again);
}

fn snapshot(client: &mut Client) -> Vec<String> {
    let mut rows = Vec::new();
    for sql in [
        "SELECT name FROM kip.spaces ORDER BY name",
        "SELECT concat_ws('|', id, space, type, name, attributes::text, metadata::text, version, created_at, updated_at) FROM kip.concepts ORDER BY id",
        "SELECT concat_ws('|', id, space, subject, predicate, object, attributes::text, metadata::text, version, created_at, updated_at) FROM kip.propositions ORDER BY id",
        "SELECT last_value::text FROM kip.element_id_seq",
    ] {
        for r in client.query(sql, &[]).unwrap() {
            rows.push(r.get::<_, String>(0));
        }
    }
    rows
}

fn pg_tool(name: &str) -> String {
    let bindir = std::process::Command::new("/usr/bin/pg_config").arg("--bindir").output().unwrap();
    format!("{}/{name}", String::from_utf8_lossy(&bindir.stdout).trim())
}

#[test]
fn pg_dump_and_restore_carry_the_memory() {
    let (src, dst) = ("kip_backup_src", "kip_backup_dst");
    let mut admin = Client::connect(&kip_integration_tests::admin_dsn(), NoTls).unwrap();
    for db in [src, dst] {
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\"")).unwrap();
    }
    ensure_database(src);
    let mut c = Client::connect(&dsn_for(src), NoTls).unwrap();
    let s = new_space(&mut c);
    let a = concept(&mut c, &s, "Drug", "Aspirin");
    let b = concept(&mut c, &s, "Symptom", "Headache");
    c.execute("UPDATE kip.concepts SET attributes = '{\"risk\": 2}', metadata = '{\"source\": \"x\"}' WHERE id = $1", &[&a])
        .unwrap();
    let p1 = link(&mut c, &s, (a, false), "treats", (b, false)).unwrap();
    let p2 = link(&mut c, &s, (p1, true), "observed_in", (b, false)).unwrap();
    // Make the first link newer on disk than the link that references it.
    c.execute("UPDATE kip.propositions SET attributes = '{\"w\": 1}' WHERE id = $1", &[&p1]).unwrap();
    let _ = p2;
    let before = snapshot(&mut c);
    drop(c);

    let dump = std::env::temp_dir().join(format!("kip_backup_{}.dump", std::process::id()));
    let port = kip_integration_tests::port();
    let status = std::process::Command::new(pg_tool("pg_dump"))
        .args(["-h", "localhost", "-p", &port, "-U", "postgres", "-Fc", "-f"])
        .arg(&dump)
        .arg(src)
        .status()
        .unwrap();
    assert!(status.success(), "pg_dump failed");
    admin.batch_execute(&format!("CREATE DATABASE \"{dst}\"")).unwrap();
    let out = std::process::Command::new(pg_tool("pg_restore"))
        .args(["-h", "localhost", "-p", &port, "-U", "postgres", "--exit-on-error", "-d", dst])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(out.status.success(), "pg_restore failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut restored = Client::connect(&dsn_for(dst), NoTls).unwrap();
    assert_eq!(snapshot(&mut restored), before);
    // The restored database keeps enforcing the invariants.
    let dup = restored.execute("INSERT INTO kip.concepts (space, type, name) VALUES ($1, 'Drug', 'Aspirin')", &[&s]);
    assert!(dup.is_err());
    restored.execute("DELETE FROM kip.concepts WHERE id = $1", &[&a]).unwrap();
    assert_eq!(count(&mut restored, "SELECT count(*) FROM kip.propositions WHERE space = $1", &s), 0);
    let _ = std::fs::remove_file(dump);
}

/// `kip.concept_json` / `kip.proposition_json` / `kip.metadata_json` (C,
/// src/exec/element_json.rs) build the same objects as the SQL expressions
/// they replaced, timestamps of every range included.
#[test]
fn element_objects_equal_their_sql_definition() {
    let mut c = connect();
    let iso = |col: &str| format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')");
    let meta = format!(
        "(m || jsonb_build_object('_version', v, '_created_at', {}, '_updated_at', {}))",
        iso("ca"),
        iso("ua")
    );
    let concept = format!(
        "(jsonb_build_object('_type', 'ConceptNode', 'id', 'C:' || id, 'type', t, 'name', n) \
         || CASE WHEN a = '{{}}'::jsonb THEN '{{}}'::jsonb ELSE jsonb_build_object('attributes', a) END \
         || jsonb_build_object('metadata', {meta}))"
    );
    let proposition = format!(
        "(jsonb_build_object('_type', 'PropositionLink', 'id', 'P:' || id || ':' || t, 'subject', n, 'predicate', t, 'object', o) \
         || CASE WHEN a = '{{}}'::jsonb THEN '{{}}'::jsonb ELSE jsonb_build_object('attributes', a) END \
         || jsonb_build_object('metadata', {meta}))"
    );
    let sql = format!(
        "SELECT count(*) FILTER (WHERE kip.concept_json(id, t, n, a, m, v, ca, ua) IS DISTINCT FROM {concept}), \
                count(*) FILTER (WHERE kip.proposition_json(id, t, n, o, a, m, v, ca, ua) IS DISTINCT FROM {proposition}), \
                count(*) FILTER (WHERE kip.metadata_json(m, v, ca, ua) IS DISTINCT FROM {meta}), \
                count(*) \
         FROM (VALUES \
           (1::bigint, 'T', 'plain', '{{}}'::jsonb, '{{}}'::jsonb, 1, now(), clock_timestamp(), 'C:2'), \
           (2, 'Type with \"quotes\"', 'ünïcode ☃', '{{\"x\": [1, 2.50, {{\"y\": null}}], \"b\": true}}', '{{\"source\": \"s\", \"_version\": 99, \"confidence\": 0.5}}', 7, \
            '2000-01-01 00:00:00+00', '1999-12-31 23:59:59.999999+00', NULL), \
           (3, 't', 'n', '{{\"k\": \"v\"}}', '{{\"_created_at\": \"x\"}}', 2147483647, '0044-03-15 12:00:00+00 BC', '10000-01-01 00:00:00+00', 'P:9:p'), \
           (4, 't', 'n', '{{}}', '{{}}', 0, '-infinity', 'infinity', 'C:1'), \
           (5, 't', 'n', '{{}}', '{{\"nested\": {{\"deep\": [[[]]]}}}}', 3, '0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999999+00', 'C:1') \
         ) AS r(id, t, n, a, m, v, ca, ua, o)"
    );
    let row = c.query_one(sql.as_str(), &[]).unwrap();
    let (concepts, propositions, metadata, rows): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(rows, 5);
    assert_eq!((concepts, propositions, metadata), (0, 0, 0), "objects differing from the SQL definition");
}

/// The version trigger functions are C: misused, they raise an error and
/// the backend lives on — called directly, fired AFTER instead of BEFORE,
/// or attached to a table whose columns are not kip's.
#[test]
fn the_version_trigger_refuses_misuse() {
    let mut c = connect();
    let err = db_err(c.execute("SELECT kip.touch_concept()", &[]));
    assert!(err.contains("trigger"), "{err}");
    let table = format!("touch_misuse_{}", std::process::id());
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS {table};
         CREATE TABLE {table} (id bigint, space text, type text, name text, attributes jsonb, metadata jsonb,
                               version text, created_at timestamptz, updated_at timestamptz);
         INSERT INTO {table} VALUES (1, 's', 't', 'n', '{{}}', '{{}}', 'v1', now(), now());
         CREATE TRIGGER wrong_types BEFORE UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION kip.touch_concept();"
    ))
    .unwrap();
    let err = db_err(c.execute(&format!("UPDATE {table} SET name = 'm'"), &[]));
    assert!(err.contains("version"), "{err}");
    c.batch_execute(&format!(
        "DROP TRIGGER wrong_types ON {table};
         CREATE TRIGGER after_row AFTER UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION kip.touch_proposition();"
    ))
    .unwrap();
    let err = db_err(c.execute(&format!("UPDATE {table} SET name = 'm'"), &[]));
    assert!(err.contains("BEFORE UPDATE"), "{err}");
    let alive: i32 = c.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(alive, 1);
    c.batch_execute(&format!("DROP TABLE {table}")).unwrap();
}
