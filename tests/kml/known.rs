//! Each backend remembers which spaces are ready and which types and
//! predicates are registered, so a call does not read `kip.spaces` or look
//! its types up (src/exec/known.rs). The memo must never outlive the row: a
//! space dropped or changed by another session, or created in a
//! transaction that rolled back, is checked (and created, bootstrapped)
//! again; a type deleted or renamed by another session, or defined in a
//! transaction that rolled back, is unknown again.

use super::common::{exists, fails, run};
use kip_integration_tests::{connect, err_code, kip_readonly, unique_space, use_space};
use postgres::{Client, GenericClient};
use serde_json::json;

const PROBE: &str = r#"UPSERT { CONCEPT ?e { {type: "Event", name: "memo probe"} SET ATTRIBUTES { event_class: "Test" } } }"#;

/// A session on a new space, created and then remembered: the first call
/// creates the row (in that call's transaction, so it is not remembered),
/// the second reads it committed.
fn remembered_space() -> (Client, String) {
    let mut c = connect();
    let space = unique_space("memo");
    use_space(&mut c, &space);
    run(&mut c, PROBE);
    run(&mut c, "DESCRIBE PRIMER");
    (c, space)
}

/// Scans of `kip.spaces` by this session not yet reported to the statistics.
fn spaces_scans(c: &mut impl GenericClient) -> i64 {
    c.query_one(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables WHERE relid = 'kip.spaces'::regclass",
        &[],
    )
    .unwrap()
    .get(0)
}

#[test]
fn a_ready_space_is_not_read_again() {
    let (mut c, _space) = remembered_space();
    // Other tests drop and change spaces meanwhile, and each such change
    // makes every backend forget its spaces once: a few attempts, of which
    // one must read no row of kip.spaces.
    let mut scans = Vec::new();
    for _ in 0..5 {
        // Counted within one transaction: the statistics views show counts
        // that are not yet reported, which carry over between transactions.
        let mut tx = c.transaction().unwrap();
        let before = spaces_scans(&mut tx);
        let out: serde_json::Value = tx
            .query_one("SELECT kip_execute('FIND(?e.name) WHERE { ?e {type: \"Event\"} }', '{}')", &[])
            .unwrap()
            .get(0);
        assert_eq!(out["result"], json!(["memo probe"]), "{out}");
        scans.push(spaces_scans(&mut tx) - before);
        // The probe itself counts.
        tx.query("SELECT 1 FROM kip.spaces WHERE name = 'no such space'", &[]).unwrap();
        assert_eq!(spaces_scans(&mut tx), before + scans.last().unwrap() + 1);
        tx.commit().unwrap();
        if scans.last() == Some(&0) {
            return;
        }
    }
    panic!("every call in a remembered space read kip.spaces: {scans:?}");
}

#[test]
fn a_space_dropped_by_another_session_is_created_again() {
    let (mut c, space) = remembered_space();
    let mut other = connect();
    let dropped: bool = other.query_one("SELECT kip_drop_space($1)", &[&space]).unwrap().get(0);
    assert!(dropped);
    // Remembered without invalidation, the space would be written without
    // its row: a foreign-key violation.
    run(&mut c, PROBE);
    assert!(exists(&mut c, "Event", "memo probe"));
    assert!(exists(&mut c, "Person", "$self"), "the space was not bootstrapped again");
    let bootstrapped: bool = c
        .query_one("SELECT bootstrapped_at IS NOT NULL FROM kip.spaces WHERE name = $1", &[&space])
        .unwrap()
        .get(0);
    assert!(bootstrapped);
}

#[test]
fn a_read_only_call_sees_a_space_dropped_by_another_session() {
    let (mut c, space) = remembered_space();
    let out = kip_readonly(&mut c, "DESCRIBE PRIMER", json!({}));
    assert!(out.get("result").is_some(), "{out}");
    let mut other = connect();
    other.query_one("SELECT kip_drop_space($1)", &[&space]).unwrap();
    let out = kip_readonly(&mut c, "DESCRIBE PRIMER", json!({}));
    assert_eq!(err_code(&out), "KIP_3002", "{out}");
}

#[test]
fn a_space_changed_with_plain_sql_is_checked_again() {
    let (mut c, space) = remembered_space();
    let mut other = connect();
    // Unbootstrapped by hand: the next call bootstraps it again.
    other.execute("UPDATE kip.spaces SET bootstrapped_at = NULL WHERE name = $1", &[&space]).unwrap();
    run(&mut c, PROBE);
    let bootstrapped: bool = c
        .query_one("SELECT bootstrapped_at IS NOT NULL FROM kip.spaces WHERE name = $1", &[&space])
        .unwrap()
        .get(0);
    assert!(bootstrapped, "the space was not checked again after its row changed");
}

#[test]
fn a_space_created_in_a_rolled_back_transaction_is_created_again() {
    let mut c = connect();
    let space = unique_space("memo_rollback");
    use_space(&mut c, &space);
    c.batch_execute("BEGIN").unwrap();
    run(&mut c, PROBE);
    run(&mut c, "DESCRIBE PRIMER");
    run(&mut c, PROBE);
    c.batch_execute("ROLLBACK").unwrap();
    let rows: i64 = c.query_one("SELECT count(*) FROM kip.spaces WHERE name = $1", &[&space]).unwrap().get(0);
    assert_eq!(rows, 0);
    run(&mut c, PROBE);
    assert!(exists(&mut c, "Person", "$self"), "the space was not created and bootstrapped again");
}

/// A session on a new space that has defined the type `Gadget` and used it
/// twice (the second use reads the committed definition and remembers it).
fn remembered_type() -> (Client, String) {
    let mut c = connect();
    let space = unique_space("memo_type");
    use_space(&mut c, &space);
    run(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Gadget"} SET ATTRIBUTES { description: "A gadget." } } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?g { {type: "Gadget", name: "g2"} } }"#);
    (c, space)
}

const GADGET: &str = r#"UPSERT { CONCEPT ?g { {type: "Gadget", name: "g3"} } }"#;

#[test]
fn a_type_deleted_by_another_session_is_unknown_again() {
    let (mut c, space) = remembered_type();
    let mut other = connect();
    other
        .execute("DELETE FROM kip.concepts WHERE space = $1 AND type = '$ConceptType' AND name = 'Gadget'", &[&space])
        .unwrap();
    // Remembered without invalidation, the UPSERT would write an instance
    // of a type that no longer exists.
    assert_eq!(fails(&mut c, GADGET), "KIP_2001");
}

#[test]
fn a_type_renamed_by_another_session_is_unknown_again() {
    let (mut c, space) = remembered_type();
    let mut other = connect();
    other
        .execute("UPDATE kip.concepts SET name = 'Widget' WHERE space = $1 AND type = '$ConceptType' AND name = 'Gadget'", &[&space])
        .unwrap();
    assert_eq!(fails(&mut c, GADGET), "KIP_2001");
}

#[test]
fn a_type_defined_in_a_rolled_back_transaction_is_unknown_afterwards() {
    let mut c = connect();
    let space = unique_space("memo_type_rollback");
    use_space(&mut c, &space);
    run(&mut c, "DESCRIBE PRIMER");
    c.batch_execute("BEGIN").unwrap();
    run(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Gadget"} SET ATTRIBUTES { description: "A gadget." } } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?g { {type: "Gadget", name: "g1"} } }"#);
    run(&mut c, r#"UPSERT { CONCEPT ?g { {type: "Gadget", name: "g2"} } }"#);
    c.batch_execute("ROLLBACK").unwrap();
    assert_eq!(fails(&mut c, GADGET), "KIP_2001");
}
