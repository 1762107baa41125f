//! The maintenance ("sleep") cycle: `kip_maintenance()` and its worker.
//!
//! These tests run in their own database (`kip_maintenance_test`), never in
//! the shared `kip_test`: `kip_maintenance('*')` touches every space of a
//! database and would change other tests' data. They also take one lock, so
//! a `'*'` cycle never races another test's single-space cycle.

use kip_integration_tests::{dsn_for, ensure_database, fresh_space, kip, ok};
use postgres::{Client, NoTls};
use serde_json::{json, Value};
use std::sync::Mutex;

const DB: &str = "kip_maintenance_test";
static SERIAL: Mutex<()> = Mutex::new(());
/// Held by the tests that connect to the cluster's `kip` database or copy
/// and rename it.
static KIP_DATABASE: Mutex<()> = Mutex::new(());

fn connect() -> Client {
    ensure_database(DB);
    Client::connect(&dsn_for(DB), NoTls).expect("connect to kip_maintenance_test")
}

fn maintain(c: &mut Client, space: &str) -> Value {
    c.query_one("SELECT kip_maintenance($1::text)", &[&space]).expect("kip_maintenance").get(0)
}

fn exists(c: &mut Client, space: &str, ty: &str, name: &str) -> bool {
    c.query_one(
        "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3)",
        &[&space, &ty, &name],
    )
    .unwrap()
    .get(0)
}

fn set_metadata(c: &mut Client, space: &str, ty: &str, name: &str, patch: Value) {
    let n = c
        .execute(
            "UPDATE kip.concepts SET metadata = metadata || $4::jsonb WHERE space = $1 AND type = $2 AND name = $3",
            &[&space, &ty, &name, &patch],
        )
        .unwrap();
    assert_eq!(n, 1, "{ty} {name}");
}

fn event(name: &str, status: Option<&str>) -> String {
    let status = status.map(|s| format!(", consolidation_status: \"{s}\"")).unwrap_or_default();
    format!(
        r#"CONCEPT ?{v} {{ {{type: "Event", name: "{name}"}} SET ATTRIBUTES {{ event_class: "Conversation", start_time: "2020-01-01T00:00:00Z", content_summary: "s"{status} }} }}"#,
        v = name.replace(['-', ' '], "_")
    )
}

fn audited(c: &mut Client, space: &str, action: &str) -> Vec<String> {
    c.query(
        "SELECT element_ref FROM kip.maintenance_log WHERE space = $1 AND action = $2 ORDER BY id",
        &[&space, &action],
    )
    .unwrap()
    .iter()
    .map(|r| r.get::<_, Option<String>>(0).unwrap_or_default())
    .collect()
}

fn concept_ref(c: &mut Client, space: &str, ty: &str, name: &str) -> String {
    c.query_one("SELECT id FROM kip.concept_nodes WHERE space = $1 AND type = $2 AND name = $3", &[&space, &ty, &name])
        .unwrap()
        .get(0)
}

#[test]
fn ttl_reclaims_only_whitelisted_expired_elements_and_audits_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "mttl");
    let mut upsert = String::from("UPSERT {\n");
    for (name, status, expires) in [
        ("done-expired", Some("completed"), "2020-02-01T00:00:00Z"),
        ("archived-expired", Some("archived"), "2021-01-01"),
        ("done-future", Some("completed"), "2999-01-01T00:00:00Z"),
        ("pending-expired", None, "2020-02-01T00:00:00Z"),
        ("unreadable", Some("archived"), "next tuesday"),
    ] {
        upsert.push_str(&event(name, status));
        upsert.push_str(&format!("\nWITH METADATA {{ expires_at: \"{expires}\" }}\n"));
    }
    upsert.push_str(
        r#"CONCEPT ?task { {type: "SleepTask", name: "old-task"} SET ATTRIBUTES { target_type: "Event", target_name: "x", requested_action: "review", reason: "r", status: "completed" } }
        WITH METADATA { expires_at: "2020-01-01T00:00:00Z" }
        CONCEPT ?open { {type: "SleepTask", name: "open-task"} SET ATTRIBUTES { target_type: "Event", target_name: "x", requested_action: "review", reason: "r", status: "pending" } }
        WITH METADATA { expires_at: "2020-01-01T00:00:00Z" }
        CONCEPT ?tmp { {type: "Preference", name: "scratch"} SET ATTRIBUTES { description: "temporary" } }
        WITH METADATA { expires_at: "2020-01-01T00:00:00Z", memory_tier: "short-term" }
        CONCEPT ?tea { {type: "Preference", name: "tea"} SET ATTRIBUTES { description: "kept" } }
        CONCEPT ?bob { {type: "Person", name: "Bob"} SET ATTRIBUTES { person_class: "Human" } SET PROPOSITIONS { ("prefers", ?tea) } }
        WITH METADATA { expires_at: "2020-01-01T00:00:00Z" }
        CONCEPT ?keep { {type: "Event", name: "done-future"} SET PROPOSITIONS { ("involves", ?bob) } }
        }"#,
    );
    ok(kip(&mut c, &upsert, json!({})));
    // Protected entities carrying an expired short-term TTL: never touched.
    for (ty, name) in [("Domain", "Unsorted"), ("Person", "$self"), ("$ConceptType", "Event"), ("$PropositionType", "involves")] {
        set_metadata(&mut c, &space, ty, name, json!({ "expires_at": "2020-01-01T00:00:00Z", "memory_tier": "short-term" }));
    }
    // An expired link on a kept Event, whose own TTL is later (12D: kept),
    // and Bob's expired link (deleted).
    c.execute(
        "UPDATE kip.propositions SET metadata = metadata || '{\"expires_at\": \"2020-01-01T00:00:00Z\"}' WHERE space = $1 AND predicate = 'involves'",
        &[&space],
    )
    .unwrap();
    let deleted_refs: Vec<String> = [("Event", "done-expired"), ("Event", "archived-expired"), ("SleepTask", "old-task"), ("Preference", "scratch")]
        .iter()
        .map(|(t, n)| concept_ref(&mut c, &space, t, n))
        .collect();

    let report = maintain(&mut c, &space);
    assert_eq!(report["space"], json!(space));
    assert_eq!(report["expired_deleted"], json!(4), "{report}");
    assert_eq!(report["expired_links_deleted"], json!(1), "{report}");
    assert_eq!(report["expired_kept_pending"], json!(1), "{report}");
    assert_eq!(report["review_tasks"], json!(1), "{report}");
    for (ty, name) in [("Event", "done-expired"), ("Event", "archived-expired"), ("SleepTask", "old-task"), ("Preference", "scratch")] {
        assert!(!exists(&mut c, &space, ty, name), "{ty} {name} should be reclaimed");
    }
    for (ty, name) in [
        ("Event", "done-future"),
        ("Event", "pending-expired"),
        ("Event", "unreadable"),
        ("SleepTask", "open-task"),
        ("Person", "Bob"),
        ("Domain", "Unsorted"),
        ("Person", "$self"),
        ("$ConceptType", "Event"),
        ("$PropositionType", "involves"),
    ] {
        assert!(exists(&mut c, &space, ty, name), "{ty} {name} must be kept");
    }
    assert!(exists(&mut c, &space, "SleepTask", "SleepTask:review:ttl:Person:Bob"), "Bob's TTL is flagged for review");
    let involves: i64 = c
        .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1 AND predicate = 'involves'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(involves, 1, "the link of an Event whose own TTL was extended stays (12D)");
    let prefers: i64 = c
        .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1 AND predicate = 'prefers'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(prefers, 0);
    let mut logged = audited(&mut c, &space, "ttl_delete");
    assert_eq!(logged.len(), 5, "{logged:?}");
    logged.retain(|r| r.starts_with("C:"));
    let mut expected = deleted_refs.clone();
    expected.sort();
    logged.sort();
    assert_eq!(logged, expected);

    // Nothing left to reclaim; the review task is not created twice.
    let again = maintain(&mut c, &space);
    assert_eq!((again["expired_deleted"].clone(), again["review_tasks"].clone()), (json!(0), json!(0)), "{again}");
}

#[test]
fn ttl_keeps_pending_experiences_and_the_steps_they_need() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "mexp");
    // As RC11 Formation writes them: every Experience and step short-term,
    // with a TTL (long passed here), the step links too.
    const TTL: &str = r#"WITH METADATA { expires_at: "2020-01-01T00:00:00Z", memory_tier: "short-term" }"#;
    let mut upsert = String::from("UPSERT {\n");
    for (experience, status) in [("pending_exp", "pending"), ("partial_exp", "partially_consolidated"), ("done_exp", "completed")] {
        upsert.push_str(&format!(
            r#"CONCEPT ?{experience} {{ {{type: "Experience", name: "{experience}"}} SET ATTRIBUTES {{ consolidation_status: "{status}" }} }} {TTL}
               CONCEPT ?{experience}_step {{ {{type: "ExperienceStep", name: "{experience}_step"}} SET ATTRIBUTES {{ step_index: 0 }} }} {TTL}
               PROPOSITION ?{experience}_has {{ (?{experience}, "has_step", ?{experience}_step) }} WITH METADATA {{ expires_at: "2020-01-01T00:00:00Z" }}
            "#
        ));
    }
    upsert.push('}');
    ok(kip(&mut c, &upsert, json!({})));

    let report = maintain(&mut c, &space);
    // 12A.4: a pending or partly consolidated Experience is a learning
    // trace not yet learned from, and so are its steps; a completed and
    // expired one goes, with its steps.
    assert_eq!(report["expired_deleted"], json!(2), "{report}");
    assert_eq!(report["expired_kept_pending"], json!(4), "{report}");
    for name in ["pending_exp", "partial_exp"] {
        assert!(exists(&mut c, &space, "Experience", name), "{name}");
        assert!(exists(&mut c, &space, "ExperienceStep", &format!("{name}_step")), "{name}_step");
    }
    assert!(!exists(&mut c, &space, "Experience", "done_exp"));
    assert!(!exists(&mut c, &space, "ExperienceStep", "done_exp_step"));
    // The expired step links of the kept Experiences stay (12D).
    let kept: i64 = c
        .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1 AND predicate = 'has_step'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(kept, 2);
    assert_eq!(review_tasks(&mut c, &space), 0, "a kept Experience is no metadata pollution");
}

#[test]
fn ttl_keeps_sole_evidence_with_its_links() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "msole");
    let mut upsert = String::from("UPSERT {\n");
    upsert.push_str(&event("evidence", Some("completed")));
    upsert.push_str(
        r#"
        WITH METADATA { expires_at: "2020-01-01T00:00:00Z" }
        CONCEPT ?ana { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } }
        PROPOSITION ?inv { (?evidence, "involves", ?ana) } WITH METADATA { expires_at: "2020-01-01T00:00:00Z" }
        CONCEPT ?insight { {type: "Insight", name: "a lesson"} SET ATTRIBUTES { description: "learned once" }
            SET PROPOSITIONS { ("derived_from", ?evidence) } }
        }"#,
    );
    ok(kip(&mut c, &upsert, json!({})));
    let report = maintain(&mut c, &space);
    // 12A.5: the Insight's only evidence stays, and so does what it says.
    assert_eq!((report["expired_deleted"].clone(), report["expired_links_deleted"].clone()), (json!(0), json!(0)), "{report}");
    assert!(exists(&mut c, &space, "Event", "evidence"));
    let involves: i64 = c
        .query_one("SELECT count(*) FROM kip.propositions WHERE space = $1 AND predicate = 'involves'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(involves, 1);
}

fn review_tasks(c: &mut Client, space: &str) -> i64 {
    c.query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'SleepTask' AND name LIKE 'SleepTask:review:ttl:%'", &[&space])
        .unwrap()
        .get(0)
}

#[test]
fn ttl_respects_the_cap_per_cycle() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "mcap");
    let mut upsert = String::from("UPSERT {\n");
    for i in 0..5 {
        upsert.push_str(&event(&format!("e{i}"), Some("completed")));
        upsert.push_str("\nWITH METADATA { expires_at: \"2020-01-01T00:00:00Z\" }\n");
    }
    upsert.push('}');
    ok(kip(&mut c, &upsert, json!({})));
    c.batch_execute("SET kip.maintenance_batch = 3").unwrap();
    assert_eq!(maintain(&mut c, &space)["expired_deleted"], json!(3));
    assert_eq!(maintain(&mut c, &space)["expired_deleted"], json!(2));
    assert_eq!(maintain(&mut c, &space)["expired_deleted"], json!(0));
    c.batch_execute("RESET kip.maintenance_batch").unwrap();
}

fn link_meta(c: &mut Client, space: &str, object: &str, key: &str) -> Value {
    c.query_one(
        "SELECT metadata -> $3::text FROM kip.facts WHERE space = $1 AND subject_name = 'Carol' AND predicate = 'prefers' AND object_name = $2",
        &[&space, &object, &key],
    )
    .unwrap()
    .get::<_, Option<Value>>(0)
    .unwrap_or(Value::Null)
}

fn link_strength(c: &mut Client, space: &str, object: &str) -> Value {
    link_meta(c, space, object, "memory_strength")
}

/// Carol's `prefers` links: (object, strength, confidence) per the spec's
/// Phase 7 setup; returns the domain links' metadata to compare afterwards.
fn decay_fixture(c: &mut Client) -> String {
    let space = fresh_space(c, "mdecay");
    ok(kip(
        c,
        r#"UPSERT {
          CONCEPT ?weak { {type: "Preference", name: "weak"} SET ATTRIBUTES { description: "seen once" } }
          CONCEPT ?strong { {type: "Preference", name: "strong"} SET ATTRIBUTES { description: "seen often", evidence_count: 3 } }
          CONCEPT ?carol { {type: "Person", name: "Carol"} SET ATTRIBUTES { person_class: "Human" }
            SET PROPOSITIONS { ("prefers", ?weak) ("prefers", ?strong) } }
        }
        WITH METADATA { confidence: 0.8, created_at: "2020-01-01T00:00:00Z" }"#,
        json!({}),
    ));
    ok(kip(
        c,
        r#"UPSERT {
          CONCEPT ?vivid { {type: "Preference", name: "vivid"} SET ATTRIBUTES { description: "recalled often" } }
          CONCEPT ?faint { {type: "Preference", name: "faint"} SET ATTRIBUTES { description: "almost forgotten" } }
          CONCEPT ?carol { {type: "Person", name: "Carol"}
            SET PROPOSITIONS { ("prefers", ?vivid) WITH METADATA { memory_strength: 0.9, confidence: 0.5 }
                               ("prefers", ?faint) WITH METADATA { memory_strength: 0.05, confidence: 0.99 } } }
        }
        WITH METADATA { created_at: "2020-01-01T00:00:00Z" }"#,
        json!({}),
    ));
    ok(kip(
        c,
        r#"UPSERT {
          CONCEPT ?truth { {type: "Preference", name: "truth"} SET ATTRIBUTES { description: "certain" } }
          CONCEPT ?carol { {type: "Person", name: "Carol"} SET PROPOSITIONS { ("prefers", ?truth) } }
          CONCEPT ?own { {type: "Preference", name: "own"} SET ATTRIBUTES { description: "the agent's own" } }
          CONCEPT ?me { {type: "Person", name: "$self"} SET PROPOSITIONS { ("prefers", ?own) } }
          CONCEPT ?promise { {type: "Commitment", name: "send the report"} SET ATTRIBUTES { status: "pending" } }
          CONCEPT ?carol2 { {type: "Person", name: "Carol"} SET PROPOSITIONS { ("committed_to", ?promise) } }
        }
        WITH METADATA { confidence: 1.0, memory_strength: 0.9, created_at: "2020-01-01T00:00:00Z" }"#,
        json!({}),
    ));
    ok(kip(
        c,
        r#"UPSERT {
          CONCEPT ?fresh { {type: "Preference", name: "fresh"} SET ATTRIBUTES { description: "new" } }
          CONCEPT ?carol { {type: "Person", name: "Carol"} SET PROPOSITIONS { ("prefers", ?fresh) } }
        }
        WITH METADATA { confidence: 0.8 }"#,
        json!({}),
    ));
    ok(kip(
        c,
        r#"UPSERT {
          CONCEPT ?seen { {type: "Preference", name: "reobserved"} SET ATTRIBUTES { description: "confirmed" } }
          CONCEPT ?carol { {type: "Person", name: "Carol"} SET PROPOSITIONS { ("prefers", ?seen) } }
        }
        WITH METADATA { confidence: 0.8, created_at: "2020-01-01T00:00:00Z", observed_at: "2999-01-01T00:00:00Z" }"#,
        json!({}),
    ));
    ok(kip(
        c,
        r#"UPSERT {
          CONCEPT ?swept { {type: "Preference", name: "swept"} SET ATTRIBUTES { description: "the agent's own cycle decayed it" } }
          CONCEPT ?echo { {type: "Preference", name: "echo"} SET ATTRIBUTES { description: "as strong, better supported" } }
          CONCEPT ?carol { {type: "Person", name: "Carol"}
            SET PROPOSITIONS { ("prefers", ?swept) ("prefers", ?echo) WITH METADATA { confidence: 0.9 } } }
        }
        WITH METADATA { confidence: 0.8, memory_strength: 0.5, created_at: "2020-01-01T00:00:00Z", strength_decay_applied_at: "2999-01-01T00:00:00Z" }"#,
        json!({}),
    ));
    space
}

#[test]
fn disuse_decays_memory_strength_never_confidence() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = decay_fixture(&mut c);
    let confidences = |c: &mut Client| -> Value {
        c.query_one(
            "SELECT jsonb_object_agg(object_name, metadata -> 'confidence') FROM kip.facts WHERE space = $1 AND predicate = 'prefers'",
            &[&space],
        )
        .unwrap()
        .get(0)
    };
    let confidence_before = confidences(&mut c);
    let domain_links_before: Value = c
        .query_one("SELECT jsonb_agg(metadata ORDER BY id) FROM kip.propositions WHERE space = $1 AND predicate = 'belongs_to_domain'", &[&space])
        .unwrap()
        .get(0);

    let first = maintain(&mut c, &space);
    assert_eq!(first["decayed"], json!(4), "{first}");
    assert_eq!(link_strength(&mut c, &space, "weak"), json!(0.665), "a missing strength starts from 0.7 and fades by 0.95");
    // Stamped with the key BrainMaintenance 7A's own guard reads.
    assert!(link_meta(&mut c, &space, "weak", "strength_decay_applied_at").is_string(), "{first}");
    assert_eq!(link_strength(&mut c, &space, "strong"), json!(0.6825), "reinforced memories lose half as much (0.975)");
    assert_eq!(link_strength(&mut c, &space, "vivid"), json!(0.855));
    assert_eq!(link_strength(&mut c, &space, "faint"), json!(0.05), "the 0.05 floor ends the sweep");
    assert_eq!(link_strength(&mut c, &space, "truth"), json!(0.855), "confidence 1.0 spares nothing: the axes are apart (RC11)");
    // Identity facts and commitments keep their strength (RC11 7B).
    let kept: Value = c
        .query_one(
            "SELECT jsonb_object_agg(subject_name || ' ' || predicate, metadata -> 'memory_strength') FROM kip.facts \
             WHERE space = $1 AND (subject_name = '$self' AND predicate = 'prefers' OR predicate = 'committed_to')",
            &[&space],
        )
        .unwrap()
        .get(0);
    assert_eq!(kept, json!({"$self prefers": 0.9, "Carol committed_to": 0.9}));
    assert_eq!(link_strength(&mut c, &space, "fresh"), Value::Null, "recent links do not decay");
    assert_eq!(link_strength(&mut c, &space, "reobserved"), Value::Null, "re-observed links do not decay");
    assert_eq!(link_strength(&mut c, &space, "swept"), json!(0.5), "an agent's own decay this period counts");
    assert_eq!(confidences(&mut c), confidence_before, "disuse never touches confidence");
    assert_eq!(audited(&mut c, &space, "decay").len(), 4);

    // Recall ranks by accessibility first, then by support (RC11 spec,
    // BrainRecall): echo and swept tie on strength, confidence decides.
    let ranked = ok(kip(
        &mut c,
        r#"FIND(?o.name, ?link.metadata.memory_strength, ?link.metadata.confidence) WHERE {
             ?link ({type: "Person", name: "Carol"}, "prefers", ?o)
             FILTER(IS_NOT_NULL(?link.metadata.memory_strength))
           } ORDER BY ?link.metadata.memory_strength DESC, ?link.metadata.confidence DESC"#,
        json!({}),
    ));
    // One column per variable: ?o's names, then ?link's [strength, confidence].
    let order: Vec<Value> = ranked[0].as_array().unwrap_or_else(|| panic!("{ranked}")).clone();
    assert_eq!(ranked[1][4], json!([0.5, 0.9]), "{ranked}");
    assert_eq!(order, vec![json!("truth"), json!("vivid"), json!("strong"), json!("weak"), json!("echo"), json!("swept"), json!("faint")], "{ranked}");

    let versions: Value = c
        .query_one("SELECT jsonb_agg(version ORDER BY id) FROM kip.propositions WHERE space = $1", &[&space])
        .unwrap()
        .get(0);
    let second = maintain(&mut c, &space);
    assert_eq!(second["decayed"], json!(0), "{second}");
    assert_eq!(link_strength(&mut c, &space, "weak"), json!(0.665));
    let versions_after: Value = c
        .query_one("SELECT jsonb_agg(version ORDER BY id) FROM kip.propositions WHERE space = $1", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(versions, versions_after, "a second run changes nothing");
    let domain_links_after: Value = c
        .query_one(
            "SELECT jsonb_agg(metadata ORDER BY id) FROM kip.propositions WHERE space = $1 AND predicate = 'belongs_to_domain' AND metadata ->> 'source' IS DISTINCT FROM 'OrphanResolution'",
            &[&space],
        )
        .unwrap()
        .get(0);
    assert_eq!(domain_links_before, domain_links_after, "belongs_to_domain links never decay");
}

#[test]
fn the_decay_factor_is_a_setting() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = decay_fixture(&mut c);
    c.batch_execute("SET kip.memory_strength_decay = 0.5").unwrap();
    let report = maintain(&mut c, &space);
    c.batch_execute("RESET kip.memory_strength_decay").unwrap();
    assert_eq!(report["decayed"], json!(4), "{report}");
    assert_eq!(link_strength(&mut c, &space, "weak"), json!(0.35));
    assert_eq!(link_strength(&mut c, &space, "strong"), json!(0.525), "slow links lose half as much (0.75)");
    assert_eq!(link_meta(&mut c, &space, "weak", "confidence"), json!(0.8));
}

#[test]
fn orphans_are_filed_under_unsorted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "morphan");
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?d { {type: "Domain", name: "Food"} }
          CONCEPT ?lost { {type: "Preference", name: "lost"} SET ATTRIBUTES { description: "no domain" } }
          CONCEPT ?home { {type: "Preference", name: "home"} SET ATTRIBUTES { description: "filed" } SET PROPOSITIONS { ("belongs_to_domain", ?d) } }
          CONCEPT ?p { {type: "Person", name: "Dave"} SET ATTRIBUTES { person_class: "Human" } }
        }"#,
        json!({}),
    ));
    let report = maintain(&mut c, &space);
    assert_eq!(report["orphans_assigned"], json!(1), "{report}");
    let domains = |c: &mut Client, name: &str| -> Vec<String> {
        c.query(
            "SELECT object_name FROM kip.facts WHERE space = $1 AND subject_name = $2 AND predicate = 'belongs_to_domain' ORDER BY 1",
            &[&space, &name],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    assert_eq!(domains(&mut c, "lost"), vec!["Unsorted"]);
    assert_eq!(domains(&mut c, "home"), vec!["Food"]);
    assert!(domains(&mut c, "Dave").is_empty(), "persons are not filed");
    let meta: Value = c
        .query_one(
            "SELECT metadata FROM kip.facts WHERE space = $1 AND subject_name = 'lost' AND predicate = 'belongs_to_domain'",
            &[&space],
        )
        .unwrap()
        .get(0);
    assert_eq!((meta["author"].clone(), meta["confidence"].clone()), (json!("$system"), json!(0.5)));
    assert_eq!(audited(&mut c, &space, "orphan_to_unsorted").len(), 1);
    assert_eq!(maintain(&mut c, &space)["orphans_assigned"], json!(0));
}

/// A concept an agent is deleting while the cycle files orphans is skipped,
/// not linked: the cycle used to link it, then fail the space on the link's
/// foreign key (`KIP_3002`) when the delete committed.
#[test]
fn orphans_being_deleted_are_skipped_not_a_failed_cycle() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "morphandel");
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?gone { {type: "Preference", name: "gone"} SET ATTRIBUTES { description: "being deleted" } }
          CONCEPT ?kept { {type: "Preference", name: "kept"} SET ATTRIBUTES { description: "an orphan" } }
        }"#,
        json!({}),
    ));
    let mut agent = connect();
    agent.batch_execute(&format!("SET kip.space = '{space}'; BEGIN")).unwrap();
    ok(kip(&mut agent, r#"DELETE CONCEPT ?p DETACH WHERE { ?p {type: "Preference", name: "gone"} }"#, json!({})));
    let space2 = space.clone();
    let cycle = std::thread::spawn(move || {
        let mut c = connect();
        maintain(&mut c, &space2)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    agent.batch_execute("COMMIT").unwrap();
    let report = cycle.join().expect("the cycle");
    assert!(report.get("error").is_none(), "{report}");
    assert_eq!(report["orphans_assigned"], json!(1), "{report}");
    assert!(!exists(&mut c, &space, "Preference", "gone"));
    let filed: Vec<String> = c
        .query(
            "SELECT subject_name FROM kip.facts WHERE space = $1 AND predicate = 'belongs_to_domain' AND object_name = 'Unsorted' ORDER BY 1",
            &[&space],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(filed, vec!["kept"], "{report}");
}

#[test]
fn a_duplicate_pair_yields_exactly_one_sleep_task() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "mdup");
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?a { {type: "Preference", name: "Dark Mode"} SET ATTRIBUTES { description: "a" } }
          CONCEPT ?b { {type: "Preference", name: "dark  mode"} SET ATTRIBUTES { description: "b" } }
          CONCEPT ?other { {type: "Person", name: "dark mode"} SET ATTRIBUTES { person_class: "Human" } }
          CONCEPT ?c { {type: "Preference", name: "Light Mode"} SET ATTRIBUTES { description: "c" } }
        }"#,
        json!({}),
    ));
    assert_eq!(maintain(&mut c, &space)["duplicate_tasks"], json!(1));
    assert_eq!(maintain(&mut c, &space)["duplicate_tasks"], json!(0));
    let tasks = ok(kip(
        &mut c,
        r#"FIND(?t.name, ?t.attributes.requested_action, ?t.attributes.status, ?t.attributes.target_type) WHERE {
          ?t {type: "SleepTask"}
          (?t, "assigned_to", {type: "Person", name: "$system"})
        }"#,
        json!({}),
    ));
    let rows = tasks.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{tasks}");
    assert_eq!(rows[0][1], json!("merge_duplicates"));
    assert_eq!(rows[0][2], json!("pending"));
    assert_eq!(rows[0][3], json!("Preference"));
    assert_eq!(audited(&mut c, &space, "sleep_task").len(), 1);
}

/// A cycle creates at most 48 SleepTasks per space (each is a writing
/// subtransaction; more than 64 in one transaction overflow Postgres's
/// subtransaction cache); the next cycle creates the rest.
#[test]
fn new_sleep_tasks_per_cycle_are_bounded() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "mbudget");
    let mut capsule = String::from("UPSERT { ");
    for i in 0..60 {
        capsule.push_str(&format!(
            r#"CONCEPT ?a{i} {{ {{type: "Preference", name: "Setting {i}"}} }} CONCEPT ?b{i} {{ {{type: "Preference", name: "setting{i}"}} }} "#
        ));
    }
    capsule.push('}');
    ok(kip(&mut c, &capsule, json!({})));
    assert_eq!(maintain(&mut c, &space)["duplicate_tasks"], json!(48));
    assert_eq!(maintain(&mut c, &space)["duplicate_tasks"], json!(12));
    assert_eq!(maintain(&mut c, &space)["duplicate_tasks"], json!(0));
}

#[test]
fn star_runs_every_space() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let mut spaces = Vec::new();
    for _ in 0..3 {
        let space = fresh_space(&mut c, "mstar");
        ok(kip(&mut c, &format!("UPSERT {{ {} WITH METADATA {{ expires_at: \"2020-01-01\" }} }}", event("gone", Some("archived"))), json!({})));
        spaces.push(space);
    }
    let reports = maintain(&mut c, "*");
    for space in &spaces {
        let report = reports
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["space"] == json!(space))
            .unwrap_or_else(|| panic!("no report for {space} in {reports}"));
        assert_eq!(report["expired_deleted"], json!(1), "{report}");
        assert!(!exists(&mut c, space, "Event", "gone"));
    }
}

#[test]
fn unknown_space_is_an_error() {
    let mut c = connect();
    let err = c.query_one("SELECT kip_maintenance('no_such_space_here')", &[]).unwrap_err();
    let message = err.as_db_error().map(|e| e.message().to_string()).unwrap_or_else(|| err.to_string());
    assert!(message.contains("KIP_3002"), "{message}");
}

/// Whether the cluster preloads kip, so that its workers run; says why a
/// test is skipped when it does not.
fn workers_registered(c: &mut Client) -> bool {
    let preload: String = c.query_one("SHOW shared_preload_libraries", &[]).unwrap().get(0);
    let preloaded = preload.split(',').any(|l| l.trim().trim_matches('"') == "kip");
    if !preloaded {
        eprintln!("skipped: shared_preload_libraries ({preload:?}) lacks kip; the maintenance worker is not registered on this cluster");
    }
    preloaded
}

#[test]
fn worker_is_running_when_preloaded() {
    let mut c = connect();
    if !workers_registered(&mut c) {
        return;
    }
    kip_worker_pid(&mut c);
}

/// The pid of the one `kip worker` backend of database `kip`, waiting up to
/// 30 s for it (the worker restarts every 10 s until its database exists).
fn kip_worker_pid(c: &mut Client) -> i32 {
    for _ in 0..150 {
        let rows = c
            .query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'kip worker' AND datname = 'kip'", &[])
            .unwrap();
        if let [row] = rows.as_slice() {
            return row.get(0);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("no 'kip worker' backend on database kip in pg_stat_activity although kip is preloaded");
}

/// CPU time (user + system, in clock ticks of 1/100 s) of a local process,
/// or `None` when it is not visible from here (a server on another host).
fn cpu_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses: state is the
    // first, utime and stime the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A worker whose database lacks the extension (the cluster's `kip`
/// database, created empty by scripts/cluster.sh) looks for it again each
/// `kip.embedding_naptime` and otherwise sleeps: it does not spin a core.
#[test]
fn worker_sleeps_where_the_extension_is_not_installed() {
    let _kip_database = KIP_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    if !workers_registered(&mut c) {
        return;
    }
    let Ok(mut kip_db) = Client::connect(&dsn_for("kip"), NoTls) else {
        eprintln!("skipped: no database kip on this cluster");
        return;
    };
    let installed: bool = kip_db.query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'kip')", &[]).unwrap().get(0);
    if installed {
        eprintln!("skipped: the kip extension is installed in database kip");
        return;
    }
    let pid = kip_worker_pid(&mut c);
    let Some(before) = cpu_ticks(pid) else {
        eprintln!("skipped: the server's processes are not visible in this host's /proc");
        return;
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let after = cpu_ticks(pid).expect("the worker is still running");
    // A worker looking every 500 ms uses well under 0.1 s of these 2 s; one
    // that spins uses most of them.
    assert!(after - before < 40, "the kip worker of database kip used {} ms of CPU in 2 s", (after - before) * 10);
}

/// A worker leaves its database for a session that waits to copy or rename
/// it (`CREATE DATABASE … TEMPLATE`, `ALTER DATABASE … RENAME`; `DROP
/// DATABASE` takes the same lock as a rename), which would otherwise fail
/// with "being accessed by other users" after 5 s, and comes back after
/// its restart time. Shown on the cluster's `kip` database.
#[test]
fn worker_leaves_its_database_for_a_copy_or_a_rename() {
    let _kip_database = KIP_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    if !workers_registered(&mut c) {
        return;
    }
    let clients: i64 = c
        .query_one("SELECT count(*) FROM pg_stat_activity WHERE datname = 'kip' AND backend_type = 'client backend'", &[])
        .unwrap()
        .get(0);
    if clients > 0 {
        eprintln!("skipped: {clients} client session(s) use database kip (a gateway?), so it cannot be copied");
        return;
    }
    let first = kip_worker_pid(&mut c);
    c.batch_execute("DROP DATABASE IF EXISTS kip_copied_by_test").unwrap();
    let copied = c.batch_execute("CREATE DATABASE kip_copied_by_test TEMPLATE kip");
    c.batch_execute("DROP DATABASE IF EXISTS kip_copied_by_test").unwrap();
    copied.expect("CREATE DATABASE ... TEMPLATE kip while a kip worker serves kip");
    let second = kip_worker_pid(&mut c);
    assert_ne!(first, second, "the worker came back as a new process");
    let renamed = c.batch_execute("ALTER DATABASE kip RENAME TO kip_renamed_by_test");
    if renamed.is_ok() {
        c.batch_execute("ALTER DATABASE kip_renamed_by_test RENAME TO kip").expect("give database kip its name back");
    }
    renamed.expect("ALTER DATABASE kip RENAME while a kip worker serves kip");
    assert_ne!(kip_worker_pid(&mut c), second, "the worker came back after the rename");
}

/// The sweep locks what it reclaims or decays as it selects it, skipping
/// what an agent is writing: an Event an agent sets back to pending, or a
/// link it strengthens, in a transaction open while the cycle runs, is
/// neither deleted nor decayed from its old version. And a landmark Event,
/// whose own TTL was removed, keeps the links Formation stamped with it.
#[test]
fn the_sweep_never_undoes_an_agents_concurrent_write() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = decay_fixture(&mut c);
    let mut capsule = String::from("UPSERT {\n");
    capsule.push_str(&event("reopened", Some("completed")));
    capsule.push_str("\nWITH METADATA { expires_at: \"2020-02-01T00:00:00Z\" }\n");
    capsule.push_str(
        r#"CONCEPT ?landmark { {type: "Event", name: "landmark"}
            SET ATTRIBUTES { event_class: "Conversation", start_time: "2020-01-01T00:00:00Z", content_summary: "s", consolidation_status: "completed" }
            SET PROPOSITIONS { ("involves", {type: "Person", name: "Carol"}) } }
        WITH METADATA { expires_at: "2020-02-01T00:00:00Z" }
        }"#,
    );
    ok(kip(&mut c, &capsule, json!({})));
    // Promoted to a landmark (BrainMaintenance 5A): its own TTL goes.
    ok(kip(&mut c, r#"DELETE METADATA {"expires_at"} FROM ?e WHERE { ?e {type: "Event", name: "landmark"} }"#, json!({})));

    let mut agent = connect();
    agent.batch_execute(&format!("SET kip.space = '{space}'; BEGIN")).unwrap();
    ok(kip(
        &mut agent,
        r#"UPSERT { CONCEPT ?e { {type: "Event", name: "reopened"} SET ATTRIBUTES { consolidation_status: "pending" } } WITH METADATA { expires_at: "2099-01-01T00:00:00Z" }
                    CONCEPT ?carol { {type: "Person", name: "Carol"} SET PROPOSITIONS { ("prefers", {type: "Preference", name: "weak"}) WITH METADATA { memory_strength: 0.95, observed_at: "2020-06-01T00:00:00Z" } } } }"#,
        json!({}),
    ));
    let space2 = space.clone();
    let sweep = std::thread::spawn(move || {
        let mut c = connect();
        c.batch_execute("SET application_name = 'kip_sweep_during_a_write'").unwrap();
        maintain(&mut c, &space2)
    });
    // The agent commits once the cycle is over (it skips what the agent
    // holds) or waits for the agent; a fixed pause could end before the
    // cycle reached the decay step on a loaded machine, which would then
    // decay the committed link.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !sweep.is_finished() && std::time::Instant::now() < deadline {
        let waiting: bool = c
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'kip_sweep_during_a_write' AND wait_event_type = 'Lock')",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    agent.batch_execute("COMMIT").unwrap();
    let report = sweep.join().expect("the cycle");
    assert!(exists(&mut c, &space, "Event", "reopened"), "{report}");
    assert_eq!(link_strength(&mut c, &space, "weak"), json!(0.95), "{report}");
    let landmark_links: i64 = c
        .query_one("SELECT count(*) FROM kip.facts WHERE space = $1 AND subject_name = 'landmark' AND predicate = 'involves'", &[&space])
        .unwrap()
        .get(0);
    assert_eq!(landmark_links, 1, "{report}");
}

/// An `expires_at` written without a zone is read as UTC, whatever the
/// `TimeZone` of the session that runs the cycle: at +14 a memory due in
/// three hours was reclaimed at once.
#[test]
fn ttl_reads_a_zoneless_expiry_as_utc_whatever_the_session_time_zone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = connect();
    let space = fresh_space(&mut c, "mttl_tz");
    let due: String = c
        .query_one("SELECT to_char((now() AT TIME ZONE 'UTC') + interval '3 hours', 'YYYY-MM-DD\"T\"HH24:MI:SS')", &[])
        .unwrap()
        .get(0);
    ok(kip(
        &mut c,
        &format!(
            r#"UPSERT {{ CONCEPT ?p {{ {{type: "Preference", name: "soon"}} SET ATTRIBUTES {{ description: "due in three hours" }} }}
               WITH METADATA {{ expires_at: "{due}", memory_tier: "short-term" }} }}"#
        ),
        json!({}),
    ));
    c.batch_execute("SET TimeZone = '+14'").unwrap();
    maintain(&mut c, &space);
    c.batch_execute("RESET TimeZone").unwrap();
    assert!(exists(&mut c, &space, "Preference", "soon"), "a memory due in three hours (UTC) was reclaimed");
}
