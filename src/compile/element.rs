//! SQL expressions that render stored rows as KIP element objects:
//!
//! ```json
//! {"_type": "ConceptNode", "id": "C:12", "type": "Drug", "name": "Aspirin",
//!  "attributes": {...}, "metadata": {"_version": 1, "_updated_at": "…", ...}}
//! {"_type": "PropositionLink", "id": "P:40:treats", "subject": "C:12",
//!  "predicate": "treats", "object": "C:7", "attributes": {...}, "metadata": {...}}
//! ```
//!
//! Empty `attributes` are omitted; `metadata` always carries the
//! engine-maintained `_version`, `_created_at` and `_updated_at` (ISO 8601, UTC).
//! `alias` is an SQL table alias chosen by the compiler, never user text.

/// ISO-8601 UTC text of a timestamptz column.
pub fn iso_time(col: &str) -> String {
    format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
}

/// The metadata object with the reserved `_` fields merged in
/// (`kip.metadata_json`, src/exec/element_json.rs).
pub fn metadata_json(alias: &str) -> String {
    format!("kip.metadata_json({a}.metadata, {a}.version, {a}.created_at, {a}.updated_at)", a = alias)
}

/// A `kip.concepts` row (alias) as a ConceptNode object (`kip.concept_json`).
pub fn concept_json(alias: &str) -> String {
    format!(
        "kip.concept_json({a}.id, {a}.type, {a}.name, {a}.attributes, {a}.metadata, {a}.version, {a}.created_at, {a}.updated_at)",
        a = alias
    )
}

/// External id of a proposition endpoint (`subject` or `object`) of the
/// `kip.propositions` row `alias`: `C:<n>` for a concept, `P:<n>:<pred>` for a link.
pub fn endpoint_ref(alias: &str, side: &str) -> String {
    format!(
        "CASE WHEN {a}.{s}_concept IS NOT NULL THEN 'C:' || {a}.{s}_concept \
         ELSE (SELECT 'P:' || e.id || ':' || e.predicate FROM kip.propositions e WHERE e.id = {a}.{s}_link) END",
        a = alias,
        s = side
    )
}

/// External id of a proposition row.
pub fn proposition_ref(alias: &str) -> String {
    format!("('P:' || {a}.id || ':' || {a}.predicate)", a = alias)
}

/// A `kip.propositions` row (alias) as a PropositionLink object
/// (`kip.proposition_json`).
pub fn proposition_json(alias: &str) -> String {
    format!(
        "kip.proposition_json({a}.id, {a}.predicate, {s}, {o}, {a}.attributes, {a}.metadata, {a}.version, {a}.created_at, {a}.updated_at)",
        a = alias,
        s = endpoint_ref(alias, "subject"),
        o = endpoint_ref(alias, "object"),
    )
}
