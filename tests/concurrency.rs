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
