//! Asymmetric confidence decay (BrainMaintenance Phase 7).
//!
//! Acts on proposition links' `metadata.confidence` ("the assertion link is
//! the trust home"). A link decays when: its predicate is not
//! `belongs_to_domain`; it is not `superseded`; its confidence is a number in
//! (0.3, 1.0) — `1.0` system truths never decay; it is older than a week
//! (`metadata.created_at`, or the row's creation time when absent/unreadable);
//! it was not re-observed in the last 14 days (`metadata.observed_at`); and it
//! has not decayed within the last decay period (a week: the reference factor
//! is "0.95/week"), neither by this cycle (`_decayed_at`, an engine key KML
//! cannot write) nor by an agent's own sleep cycle (`decay_applied_at`). That
//! guard makes the step idempotent however often the worker runs.
//!
//! Factor ("use it or lose it"): slow `0.98` for provenance/participation
//! predicates, for links whose object has `evidence_count >= 3`, and for links
//! whose subject Event has `salience_score >= 60`; fast `0.90` otherwise.

use super::NOW_ISO;
use crate::exec::{spi, Access, SqlParam};
use kip_lang::KipError;

pub const SLOW_FACTOR: f64 = 0.98;
pub const FAST_FACTOR: f64 = 0.90;
const PERIOD: &str = "7 days";
const OBSERVED_EXEMPTION: &str = "14 days";
const PROVENANCE_PREDICATES: [&str; 5] = ["derived_from", "involves", "consolidated_to", "supersedes", "assigned_to"];

fn number(expr: &str) -> String {
    format!("(CASE WHEN jsonb_typeof({expr}) = 'number' THEN ({expr})::text::float8 END)")
}

/// Decay eligible links of `space`, at most `cap`; returns how many.
pub fn run(space: &str, cap: i64) -> Result<i64, KipError> {
    if cap <= 0 {
        return Ok(0);
    }
    let confidence = number("p.metadata -> 'confidence'");
    let sql = format!(
        "WITH cand AS ( \
           SELECT p.id, p.predicate, {confidence} AS old_conf, \
             CASE WHEN p.predicate = ANY($3::text[]) \
                    OR coalesce({evidence} >= 3, false) \
                    OR (s.type = 'Event' AND coalesce({salience} >= 60, false)) \
                  THEN $4::float8 ELSE $5::float8 END AS factor \
           FROM kip.propositions p \
           LEFT JOIN kip.concepts s ON s.id = p.subject_concept \
           LEFT JOIN kip.concepts o ON o.id = p.object_concept \
           WHERE p.space = $1 AND p.predicate <> 'belongs_to_domain' \
             AND {confidence} > 0.3 AND {confidence} < 1.0 \
             AND coalesce(p.metadata -> 'superseded', 'false'::jsonb) <> 'true'::jsonb \
             AND coalesce(kip.try_timestamptz(p.metadata ->> 'created_at'), p.created_at) < now() - $6::interval \
             AND coalesce(kip.try_timestamptz(p.metadata ->> 'observed_at') < now() - $7::interval, true) \
             AND coalesce(kip.try_timestamptz(p.metadata ->> '_decayed_at') < now() - $6::interval, true) \
             AND coalesce(kip.try_timestamptz(p.metadata ->> 'decay_applied_at') < now() - $6::interval, true) \
           ORDER BY p.id LIMIT $2), \
         upd AS (UPDATE kip.propositions k SET metadata = k.metadata || jsonb_build_object( \
             'confidence', round(greatest(0.0, least(1.0, cand.old_conf * cand.factor))::numeric, 6), \
             '_decayed_at', {NOW_ISO}) \
           FROM cand WHERE k.id = cand.id \
           RETURNING k.id, k.predicate, cand.old_conf, cand.factor, k.metadata -> 'confidence' AS new_conf), \
         logged AS (INSERT INTO kip.maintenance_log (space, action, element_ref, detail) \
           SELECT $1, 'decay', 'P:' || id || ':' || predicate, \
             jsonb_build_object('from', old_conf, 'to', new_conf, 'factor', factor) FROM upd RETURNING 1) \
         SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM logged)",
        evidence = number("o.attributes -> 'evidence_count'"),
        salience = number("s.attributes -> 'salience_score'"),
    );
    let params = [
        SqlParam::Text(space.into()),
        SqlParam::Int(cap),
        SqlParam::TextArray(PROVENANCE_PREDICATES.iter().map(|s| s.to_string()).collect()),
        SqlParam::Float(SLOW_FACTOR),
        SqlParam::Float(FAST_FACTOR),
        SqlParam::Text(PERIOD.into()),
        SqlParam::Text(OBSERVED_EXEMPTION.into()),
    ];
    let rows = spi::query(&sql, &params, Access::ReadWrite)?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).unwrap_or(0))
}
