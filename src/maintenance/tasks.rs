//! SleepTasks the cycle leaves for the agent (`SleepTask.kip`).
//!
//! Written through the engine's own UPSERT, so the SleepTask schema
//! (required attributes, `requested_action` enum) is enforced exactly as for
//! an agent, with `$system` provenance. Task names are deterministic
//! (`SleepTask:<action>:<key>`) and a task is only created when none of that
//! name exists: a task the agent already moved to `in_progress`/`completed`
//! is never reset to `pending`.

use crate::engine;
use crate::exec::Ctx;
use crate::exec::{spi, subxact, Access, SqlParam};
use crate::space::Space;
use kip_lang::KipError;
use serde_json::{json, Map, Value};

const TEMPLATE: &str = r#"UPSERT {
  CONCEPT ?task {
    {type: "SleepTask", name: :task_name}
    SET ATTRIBUTES {
      target_type: :target_type, target_name: :target_name,
      requested_action: :action, reason: :reason,
      status: "pending", priority: :priority
    }
    SET PROPOSITIONS {
      ("assigned_to", {type: "Person", name: "$system"})
      ("belongs_to_domain", {type: "Domain", name: "System"})
    }
  }
}
WITH METADATA { source: "MaintenanceCycle", author: "$system", confidence: 1.0, created_at: :now }"#;

pub struct Task<'a> {
    pub action: &'a str,
    pub key: String,
    pub target_type: &'a str,
    pub target_name: &'a str,
    pub reason: String,
    pub priority: i64,
}

/// How many new SleepTasks one space's cycle may create. Each is written by
/// a KIP command in its own subtransaction; more than 64 writing
/// subtransactions in one transaction overflow Postgres's per-backend
/// subtransaction cache, after which every snapshot consults `pg_subtrans`.
/// Tasks beyond the budget are created by later cycles (`ensure` is
/// idempotent).
pub const MAX_NEW_TASKS_PER_CYCLE: usize = 48;

/// What is left of [`MAX_NEW_TASKS_PER_CYCLE`] in this space's cycle.
pub struct TaskBudget {
    left: usize,
}

impl TaskBudget {
    pub fn new() -> TaskBudget {
        TaskBudget { left: MAX_NEW_TASKS_PER_CYCLE }
    }
}

/// Create the task unless it exists; true when it was created. False as
/// well, without writing, when the cycle's budget of new tasks is spent.
pub fn ensure(space: &Space, task: &Task, budget: &mut TaskBudget) -> Result<bool, KipError> {
    if budget.left == 0 {
        return Ok(false);
    }
    let name = format!("SleepTask:{}:{}", task.action, task.key);
    let exists = spi::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND type = 'SleepTask' AND name = $2)",
        &[space.param(), SqlParam::Text(name.clone())],
        Access::ReadOnly,
    )?;
    if exists == Value::Bool(true) {
        return Ok(false);
    }
    let now = spi::query_scalar(
        &format!("SELECT {}", super::NOW_ISO),
        &[],
        Access::ReadOnly,
    )?;
    let mut params = Map::new();
    params.insert("task_name".into(), json!(name));
    params.insert("target_type".into(), json!(task.target_type));
    params.insert("target_name".into(), json!(task.target_name));
    params.insert("action".into(), json!(task.action));
    params.insert("reason".into(), json!(task.reason));
    params.insert("priority".into(), json!(task.priority));
    params.insert("now".into(), now);
    let script = kip_lang::bind(kip_lang::parse(TEMPLATE)?, &params)?;
    let ctx = Ctx::new(space.clone(), Access::ReadWrite);
    budget.left -= 1;
    let outcome = subxact::run_isolated(|| engine::execute_script(&script, &ctx))?;
    spi::execute(
        "INSERT INTO kip.maintenance_log (space, action, element_ref, detail) VALUES ($1, 'sleep_task', $2, $3)",
        &[
            space.param(),
            SqlParam::Text(outcome.result_value()["upsert_concept_nodes"][0].as_str().unwrap_or_default().to_string()),
            SqlParam::Json(json!({ "name": name, "requested_action": task.action, "reason": task.reason })),
        ],
        Access::ReadWrite,
    )?;
    Ok(true)
}
