//! Memory-strength decay on disuse (BrainMaintenance Phase 7, KIP v1.0-RC11).
//!
//! Acts on proposition links' `metadata.memory_strength`, how readily a
//! memory comes to mind. It never touches `metadata.confidence`, how well the
//! memory is supported: a fact nobody recalled for a month is no less true
//! (Phase 7C). A link without a strength starts from `0.7`, the spec's
//! neutral default.
//!
//! A link decays when: its predicate is not `belongs_to_domain`; it is not
//! `superseded`; it is no commitment, identity fact or schema truth, which
//! "are not made unimportant merely because they have not been recalled"
//! (RC11 BrainMaintenance 7B): neither end is a `Commitment` (nor is the
//! predicate `committed_to` or `owed_to`) or a type or predicate
//! definition, and its subject is not the agent itself (`$self`,
//! `$system`: what the agent holds of itself; an Event that `involves`
//! `$self` is a participation link and fades slowly). Its `confidence` plays no
//! part: RC11 keeps the two axes apart (a fact held with confidence 1.0 is
//! as prone to fade from mind as any). Its strength is absent or a number
//! above the `0.05` floor (so the sweep converges); it is older than a week
//! (`metadata.created_at`, or the row's creation time when absent/unreadable);
//! it was not re-observed in the last 14 days (`metadata.observed_at`); and it
//! has not decayed within the last decay period (a week), neither by this
//! cycle (`_decayed_at`, an engine key KML cannot write) nor by an agent's own
//! sleep cycle (`strength_decay_applied_at`). That guard makes the step
//! idempotent however often the worker runs. The cycle writes
//! `strength_decay_applied_at` too, the key BrainMaintenance 7A's own
//! guard reads: an agent that runs that UPDATE after the cycle does not
//! decay the link a second time.
//!
//! Candidates are locked as they are selected (`FOR UPDATE … SKIP LOCKED`):
//! a link an agent is writing is left for the next cycle, and one an agent
//! changed and committed since the sweep's snapshot is judged and decayed
//! from what it now holds, so the agent's new strength is never overwritten
//! with a decay of the old one.
//!
//! Factor: `kip.memory_strength_decay` (default `0.95` per period). Links the
//! spec wants to fade slowly lose half as much (`0.975` by default):
//! provenance/participation predicates, links whose object has
//! `evidence_count >= 3`, and links whose subject Event or Experience has
//! `salience_score >= 60` or an Experience with `learning_value >= 60`.

use super::settings;
use super::NOW_ISO;
use crate::exec::{spi, Access, SqlParam};
use kip_lang::KipError;

/// The strength of a link that has none yet.
pub const DEFAULT_STRENGTH: f64 = 0.7;
/// Links at or below this strength no longer decay.
pub const FLOOR: f64 = 0.05;
const PERIOD: &str = "7 days";
const OBSERVED_EXEMPTION: &str = "14 days";
const PROVENANCE_PREDICATES: [&str; 8] = [
    "derived_from",
    "involves",
    "consolidated_to",
    "supersedes",
    "assigned_to",
    "has_step",
    "derived_insight",
    "compiled_to",
];

fn number(expr: &str) -> String {
    format!("(CASE WHEN jsonb_typeof({expr}) = 'number' THEN ({expr})::text::float8 END)")
}

/// The slow factor: half the loss of the regular one.
pub fn slow_factor(factor: f64) -> f64 {
    1.0 - (1.0 - factor) / 2.0
}

/// Decay eligible links of `space`, at most `cap`; returns how many.
pub fn run(space: &str, cap: i64) -> Result<i64, KipError> {
    if cap <= 0 {
        return Ok(0);
    }
    let factor = settings::memory_strength_decay();
    let strength = number("p.metadata -> 'memory_strength'");
    let sql = format!(
        "WITH cand AS ( \
           SELECT p.id, p.predicate, coalesce({strength}, $8::float8) AS old_strength, \
             CASE WHEN p.predicate = ANY($3::text[]) \
                    OR coalesce({evidence} >= 3, false) \
                    OR (s.type IN ('Event', 'Experience') AND coalesce({salience} >= 60, false)) \
                    OR (s.type = 'Experience' AND coalesce({learning} >= 60, false)) \
                  THEN $4::float8 ELSE $5::float8 END AS factor \
           FROM kip.propositions p \
           LEFT JOIN kip.concepts s ON s.id = p.subject_concept \
           LEFT JOIN kip.concepts o ON o.id = p.object_concept \
           WHERE p.space = $1 AND p.predicate NOT IN ('belongs_to_domain', 'committed_to', 'owed_to') \
             AND NOT coalesce(s.type IN ('Commitment', '$ConceptType', '$PropositionType') \
                              OR (s.type = 'Person' AND s.name IN ('$self', '$system')), false) \
             AND NOT coalesce(o.type IN ('Commitment', '$ConceptType', '$PropositionType'), false) \
             AND (p.metadata -> 'memory_strength' IS NULL OR {strength} > $9::float8) \
             AND coalesce(p.metadata -> 'superseded', 'false'::jsonb) <> 'true'::jsonb \
             AND coalesce(kip.try_timestamptz(p.metadata ->> 'created_at'), p.created_at) < now() - $6::interval \
             AND coalesce(kip.try_timestamptz(p.metadata ->> 'observed_at') < now() - $7::interval, true) \
             AND coalesce(kip.try_timestamptz(p.metadata ->> '_decayed_at') < now() - $6::interval, true) \
             AND coalesce(kip.try_timestamptz(p.metadata ->> 'strength_decay_applied_at') < now() - $6::interval, true) \
           ORDER BY p.id LIMIT $2 \
           FOR UPDATE OF p SKIP LOCKED), \
         upd AS (UPDATE kip.propositions k SET metadata = k.metadata || jsonb_build_object( \
             'memory_strength', round(greatest(0.0, least(1.0, cand.old_strength * cand.factor))::numeric, 6), \
             '_decayed_at', {NOW_ISO}, 'strength_decay_applied_at', {NOW_ISO}) \
           FROM cand WHERE k.id = cand.id \
           RETURNING k.id, k.predicate, cand.old_strength, cand.factor, k.metadata -> 'memory_strength' AS new_strength), \
         logged AS (INSERT INTO kip.maintenance_log (space, action, element_ref, detail) \
           SELECT $1, 'decay', 'P:' || id || ':' || predicate, \
             jsonb_build_object('memory_strength', jsonb_build_object('from', old_strength, 'to', new_strength), 'factor', factor) \
           FROM upd RETURNING 1) \
         SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM logged)",
        evidence = number("o.attributes -> 'evidence_count'"),
        salience = number("s.attributes -> 'salience_score'"),
        learning = number("s.attributes -> 'learning_value'"),
    );
    let params = [
        SqlParam::Text(space.into()),
        SqlParam::Int(cap),
        SqlParam::TextArray(PROVENANCE_PREDICATES.iter().map(|s| s.to_string()).collect()),
        SqlParam::Float(slow_factor(factor)),
        SqlParam::Float(factor),
        SqlParam::Text(PERIOD.into()),
        SqlParam::Text(OBSERVED_EXEMPTION.into()),
        SqlParam::Float(DEFAULT_STRENGTH),
        SqlParam::Float(FLOOR),
    ];
    let rows = spi::query(&sql, &params, Access::ReadWrite)?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).unwrap_or(0))
}
