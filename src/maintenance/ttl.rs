//! TTL reclamation (BrainMaintenance Phase 12): the only hard delete.
//!
//! A concept is deleted when all of these hold (12A):
//! 1. `metadata.expires_at` is an ISO-8601 time before now (unreadable
//!    values are skipped, see `kip.try_timestamptz`);
//! 2. it is on the whitelist: an `Event` or `Experience` whose
//!    `consolidation_status` is `completed`/`archived` (pending ones are
//!    never deleted, 12A.4); an `ExperienceStep` whose parent Experiences
//!    are archived, or completed and expired themselves; a `SleepTask` in
//!    `completed`/`failed`; a `Commitment` in
//!    `fulfilled`/`cancelled`/`expired`; or any other type whose own
//!    `metadata.memory_tier` is `short-term`;
//! 3. it is not protected (`resolve::protection::exempt_from_maintenance_sql`);
//! 4. no concept relies on it as its sole `derived_from` evidence (12A.5).
//!
//! Links (12D) with an expired `expires_at` are deleted unless superseded,
//! attached to a protected concept, or hanging off an Event or Experience
//! that is kept: pending, not expiring itself (a landmark whose
//! `expires_at` was removed or extended keeps the links its Formation
//! stamped with the old one), or some concept's sole evidence.
//!
//! Candidates are locked as they are selected (`FOR UPDATE … SKIP LOCKED`):
//! one an agent is writing is left for the next cycle, and one an agent
//! changed and committed since the sweep's snapshot is judged again on what
//! it now holds (an Event set back to `pending`, a TTL extended), never
//! deleted from the old version.
//! Both together stay under `kip.maintenance_batch` per cycle; each deletion
//! is written to `kip.maintenance_log` by the same statement that deletes.
//! Expired nodes outside the whitelist are metadata pollution: they get a
//! `review` SleepTask (see `tasks`) and are never deleted.

use crate::resolve::protection::exempt_from_maintenance_sql as protected_concept;
use crate::exec::{spi, Access, SqlParam};
use kip_lang::KipError;

/// How the sweep reads `metadata.expires_at`. From 0.6.0 on, the element
/// tables carry it as a generated column, which the partial indexes
/// `*_expiring_idx` are on; a schema older than the library (before `ALTER
/// EXTENSION kip UPDATE`) has only the metadata key.
/// Detected once per maintenance cycle.
#[derive(Clone, Copy)]
pub struct Expiry {
    generated: bool,
}

impl Expiry {
    pub fn detect() -> Result<Expiry, KipError> {
        let generated = spi::lookup_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute \
               WHERE attrelid = 'kip.concepts'::regclass AND attname = 'expires_at' AND NOT attisdropped)",
            &[],
            Access::ReadOnly,
        )?;
        Ok(Expiry { generated: generated == serde_json::Value::Bool(true) })
    }

    /// The expires_at text of the row `alias` (the caller's alias, never user text).
    fn of(self, alias: &str) -> String {
        if self.generated {
            format!("{alias}.expires_at")
        } else {
            format!("({alias}.metadata ->> 'expires_at')")
        }
    }

    /// The row `alias` carries an expires_at (what the partial index holds).
    fn present(self, alias: &str) -> String {
        format!("{} IS NOT NULL", self.of(alias))
    }

    /// The row `alias` has expired (an unreadable value has not).
    fn passed(self, alias: &str) -> String {
        format!("kip.try_timestamptz({}) < now()", self.of(alias))
    }
}

/// The types whose own rule decides their reclamation; any other type is
/// reclaimed by its `memory_tier` alone.
const OWN_RULE_TYPES: &str = "('Event', 'Experience', 'ExperienceStep', 'SleepTask', 'Commitment')";

/// Whether the concept `c` (expired, checked by the caller) is on the
/// whitelist: RC11 Maintenance 12A.2 and 12A.4. An Experience only once
/// its consolidation is `completed` or `archived`, whatever its
/// `memory_tier` (Formation stamps every Experience and step short-term,
/// and a pending one is a learning trace not yet learned from); an
/// ExperienceStep only when no parent Experience still needs it: each
/// parent that `has_step` it is `archived`, or `completed` and expired
/// itself.
fn whitelisted(e: Expiry) -> String {
    format!(
        "coalesce((c.type IN ('Event', 'Experience') AND c.attributes ->> 'consolidation_status' IN ('completed', 'archived')) \
          OR (c.type = 'ExperienceStep' AND NOT EXISTS (SELECT 1 FROM kip.propositions hs \
                JOIN kip.concepts x ON x.id = hs.subject_concept \
                WHERE hs.object_concept = c.id AND hs.predicate = 'has_step' AND x.type = 'Experience' \
                  AND NOT coalesce(x.attributes ->> 'consolidation_status' = 'archived' \
                    OR (x.attributes ->> 'consolidation_status' = 'completed' AND {parent_passed}), false))) \
          OR (c.type = 'SleepTask' AND c.attributes ->> 'status' IN ('completed', 'failed')) \
          OR (c.type = 'Commitment' AND c.attributes ->> 'status' IN ('fulfilled', 'cancelled', 'expired')) \
          OR (c.type NOT IN {OWN_RULE_TYPES} AND c.metadata ->> 'memory_tier' = 'short-term'), false)",
        parent_passed = e.passed("x"),
    )
}

/// The concept `alias` is what some other concept derives from and nothing
/// else backs (12A.5).
fn sole_evidence(alias: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM kip.propositions d WHERE d.object_concept = {alias}.id \
         AND d.predicate = 'derived_from' AND NOT EXISTS (SELECT 1 FROM kip.propositions d2 \
         WHERE d2.subject = d.subject AND d2.predicate = 'derived_from' AND d2.object <> {alias}.id))"
    )
}

/// Delete expired, eligible concepts; returns how many.
pub fn delete_concepts(e: Expiry, space: &str, cap: i64) -> Result<i64, KipError> {
    if cap <= 0 {
        return Ok(0);
    }
    let sql = format!(
        "WITH cand AS ( \
           SELECT c.id, c.type, c.name, {exp} AS expires_at FROM kip.concepts c \
           WHERE c.space = $1 AND {present} AND {passed} AND {white} \
             AND NOT {prot} AND NOT {sole} \
           ORDER BY kip.try_timestamptz({exp}), c.id LIMIT $2 \
           FOR UPDATE OF c SKIP LOCKED), \
         logged AS (INSERT INTO kip.maintenance_log (space, action, element_ref, detail) \
           SELECT $1, 'ttl_delete', 'C:' || id, jsonb_build_object('type', type, 'name', name, \
             'expires_at', expires_at, 'reason', 'expires_at passed; whitelisted episodic element (Phase 12)') \
           FROM cand RETURNING 1), \
         del AS (DELETE FROM kip.concepts k USING cand WHERE k.id = cand.id RETURNING k.id) \
         SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM logged)",
        exp = e.of("c"),
        present = e.present("c"),
        passed = e.passed("c"),
        white = whitelisted(e),
        prot = protected_concept("c"),
        sole = sole_evidence("c"),
    );
    count(&sql, space, cap)
}

/// Delete expired, eligible proposition links; returns how many.
pub fn delete_links(e: Expiry, space: &str, cap: i64) -> Result<i64, KipError> {
    if cap <= 0 {
        return Ok(0);
    }
    let sql = format!(
        "WITH cand AS ( \
           SELECT p.id, p.predicate, p.subject, p.object, {exp} AS expires_at \
           FROM kip.propositions p \
           LEFT JOIN kip.concepts s ON s.id = p.subject_concept \
           LEFT JOIN kip.concepts o ON o.id = p.object_concept \
           WHERE p.space = $1 AND {present} \
             AND {passed} \
             AND coalesce(p.metadata -> 'superseded', 'false'::jsonb) <> 'true'::jsonb \
             AND (s.id IS NULL OR NOT {ps}) AND (o.id IS NULL OR NOT {po}) \
             AND NOT coalesce(s.type IN ('Event', 'Experience') AND coalesce(s.attributes ->> 'consolidation_status', 'pending') NOT IN ('completed', 'archived'), false) \
             AND NOT coalesce(s.type IN ('Event', 'Experience') AND NOT coalesce({s_passed}, false), false) \
             AND NOT coalesce(s.type IN ('Event', 'Experience') AND {s_sole}, false) \
           ORDER BY kip.try_timestamptz({exp}), p.id LIMIT $2 \
           FOR UPDATE OF p SKIP LOCKED), \
         logged AS (INSERT INTO kip.maintenance_log (space, action, element_ref, detail) \
           SELECT $1, 'ttl_delete', 'P:' || id || ':' || predicate, jsonb_build_object('subject', kip.element_ref($1, subject), \
             'predicate', predicate, 'object', kip.element_ref($1, object), 'expires_at', expires_at, \
             'reason', 'expires_at passed; link (Phase 12D)') \
           FROM cand RETURNING 1), \
         del AS (DELETE FROM kip.propositions k USING cand WHERE k.id = cand.id RETURNING k.id) \
         SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM logged)",
        exp = e.of("p"),
        present = e.present("p"),
        passed = e.passed("p"),
        ps = protected_concept("s"),
        po = protected_concept("o"),
        s_passed = e.passed("s"),
        s_sole = sole_evidence("s"),
    );
    count(&sql, space, cap)
}

/// Expired Events and Experiences still pending consolidation, and the
/// expired steps of such Experiences: kept, only counted (12A.4).
pub fn count_pending_expired(e: Expiry, space: &str) -> Result<i64, KipError> {
    let sql = format!(
        "SELECT count(*) FROM kip.concepts c WHERE c.space = $1 AND c.type IN ('Event', 'Experience', 'ExperienceStep') \
           AND {present} AND {passed} AND NOT {white}",
        present = e.present("c"),
        passed = e.passed("c"),
        white = whitelisted(e),
    );
    Ok(spi::query_scalar(&sql, &[SqlParam::Text(space.into())], Access::ReadOnly)?.as_i64().unwrap_or(0))
}

/// Expired nodes outside the whitelist (never deleted): (type, name) pairs.
pub fn suspicious(e: Expiry, space: &str, cap: i64) -> Result<Vec<(String, String)>, KipError> {
    let sql = format!(
        "SELECT c.type, c.name FROM kip.concepts c WHERE c.space = $1 AND {} AND {} \
           AND c.type NOT IN {OWN_RULE_TYPES} AND NOT {white} ORDER BY c.id LIMIT $2",
        e.present("c"),
        e.passed("c"),
        white = whitelisted(e)
    );
    let rows = spi::query(&sql, &[SqlParam::Text(space.into()), SqlParam::Int(cap)], Access::ReadOnly)?;
    Ok(rows
        .into_iter()
        .map(|r| (r[0].as_str().unwrap_or_default().to_string(), r[1].as_str().unwrap_or_default().to_string()))
        .collect())
}

fn count(sql: &str, space: &str, cap: i64) -> Result<i64, KipError> {
    let rows = spi::query(sql, &[SqlParam::Text(space.into()), SqlParam::Int(cap)], Access::ReadWrite)?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).unwrap_or(0))
}
