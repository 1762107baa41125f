//! The KIP v1.0-RC11 Experience Learning profile: the Experience,
//! ExperienceStep and Skill types and their predicates in every new space,
//! and the Formation → Maintenance → Recall sequence of the RC11 Brain
//! prompts (an Experience with ordered steps, a Skill compiled from it).

use super::common::{run, run_with, space};
use serde_json::{json, Value};

const TYPES: [&str; 3] = ["Experience", "ExperienceStep", "Skill"];
const PREDICATES: [&str; 8] =
    ["caused_by", "compiled_to", "consolidated_to", "derived_from", "derived_insight", "has_step", "involves", "mentions"];

#[test]
fn a_fresh_space_has_the_rc11_types_and_predicates() {
    let mut c = space("rc11");
    for ty in TYPES {
        let def = run_with(&mut c, "DESCRIBE CONCEPT TYPE :t", json!({"t": ty}));
        assert_eq!(def["name"], ty, "{def}");
        assert!(def["attributes"]["instance_schema"].is_object(), "{def}");
    }
    let experience = run(&mut c, r#"DESCRIBE CONCEPT TYPE "Experience""#);
    assert_eq!(experience["attributes"]["instance_schema"]["status"]["enum"], json!(["ongoing", "completed", "aborted"]));
    for p in PREDICATES {
        let def = run_with(&mut c, "DESCRIBE PROPOSITION TYPE :p", json!({"p": p}));
        assert_eq!(def["name"], p, "{def}");
    }
    let involves = run(&mut c, r#"DESCRIBE PROPOSITION TYPE "involves""#);
    assert_eq!(involves["attributes"]["subject_types"], json!(["Event", "Experience"]));
    let has_step = run(&mut c, r#"DESCRIBE PROPOSITION TYPE "has_step""#);
    assert_eq!(has_step["attributes"]["object_types"], json!(["ExperienceStep"]));
    let sleep_task = run(&mut c, r#"DESCRIBE CONCEPT TYPE "SleepTask""#);
    let actions = &sleep_task["attributes"]["instance_schema"]["requested_action"]["enum"];
    assert!(actions.as_array().unwrap().contains(&json!("compile_to_skill")), "{actions}");

    // The primer's domain map lists every concept type of CoreSchema.
    let primer = run(&mut c, "DESCRIBE PRIMER");
    let core = primer["domain_map"].as_array().unwrap().iter().find(|d| d["name"] == "CoreSchema").cloned().unwrap();
    let keys = core["key_concepts"].as_array().unwrap();
    for ty in TYPES.iter().chain(["Event", "Preference", "Insight", "SleepTask", "Commitment", "Person"].iter()) {
        assert!(keys.contains(&json!(ty)), "CoreSchema key_concepts lack {ty}: {core}");
    }
    let level: i32 = c
        .query_one("SELECT capsule_level FROM kip.spaces WHERE name = current_setting('kip.space')", &[])
        .unwrap()
        .get(0);
    assert_eq!(level, 2, "a new space is bootstrapped at the current capsule level");
}

const EXPERIENCE: &str = "Experience:2026-08-14T09:30:deploy_staging";

/// BrainFormation §5f: the Experience, then one step per UPSERT.
const FORMATION_EXPERIENCE: &str = r#"
UPSERT {
  CONCEPT ?experience {
    {type: "Experience", name: :experience_name}
    SET ATTRIBUTES {
      experience_class: :experience_class,
      goal: :goal,
      initial_state: :initial_state,
      status: :status,
      outcome: :outcome,
      success: :success,
      prediction_error: :prediction_error,
      started_at: :started_at,
      ended_at: :ended_at,
      surprise_score: :surprise_score,
      learning_value: :learning_value,
      context: :context,
      raw_trace_ref: :raw_trace_ref,
      consolidation_status: "pending"
    }
    SET PROPOSITIONS {
      ("involves", {type: "Person", name: "$self"})
      ("belongs_to_domain", {type: "Domain", name: :domain})
    }
  }
  WITH METADATA {
    memory_tier: "short-term",
    expires_at: :experience_expires_at
  }
}
WITH METADATA {
  source: :source, author: "$self",
  confidence: 0.95, memory_strength: 0.8,
  created_at: :timestamp, observed_at: :timestamp
}"#;

const FORMATION_STEP: &str = r#"
UPSERT {
  CONCEPT ?step {
    {type: "ExperienceStep", name: :step_name}
    SET ATTRIBUTES {
      index: :index,
      kind: :kind,
      summary: :summary,
      timestamp: :step_timestamp,
      tool: :tool,
      success: :success,
      expected_observation: :expected_observation,
      actual_observation: :actual_observation
    }
    SET PROPOSITIONS {
      ("belongs_to_domain", {type: "Domain", name: :domain})
    }
  }
  WITH METADATA {
    source: :source, author: "$self",
    confidence: 0.95, memory_strength: 0.8,
    created_at: :timestamp, observed_at: :timestamp,
    memory_tier: "short-term", expires_at: :step_expires_at
  }
  CONCEPT ?experience {
    {type: "Experience", name: :experience_name}
    SET PROPOSITIONS {
      ("has_step", ?step) WITH METADATA {
        source: :source, author: "$self",
        confidence: 0.95, memory_strength: 0.8,
        created_at: :timestamp, observed_at: :timestamp,
        expires_at: :step_expires_at
      }
    }
  }
}"#;

/// BrainMaintenance §5D: the Skill, the Experience's state, the link back.
const COMPILE_SKILL: &str = r#"
UPSERT {
  CONCEPT ?skill {
    {type: "Skill", name: :skill_name}
    SET ATTRIBUTES {
      skill_class: :skill_class,
      description: :description,
      goal: :goal,
      trigger_conditions: :trigger_conditions,
      procedure: :procedure,
      expected_outcome: :expected_outcome,
      failure_signals: :failure_signals,
      execution_mode: "supervised",
      maturity: "candidate",
      evidence_count: 1,
      success_count: 1,
      failure_count: 0,
      last_validated_at: :timestamp,
      utility: 0.6
    }
    SET PROPOSITIONS {
      ("derived_from", {type: "Experience", name: :experience_name})
      ("belongs_to_domain", {type: "Domain", name: :domain})
    }
  }
}
WITH METADATA {
  source: "ProceduralConsolidation",
  author: "$system",
  confidence: 0.7,
  memory_strength: 0.6,
  created_at: :timestamp
}"#;

fn base_params() -> Value {
    json!({
        "experience_name": EXPERIENCE,
        "domain": "Operations",
        "source": "conversation:42",
        "timestamp": "2026-08-14T10:05:00Z",
        "experience_expires_at": "2026-09-14T10:05:00Z",
        "step_expires_at": "2026-09-14T10:05:00Z",
    })
}

fn with(mut base: Value, extra: Value) -> Value {
    base.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    base
}

#[test]
fn formation_writes_an_experience_and_maintenance_compiles_a_skill() {
    let mut c = space("rc11form");
    run(
        &mut c,
        r#"UPSERT { CONCEPT ?d { {type: "Domain", name: "Operations"} SET ATTRIBUTES { description: "Deployments and incidents" } } }"#,
    );
    run_with(
        &mut c,
        FORMATION_EXPERIENCE,
        with(
            base_params(),
            json!({
                "experience_class": "task_execution",
                "goal": "Deploy the release to staging",
                "initial_state": {"branch": "release/1.4", "migrations_pending": 2},
                "status": "completed",
                "outcome": "Deployed after running the migrations first",
                "success": true,
                "prediction_error": "The deploy failed until the pending migrations ran",
                "started_at": "2026-08-14T09:30:00Z",
                "ended_at": "2026-08-14T10:05:00Z",
                "surprise_score": 55,
                "learning_value": 80,
                "context": {"environment": "staging"},
                "raw_trace_ref": "trace://deploy/42",
            }),
        ),
    );
    // Steps written out of order: the index, not the write order, orders them.
    let steps = [
        (2, "action", "Ran the migrations, then deployed again", true),
        (0, "action", "Started the deploy", false),
        (1, "observation", "The deploy stopped: two migrations were pending", false),
    ];
    for (index, kind, summary, success) in steps {
        run_with(
            &mut c,
            FORMATION_STEP,
            with(
                base_params(),
                json!({
                    "step_name": format!("{EXPERIENCE}:Step:{index:02}"),
                    "index": index,
                    "kind": kind,
                    "summary": summary,
                    "step_timestamp": format!("2026-08-14T09:{:02}:00Z", 30 + index * 10),
                    "tool": "deployctl",
                    "success": success,
                    "expected_observation": "the release is live",
                    "actual_observation": summary,
                }),
            ),
        );
    }
    // A causal claim the trace supports: step 2 succeeded because of step 1.
    run_with(
        &mut c,
        r#"UPSERT { PROPOSITION ?cause { ({type: "ExperienceStep", name: :effect}, "caused_by", {type: "ExperienceStep", name: :cause}) } }
           WITH METADATA { source: "conversation:42", author: "$self", confidence: 0.8 }"#,
        json!({"effect": format!("{EXPERIENCE}:Step:02"), "cause": format!("{EXPERIENCE}:Step:01")}),
    );

    // Maintenance: compile the Skill, then the source-side state and link.
    run_with(
        &mut c,
        COMPILE_SKILL,
        with(
            base_params(),
            json!({
                "skill_name": "Run pending migrations before deploying",
                "skill_class": "procedure",
                "description": "Deploy a release whose migrations are pending",
                "goal": "A release deployed without a failed first attempt",
                "trigger_conditions": ["a deploy is requested", "the release has pending migrations"],
                "procedure": ["list pending migrations", "run them", "deploy"],
                "expected_outcome": "the release is live on the first deploy",
                "failure_signals": ["a migration fails"],
            }),
        ),
    );
    run_with(
        &mut c,
        r#"UPDATE ?experience SET ATTRIBUTES { consolidation_status: "partially_consolidated" }
           WHERE { ?experience {type: "Experience", name: :experience_name} }"#,
        json!({"experience_name": EXPERIENCE}),
    );
    run_with(
        &mut c,
        r#"UPSERT { PROPOSITION ?compilation { ({type: "Experience", name: :experience_name}, "compiled_to", {type: "Skill", name: :skill_name}) } }
           WITH METADATA { source: "ProceduralConsolidation", author: "$system", confidence: 0.7, memory_strength: 0.6, created_at: :timestamp }"#,
        json!({"experience_name": EXPERIENCE, "skill_name": "Run pending migrations before deploying", "timestamp": "2026-08-14T10:06:00Z"}),
    );

    // Recall (BrainRecall): reconstruct the trajectory in order.
    let rows = run_with(
        &mut c,
        r#"FIND(?e.name, ?step.name, ?step.attributes.kind) WHERE {
             ?e {type: "Experience", name: :experience_name}
             (?e, "has_step", ?step)
           } ORDER BY ?step.attributes.index ASC"#,
        json!({"experience_name": EXPERIENCE}),
    );
    // One column per variable: ?e's names, then ?step's [name, kind] rows.
    let steps = rows[1].as_array().unwrap_or_else(|| panic!("{rows}"));
    let names: Vec<Value> = steps.iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        names,
        vec![json!(format!("{EXPERIENCE}:Step:00")), json!(format!("{EXPERIENCE}:Step:01")), json!(format!("{EXPERIENCE}:Step:02"))],
        "{rows}"
    );
    assert_eq!(steps[1][1], json!("observation"), "{rows}");

    // The Skill, found from the Experience and back, with its evidence.
    let skills = run_with(
        &mut c,
        r#"FIND(?s.name, ?s.attributes.maturity, ?s.attributes.procedure) WHERE {
             ?e {type: "Experience", name: :experience_name}
             (?e, "compiled_to", ?s)
             (?s, "derived_from", ?e)
           }"#,
        json!({"experience_name": EXPERIENCE}),
    );
    assert_eq!(
        skills,
        json!([["Run pending migrations before deploying", "candidate", ["list pending migrations", "run them", "deploy"]]])
    );
    let status = run_with(
        &mut c,
        r#"FIND(?e.attributes.consolidation_status) WHERE { ?e {type: "Experience", name: :experience_name} }"#,
        json!({"experience_name": EXPERIENCE}),
    );
    assert_eq!(status, json!(["partially_consolidated"]));
    // Skills applicable to a situation, by trigger condition.
    let applicable = run(
        &mut c,
        r#"FIND(?s.name) WHERE { ?s {type: "Skill"} FILTER(?s.attributes.maturity != "deprecated") }"#,
    );
    assert_eq!(applicable, json!(["Run pending migrations before deploying"]));
    // The causal link and the participant.
    let cause = run(
        &mut c,
        r#"FIND(?cause.attributes.index) WHERE { ?effect {type: "ExperienceStep"} (?effect, "caused_by", ?cause) }"#,
    );
    assert_eq!(cause, json!([1]));
    let who = run_with(
        &mut c,
        r#"FIND(?p.name) WHERE { ?e {type: "Experience", name: :experience_name} (?e, "involves", ?p) }"#,
        json!({"experience_name": EXPERIENCE}),
    );
    assert_eq!(who, json!(["$self"]));
    // Formation's metadata: strength and confidence are separate axes.
    let link = run_with(
        &mut c,
        r#"FIND(?l.metadata.memory_strength, ?l.metadata.confidence) WHERE {
             ?l ({type: "Experience", name: :experience_name}, "compiled_to", ?s)
           }"#,
        json!({"experience_name": EXPERIENCE}),
    );
    assert_eq!(link, json!([[0.6, 0.7]]));
}
