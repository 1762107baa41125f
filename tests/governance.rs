//! Governance: roles and grants enforced by Postgres (for kip_execute and
//! for plain SQL under row-level security), the history of every change
//! (KIP, SQL, cascades), revert, the change feed, retention, and
//! pg_dump/pg_restore of grants and history. Most tests run as
//! non-superuser login roles created for the test.

use kip_integration_tests::{admin_dsn, dsn_for, ensure_database, err_code, ok, port, unique_space};
use postgres::{Client, NoTls};
use serde_json::{json, Value};

const DB: &str = "kip_test";

fn superuser() -> Client {
    ensure_database(DB);
    Client::connect(&dsn_for(DB), NoTls).expect("connect as postgres")
}

/// A new login role, member of `group` (kip_reader / kip_writer / kip_admin).
fn login_role(admin: &mut Client, prefix: &str, group: &str) -> String {
    let name = unique_space(prefix).to_lowercase().replace(['.', '-'], "_");
    // Names come from the test itself; quoted anyway.
    admin.batch_execute(&format!("CREATE ROLE \"{name}\" LOGIN IN ROLE {group}")).expect("create role");
    name
}

fn connect_as(role: &str, db: &str) -> Client {
    Client::connect(&format!("host=localhost port={} user={role} dbname={db}", port()), NoTls).expect("connect as role")
}

fn drop_role(admin: &mut Client, role: &str) {
    admin.execute("DELETE FROM kip.space_grants WHERE role = $1", &[&role]).unwrap();
    admin.batch_execute(&format!("DROP ROLE IF EXISTS \"{role}\"")).unwrap();
}

fn grant(c: &mut Client, space: &str, role: &str, privilege: &str) -> bool {
    c.query_one("SELECT kip_grant($1, $2::name, $3)", &[&space, &role, &privilege]).unwrap().get(0)
}

fn kip_in(c: &mut Client, space: &str, command: &str) -> Value {
    c.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    c.query_one("SELECT kip_execute($1::text, '{}'::jsonb)", &[&command]).unwrap().get(0)
}

fn kip_ro_in(c: &mut Client, space: &str, command: &str) -> Value {
    c.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    c.query_one("SELECT kip_execute_readonly($1::text, '{}'::jsonb)", &[&command]).unwrap().get(0)
}

fn count(c: &mut Client, sql: &str, space: &str) -> i64 {
    c.query_one(sql, &[&space]).unwrap().get(0)
}

/// The error text of a failed statement.
fn sql_error<T: std::fmt::Debug>(r: Result<T, postgres::Error>) -> String {
    let e = r.expect_err("expected an error");
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}

/// Two predicates the tests link with, registered in the same UPSERT.
const PREDICATES: &str = r#"
    CONCEPT ?knows { {type: "$PropositionType", name: "knows"}
        SET ATTRIBUTES { description: "The subject knows the object.", subject_types: ["*"], object_types: ["*"] } }
    CONCEPT ?about { {type: "$PropositionType", name: "about"}
        SET ATTRIBUTES { description: "The subject is about the object.", subject_types: ["*"], object_types: ["*"] } }
"#;

/// An UPSERT of `blocks` after the test predicates.
fn upsert(blocks: &str) -> String {
    format!("UPSERT {{ {PREDICATES} {blocks} }}")
}

/// A space with two people and a link, written by the superuser.
fn seeded_space(admin: &mut Client, prefix: &str) -> String {
    let space = unique_space(prefix);
    ok(kip_in(
        admin,
        &space,
        &upsert(
            r#"CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human", description: "secret zebra keeper" } }
            CONCEPT ?b { {type: "Person", name: "Bo"} SET ATTRIBUTES { person_class: "Human" } SET PROPOSITIONS { ("knows", ?a) } }"#,
        ),
    ));
    space
}

fn concept_id(c: &mut Client, space: &str, name: &str) -> i64 {
    c.query_one("SELECT id FROM kip.concepts WHERE space = $1 AND name = $2", &[&space, &name]).unwrap().get(0)
}

#[test]
fn a_reader_reads_and_cannot_write() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_read");
    let other = seeded_space(&mut admin, "gov_read_other");
    let reader = login_role(&mut admin, "reader", "kip_reader");
    assert!(grant(&mut admin, &space, &reader, "read"));
    assert!(!grant(&mut admin, &space, &reader, "read"), "a second identical grant changes nothing");
    let mut r = connect_as(&reader, DB);

    let names = ok(kip_in(&mut r, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "Ana"} }"#));
    assert_eq!(names, json!(["Ana"]));
    assert!(ok(kip_ro_in(&mut r, &space, "DESCRIBE PRIMER")).is_object());
    for write in [
        r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Mallory"} } }"#,
        r#"UPDATE ?p SET ATTRIBUTES { person_class: "AI" } WHERE { ?p {type: "Person", name: "Ana"} }"#,
        r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Ana"} }"#,
    ] {
        let out = kip_in(&mut r, &space, write);
        assert_eq!(err_code(&out), "KIP_3004", "{write}: {out}");
        assert!(out["error"]["message"].as_str().unwrap().contains("may not write"), "{out}");
    }
    // Another space: refused before anything runs, whether it exists or not.
    let refused = kip_in(&mut r, &other, "DESCRIBE PRIMER");
    let missing = kip_in(&mut r, "gov_no_such_space", "DESCRIBE PRIMER");
    assert_eq!(err_code(&refused), "KIP_3004");
    assert_eq!(err_code(&missing), "KIP_3004");
    assert!(refused["error"]["message"].as_str().unwrap().contains("may not read"));
    // A space it may read that does not exist yet: said so, and that a
    // role that may write it creates it (the reader cannot).
    let unborn = kip_integration_tests::unique_space("gov_read_unborn");
    assert!(grant(&mut admin, &unborn, &reader, "read"));
    let out = kip_in(&mut r, &unborn, r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Mallory"} } }"#);
    assert_eq!(err_code(&out), "KIP_3002", "{out}");
    assert!(out["error"]["hint"].as_str().unwrap().contains("may only read"), "{out}");

    // Plain SQL under row-level security.
    let ana = concept_id(&mut admin, &space, "Ana");
    assert_eq!(count(&mut r, "SELECT count(*) FROM kip.concepts WHERE space = $1", &other), 0);
    assert!(count(&mut r, "SELECT count(*) FROM kip.concepts WHERE space = $1", &space) > 0);
    assert_eq!(count(&mut r, "SELECT count(*) FROM kip.facts WHERE space = $1", &other), 0);
    assert_eq!(count(&mut r, "SELECT count(*) FROM kip.concept_nodes WHERE space = $1", &other), 0);
    let e = sql_error(r.execute("UPDATE kip.concepts SET name = 'x' WHERE id = $1", &[&ana]));
    assert!(e.contains("permission denied"), "{e}");
    let e = sql_error(r.execute("INSERT INTO kip.concepts (space, type, name) VALUES ($1, 'Person', 'x')", &[&space]));
    assert!(e.contains("permission denied"), "{e}");
    let e = sql_error(r.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{ana}")]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    // Embedding a space's backlog stores vectors in it: refused, not "0 stored".
    let e = sql_error(r.query_one("SELECT kip_embed_pending(NULL, $1)", &[&space]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    r.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    let e = sql_error(r.query_one("SELECT kip_set_embedding($1, array_fill(0.05::real, ARRAY[384]))", &[&format!("C:{ana}")]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    // Grants, like Postgres ACLs, are visible; changing them is for admins.
    let e = sql_error(r.query_one("SELECT kip_grant($1, $2::name, 'write')", &[&space, &reader]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    // A FIND sent again goes straight to its template, after the same
    // access check: a revoked grant refuses its next call.
    let find = r#"FIND(?p.name) WHERE { ?p {type: "Person", name: :n} }"#;
    r.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    for _ in 0..3 {
        let out: Value = r.query_one("SELECT kip_execute($1::text, '{\"n\": \"Ana\"}'::jsonb)", &[&find]).unwrap().get(0);
        assert_eq!(ok(out), json!(["Ana"]));
    }
    let revoked: bool = admin.query_one("SELECT kip_revoke($1, $2::name, 'read')", &[&space, &reader]).unwrap().get(0);
    assert!(revoked);
    let out: Value = r.query_one("SELECT kip_execute($1::text, '{\"n\": \"Ana\"}'::jsonb)", &[&find]).unwrap().get(0);
    assert_eq!(err_code(&out), "KIP_3004", "{out}");
    drop(r);
    drop_role(&mut admin, &reader);
}

#[test]
fn a_writer_is_confined_to_its_space() {
    let mut admin = superuser();
    let foreign = seeded_space(&mut admin, "gov_foreign");
    let own = unique_space("gov_own");
    let writer = login_role(&mut admin, "writer", "kip_writer");
    assert!(grant(&mut admin, &own, &writer, "write"));
    let mut w = connect_as(&writer, DB);

    // A grant on a space that does not exist yet lets the writer create it.
    let up = ok(kip_in(&mut w, &own, r#"UPSERT { CONCEPT ?z { {type: "Person", name: "Zed"} SET ATTRIBUTES { person_class: "Human", description: "zebra" } } }"#));
    assert_eq!(up["upsert_concept_nodes"].as_array().unwrap().len(), 1);
    assert_eq!(ok(kip_in(&mut w, &own, r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "Zed"} }"#)), json!(["Zed"]));

    for command in [
        r#"FIND(?p.name) WHERE { ?p {type: "Person"} }"#,
        r#"SEARCH CONCEPT "zebra""#,
        "DESCRIBE PRIMER",
        r#"EXPORT ?p WHERE { ?p {type: "Person"} }"#,
        r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Mallory"} } }"#,
        r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Ana"} }"#,
    ] {
        let out = kip_in(&mut w, &foreign, command);
        assert_eq!(err_code(&out), "KIP_3004", "{command}: {out}");
    }
    // No other space can be created without a grant.
    let out = kip_in(&mut w, &unique_space("gov_unGranted"), r#"UPSERT { CONCEPT ?x { {type: "Person", name: "X"} } }"#);
    assert_eq!(err_code(&out), "KIP_3004", "{out}");
    let e = sql_error(w.query_one("SELECT kip_create_space($1)", &[&unique_space("gov_new")]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    let e = sql_error(w.query_one("SELECT kip_maintenance('*')", &[]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    let e = sql_error(w.query_one("SELECT kip_maintenance($1)", &[&foreign]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    assert!(w.query_one("SELECT kip_maintenance($1)", &[&own]).is_ok());
    let e = sql_error(w.query_one("SELECT kip_drop_space($1)", &[&own]));
    assert!(e.starts_with("KIP_3004"), "only admins of a space drop it: {e}");

    // The same through plain SQL on the tables.
    let ana = concept_id(&mut admin, &foreign, "Ana");
    assert_eq!(count(&mut w, "SELECT count(*) FROM kip.concepts WHERE space = $1", &foreign), 0);
    assert_eq!(count(&mut w, "SELECT count(*) FROM kip.propositions WHERE space = $1", &foreign), 0);
    assert_eq!(count(&mut w, "SELECT count(*) FROM kip.spaces WHERE name = $1", &foreign), 0);
    assert_eq!(count(&mut w, "SELECT count(*) FROM kip.history WHERE space = $1", &foreign), 0);
    assert_eq!(count(&mut w, "SELECT count(*) FROM kip.embedding_backlog WHERE space = $1", &foreign), 0);
    assert_eq!(w.execute("UPDATE kip.concepts SET name = 'pwned' WHERE id = $1", &[&ana]).unwrap(), 0);
    assert_eq!(w.execute("DELETE FROM kip.concepts WHERE space = $1", &[&foreign]).unwrap(), 0);
    let e = sql_error(w.execute("INSERT INTO kip.concepts (space, type, name) VALUES ($1, 'Person', 'x')", &[&foreign]));
    assert!(e.contains("row-level security"), "{e}");
    let e = sql_error(w.execute("UPDATE kip.concepts SET space = $1 WHERE space = $2 AND name = 'Zed'", &[&foreign, &own]));
    assert!(e.contains("row-level security") || e.contains("foreign key"), "{e}");
    assert!(w.execute("UPDATE kip.concepts SET attributes = attributes || '{\"sql\": true}' WHERE space = $1 AND name = 'Zed'", &[&own]).unwrap() == 1);
    assert_eq!(count(&mut admin, "SELECT count(*) FROM kip.concepts WHERE space = $1 AND name = 'Ana'", &foreign), 1);

    // History of an element in a space the writer cannot read: the answer
    // of an id that never existed.
    let hidden = sql_error(w.query_one("SELECT kip_history($1)", &[&format!("C:{ana}")]));
    let never = sql_error(w.query_one("SELECT kip_history('C:999999999999')", &[]));
    assert_eq!(hidden.replace(&ana.to_string(), "N"), never.replace("999999999999", "N"));
    let feed: i64 = w.query_one("SELECT count(*) FROM kip_changes(now() - interval '1 hour') WHERE space <> $1", &[&own]).unwrap().get(0);
    assert_eq!(feed, 0, "the change feed shows only readable spaces");

    // No leak through scores or counts: a foreign space full of the same
    // word changes nothing the writer sees.
    let search_before = ok(kip_in(&mut w, &own, r#"SEARCH CONCEPT "zebra" MODE "keyword""#));
    let describe_before = ok(kip_in(&mut w, &own, "DESCRIBE PRIMER"));
    assert!(!search_before.as_array().unwrap().is_empty());
    let foreign2 = unique_space("gov_foreign_zebras");
    let mut capsule = String::from("UPSERT {\n");
    for i in 0..60 {
        capsule.push_str(&format!(
            "CONCEPT ?z{i} {{ {{type: \"Person\", name: \"Zebra {i}\"}} SET ATTRIBUTES {{ person_class: \"Human\", description: \"zebra zebra\" }} }}\n"
        ));
    }
    capsule.push('}');
    ok(kip_in(&mut admin, &foreign2, &capsule));
    admin.batch_execute("ANALYZE kip.concepts").unwrap();
    assert_eq!(ok(kip_in(&mut w, &own, r#"SEARCH CONCEPT "zebra" MODE "keyword""#)), search_before);
    assert_eq!(ok(kip_in(&mut w, &own, "DESCRIBE PRIMER")), describe_before);
    drop(w);
    drop_role(&mut admin, &writer);
}

/// A role held to its grants gets from keyword SEARCH what a superuser
/// gets (its statement runs as the tables' owner so that its index lookups
/// survive row-level security, `exec::owner`), and is itself again right
/// after: its plain SQL still sees only its spaces.
#[test]
fn keyword_search_answers_a_reader_as_a_superuser_and_gives_its_role_back() {
    let mut admin = superuser();
    let foreign = seeded_space(&mut admin, "gov_search_foreign");
    let own = seeded_space(&mut admin, "gov_search_own");
    ok(kip_in(&mut admin, &foreign, &upsert(r#"CONCEPT ?z { {type: "Person", name: "Zara"} SET ATTRIBUTES { person_class: "Human", description: "a zebra keeper" } }"#)));
    ok(kip_in(&mut admin, &own, &upsert(r#"CONCEPT ?z { {type: "Person", name: "Zeno"} SET ATTRIBUTES { person_class: "Human", description: "a zebra painter" } }"#)));
    let reader = login_role(&mut admin, "searcher", "kip_reader");
    assert!(grant(&mut admin, &own, &reader, "read"));
    let mut r = connect_as(&reader, DB);
    for command in [r#"SEARCH CONCEPT "zebra" MODE "keyword""#, r#"SEARCH CONCEPT "Zeno" MODE "keyword""#, r#"SEARCH CONCEPT "Zenoo" MODE "keyword""#] {
        // The same elements (scores may differ: a superuser's ranking
        // statistics describe every space, a reader's only its own).
        let names = |hits: Value| -> Vec<Value> { hits.as_array().unwrap().iter().map(|h| h["name"].clone()).collect() };
        let as_reader = names(ok(kip_ro_in(&mut r, &own, command)));
        assert!(!as_reader.is_empty(), "{command}");
        assert_eq!(as_reader, names(ok(kip_ro_in(&mut admin, &own, command))), "{command}");
        assert!(!as_reader.contains(&json!("Zara")), "{command}: {as_reader:?}");
    }
    let user: String = r.query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert_eq!(user, reader);
    assert_eq!(count(&mut r, "SELECT count(*) FROM kip.concepts WHERE space = $1", &foreign), 0);
    assert!(count(&mut r, "SELECT count(*) FROM kip.concepts WHERE space = $1", &own) > 0);
    drop(r);
    drop_role(&mut admin, &reader);
}

/// Element ids are kip's: a writer cannot choose or change one, so it can
/// neither take the id of an element deleted from a space it cannot read
/// nor squat ids ahead of the sequence, nor pass its plain SQL off as a KIP
/// command in the history. A revert writes only the space of its version.
#[test]
fn element_ids_and_command_hashes_are_kips() {
    let mut admin = superuser();
    let secret = seeded_space(&mut admin, "gov_ids_secret");
    let own = unique_space("gov_ids_own");
    let writer = login_role(&mut admin, "idwriter", "kip_writer");
    assert!(grant(&mut admin, &own, &writer, "write"));
    let mut w = connect_as(&writer, DB);
    ok(kip_in(&mut w, &own, r#"UPSERT { CONCEPT ?z { {type: "Person", name: "Zed"} SET ATTRIBUTES { person_class: "Human" } } }"#));
    let ana = concept_id(&mut admin, &secret, "Ana");
    ok(kip_in(&mut admin, &secret, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Ana"} }"#));

    // The deleted secret element's id, ids ahead of the sequence, any id.
    let insert = "INSERT INTO kip.concepts (id, space, type, name) VALUES ($1, $2, 'Person', 'Bait')";
    let e = sql_error(w.execute(insert, &[&ana, &own]));
    assert!(e.contains("element ids are issued by kip"), "{e}");
    let next: i64 = w.query_one("SELECT nextval('kip.element_id_seq')", &[]).unwrap().get(0);
    let e = sql_error(w.execute(insert, &[&(next + 5), &own]));
    assert!(e.contains("element ids are issued by kip"), "{e}");
    let e = sql_error(w.execute(
        "INSERT INTO kip.propositions (id, space, subject_concept, predicate, object_concept) \
         SELECT $1, space, id, 'knows', id FROM kip.concepts WHERE space = $2 AND name = 'Zed'",
        &[&(next + 6), &own],
    ));
    assert!(e.contains("element ids are issued by kip"), "{e}");
    // Nor is an id changed.
    let e = sql_error(w.execute("UPDATE kip.concepts SET id = id + 1000000 WHERE space = $1 AND name = 'Zed'", &[&own]));
    assert!(e.contains("id cannot be changed"), "{e}");
    // Rows without an id get theirs, one or many per statement.
    let n = w
        .execute("INSERT INTO kip.concepts (space, type, name) SELECT $1, 'Person', 'p' || g FROM generate_series(1, 5) g", &[&own])
        .unwrap();
    assert_eq!(n, 5);

    // The command hash: KIP's changes carry it, plain SQL cannot claim one.
    // The setting the hash once travelled in (refused, or set and ignored).
    let _ = w.batch_execute("SET kip.command_hash = 'deadbeef'");
    w.execute("INSERT INTO kip.concepts (space, type, name) VALUES ($1, 'Person', 'Forged')", &[&own]).unwrap();
    let forged = concept_id(&mut admin, &own, "Forged");
    assert_eq!(history_rows(&mut admin, forged)[0].2, None, "plain SQL has no command hash");
    ok(kip_in(&mut w, &own, r#"UPSERT { CONCEPT ?z { {type: "Person", name: "Kip"} } }"#));
    let kip_made = concept_id(&mut admin, &own, "Kip");
    assert_eq!(history_rows(&mut admin, kip_made)[0].2.as_deref().map(str::len), Some(64));

    // A writer restores its own deleted element under its id.
    ok(kip_in(&mut w, &own, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Kip"} }"#));
    let r: Value = w.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{kip_made}")]).unwrap().get(0);
    assert_eq!(r["version"], json!(2), "{r}");
    assert_eq!(concept_id(&mut admin, &own, "Kip"), kip_made);

    // A row that took a deleted element's id in another space (a superuser
    // may insert any id; so could a writer before ids were kip's) does not
    // receive that element's content when an admin reverts it.
    // (Its own history starts at version 50, so version 1 names the secret
    // element's.)
    admin
        .execute("INSERT INTO kip.concepts (id, space, type, name, version) VALUES ($1, $2, 'Person', 'Bait', 50)", &[&ana, &own])
        .unwrap();
    let e = sql_error(admin.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{ana}")]));
    assert!(e.starts_with("KIP_3003"), "{e}");
    let bait: (String, String, Value) = {
        let r = admin.query_one("SELECT space, name, attributes FROM kip.concepts WHERE id = $1", &[&ana]).unwrap();
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!(bait, (own.clone(), "Bait".to_string(), json!({})));

    // An administrator of every space may load rows with ids it drew first.
    let kadmin = login_role(&mut admin, "idadmin", "kip_admin");
    let mut k = connect_as(&kadmin, DB);
    let drawn: i64 = k.query_one("SELECT nextval('kip.element_id_seq')", &[]).unwrap().get(0);
    k.execute("INSERT INTO kip.concepts (id, space, type, name) VALUES ($1, $2, 'Person', 'Loaded')", &[&drawn, &own]).unwrap();
    drop(k);
    drop_role(&mut admin, &kadmin);

    // kip_explain refuses a space the caller cannot read, as kip_execute does.
    w.execute("SELECT set_config('kip.space', $1, false)", &[&secret]).unwrap();
    let plan: String = w.query_one("SELECT kip_explain('FIND(?p) WHERE { ?p {type: \"Person\"} }', '{}', true)", &[]).unwrap().get(0);
    assert!(plan.starts_with("KIP_3004"), "{plan}");
    drop(w);
    drop_role(&mut admin, &writer);
}

/// A role in none of kip's group roles (so without even USAGE on schema
/// `kip`) gets `KIP_3004` naming what it lacks, not an internal error.
#[test]
fn a_role_outside_the_kip_roles_is_told_what_it_lacks() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_outsider");
    let outsider = login_role(&mut admin, "gov_outsider", "pg_read_all_settings");
    assert!(grant(&mut admin, &space, &outsider, "read"));
    let mut o = connect_as(&outsider, DB);
    for out in [kip_in(&mut o, &space, "DESCRIBE PRIMER"), kip_ro_in(&mut o, &space, "FIND(?p.name) WHERE { ?p {type: \"Person\"} }")] {
        assert_eq!(err_code(&out), "KIP_3004", "{out}");
        assert!(out["error"]["message"].as_str().unwrap().contains("permission denied"), "{out}");
        assert!(out["error"]["hint"].as_str().unwrap().contains("kip_reader"), "{out}");
    }
    drop(o);
    drop_role(&mut admin, &outsider);
}

/// A grant that no role can use (neither the grantee nor any member of it
/// is in the group the privilege needs) is kept, with a warning naming the
/// group; a team role whose agents are in the group is not warned about.
#[test]
fn a_grant_no_role_can_use_is_warned_about() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_warn");
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = warnings.clone();
    let mut c = dsn_for(DB)
        .parse::<postgres::Config>()
        .unwrap()
        .notice_callback(move |n| seen.lock().unwrap().push(format!("{}: {} | {}", n.severity(), n.message(), n.hint().unwrap_or(""))))
        .connect(NoTls)
        .unwrap();
    let mut granted = |role: &str, privilege: &str| -> Vec<String> {
        warnings.lock().unwrap().clear();
        let _: bool = c.query_one("SELECT kip_grant($1, $2::name, $3)", &[&space, &role, &privilege]).unwrap().get(0);
        warnings.lock().unwrap().clone()
    };
    let outsider = login_role(&mut admin, "gov_warn_out", "pg_read_all_settings");
    let reader = login_role(&mut admin, "gov_warn_reader", "kip_reader");
    let team = login_role(&mut admin, "gov_warn_team", "pg_read_all_settings");
    let agent = login_role(&mut admin, "gov_warn_agent", "kip_writer");
    admin.batch_execute(&format!("GRANT \"{team}\" TO \"{agent}\"")).unwrap();

    let w = granted(&outsider, "read");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with(&format!("WARNING: neither role {outsider} nor any member of it is in kip_reader")), "{w:?}");
    assert!(w[0].ends_with(&format!("GRANT kip_reader TO {outsider};")), "{w:?}");
    assert!(granted(&reader, "read").is_empty());
    let w = granted(&reader, "write");
    assert!(w.len() == 1 && w[0].contains("in kip_writer: the write grant gives nothing"), "{w:?}");
    // The grant is kept all the same.
    assert_eq!(count(&mut admin, "SELECT count(*) FROM kip.space_grants WHERE space = $1 AND privilege = 'write'", &space), 1);
    assert!(granted(&team, "write").is_empty(), "the team's agent is a writer");
    // A NOINHERIT member of kip_reader uses neither the group nor the grant.
    let noinherit = login_role(&mut admin, "gov_warn_noinherit", "kip_reader");
    admin.batch_execute(&format!("ALTER ROLE \"{noinherit}\" NOINHERIT")).unwrap();
    let w = granted(&noinherit, "read");
    assert!(w.len() == 1 && w[0].contains("in kip_reader"), "{w:?}");
    drop(c);
    for role in [&outsider, &reader, &agent, &team, &noinherit] {
        drop_role(&mut admin, role);
    }
}

#[test]
fn grants_follow_role_membership_and_can_be_revoked() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_group");
    let team = login_role(&mut admin, "team", "kip_writer");
    let agent = login_role(&mut admin, "agent", "kip_writer");
    admin.batch_execute(&format!("GRANT \"{team}\" TO \"{agent}\"")).unwrap();
    assert!(grant(&mut admin, &space, &team, "write"));
    let mut a = connect_as(&agent, DB);
    ok(kip_in(&mut a, &space, r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Cy"} SET ATTRIBUTES { person_class: "Human" } } }"#));
    // Revoking write leaves read.
    let revoked: bool = admin.query_one("SELECT kip_revoke($1, $2::name, 'write')", &[&space, &team]).unwrap().get(0);
    assert!(revoked);
    assert_eq!(err_code(&kip_in(&mut a, &space, r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Dee"} } }"#)), "KIP_3004");
    ok(kip_in(&mut a, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "Cy"} }"#));
    // A space admin grants others; revoking read removes access.
    assert!(grant(&mut admin, &space, &agent, "admin"));
    let reader = login_role(&mut admin, "reader2", "kip_reader");
    assert!(grant(&mut a, &space, &reader, "read"));
    let revoked: bool = a.query_one("SELECT kip_revoke($1, $2::name, 'read')", &[&space, &team]).unwrap().get(0);
    assert!(revoked);
    let mut r = connect_as(&reader, DB);
    ok(kip_in(&mut r, &space, "DESCRIBE PRIMER"));
    drop((a, r));
    for role in [&reader, &agent, &team] {
        drop_role(&mut admin, role);
    }
}

/// Each backend remembers the spaces a role was granted (row-level security
/// asks once per policy and statement); plain SQL still follows every
/// change from one statement to the next: another session's revoke and
/// grant, the session's own revoke inside a transaction and its rollback,
/// and a change of role membership. Under REPEATABLE READ the grants are
/// those of the transaction's snapshot, as a plain SQL read of them is.
#[test]
fn plain_sql_follows_grants_from_one_statement_to_the_next() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_memo");
    let people = |c: &mut Client| count(c, "SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Person'", &space);
    let revoke = |c: &mut Client, role: &str, privilege: &str| -> bool {
        c.query_one("SELECT kip_revoke($1, $2::name, $3)", &[&space, &role, &privilege]).unwrap().get(0)
    };
    let reader = login_role(&mut admin, "gov_memo_r", "kip_reader");
    assert!(grant(&mut admin, &space, &reader, "read"));
    let mut r = connect_as(&reader, DB);
    let seen = people(&mut r);
    assert!(seen > 0);
    assert_eq!(people(&mut r), seen);
    // Another session's revoke and grant hold from the next statement.
    assert!(revoke(&mut admin, &reader, "read"));
    assert_eq!(people(&mut r), 0, "a revoked read still sees the space");
    let e = sql_error(r.execute("INSERT INTO kip.concepts (space, type, name) VALUES ($1, 'Person', 'x')", &[&space]));
    assert!(e.contains("permission denied") || e.contains("row-level security"), "{e}");
    assert!(grant(&mut admin, &space, &reader, "read"));
    assert_eq!(people(&mut r), seen);
    // Under REPEATABLE READ, the transaction's snapshot decides.
    r.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(people(&mut r), seen);
    assert!(revoke(&mut admin, &reader, "read"));
    assert_eq!(people(&mut r), seen, "the grant is in the transaction's snapshot");
    r.batch_execute("COMMIT").unwrap();
    assert_eq!(people(&mut r), 0);

    // The session's own revoke, inside a transaction, and its rollback.
    let owner = login_role(&mut admin, "gov_memo_a", "kip_writer");
    assert!(grant(&mut admin, &space, &owner, "admin"));
    let mut o = connect_as(&owner, DB);
    assert_eq!(people(&mut o), seen);
    o.batch_execute("BEGIN").unwrap();
    assert!(revoke(&mut o, &owner, "read"));
    assert_eq!(people(&mut o), 0, "the transaction's own revoke");
    o.batch_execute("ROLLBACK").unwrap();
    assert_eq!(people(&mut o), seen, "the rolled-back revoke");

    // Role membership: a grant to a group follows the membership.
    let group = login_role(&mut admin, "gov_memo_g", "kip_reader");
    let member = login_role(&mut admin, "gov_memo_m", "kip_reader");
    assert!(grant(&mut admin, &space, &group, "read"));
    admin.batch_execute(&format!("GRANT \"{group}\" TO \"{member}\"")).unwrap();
    let mut m = connect_as(&member, DB);
    assert_eq!(people(&mut m), seen);
    admin.batch_execute(&format!("REVOKE \"{group}\" FROM \"{member}\"")).unwrap();
    assert_eq!(people(&mut m), 0, "a role out of the group keeps its grants");
    admin.batch_execute(&format!("GRANT \"{group}\" TO \"{member}\"")).unwrap();
    assert_eq!(people(&mut m), seen);
    drop((r, o, m));
    for role in [&reader, &owner, &member, &group] {
        drop_role(&mut admin, role);
    }

    // A grant outlives a dropped role, and kip_revoke still removes it; a
    // name nobody holds or held is still an error.
    let gone = login_role(&mut admin, "gov_memo_gone", "kip_reader");
    assert!(grant(&mut admin, &space, &gone, "write"));
    admin.batch_execute(&format!("DROP ROLE \"{gone}\"")).unwrap();
    assert!(revoke(&mut admin, &gone, "read"));
    let e = sql_error(admin.query_one("SELECT kip_revoke($1, 'never-there', 'read')", &[&space]));
    assert!(e.starts_with("KIP_3002: role 'never-there' does not exist"), "{e}");
    let held = count(&mut admin, &format!("SELECT count(*) FROM kip.space_grants WHERE space = $1 AND role = '{gone}'"), &space);
    assert_eq!(held, 0);
}

/// The grant lookup of a policy runs inside parallel queries too: a plain
/// SQL count over the element tables, planned in parallel, by a role under
/// row-level security gets its answer (it once failed there with "cannot
/// update SecondarySnapshot during a parallel operation"), and so does a
/// FIND that kip plans in parallel.
#[test]
fn a_parallel_query_under_row_level_security_sees_its_space() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_parallel");
    let reader = login_role(&mut admin, "gov_parallel_r", "kip_reader");
    assert!(grant(&mut admin, &space, &reader, "read"));
    let mut r = connect_as(&reader, DB);
    r.batch_execute(
        "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; \
         SET max_parallel_workers_per_gather = 2; SET enable_indexscan = off; SET enable_indexonlyscan = off; \
         SET enable_bitmapscan = off",
    )
    .unwrap();
    let plan: Vec<String> = r
        .query("EXPLAIN SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Person'", &[&space])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(plan.iter().any(|l| l.contains("Gather")), "not a parallel plan: {plan:#?}");
    // Twice: once before the answers are remembered, once after.
    for _ in 0..2 {
        let people = count(&mut r, "SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Person'", &space);
        assert!(people > 0);
    }
    // kip's own reads are planned in parallel too, and answer as the
    // superuser's serial plans do.
    let find = r#"FIND(?p.name, ?p.attributes.person_class) WHERE { ?p {type: "Person"} } ORDER BY ?p.name"#;
    let theirs = kip_ro_in(&mut r, &space, find);
    let explained: String = r.query_one("SELECT kip_explain($1)", &[&find]).unwrap().get(0);
    assert!(explained.contains("Gather"), "not a parallel plan: {explained}");
    let expected = serde_json::json!([["$self", "AI"], ["$system", "AI"], ["Ana", "Human"], ["Bo", "Human"]]);
    assert_eq!(theirs["result"], expected, "{theirs}");
    assert_eq!(theirs, kip_ro_in(&mut admin, &space, find));
    assert_eq!(kip_ro_in(&mut r, &space, find), theirs);
    drop(r);
    drop_role(&mut admin, &reader);
}

/// A kip_admin's grant needs no lookup (nor a subtransaction) once the
/// space is known to be ready; it still follows the role's membership from
/// one call to the next.
#[test]
fn a_kip_admin_loses_its_access_with_its_membership() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_kipadmin");
    let member = login_role(&mut admin, "gov_kipadmin", "kip_admin");
    let mut m = connect_as(&member, DB);
    for _ in 0..2 {
        let out = kip_in(&mut m, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person"} } ORDER BY ?p.name"#);
        assert!(ok(out).as_array().is_some_and(|names| !names.is_empty()));
    }
    ok(kip_in(&mut m, &space, r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Eve"} SET ATTRIBUTES { person_class: "Human" } } }"#));
    // Without kip_admin (and with no grant on the space) the same session
    // is refused at once, for reads and writes.
    admin.batch_execute(&format!("REVOKE kip_admin FROM \"{member}\"; GRANT kip_writer TO \"{member}\"")).unwrap();
    assert_eq!(err_code(&kip_in(&mut m, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person"} }"#)), "KIP_3004");
    assert_eq!(err_code(&kip_ro_in(&mut m, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person"} }"#)), "KIP_3004");
    assert_eq!(err_code(&kip_in(&mut m, &space, r#"UPSERT { CONCEPT ?x { {type: "Person", name: "Fay"} } }"#)), "KIP_3004");
    // Membership back: access back, in the same session.
    admin.batch_execute(&format!("GRANT kip_admin TO \"{member}\"")).unwrap();
    ok(kip_in(&mut m, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "Eve"} }"#));
    drop(m);
    drop_role(&mut admin, &member);
}

#[test]
fn bad_grants_are_clear_errors() {
    let mut admin = superuser();
    let space = unique_space("gov_bad");
    let e = sql_error(admin.query_one("SELECT kip_grant($1, 'no_such_role_kip'::name, 'read')", &[&space]));
    assert!(e.starts_with("KIP_3002: role 'no_such_role_kip' does not exist"), "{e}");
    let e = sql_error(admin.query_one("SELECT kip_grant($1, 'kip_reader'::name, 'own')", &[&space]));
    assert!(e.starts_with("KIP_1001: unknown privilege"), "{e}");
    let e = sql_error(admin.query_one("SELECT kip_grant('bad name!', 'kip_reader'::name, 'read')", &[]));
    assert!(e.starts_with("KIP_1002"), "{e}");
    let e = sql_error(admin.query_one("SELECT kip_history('X:1')", &[]));
    assert!(e.starts_with("KIP_1001: malformed element id"), "{e}");
    let e = sql_error(admin.query_one("SELECT kip_history('C:1', 0)", &[]));
    assert!(e.starts_with("KIP_1001"), "{e}");
}

fn history_rows(c: &mut Client, id: i64) -> Vec<(String, i32, Option<String>, String)> {
    c.query("SELECT operation, version, command_hash, role::text FROM kip.history WHERE element_id = $1 ORDER BY id", &[&id])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

#[test]
fn history_records_kip_sql_and_cascade_changes() {
    let mut c = superuser();
    let space = unique_space("gov_hist");
    let command = upsert(
        r#"CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } }
        CONCEPT ?b { {type: "Person", name: "Bo"} SET ATTRIBUTES { person_class: "Human" } SET PROPOSITIONS { ("knows", ?a) } }"#,
    );
    ok(kip_in(&mut c, &space, &command));
    let hash: String = c.query_one("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')", &[&command.as_str()]).unwrap().get(0);
    let (ana, bo) = (concept_id(&mut c, &space, "Ana"), concept_id(&mut c, &space, "Bo"));
    let link: i64 = c.query_one("SELECT id FROM kip.propositions WHERE space = $1 AND predicate = 'knows'", &[&space]).unwrap().get(0);
    assert_eq!(history_rows(&mut c, ana), vec![("insert".into(), 1, Some(hash.clone()), "postgres".into())]);
    assert_eq!(history_rows(&mut c, link), vec![("insert".into(), 1, Some(hash.clone()), "postgres".into())]);

    // Plain SQL: no command hash; the application name is kept.
    c.batch_execute("SET application_name = 'bi-tool'").unwrap();
    c.execute("UPDATE kip.concepts SET attributes = attributes || '{\"age\": 3}' WHERE id = $1", &[&ana]).unwrap();
    let (op, version, cmd, app): (String, i32, Option<String>, Option<String>) = {
        let r = c.query_one("SELECT operation, version, command_hash, application_name FROM kip.history WHERE element_id = $1 ORDER BY id DESC LIMIT 1", &[&ana]).unwrap();
        (r.get(0), r.get(1), r.get(2), r.get(3))
    };
    assert_eq!((op.as_str(), version, cmd, app.as_deref()), ("update", 2, None, Some("bi-tool")));
    // A write that changes nothing, and a stored vector, are no change.
    c.execute("UPDATE kip.concepts SET attributes = attributes WHERE id = $1", &[&ana]).unwrap();
    c.execute("UPDATE kip.concepts SET embedding = array_fill(0.1, ARRAY[384])::real[]::vector WHERE id = $1", &[&ana]).ok();
    assert_eq!(history_rows(&mut c, ana).len(), 2);
    // The before and after images carry the content, not the vector.
    let images: Value = c
        .query_one("SELECT jsonb_build_array(before, after) FROM kip.history WHERE element_id = $1 AND operation = 'update'", &[&ana])
        .unwrap()
        .get(0);
    assert_eq!(images[0]["attributes"], json!({"person_class": "Human"}));
    assert_eq!(images[1]["attributes"], json!({"person_class": "Human", "age": 3}));
    assert!(images[1].get("embedding").is_none() && images[1].get("search_text").is_none());

    // KIP DELETE: the concept and, by cascade, its link, in one transaction.
    ok(kip_in(&mut c, &space, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Ana"} }"#));
    let ana_rows = history_rows(&mut c, ana);
    let link_rows = history_rows(&mut c, link);
    assert_eq!(ana_rows.last().unwrap().0, "delete");
    assert_eq!(link_rows.last().unwrap().0, "delete");
    let same_xact: bool = c
        .query_one("SELECT count(DISTINCT xact_id) = 1 FROM kip.history WHERE element_id IN ($1, $2) AND operation = 'delete'", &[&ana, &link])
        .unwrap()
        .get(0);
    assert!(same_xact);
    // Plain SQL delete of a space's concepts: one statement, every row recorded.
    let bulk = unique_space("gov_bulk");
    c.execute("INSERT INTO kip.spaces (name) VALUES ($1)", &[&bulk]).unwrap();
    c.execute("INSERT INTO kip.concepts (space, type, name) SELECT $1, 'Note', 'n' || g FROM generate_series(1, 2000) g", &[&bulk]).unwrap();
    c.execute("DELETE FROM kip.concepts WHERE space = $1", &[&bulk]).unwrap();
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.history WHERE space = $1 AND operation = 'delete'", &bulk), 2000);
    // kip_history: newest first, bounded.
    let h: Value = c.query_one("SELECT kip_history($1, 2)", &[&format!("C:{ana}")]).unwrap().get(0);
    let ops: Vec<&str> = h["versions"].as_array().unwrap().iter().map(|v| v["operation"].as_str().unwrap()).collect();
    assert_eq!(ops, ["delete", "update"]);
    assert_eq!(h["space"], json!(space));
    let _ = bo;
    // kip.history = off records nothing (a superuser setting).
    c.batch_execute("SET kip.history = off").unwrap();
    c.execute("UPDATE kip.concepts SET attributes = '{\"quiet\": true}' WHERE id = $1", &[&bo]).unwrap();
    c.batch_execute("RESET kip.history").unwrap();
    assert_eq!(history_rows(&mut c, bo).len(), 1);
    let mut admin = superuser();
    let writer = login_role(&mut admin, "hist_writer", "kip_writer");
    assert!(grant(&mut admin, &space, &writer, "write"));
    let mut w = connect_as(&writer, DB);
    let e = sql_error(w.batch_execute("SET kip.history = off"));
    assert!(e.contains("permission denied"), "{e}");
    ok(kip_in(&mut w, &space, r#"UPSERT { CONCEPT ?b { {type: "Person", name: "Bo"} SET ATTRIBUTES { person_class: "AI" } } }"#));
    assert_eq!(history_rows(&mut c, bo).last().unwrap().3, writer, "the writer's role is recorded");
    drop(w);
    drop_role(&mut admin, &writer);
}

/// A deleted concept comes back with the links its own deletion took, not
/// with one an earlier command of the same batch deleted on purpose; and
/// nothing comes back whose predicate is no longer defined.
#[test]
fn revert_restores_what_the_deletion_took_and_only_defined_links() {
    let mut c = superuser();
    let space = unique_space("gov_revert_scope");
    ok(kip_in(
        &mut c,
        &space,
        &upsert(
            r#"CONCEPT ?tmp { {type: "$PropositionType", name: "tmp_rel"}
                 SET ATTRIBUTES { description: "A passing relation.", subject_types: ["*"], object_types: ["*"] } }
            CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } }
            CONCEPT ?b { {type: "Person", name: "Bo"} SET ATTRIBUTES { person_class: "Human" }
                SET PROPOSITIONS { ("knows", ?a), ("about", ?a) } }"#,
        ),
    ));
    let ana = concept_id(&mut c, &space, "Ana");
    c.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    // One batch: the "about" link deleted on purpose, then Ana with her links.
    let out: Value = c
        .query_one(
            "SELECT kip_execute($1::jsonb)",
            &[&json!({"commands": [
                r#"DELETE PROPOSITIONS ?l WHERE { ?l ({type: "Person", name: "Bo"}, "about", {type: "Person", name: "Ana"}) }"#,
                r#"DELETE CONCEPT ?a DETACH WHERE { ?a {type: "Person", name: "Ana"} }"#
            ]})],
        )
        .unwrap()
        .get(0);
    assert!(out["result"].as_array().is_some_and(|items| items.iter().all(|i| i.get("error").is_none())), "{out}");
    let r: Value = c.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{ana}")]).unwrap().get(0);
    let restored: Vec<String> = serde_json::from_value(r["restored_links"].clone()).unwrap();
    assert_eq!(restored.len(), 1, "{r}");
    assert!(restored[0].ends_with(":knows"), "{r}");

    // A link whose predicate definition was deleted since stays deleted.
    ok(kip_in(&mut c, &space, r#"UPSERT { CONCEPT ?b { {type: "Person", name: "Bo"} SET PROPOSITIONS { ("tmp_rel", {type: "Person", name: "Ana"}) } } }"#));
    let tmp: i64 = c.query_one("SELECT id FROM kip.propositions WHERE space = $1 AND predicate = 'tmp_rel'", &[&space]).unwrap().get(0);
    ok(kip_in(&mut c, &space, r#"DELETE PROPOSITIONS ?l WHERE { ?l (?s, "tmp_rel", ?o) }"#));
    ok(kip_in(&mut c, &space, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "$PropositionType", name: "tmp_rel"} }"#));
    let e = sql_error(c.query_one("SELECT kip_revert($1, 1)", &[&format!("P:{tmp}")]));
    assert!(e.starts_with(&format!("KIP_2001: cannot revert P:{tmp} to version 1: its predicate 'tmp_rel' is no longer defined")), "{e}");

    // After a rename of the space, a version recorded under the old name
    // names the space the element is in now.
    let bo = concept_id(&mut c, &space, "Bo");
    let renamed = format!("{space}_renamed");
    c.execute("UPDATE kip.spaces SET name = $2 WHERE name = $1", &[&space, &renamed]).unwrap();
    let e = sql_error(c.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{bo}")]));
    assert!(
        e.starts_with(&format!("KIP_3003: cannot revert C:{bo} to version 1 of memory space '{space}': that space no longer exists and the element is now in memory space '{renamed}'")),
        "{e}"
    );
}

#[test]
fn revert_round_trip() {
    let mut c = superuser();
    let space = unique_space("gov_revert");
    ok(kip_in(
        &mut c,
        &space,
        &upsert(
            r#"CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human", mood: "calm" } }
            CONCEPT ?b { {type: "Person", name: "Bo"} SET ATTRIBUTES { person_class: "Human" } SET PROPOSITIONS { ("knows", ?a) } }"#,
        ),
    ));
    let (ana, bo) = (concept_id(&mut c, &space, "Ana"), concept_id(&mut c, &space, "Bo"));
    let link: i64 = c.query_one("SELECT id FROM kip.propositions WHERE space = $1 AND predicate = 'knows'", &[&space]).unwrap().get(0);
    // A link about the link (higher order).
    ok(kip_in(&mut c, &space, r#"UPSERT { CONCEPT ?b { {type: "Person", name: "Bo"}
        SET PROPOSITIONS { ("about", ({type: "Person", name: "Bo"}, "knows", {type: "Person", name: "Ana"})) } } }"#));
    let meta: i64 = c.query_one("SELECT id FROM kip.propositions WHERE space = $1 AND predicate = 'about'", &[&space]).unwrap().get(0);
    ok(kip_in(&mut c, &space, r#"UPSERT { CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { mood: "angry" } } }"#));
    let attrs = |c: &mut Client| -> (Value, i32) {
        let r = c.query_one("SELECT attributes, version FROM kip.concepts WHERE id = $1", &[&ana]).unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(attrs(&mut c), (json!({"person_class": "Human", "mood": "angry"}), 2));

    // Back to version 1, as version 3.
    let r: Value = c.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{ana}")]).unwrap().get(0);
    assert_eq!((r["reverted_to"].clone(), r["version"].clone()), (json!(1), json!(3)));
    assert_eq!(attrs(&mut c), (json!({"person_class": "Human", "mood": "calm"}), 3));
    assert_eq!(history_rows(&mut c, ana).last().unwrap().0, "update", "the revert is in the history");

    // Deleted, then re-created with its id and its links.
    ok(kip_in(&mut c, &space, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Ana"} }"#));
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.propositions WHERE space = $1 AND predicate IN ('knows', 'about')", &space), 0);
    let r: Value = c.query_one("SELECT kip_revert($1, 3)", &[&format!("C:{ana}")]).unwrap().get(0);
    assert_eq!(r["version"], json!(4));
    assert_eq!(r["restored_links"], json!([format!("P:{link}:knows"), format!("P:{meta}:about")]));
    assert_eq!(attrs(&mut c), (json!({"person_class": "Human", "mood": "calm"}), 4));
    let found = ok(kip_in(&mut c, &space, r#"FIND(?a.name) WHERE { ?b {type: "Person", name: "Bo"} (?b, "knows", ?a) }"#));
    assert_eq!(found, json!(["Ana"]));

    // A version that never existed, an id with no history.
    let e = sql_error(c.query_one("SELECT kip_revert($1, 9)", &[&format!("C:{ana}")]));
    assert!(e.starts_with(&format!("KIP_3002: C:{ana} has no version 9")), "{e}");
    let e = sql_error(c.query_one("SELECT kip_revert('C:999999999999', 1)", &[]));
    assert!(e.starts_with("KIP_3002: no history for C:999999999999"), "{e}");
    // A link's id with another predicate names no link, as in a KIP pattern.
    for f in ["kip_history($1)", "kip_revert($1, 1)"] {
        let e = sql_error(c.query_one(&format!("SELECT {f}"), &[&format!("P:{link}:about")]));
        assert!(e.starts_with(&format!("KIP_3002: P:{link}:about names no link")), "{f}: {e}");
    }
    let h: Value = c.query_one("SELECT kip_history($1)", &[&format!("P:{link}")]).unwrap().get(0);
    assert_eq!(h["kind"], json!("proposition"), "{h}");
    // A link whose endpoint is gone cannot come back.
    ok(kip_in(&mut c, &space, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Bo"} }"#));
    let e = sql_error(c.query_one("SELECT kip_revert($1, 1)", &[&format!("P:{link}:knows")]));
    assert!(e.starts_with(&format!("KIP_3002: cannot revert P:{link}:knows to version 1: its endpoint C:{bo} no longer exists")), "{e}");
    // The change feed lists all of it, in order.
    let feed: Vec<(String, String)> = c
        .query("SELECT id, operation FROM kip_changes(now() - interval '1 hour', $1) WHERE id = $2", &[&space, &format!("C:{ana}")])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let ops: Vec<&str> = feed.iter().map(|(_, op)| op.as_str()).collect();
    assert_eq!(ops, ["insert", "update", "update", "delete", "insert"]);
    // The feed is inlined into the caller's query: a LIMIT reaches the scan
    // of the history, which is not read whole into a function's result.
    let plan: Vec<String> = c
        .query("EXPLAIN SELECT * FROM kip_changes('-infinity', $1) LIMIT 5", &[&space])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(plan.iter().all(|l| !l.contains("Function Scan")) && plan.iter().any(|l| l.contains("history")), "{plan:#?}");
}

#[test]
fn retention_prunes_old_history_in_batches() {
    let mut c = superuser();
    let space = unique_space("gov_retention");
    c.execute("INSERT INTO kip.spaces (name) VALUES ($1)", &[&space]).unwrap();
    c.execute("INSERT INTO kip.concepts (space, type, name) SELECT $1, 'Note', 'n' || g FROM generate_series(1, 5) g", &[&space]).unwrap();
    c.execute("UPDATE kip.history SET changed_at = now() - interval '400 days' WHERE space = $1 AND element_id IN (SELECT id FROM kip.concepts WHERE space = $1 AND name IN ('n1', 'n2', 'n3'))", &[&space]).unwrap();
    c.batch_execute("SET kip.history_retention = '365 days'").unwrap();
    // Bounded: at most `max` rows per call, until nothing old is left (other
    // tests' rows are recent).
    let first: i64 = c.query_one("SELECT kip_prune_history(2)", &[]).unwrap().get(0);
    assert_eq!(first, 2);
    while c.query_one("SELECT kip_prune_history()", &[]).unwrap().get::<_, i64>(0) > 0 {}
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.history WHERE space = $1", &space), 2);
    assert_eq!(count(&mut c, "SELECT count(*) FROM kip.history WHERE changed_at < now() - interval '365 days' AND $1 <> ''", &space), 0);
    c.batch_execute("SET kip.history_retention = ''").unwrap();
    c.execute("UPDATE kip.history SET changed_at = now() - interval '4000 days' WHERE space = $1", &[&space]).unwrap();
    let none: i64 = c.query_one("SELECT kip_prune_history()", &[]).unwrap().get(0);
    assert_eq!(none, 0, "an empty retention keeps everything");
    // A value that is no interval is named as such.
    // Not an interval, a negative one (whose cut in the future deleted the
    // whole history), and one past any timestamp: refused, nothing pruned.
    let before: i64 = c.query_one("SELECT count(*) FROM kip.history", &[]).unwrap().get(0);
    for value in ["ninety days", "-1 days", "1 day -2 days", "0 days", "-1 year 361 days", "100000000 years"] {
        c.batch_execute(&format!("SET kip.history_retention = '{value}'")).unwrap();
        let e = sql_error(c.query_one("SELECT kip_prune_history()", &[]));
        assert!(e.starts_with("KIP_1001") && e.contains("kip.history_retention"), "{value}: {e}");
    }
    let after: i64 = c.query_one("SELECT count(*) FROM kip.history", &[]).unwrap().get(0);
    assert!(after >= before, "{before} -> {after}");
    c.batch_execute("SET kip.history_retention = ''").unwrap();
    c.execute("DELETE FROM kip.history WHERE space = $1", &[&space]).unwrap();
    let mut admin = superuser();
    let role = login_role(&mut admin, "pruner", "kip_admin");
    let mut a = connect_as(&role, DB);
    let e = sql_error(a.query_one("SELECT kip_prune_history()", &[]));
    assert!(e.starts_with("KIP_3004"), "{e}");
    let e = sql_error(a.batch_execute("SET kip.history_retention = '1 second'"));
    assert!(e.contains("permission denied"), "{e}");
    drop(a);
    drop_role(&mut admin, &role);
}

fn pg_tool(name: &str) -> String {
    let bindir = std::process::Command::new("/usr/bin/pg_config").arg("--bindir").output().unwrap();
    format!("{}/{name}", String::from_utf8_lossy(&bindir.stdout).trim())
}

#[test]
fn pg_dump_and_restore_carry_grants_and_history() {
    let (src, dst) = ("kip_gov_dump_src", "kip_gov_dump_dst");
    let mut server = Client::connect(&admin_dsn(), NoTls).unwrap();
    for db in [src, dst] {
        server.batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\"")).unwrap();
    }
    ensure_database(src);
    let mut c = Client::connect(&dsn_for(src), NoTls).unwrap();
    let (mine, theirs) = (seeded_space(&mut c, "gov_dump_mine"), seeded_space(&mut c, "gov_dump_theirs"));
    let mut admin = superuser();
    let reader = login_role(&mut admin, "dump_reader", "kip_reader");
    assert!(grant(&mut c, &mine, &reader, "read"));
    ok(kip_in(&mut c, &mine, r#"UPSERT { CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { mood: "dumped" } } }"#));
    let snapshot = |c: &mut Client| -> Vec<String> {
        let mut rows = Vec::new();
        for sql in [
            "SELECT concat_ws('|', space, role, privilege, granted_by, granted_at) FROM kip.space_grants ORDER BY space, role",
            "SELECT concat_ws('|', id, space, element_id, kind, version, operation, before::text, after::text, changed_at, xact_id, role, application_name, command_hash) FROM kip.history ORDER BY id",
            "SELECT last_value::text FROM kip.history_id_seq",
        ] {
            for r in c.query(sql, &[]).unwrap() {
                rows.push(r.get::<_, String>(0));
            }
        }
        rows
    };
    let before = snapshot(&mut c);
    assert!(before.len() > 60);
    drop(c);
    let dump = std::env::temp_dir().join(format!("kip_gov_dump_{}.dump", std::process::id()));
    let p = port();
    let status = std::process::Command::new(pg_tool("pg_dump"))
        .args(["-h", "localhost", "-p", &p, "-U", "postgres", "-Fc", "-f"])
        .arg(&dump)
        .arg(src)
        .status()
        .unwrap();
    assert!(status.success(), "pg_dump failed");
    // A member of kip's roles dumps what row-level security shows it (the
    // sequences' positions too), and is refused without row security.
    let as_reader = |extra: &[&str]| {
        std::process::Command::new(pg_tool("pg_dump"))
            .args(["-h", "localhost", "-p", &p, "-U", &reader, "-Fp"])
            .args(extra)
            .arg(src)
            .output()
            .unwrap()
    };
    let partial = as_reader(&["--enable-row-security"]);
    assert!(partial.status.success(), "a reader's dump failed: {}", String::from_utf8_lossy(&partial.stderr));
    let text = String::from_utf8_lossy(&partial.stdout);
    assert!(text.contains("\tAna\t") && text.contains(&mine), "the reader's dump lacks its space");
    assert!(!text.contains(&theirs), "the reader's dump holds a space it may not read");
    assert!(text.contains("setval('kip.element_id_seq'"), "the reader's dump lacks the sequences");
    assert!(!as_reader(&[]).status.success(), "a reader's dump without --enable-row-security must be refused");
    server.batch_execute(&format!("CREATE DATABASE \"{dst}\"")).unwrap();
    let out = std::process::Command::new(pg_tool("pg_restore"))
        .args(["-h", "localhost", "-p", &p, "-U", "postgres", "--exit-on-error", "-d", dst])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(out.status.success(), "pg_restore failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut restored = Client::connect(&dsn_for(dst), NoTls).unwrap();
    assert_eq!(snapshot(&mut restored), before, "grants and history as dumped (the restore records no history of its own)");
    // The restored database enforces the grants and keeps recording.
    let mut r = connect_as(&reader, dst);
    ok(kip_in(&mut r, &mine, r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "Ana"} }"#));
    assert_eq!(err_code(&kip_in(&mut r, &theirs, "DESCRIBE PRIMER")), "KIP_3004");
    assert_eq!(count(&mut r, "SELECT count(*) FROM kip.concepts WHERE space = $1", &theirs), 0);
    drop(r);
    let ana = concept_id(&mut restored, &mine, "Ana");
    let h: Value = restored.query_one("SELECT kip_history($1)", &[&format!("C:{ana}")]).unwrap().get(0);
    assert_eq!(h["versions"][0]["after"]["attributes"]["mood"], json!("dumped"));
    drop(restored);
    for db in [src, dst] {
        server.batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\"")).unwrap();
    }
    drop_role(&mut admin, &reader);
    let _ = std::fs::remove_file(dump);
}

/// A KML command cancelled by the user (`pg_cancel_backend` while it waits
/// on a row lock) leaves neither its command tag nor its element-size check
/// behind: plain SQL after `ROLLBACK TO` in the same transaction is
/// recorded without the cancelled command's hash.
#[test]
fn a_cancelled_kml_command_leaves_no_tag_for_later_plain_sql() {
    let mut c = superuser();
    let space = unique_space("cancelled");
    ok(kip_in(&mut c, &space, &upsert(r#"CONCEPT ?a { {type: "Person", name: "Ana"} } CONCEPT ?b { {type: "Person", name: "Bo"} }"#)));
    let bo: i64 = c
        .query_one("SELECT id FROM kip.concepts WHERE space = $1 AND type = 'Person' AND name = 'Bo'", &[&space])
        .unwrap()
        .get(0);
    // Another session holds Ana's row.
    let mut holder = superuser();
    holder.batch_execute("BEGIN").unwrap();
    holder.execute("SELECT 1 FROM kip.concepts WHERE space = $1 AND name = 'Ana' FOR UPDATE", &[&space]).unwrap();
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let canceller = std::thread::spawn(move || {
        let mut k = superuser();
        // Cancel once the KIP command waits on the lock.
        for _ in 0..200 {
            let waiting: bool = k
                .query_one("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock')", &[&pid])
                .unwrap()
                .get(0);
            if waiting {
                k.execute("SELECT pg_cancel_backend($1)", &[&pid]).unwrap();
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        false
    });
    c.batch_execute("BEGIN; SAVEPOINT s").unwrap();
    c.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    let cancelled = c.query_one(
        "SELECT kip_execute($1::text, '{}'::jsonb)",
        &[&r#"UPSERT { CONCEPT ?a { {type: "Person", name: "Ana"} SET ATTRIBUTES { age: 40 } } }"#],
    );
    assert!(canceller.join().unwrap(), "the command never waited on the lock");
    holder.batch_execute("ROLLBACK").unwrap();
    // Either the cancel came back as an SQL error, or kip reported it.
    if let Ok(row) = cancelled {
        let envelope: Value = row.get(0);
        assert!(envelope.get("error").is_some(), "{envelope}");
    }
    c.batch_execute("ROLLBACK TO s").unwrap();
    c.execute("UPDATE kip.concepts SET attributes = attributes || '{\"plain\": true}' WHERE id = $1", &[&bo]).unwrap();
    c.batch_execute("COMMIT").unwrap();
    let hash: Option<String> = c
        .query_one("SELECT command_hash FROM kip.history WHERE element_id = $1 ORDER BY id DESC LIMIT 1", &[&bo])
        .unwrap()
        .get(0);
    assert_eq!(hash, None, "plain SQL was tagged as the cancelled KIP command");
}

/// A writer that turns `row_security` off in the middle of its own
/// statement (row-level security was decided when it was planned) is not
/// taken for a restore: its delete is recorded in the history, and ids it
/// chooses or changes are refused.
#[test]
fn row_security_turned_off_mid_statement_is_no_restore() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_rls_off");
    let writer = login_role(&mut admin, "rls_off", "kip_writer");
    assert!(grant(&mut admin, &space, &writer, "write"));
    let bo = concept_id(&mut admin, &space, "Bo");
    let ana = concept_id(&mut admin, &space, "Ana");
    let mut w = connect_as(&writer, DB);
    // The grants memo filled, as any earlier kip call fills it.
    w.batch_execute("SELECT kip.writable_spaces(), kip.readable_spaces(), kip.administered_spaces(), kip.is_admin()").unwrap();

    let deleted = w
        .execute(
            "DELETE FROM kip.concepts WHERE space = $1 AND name = 'Bo' AND set_config('row_security', 'off', true) IS NOT NULL",
            &[&space],
        )
        .unwrap();
    assert_eq!(deleted, 1);
    w.batch_execute("SET row_security = on").unwrap();
    let recorded: i64 = admin
        .query_one("SELECT count(*) FROM kip.history WHERE element_id = $1 AND operation = 'delete'", &[&bo])
        .unwrap()
        .get(0);
    assert_eq!(recorded, 1, "the delete went unrecorded");

    // Refused: by the id rule, or by row-level security on what the rule
    // reads to tell a restore (the session's setting is off by then).
    let refused = |e: &str| e.contains("element ids are issued by kip") || e.contains("cannot be changed") || e.contains("row-level security");
    let e = sql_error(w.execute(
        "INSERT INTO kip.concepts (id, space, type, name) SELECT 999999000, $1, 'Person', 'Squatter' \
         FROM (SELECT set_config('row_security', 'off', true)) s",
        &[&space],
    ));
    assert!(refused(&e), "{e}");
    w.batch_execute("SET row_security = on").unwrap();
    let e = sql_error(w.execute(
        "UPDATE kip.concepts SET id = 999999001 WHERE space = $1 AND id = $2 AND set_config('row_security', 'off', true) IS NOT NULL",
        &[&space, &ana],
    ));
    assert!(refused(&e), "{e}");
    let chosen: i64 = admin
        .query_one("SELECT count(*) FROM kip.concepts WHERE id IN (999999000, 999999001)", &[])
        .unwrap()
        .get(0);
    assert_eq!(chosen, 0);
    drop(w);
    drop_role(&mut admin, &writer);
}

/// Renaming a space moves its memory: it takes admin on both names (or
/// kip_admin), not the write access the update policy asks.
#[test]
fn renaming_a_space_takes_admin_on_both_names() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_rename");
    let taken = unique_space("gov_rename_to");
    let writer = login_role(&mut admin, "renamer", "kip_writer");
    assert!(grant(&mut admin, &space, &writer, "write"));
    assert!(grant(&mut admin, &taken, &writer, "admin"));
    let mut w = connect_as(&writer, DB);
    let e = sql_error(w.execute("UPDATE kip.spaces SET name = $2 WHERE name = $1", &[&space, &taken]));
    assert!(e.contains("takes admin on both names"), "{e}");
    // A writer still updates what kip itself updates in the row.
    assert_eq!(w.execute("UPDATE kip.spaces SET bootstrapped_at = bootstrapped_at WHERE name = $1", &[&space]).unwrap(), 1);
    // An admin of both names may rename.
    assert!(grant(&mut admin, &space, &writer, "admin"));
    assert_eq!(w.execute("UPDATE kip.spaces SET name = $2 WHERE name = $1", &[&space, &taken]).unwrap(), 1);
    let moved: i64 = admin.query_one("SELECT count(*) FROM kip.concepts WHERE space = $1", &[&taken]).unwrap().get(0);
    assert!(moved > 0);
    drop(w);
    admin.execute("DELETE FROM kip.space_grants WHERE space IN ($1, $2)", &[&space, &taken]).unwrap();
    drop_role(&mut admin, &writer);
}

/// A space dropped and created again under the same name is a new space:
/// whoever holds a grant on the name later sees its own history, nothing
/// of the earlier space's (not even before a space of that name exists),
/// and cannot revert the earlier elements into it, however the later
/// space's row was made.
#[test]
fn a_dropped_spaces_history_does_not_pass_to_the_next_holder_of_its_name() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_reborn");
    let ana = concept_id(&mut admin, &space, "Ana");
    assert!(admin.query_one("SELECT kip_drop_space($1)", &[&space]).unwrap().get::<_, bool>(0));
    let heir = login_role(&mut admin, "heir", "kip_writer");
    assert!(grant(&mut admin, &space, &heir, "admin"));
    let mut h = connect_as(&heir, DB);
    let feed = "SELECT count(*) FROM kip_changes('-infinity', $1)";
    assert_eq!(count(&mut h, feed, &space), 0, "the history of a space that does not exist");
    assert!(sql_error(h.query_one("SELECT kip_history($1)", &[&format!("C:{ana}")])).contains("no history"));
    // The heir creates the space anew and writes in it.
    ok(kip_in(&mut h, &space, &upsert(r#"CONCEPT ?c { {type: "Person", name: "Cy"} SET ATTRIBUTES { person_class: "Human" } }"#)));
    let seen: Vec<String> = h
        .query("SELECT DISTINCT id FROM kip_changes('-infinity', $1)", &[&space])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!seen.is_empty(), "the new space's own changes are seen");
    assert!(!seen.contains(&format!("C:{ana}")), "the dropped space's element: {seen:?}");
    // Dropped and created again by one statement, the space's elements,
    // which go at the statement's end, would have their history under the
    // new space's number: refused.
    let e = sql_error(h.execute(
        "WITH d AS (DELETE FROM kip.spaces WHERE name = $1 RETURNING name) INSERT INTO kip.spaces (name) SELECT name FROM d",
        &[&space],
    ));
    assert!(e.contains("being dropped or renamed away by this statement"), "{e}");
    let no_secret: i64 = h
        .query_one("SELECT count(*) FROM kip.history WHERE space = $1 AND before::text LIKE '%zebra%'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(no_secret, 0);
    let e = sql_error(h.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{ana}")]));
    assert!(e.contains("no history"), "{e}");
    // Neither a row inserted with a chosen creation time or incarnation,
    // nor one whose incarnation is updated, nor a space renamed onto the
    // name, reaches the earlier space's rows: a space's incarnation is new
    // at each creation and rename, and only a restore sets it.
    let secrets = "SELECT count(*) FROM kip.history WHERE space = $1 AND before::text LIKE '%zebra%'";
    h.execute("DELETE FROM kip.spaces WHERE name = $1", &[&space]).unwrap();
    let old: i64 = admin.query_one("SELECT max(space_incarnation) FROM kip.history WHERE element_id = $1", &[&ana]).unwrap().get(0);
    h.execute("INSERT INTO kip.spaces (name, created_at, incarnation) VALUES ($1, '-infinity', $2)", &[&space, &old]).unwrap();
    assert_eq!(count(&mut h, secrets, &space), 0);
    h.execute("UPDATE kip.spaces SET incarnation = $2 WHERE name = $1", &[&space, &old]).unwrap();
    assert_eq!(count(&mut h, secrets, &space), 0);
    let mine = unique_space("gov_reborn_mine");
    assert!(grant(&mut admin, &mine, &heir, "admin"));
    h.execute("DELETE FROM kip.spaces WHERE name = $1", &[&space]).unwrap();
    ok(kip_in(&mut h, &mine, &upsert(r#"CONCEPT ?c { {type: "Person", name: "Di"} SET ATTRIBUTES { person_class: "Human" } }"#)));
    h.execute("UPDATE kip.spaces SET name = $2 WHERE name = $1", &[&mine, &space]).unwrap();
    assert_eq!(count(&mut h, secrets, &space), 0);
    assert!(count(&mut h, "SELECT count(*) FROM kip_changes('-infinity', $1)", &space) > 0, "the renamed space's changes since the rename");
    // The earlier rows stay for the audit.
    let kept: i64 = admin
        .query_one("SELECT count(*) FROM kip.history WHERE space = $1 AND element_id = $2", &[&space, &ana])
        .unwrap()
        .get(0);
    assert!(kept >= 2, "insert and delete of the dropped space's element: {kept}");
    drop(h);
    admin.execute("DELETE FROM kip.space_grants WHERE space IN ($1, $2)", &[&space, &mine]).unwrap();
    drop_role(&mut admin, &heir);
}

/// An element moved by plain SQL to a space a writer of its first space
/// cannot read: reverting it there is a KIP error that says so, not the
/// id check's raw refusal (re-creating it would take an id in use).
#[test]
fn reverting_an_element_moved_out_of_sight_says_so() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_moved");
    let away = seeded_space(&mut admin, "gov_moved_to");
    let ana = concept_id(&mut admin, &space, "Ana");
    admin.execute("DELETE FROM kip.propositions WHERE space = $1", &[&space]).unwrap();
    admin.execute("UPDATE kip.concepts SET space = $2, name = 'Ana moved' WHERE id = $1", &[&ana, &away]).unwrap();
    let writer = login_role(&mut admin, "mover", "kip_writer");
    assert!(grant(&mut admin, &space, &writer, "write"));
    let mut w = connect_as(&writer, DB);
    let e = sql_error(w.query_one("SELECT kip_revert($1, 1)", &[&format!("C:{ana}")]));
    assert!(e.starts_with("KIP_3003") && e.contains("no longer in memory space"), "{e}");
    drop(w);
    admin.execute("DELETE FROM kip.space_grants WHERE space = $1", &[&space]).unwrap();
    drop_role(&mut admin, &writer);
}

/// Who granted and when is the database's to write: an admin of a space
/// inserting a grant by plain SQL cannot name another granter or date.
#[test]
fn grants_are_stamped_with_their_granter() {
    let mut admin = superuser();
    let space = seeded_space(&mut admin, "gov_stamp");
    let owner = login_role(&mut admin, "stamper", "kip_writer");
    let reader = login_role(&mut admin, "stamped", "kip_reader");
    assert!(grant(&mut admin, &space, &owner, "admin"));
    let mut o = connect_as(&owner, DB);
    o.execute(
        "INSERT INTO kip.space_grants (space, role, privilege, granted_by, granted_at) VALUES ($1, $2::name, 'read', 'postgres', '2000-01-01')",
        &[&space, &reader],
    )
    .unwrap();
    let row = admin
        .query_one(
            "SELECT granted_by::text, granted_at > now() - interval '1 hour' FROM kip.space_grants WHERE space = $1 AND role = $2::name",
            &[&space, &reader],
        )
        .unwrap();
    let (by, recent): (String, bool) = (row.get(0), row.get(1));
    assert_eq!((by.as_str(), recent), (owner.as_str(), true));
    drop(o);
    drop_role(&mut admin, &reader);
    drop_role(&mut admin, &owner);
}

/// A trigger on kip's tables that runs a KIP command of its own, nested in
/// the command that fired it, leaves the outer command's safeguards in
/// place: its rows keep its hash in the history, its element-size check
/// and its time budget hold. (A database of its own: the trigger would
/// fire for every test writing `kip_test`.)
#[test]
fn a_kip_command_nested_in_a_trigger_leaves_the_outer_ones_safeguards() {
    let db = "kip_test_nested";
    ensure_database(db);
    let mut c = Client::connect(&dsn_for(db), NoTls).unwrap();
    c.batch_execute(
        r#"CREATE OR REPLACE FUNCTION public.log_items() RETURNS trigger LANGUAGE plpgsql AS $f$
           BEGIN
             PERFORM public.kip_execute('UPSERT { CONCEPT ?l { {type: "Log", name: :n} } }', jsonb_build_object('n', 'log-' || NEW.name));
             IF NEW.attributes ? 'slow' THEN PERFORM pg_sleep(10); END IF;
             RETURN NULL;
           END $f$;
           DROP TRIGGER IF EXISTS log_items ON kip.concepts;
           CREATE TRIGGER log_items AFTER INSERT ON kip.concepts FOR EACH ROW WHEN (NEW.type = 'Item') EXECUTE FUNCTION public.log_items();"#,
    )
    .unwrap();
    let space = unique_space("nested");
    ok(kip_in(&mut c, &space, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Item"} } CONCEPT ?l { {type: "$ConceptType", name: "Log"} } }"#));
    ok(kip_in(&mut c, &space, r#"UPSERT { CONCEPT ?a { {type: "Item", name: "A1"} } CONCEPT ?b { {type: "Item", name: "A2"} } }"#));
    let hashes: Vec<(String, Option<String>)> = c
        .query(
            "SELECT after ->> 'name', command_hash FROM kip.history WHERE space = $1 AND operation = 'insert' AND after ->> 'type' IN ('Item', 'Log') ORDER BY id",
            &[&space],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(hashes.len(), 4, "{hashes:?}");
    assert!(hashes.iter().all(|(_, h)| h.is_some()), "every row, the outer command's included, keeps a command hash: {hashes:?}");
    // The outer command's element-size check.
    c.batch_execute("SET kip.max_element_size = '1kB'").unwrap();
    let big = "x".repeat(3000);
    let out = kip_in(
        &mut c,
        &space,
        &format!(r#"UPSERT {{ CONCEPT ?a {{ {{type: "Item", name: "B1"}} }} CONCEPT ?b {{ {{type: "Item", name: "B2"}} SET ATTRIBUTES {{ big: "{big}" }} }} }}"#),
    );
    assert_eq!(err_code(&out), "KIP_2002", "{out}");
    c.batch_execute("RESET kip.max_element_size").unwrap();
    // The outer command's time budget.
    c.batch_execute("SET kip.command_timeout = '300ms'").unwrap();
    let started = std::time::Instant::now();
    let out = kip_in(&mut c, &space, r#"UPSERT { CONCEPT ?a { {type: "Item", name: "S1"} SET ATTRIBUTES { slow: true } } }"#);
    assert_eq!(err_code(&out), "KIP_4001", "{out}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the budget held: {:?}", started.elapsed());
    c.batch_execute("RESET kip.command_timeout; DROP TRIGGER log_items ON kip.concepts").unwrap();
    let left: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND name IN ('B1', 'B2', 'S1', 'log-B1', 'log-B2', 'log-S1')", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "the refused commands wrote nothing");
}

/// Under `session_replication_role = replica` kip's triggers and
/// foreign-key cascades do not fire: KML is refused there, reads run.
#[test]
fn kml_is_refused_under_a_replica_session_role() {
    let mut c = superuser();
    let space = unique_space("replica");
    ok(kip_in(&mut c, &space, &upsert(r#"CONCEPT ?a { {type: "Person", name: "Ana"} }"#)));
    c.batch_execute("SET session_replication_role = replica").unwrap();
    let out = kip_in(&mut c, &space, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Person", name: "Ana"} }"#);
    assert_eq!(err_code(&out), "KIP_4003", "{out}");
    assert!(out["error"]["message"].as_str().unwrap().contains("session_replication_role"), "{out}");
    assert_eq!(ok(kip_in(&mut c, &space, r#"FIND(?p.name) WHERE { ?p {type: "Person", name: "Ana"} }"#)), json!(["Ana"]));
    c.batch_execute("RESET session_replication_role").unwrap();
}

/// The history triggers run as their owner: no role may attach them to a
/// table of its own (whose transition rows could run its code as the owner,
/// through casts of its own types, and write the history of any space),
/// and attached by a superuser to another table they refuse to record.
#[test]
fn history_trigger_functions_record_kips_tables_only() {
    let mut admin = superuser();
    let reader = login_role(&mut admin, "hist_fn", "kip_reader");
    let mut r = connect_as(&reader, DB);
    for function in ["kip.concepts_history()", "kip.propositions_history()"] {
        r.batch_execute("CREATE TEMP TABLE IF NOT EXISTS mine (id bigint, space text)").unwrap();
        let e = sql_error(r.batch_execute(&format!(
            "CREATE TRIGGER t AFTER INSERT ON mine REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}"
        )));
        assert!(e.contains("permission denied for function"), "{function}: {e}");
    }
    drop(r);
    let space = unique_space("hist_fn");
    admin.execute("SELECT set_config('kip.space', $1, false)", &[&space]).unwrap();
    admin
        .batch_execute(
            "CREATE TEMP TABLE fake (id bigint, space text, type text, name text, attributes jsonb, metadata jsonb, \
               version int, created_at timestamptz, updated_at timestamptz);
             CREATE TRIGGER t AFTER INSERT ON fake REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kip.concepts_history()",
        )
        .unwrap();
    let e = sql_error(admin.execute("INSERT INTO fake VALUES (1, $1, 't', 'n', '{}', '{}', 99, now(), now())", &[&space]));
    assert!(e.contains("records the changes of kip.concepts only"), "{e}");
    assert_eq!(count(&mut admin, "SELECT count(*) FROM kip.history WHERE space = $1", &space), 0);
    admin.batch_execute("DROP TABLE fake").unwrap();
    drop_role(&mut admin, &reader);
}
