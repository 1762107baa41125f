//! Orphans → `Unsorted` (BrainMaintenance Phase 4, the no-clear-topic case).
//!
//! A concept with no `belongs_to_domain` link gets one to the `Unsorted`
//! domain, with `confidence: 0.5` as the reference prescribes, so the agent's
//! next Phase 3 pass can reclassify it. Schema nodes, domains and persons are
//! never filed. The link is inserted directly (one statement, capped,
//! audited): `belongs_to_domain` applies to every type, so there is no schema
//! to check.
//!
//! The candidates and the `Unsorted` domain are locked `FOR KEY SHARE` as
//! they are selected, as the link's foreign keys would lock them: a concept
//! an agent is deleting meanwhile is skipped (`SKIP LOCKED`), and one whose
//! delete committed after the statement's snapshot is dropped by the lock's
//! recheck, instead of failing the space's cycle on the foreign key.

use super::NOW_ISO;
use crate::exec::{spi, Access, SqlParam};
use kip_lang::KipError;

pub fn run(space: &str, cap: i64) -> Result<i64, KipError> {
    if cap <= 0 {
        return Ok(0);
    }
    let sql = format!(
        "WITH unsorted AS (SELECT id FROM kip.concepts WHERE space = $1 AND type = 'Domain' AND name = 'Unsorted' FOR KEY SHARE), \
         cand AS (SELECT c.id, c.type, c.name FROM kip.concepts c \
           WHERE c.space = $1 AND c.type NOT IN ('$ConceptType', '$PropositionType', 'Domain', 'Person') \
             AND NOT EXISTS (SELECT 1 FROM kip.propositions b WHERE b.subject_concept = c.id AND b.predicate = 'belongs_to_domain') \
           ORDER BY c.id LIMIT $2 FOR KEY SHARE OF c SKIP LOCKED), \
         ins AS (INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept, metadata) \
           SELECT $1, cand.id, 'belongs_to_domain', u.id, jsonb_build_object('source', 'OrphanResolution', \
             'author', '$system', 'confidence', 0.5, 'created_at', {NOW_ISO}) \
           FROM cand CROSS JOIN unsorted u ON CONFLICT DO NOTHING RETURNING id, subject_concept), \
         logged AS (INSERT INTO kip.maintenance_log (space, action, element_ref, detail) \
           SELECT $1, 'orphan_to_unsorted', 'P:' || ins.id || ':belongs_to_domain', \
             jsonb_build_object('concept', 'C:' || cand.id, 'type', cand.type, 'name', cand.name) \
           FROM ins JOIN cand ON cand.id = ins.subject_concept RETURNING 1) \
         SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM logged)"
    );
    let rows = spi::query(&sql, &[SqlParam::Text(space.into()), SqlParam::Int(cap)], Access::ReadWrite)?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).unwrap_or(0))
}
