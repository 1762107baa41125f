//! Concurrent writers on one memory (RC10 §2.11): read-modify-write of the
//! same `$self` attribute under `EXPECT VERSION` with retry loses no update,
//! and bulk `UPDATE … ADD(…)` increments computed inside the statement are
//! not lost either. Each client is a thread with its own connection.

use kip_integration_tests::{connect, kip, ok, unique_space, use_space};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const CLIENTS: usize = 8;
const INCREMENTS: usize = 15;

fn client(space: &str) -> postgres::Client {
    let mut c = connect();
    use_space(&mut c, space);
    c
}

/// (counter, log, _version) of $self.
fn read_self(c: &mut postgres::Client) -> (i64, Vec<Value>, Value) {
    let row = ok(kip(
        c,
        r#"FIND(?s.attributes.rmw_counter, ?s.attributes.rmw_log, ?s.metadata._version) WHERE { ?s {type: "Person", name: "$self"} }"#,
        json!({}),
    ));
    let row = &row[0];
    (row[0].as_i64().unwrap_or(0), row[1].as_array().cloned().unwrap_or_default(), row[2].clone())
}

#[test]
fn expect_version_read_modify_write_loses_no_update() {
    let space = unique_space("conc");
    let mut setup = client(&space);
    ok(kip(&mut setup, "DESCRIBE PRIMER", json!({}))); // bootstrap once
    let retries = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let (space, retries) = (space.clone(), retries.clone());
            std::thread::spawn(move || {
                let mut c = client(&space);
                for k in 0..INCREMENTS {
                    loop {
                        let (counter, mut log, version) = read_self(&mut c);
                        log.push(json!(format!("t{t}-{k}")));
                        let out = kip(
                            &mut c,
                            r#"UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} EXPECT VERSION :v
                                 SET ATTRIBUTES { rmw_counter: :n, rmw_log: :log } } }"#,
                            json!({"v": version, "n": counter + 1, "log": log}),
                        );
                        match out["error"]["code"].as_str() {
                            None => break,
                            Some("KIP_3005") => {
                                retries.fetch_add(1, Ordering::Relaxed);
                            }
                            Some(_) => panic!("unexpected error: {out}"),
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("client thread");
    }
    let (counter, log, _) = read_self(&mut setup);
    let expected = CLIENTS * INCREMENTS;
    println!(
        "concurrency: {CLIENTS} clients x {INCREMENTS} guarded increments of $self.rmw_counter -> {counter} (expected {expected}), {} KIP_3005 retries",
        retries.load(Ordering::Relaxed)
    );
    assert_eq!(counter as usize, expected, "no lost update");
    assert_eq!(log.len(), expected, "every client's entry is in the array");
    for t in 0..CLIENTS {
        for k in 0..INCREMENTS {
            assert!(log.contains(&json!(format!("t{t}-{k}"))), "missing t{t}-{k}");
        }
    }
}

#[test]
fn concurrent_update_add_loses_no_increment() {
    let space = unique_space("conc");
    let mut setup = client(&space);
    ok(kip(&mut setup, r#"UPSERT { CONCEPT ?p { {type: "Preference", name: "dark_mode"} SET ATTRIBUTES { description: "Prefers dark mode" } } }"#, json!({})));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let space = space.clone();
            std::thread::spawn(move || {
                let mut c = client(&space);
                for _ in 0..INCREMENTS {
                    ok(kip(
                        &mut c,
                        r#"UPDATE ?p SET ATTRIBUTES { evidence_count: ADD(COALESCE(?p.attributes.evidence_count, 0), 1) }
                           WHERE { ?p {type: "Preference", name: "dark_mode"} }"#,
                        json!({}),
                    ));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("client thread");
    }
    let count = ok(kip(&mut setup, r#"FIND(?p.attributes.evidence_count) WHERE { ?p {type: "Preference", name: "dark_mode"} }"#, json!({})));
    assert_eq!(count, json!([CLIENTS * INCREMENTS]));
}

/// A bulk UPDATE or DELETE that waited for a row another session changed
/// checks the target's FILTERs again on what that session committed: the
/// decay marker of RC10 §4.3 holds when two sweeps race, and a link
/// strengthened meanwhile is not deleted as weak. Before, the targets
/// selected from the statement's snapshot were written whatever they held.
#[test]
fn a_bulk_write_that_waited_checks_its_filters_on_the_committed_row() {
    let space = unique_space("conc_recheck");
    let mut setup = client(&space);
    ok(kip(
        &mut setup,
        r#"UPSERT { CONCEPT ?p { {type: "Preference", name: "tea"} SET ATTRIBUTES { description: "Likes tea" } } WITH METADATA { confidence: 0.8 }
                    CONCEPT ?q { {type: "Preference", name: "coffee"} SET ATTRIBUTES { description: "Likes coffee" } SET PROPOSITIONS { ("prefers", {type: "Preference", name: "tea"}) WITH METADATA { confidence: 0.1 } } } }"#,
        json!({}),
    ));
    let decay = r#"UPDATE ?d SET METADATA { confidence: MUL(?d.metadata.confidence, 0.5), decay_applied_at: "2025-01-02T00:00:00Z" }
                   WHERE { ?d {type: "Preference", name: "tea"}
                           FILTER(IS_NULL(?d.metadata.decay_applied_at) || ?d.metadata.decay_applied_at < "2025-01-01T00:00:00Z") }"#;
    let prune = r#"DELETE PROPOSITIONS ?l WHERE { ?l (?a, "prefers", ?b) FILTER(?l.metadata.confidence < 0.3) }"#;
    let strengthen = r#"UPSERT { CONCEPT ?q { {type: "Preference", name: "coffee"} SET PROPOSITIONS { ("prefers", {type: "Preference", name: "tea"}) WITH METADATA { confidence: 0.95 } } } }"#;
    for (first, second) in [(decay, decay), (strengthen, prune)] {
        // The first command holds its row locks until its transaction ends;
        // the second starts meanwhile, waits, then runs on the new rows.
        let mut holder = client(&space);
        holder.batch_execute("BEGIN").unwrap();
        ok(kip(&mut holder, first, json!({})));
        let space2 = space.clone();
        let waiter = std::thread::spawn(move || {
            let mut c = client(&space2);
            ok(kip(&mut c, second, json!({})))
        });
        std::thread::sleep(std::time::Duration::from_millis(500));
        holder.batch_execute("COMMIT").unwrap();
        let out = waiter.join().expect("waiting client");
        if first == decay {
            assert_eq!(out["updated"], json!(0), "{out}");
        } else {
            assert_eq!(out["deleted_propositions"], json!(0), "{out}");
        }
    }
    let tea = ok(kip(&mut setup, r#"FIND(?d.metadata.confidence) WHERE { ?d {type: "Preference", name: "tea"} }"#, json!({})));
    assert_eq!(tea, json!([0.4]), "decayed once");
    let link = ok(kip(&mut setup, r#"FIND(?l.metadata.confidence) WHERE { ?l (?a, "prefers", ?b) }"#, json!({})));
    assert_eq!(link, json!([0.95]), "the strengthened link stays");
}

/// Under REPEATABLE READ a command that meets a concurrent update fails
/// without being run again (every attempt would read the same snapshot),
/// and its hint says to roll back and rerun the transaction.
#[test]
fn a_conflict_under_repeatable_read_says_to_rerun_the_transaction() {
    let space = unique_space("rr_conflict");
    let mut writer = client(&space);
    let item = r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Item"} } CONCEPT ?i { {type: "Item", name: "one"} SET ATTRIBUTES { n: 0 } } }"#;
    ok(kip(&mut writer, item, json!({})));
    let mut rr = client(&space);
    rr.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    ok(kip(&mut rr, r#"FIND(?i.attributes.n) WHERE { ?i {type: "Item", name: "one"} }"#, json!({})));
    ok(kip(&mut writer, r#"UPSERT { CONCEPT ?i { {type: "Item", name: "one"} SET ATTRIBUTES { n: 1 } } }"#, json!({})));
    let out = kip(&mut rr, r#"UPSERT { CONCEPT ?i { {type: "Item", name: "one"} SET ATTRIBUTES { n: 2 } } }"#, json!({}));
    assert_eq!(out["error"]["code"], "KIP_4003", "{out}");
    assert!(out["error"]["message"].as_str().unwrap().starts_with("concurrent update conflict"), "{out}");
    assert!(out["error"]["hint"].as_str().unwrap().starts_with("Roll back the transaction"), "{out}");
    rr.batch_execute("ROLLBACK").unwrap();
    ok(kip(&mut rr, r#"UPSERT { CONCEPT ?i { {type: "Item", name: "one"} SET ATTRIBUTES { n: 2 } } }"#, json!({})));
}

/// Wait until another session waits for a lock (its pid's `wait_event_type`
/// is `Lock`), for up to 10 s.
fn wait_until_blocked(observer: &mut postgres::Client, pid: i32) {
    for _ in 0..200 {
        let blocked: bool = observer
            .query_one("SELECT coalesce((SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1), false)", &[&pid])
            .unwrap()
            .get(0);
        if blocked {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("session {pid} never waited for a lock");
}

fn pid(c: &mut postgres::Client) -> i32 {
    c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0)
}

/// Two sessions creating the same new space at once: exactly one of them
/// created it (both were told so before).
#[test]
fn kip_create_space_says_true_to_one_of_two_racing_creators() {
    for _ in 0..5 {
        let space = unique_space("race");
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (space, barrier) = (space.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut c = connect();
                    barrier.wait();
                    c.query_one("SELECT kip_create_space($1)", &[&space]).unwrap().get::<_, bool>(0)
                })
            })
            .collect();
        let created: Vec<bool> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(created.iter().filter(|c| **c).count(), 1, "kip_create_space answers {created:?}");
    }
}

/// `kip_drop_space` waiting for a writer's row while the writer, in the
/// same transaction, then inserts into the space (which waits for the
/// drop's lock of the space's row): the deadlock's victim is the drop,
/// which runs again once the writer commits, and drops the space.
#[test]
fn kip_drop_space_runs_again_after_a_deadlock_with_a_writer() {
    let space = unique_space("dropdl");
    let mut writer = client(&space);
    ok(kip(
        &mut writer,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?d { {type: "Drug", name: "D1"} } }"#,
        json!({}),
    ));
    let mut observer = connect();
    // Postgres looks for a deadlock once, deadlock_timeout after a session
    // starts waiting: the drop, which waits first, must be the one that
    // finds the cycle (it runs again; the writer, which wrote before, could
    // not), so it looks 3 s after its own wait began (the writer's begins
    // within milliseconds of it), long before the writer would. (scripts/test.sh lets the
    // non-superuser pass set deadlock_timeout.)
    writer.batch_execute("SET deadlock_timeout = '60s'").unwrap();
    writer.batch_execute("BEGIN").unwrap();
    ok(kip(&mut writer, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "D1"} SET ATTRIBUTES { note: "held" } } }"#, json!({})));
    let mut admin = connect();
    admin.batch_execute("SET deadlock_timeout = '3s'").unwrap();
    let admin_pid = pid(&mut admin);
    let dropping = {
        let space = space.clone();
        std::thread::spawn(move || admin.query_one("SELECT kip_drop_space($1)", &[&space]).map(|r| r.get::<_, bool>(0)))
    };
    wait_until_blocked(&mut observer, admin_pid);
    // Waits for the drop's lock of the space's row: a deadlock, whose
    // victim, the drop, runs again once this transaction ends.
    ok(kip(&mut writer, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "D9"} } }"#, json!({})));
    writer.batch_execute("COMMIT").unwrap();
    let dropped = dropping.join().unwrap();
    assert_eq!(dropped.map_err(|e| e.to_string()), Ok(true));
    let left: i64 = observer.query_one("SELECT count(*) FROM kip.spaces WHERE name = $1", &[&space]).unwrap().get(0);
    assert_eq!(left, 0);
}

/// `kip_revert` of an element another session deletes meanwhile says so,
/// instead of answering as if it had restored the version.
#[test]
fn kip_revert_of_an_element_deleted_meanwhile_is_an_error() {
    let space = unique_space("revdel");
    let mut deleter = client(&space);
    ok(kip(
        &mut deleter,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?d { {type: "Drug", name: "D5"} SET ATTRIBUTES { v: 1 } } }"#,
        json!({}),
    ));
    ok(kip(&mut deleter, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "D5"} SET ATTRIBUTES { v: 2 } } }"#, json!({})));
    let id = ok(kip(&mut deleter, r#"FIND(?d.id) WHERE { ?d {type: "Drug", name: "D5"} }"#, json!({})))[0].as_str().unwrap().to_string();
    let mut observer = connect();
    deleter.batch_execute("BEGIN").unwrap();
    ok(kip(&mut deleter, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "D5"} }"#, json!({})));
    let mut reverter = connect();
    let reverter_pid = pid(&mut reverter);
    let reverting = std::thread::spawn(move || reverter.query_one("SELECT kip_revert($1, 1)", &[&id]).map(|r| r.get::<_, Value>(0)));
    wait_until_blocked(&mut observer, reverter_pid);
    deleter.batch_execute("COMMIT").unwrap();
    let err = reverting.join().unwrap().expect_err("kip_revert of an element deleted meanwhile");
    let message = err.as_db_error().map(|e| e.message().to_string()).unwrap_or_else(|| err.to_string());
    assert!(message.contains("KIP_3002") && message.contains("deleted or moved to another space concurrently"), "{message}");
}

/// `kip_revert` of a deleted concept brings back its links; when another
/// session deletes one of their endpoints meanwhile, the revert says so
/// (`KIP_3002`) instead of raising the foreign key's error.
#[test]
fn kip_revert_whose_link_lost_its_endpoint_meanwhile_is_an_error() {
    let space = unique_space("revfk");
    let mut writer = client(&space);
    ok(kip(
        &mut writer,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?p { {type: "$PropositionType", name: "rel"} }
                    CONCEPT ?b { {type: "Drug", name: "B"} } CONCEPT ?a { {type: "Drug", name: "A"} SET PROPOSITIONS { ("rel", ?b) } } }"#,
        json!({}),
    ));
    let id = ok(kip(&mut writer, r#"FIND(?d.id) WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})))[0].as_str().unwrap().to_string();
    ok(kip(&mut writer, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})));
    let mut observer = connect();
    writer.batch_execute("BEGIN").unwrap();
    ok(kip(&mut writer, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "B"} }"#, json!({})));
    let mut reverter = connect();
    let reverter_pid = pid(&mut reverter);
    let reverting = std::thread::spawn(move || reverter.query_one("SELECT kip_revert($1, 1)", &[&id]).map(|r| r.get::<_, Value>(0)));
    wait_until_blocked(&mut observer, reverter_pid);
    writer.batch_execute("COMMIT").unwrap();
    let err = reverting.join().unwrap().expect_err("kip_revert whose link's endpoint went meanwhile");
    let message = err.as_db_error().map(|e| e.message().to_string()).unwrap_or_else(|| err.to_string());
    assert!(message.starts_with("KIP_3002") && message.contains("deleted concurrently"), "{message}");
}

/// Two reverts of one deleted element, the first in a transaction that
/// then writes and deletes the element again: the second, which waited,
/// reads the history the first left and gives the element the version
/// after its last, never one already issued.
#[test]
fn concurrent_reverts_never_issue_a_version_twice() {
    let space = unique_space("revver");
    let mut first = client(&space);
    ok(kip(&mut first, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?d { {type: "Drug", name: "A"} SET ATTRIBUTES { x: 1 } } }"#, json!({})));
    ok(kip(&mut first, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "A"} SET ATTRIBUTES { x: 2 } } }"#, json!({})));
    let id = ok(kip(&mut first, r#"FIND(?d.id) WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})))[0].as_str().unwrap().to_string();
    ok(kip(&mut first, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})));
    let mut observer = connect();
    first.batch_execute("BEGIN").unwrap();
    let v: Value = first.query_one("SELECT kip_revert($1, 1)", &[&id]).unwrap().get(0);
    assert_eq!(v["version"], json!(3), "{v}");
    let mut second = connect();
    let second_pid = pid(&mut second);
    let reverting = {
        let id = id.clone();
        std::thread::spawn(move || second.query_one("SELECT kip_revert($1, 2)", &[&id]).map(|r| r.get::<_, Value>(0)))
    };
    wait_until_blocked(&mut observer, second_pid);
    ok(kip(&mut first, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "A"} SET ATTRIBUTES { x: 5 } } }"#, json!({})));
    ok(kip(&mut first, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})));
    first.batch_execute("COMMIT").unwrap();
    let v = reverting.join().unwrap().expect("the second revert");
    assert_eq!(v["version"], json!(5), "{v}");
    let numeric: i64 = id.trim_start_matches("C:").parse().unwrap();
    let versions: Vec<i32> = observer
        .query("SELECT version FROM kip.history WHERE kind = 'concept' AND element_id = $1 ORDER BY id", &[&numeric])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, vec![1, 2, 2, 3, 4, 4, 5], "insert, update, delete, revert, update, delete, revert");
}

/// Under REPEATABLE READ, a revert that had to wait for another revert of
/// the same element would read the history from before it: it fails as a
/// serialization failure (SQLSTATE 40001), for the transaction to run again.
#[test]
fn a_repeatable_read_revert_that_waited_for_another_fails_to_be_rerun() {
    let space = unique_space("revrr");
    let mut first = client(&space);
    ok(kip(&mut first, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?d { {type: "Drug", name: "A"} SET ATTRIBUTES { x: 1 } } }"#, json!({})));
    let id = ok(kip(&mut first, r#"FIND(?d.id) WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})))[0].as_str().unwrap().to_string();
    ok(kip(&mut first, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})));
    let mut observer = connect();
    let mut second = connect();
    second.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1").unwrap();
    first.batch_execute("BEGIN").unwrap();
    first.query_one("SELECT kip_revert($1, 1)", &[&id]).unwrap();
    let second_pid = pid(&mut second);
    let reverting = {
        let id = id.clone();
        std::thread::spawn(move || {
            let r = second.query_one("SELECT kip_revert($1, 1)", &[&id]).map(|r| r.get::<_, Value>(0));
            let _ = second.batch_execute("ROLLBACK");
            r
        })
    };
    wait_until_blocked(&mut observer, second_pid);
    ok(kip(&mut first, r#"DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "A"} }"#, json!({})));
    first.batch_execute("COMMIT").unwrap();
    let err = reverting.join().unwrap().expect_err("a revert whose snapshot predates the other's");
    let db = err.as_db_error().expect("a database error");
    assert_eq!(db.code().code(), "40001", "{}", db.message());
    assert!(db.message().starts_with("KIP_4003"), "{}", db.message());
}

/// A command writing into a space another session drops meanwhile says the
/// space went, not that some element was deleted.
#[test]
fn a_write_into_a_space_dropped_meanwhile_says_so() {
    let space = unique_space("dropw");
    let mut writer = client(&space);
    ok(kip(&mut writer, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } }"#, json!({})));
    let writer_pid = pid(&mut writer);
    let mut admin = connect();
    admin.batch_execute("BEGIN").unwrap();
    assert!(admin.query_one("SELECT kip_drop_space($1)", &[&space]).unwrap().get::<_, bool>(0));
    let writing = std::thread::spawn(move || kip(&mut writer, r#"UPSERT { CONCEPT ?d { {type: "Drug", name: "D1"} } }"#, json!({})));
    let mut observer = connect();
    wait_until_blocked(&mut observer, writer_pid);
    admin.batch_execute("COMMIT").unwrap();
    let out = writing.join().unwrap();
    assert_eq!(out["error"]["code"], "KIP_3002", "{out}");
    assert!(out["error"]["message"].as_str().unwrap().contains("memory space was dropped or renamed"), "{out}");
}

/// An UPSERT that patches an element by `{id}` while another session
/// deletes it: once the delete commits, the patch finds no row, and the
/// UPSERT says so (`KIP_3002`) instead of answering with the id of an
/// element it wrote nowhere. The same for a link by `(id: …)`.
#[test]
fn an_upsert_by_id_of_an_element_deleted_meanwhile_is_an_error() {
    let space = unique_space("upsdel");
    let mut deleter = client(&space);
    ok(kip(
        &mut deleter,
        r#"UPSERT {
            CONCEPT ?t { {type: "$ConceptType", name: "Drug"} }
            CONCEPT ?p { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { subject_types: ["Drug"], object_types: ["Drug"] } }
            CONCEPT ?a { {type: "Drug", name: "R1"} SET ATTRIBUTES { v: 1 } }
            CONCEPT ?b { {type: "Drug", name: "R2"} SET PROPOSITIONS { ("treats", ?a) } }
        }"#,
        json!({}),
    ));
    let ids = ok(kip(&mut deleter, r#"FIND(?a.id, ?l.id) WHERE { ?a {type: "Drug", name: "R1"} ?l (?b, "treats", ?a) }"#, json!({})));
    let (concept, link) = (ids[0][0].as_str().unwrap().to_string(), ids[1][0].as_str().unwrap().to_string());
    let mut observer = connect();
    for (delete, upsert) in [
        (r#"DELETE PROPOSITIONS ?l WHERE { ?l (?b, "treats", ?a) }"#.to_string(), format!(r#"UPSERT {{ PROPOSITION ?l {{ (id: "{link}") SET ATTRIBUTES {{ w: 9 }} }} }}"#)),
        (r#"DELETE CONCEPT ?a DETACH WHERE { ?a {type: "Drug", name: "R1"} }"#.to_string(), format!(r#"UPSERT {{ CONCEPT ?x {{ {{id: "{concept}"}} SET ATTRIBUTES {{ v: 9 }} }} }}"#)),
    ] {
        deleter.batch_execute("BEGIN").unwrap();
        ok(kip(&mut deleter, &delete, json!({})));
        let mut writer = client(&space);
        let writer_pid = pid(&mut writer);
        let writing = std::thread::spawn(move || kip(&mut writer, &upsert, json!({})));
        wait_until_blocked(&mut observer, writer_pid);
        deleter.batch_execute("COMMIT").unwrap();
        let out = writing.join().unwrap();
        assert_eq!(kip_integration_tests::err_code(&out), "KIP_3002", "{delete}: {out}");
        assert!(out["error"]["message"].as_str().unwrap().contains("deleted concurrently"), "{out}");
    }
}

/// A REPEATABLE READ transaction reads a space another session dropped
/// after its snapshot: that read is not remembered as "the space is
/// ready", so once it commits the same session writes into the name as
/// into a new space (it failed with KIP_2001 for the rest of the
/// connection: `$ConceptType` not registered).
#[test]
fn a_repeatable_read_of_a_space_dropped_meanwhile_is_not_remembered() {
    let space = unique_space("rrdrop");
    let mut reader = client(&space);
    ok(kip(&mut reader, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Widget"} } CONCEPT ?w { {type: "Widget", name: "W1"} } }"#, json!({})));
    let mut dropper = connect();
    reader.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1").unwrap();
    let dropped: bool = dropper.query_one("SELECT kip_drop_space($1)", &[&space]).unwrap().get(0);
    assert!(dropped);
    let seen = ok(kip(&mut reader, r#"FIND(?w.name) WHERE { ?w {type: "Widget"} }"#, json!({})));
    assert_eq!(seen, json!(["W1"]), "the snapshot predates the drop");
    reader.batch_execute("COMMIT").unwrap();
    ok(kip(&mut reader, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Gadget"} } CONCEPT ?g { {type: "Gadget", name: "G1"} } }"#, json!({})));
    let found = ok(kip(&mut reader, r#"FIND(?g.name) WHERE { ?g {type: "Gadget"} }"#, json!({})));
    assert_eq!(found, json!(["G1"]));
}
