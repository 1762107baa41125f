//! Duplicate candidates → `merge_duplicates` SleepTasks (Phase 6 prep).
//!
//! Two concepts of one type are candidates when their names are equal after
//! lower-casing and removing all whitespace ("Alice Smith" / "alice  smith" /
//! "AliceSmith"). Exact normalized equality, not trigram similarity: the
//! cycle runs unattended, and a false pair costs the agent a review while a
//! fuzzy threshold over every pair of a large space costs a quadratic scan.
//! Paraphrase twins stay the agent's job (SEARCH in Phase 6). Schema nodes and
//! SleepTasks themselves are never paired. One task per pair, named after
//! both ids, so later cycles do not repeat it.

use super::tasks::{self, Task};
use crate::exec::{spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::KipError;
use serde_json::Value;

/// The space's concepts that may pair, each with its normalized name,
/// computed once per concept and kept (`MATERIALIZED`): compared within the
/// join, the normalization ran once per pair of a type, and a cycle over a
/// space of 30,000 concepts took 70 s (a cycle over 100,000 now takes
/// 0.3 s, `kip-bulk-bench`).
const CANDIDATES: &str = "SELECT c.id, c.type, c.name, lower(regexp_replace(c.name, '[[:space:]]+', '', 'g')) AS k \
     FROM kip.concepts c WHERE c.space = $1 AND c.type NOT IN ('$ConceptType', '$PropositionType', 'SleepTask')";

/// Create missing tasks for up to `cap` pairs; returns how many were created.
/// A task the engine refuses (say, an agent changed the SleepTask schema) is
/// reported in `errors` and does not stop the cycle.
pub fn run(space: &Space, cap: i64, budget: &mut tasks::TaskBudget, errors: &mut Vec<Value>) -> Result<i64, KipError> {
    if cap <= 0 {
        return Ok(0);
    }
    let sql = format!(
        "WITH n AS MATERIALIZED ({CANDIDATES}) \
         SELECT a.id, b.id, a.type, a.name, b.name FROM n a \
         JOIN n b ON b.type = a.type AND b.k = a.k AND b.id > a.id \
         ORDER BY a.id, b.id LIMIT $2"
    );
    let rows = spi::query(&sql, &[space.param(), SqlParam::Int(cap)], Access::ReadOnly)?;
    let mut created = 0;
    for row in rows {
        let (a, b) = (row[0].as_i64().unwrap_or(0), row[1].as_i64().unwrap_or(0));
        let ty = row[2].as_str().unwrap_or_default();
        let (name_a, name_b) = (row[3].as_str().unwrap_or_default(), row[4].as_str().unwrap_or_default());
        let task = Task {
            action: "merge_duplicates",
            key: format!("C:{a}+C:{b}"),
            target_type: ty,
            target_name: name_b,
            reason: format!(
                "Possible duplicates of type {ty:?}: {name_a:?} (C:{a}) and {name_b:?} (C:{b}) have the same name ignoring case and whitespace. Verify, then MERGE the duplicate into the canonical node."
            ),
            priority: 1,
        };
        match tasks::ensure(space, &task, budget) {
            Ok(true) => created += 1,
            Ok(false) => {}
            Err(e) => errors.push(e.to_json()),
        }
    }
    Ok(created)
}
