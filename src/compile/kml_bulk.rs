//! UPDATE and DELETE as one statement each (RC10 §4.2, §4.3).
//!
//! The statement selects the targets (`kml_match::targets_sql`) into a
//! materialised CTE `t(id, type, name)`, looks for the first target the
//! command may not touch (the caller's `refusal` query over `t`, from
//! `resolve::protection`), and, only when there is none, rewrites or
//! removes the rows in the same statement. It answers one row:
//!
//! | column | UPDATE / DELETE keys | DELETE PROPOSITIONS | DELETE CONCEPT |
//! |---|---|---|---|
//! | 1 | targets matched | targets matched | targets matched |
//! | 2 | concepts changed | links removed, cascade included | concepts removed |
//! | 3 | links changed | 0 | links removed by the cascade |
//! | 4–7 | the refusal (reason, id, type, name), NULLs when none | | |
//!
//! A row another transaction changed while the statement waited for it is
//! written only if the target's own FILTERs still hold for its new content
//! (`recheck`).
//!
//! So the targets never cross into Rust: memory outside Postgres does not
//! grow with the number of matches, and a refused command changes nothing.

use super::env::Env;
use super::ids::ElementKind;
use super::kml_match::targets_sql;
use super::kml_update::patch;
use super::recheck::recheck_sql;
use super::Params;
use super::SqlParam;
use kip_lang::ast::{UpdateField, WhereClause};
use kip_lang::KipError;

/// What the statement does to its targets.
pub enum BulkAction<'a> {
    /// `UPDATE ?x SET ATTRIBUTES {…} SET METADATA {…}`.
    Update { attributes: Option<&'a [UpdateField]>, metadata: Option<&'a [UpdateField]> },
    /// `DELETE ATTRIBUTES {…} FROM ?x` / `DELETE METADATA {…} FROM ?x`.
    DeleteKeys { keys: Vec<String>, metadata: bool },
    /// `DELETE PROPOSITIONS ?l`: the links and, transitively, the
    /// higher-order links that reference them.
    DeletePropositions,
    /// `DELETE CONCEPT ?c DETACH`: the concepts, their links and the
    /// higher-order links over those, transitively.
    DeleteConcepts,
}

/// A compiled bulk command.
#[derive(Debug)]
pub struct BulkSql {
    pub sql: String,
    pub params: Params,
}

/// The one statement of `action` on the elements bound to `?var` by
/// `clauses` (at most `limit` of them). `refusal` is a query over the CTE
/// `t` returning at most one row `(reason, id, type, name)`; it may use
/// `$1`, the space (the first parameter of every pattern).
pub fn bulk_sql(clauses: &[WhereClause], env: Env, var: &str, limit: Option<u64>, refusal: &str, action: BulkAction) -> Result<BulkSql, KipError> {
    let targets = targets_sql(clauses, env, var, limit)?;
    let mut params = targets.params;
    // The rows of each table the statement may write: the targets, with
    // the target's own FILTERs checked again on the row (`recheck`).
    let concept_rows = allowed_targets(ElementKind::Concept, recheck_sql(clauses, env, &mut params, var, ElementKind::Concept, "x")?);
    let link_rows = allowed_targets(ElementKind::Proposition, recheck_sql(clauses, env, &mut params, var, ElementKind::Proposition, "x")?);
    let rows_of = |kind: ElementKind| match kind {
        ElementKind::Concept => &concept_rows,
        ElementKind::Proposition => &link_rows,
    };
    let head = format!(
        "t AS MATERIALIZED ({targets}), refusal AS MATERIALIZED ({refusal}), \
         allowed AS (SELECT NOT EXISTS (SELECT 1 FROM refusal) AS ok)",
        targets = targets.sql
    );
    let tail = "FROM (SELECT 1) one LEFT JOIN refusal r ON true";
    let refusal_cols = "r.reason, r.id, r.type, r.name";
    // Rewrites of both tables, `c` and `l`, answering their row counts.
    let both_tables = |concepts: String, links: String| {
        format!(
            "WITH {head}, c AS ({concepts}), l AS ({links}) \
             SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM c), (SELECT count(*) FROM l), {refusal_cols} {tail}"
        )
    };
    let sql = match action {
        BulkAction::Update { attributes, metadata } => {
            let mut rewrite = |table: &str, kind: ElementKind| -> Result<String, KipError> {
                let attrs = patch(attributes, "x", kind, &mut params)?;
                let meta = patch(metadata, "x", kind, &mut params)?;
                // `table` is one of two constants below, never user text.
                // Only rows whose content changes are written and counted
                // (RC10 §4.3: `updated` counts the elements actually
                // mutated): setting a value an element already holds is no
                // write, no version and no history row.
                Ok(format!(
                    "UPDATE {table} x SET attributes = x.attributes || {attrs}, metadata = x.metadata || {meta} \
                     FROM {} AND (x.attributes || {attrs} IS DISTINCT FROM x.attributes \
                                  OR x.metadata || {meta} IS DISTINCT FROM x.metadata) RETURNING 1",
                    rows_of(kind)
                ))
            };
            let concepts = rewrite("kip.concepts", ElementKind::Concept)?;
            let links = rewrite("kip.propositions", ElementKind::Proposition)?;
            both_tables(concepts, links)
        }
        BulkAction::DeleteKeys { keys, metadata } => {
            let keys = format!("{}::text[]", params.push(SqlParam::TextArray(keys)));
            let column = if metadata { "metadata" } else { "attributes" };
            let strip = |table: &str, kind: ElementKind| {
                format!(
                    "UPDATE {table} x SET {column} = x.{column} - {keys} FROM {} AND x.{column} ?| {keys} RETURNING 1",
                    rows_of(kind)
                )
            };
            both_tables(strip("kip.concepts", ElementKind::Concept), strip("kip.propositions", ElementKind::Proposition))
        }
        // The cascade is counted from the rows the DELETE removed (a target
        // whose FILTERs no longer held after a wait is not among them); the
        // foreign keys remove it at the end of the statement, so the links
        // are still there to be counted.
        BulkAction::DeletePropositions => format!(
            "WITH RECURSIVE {head}, \
             gone AS (DELETE FROM kip.propositions x USING {} RETURNING x.id), \
             doomed(id) AS ( \
                 SELECT gone.id FROM gone \
                 UNION \
                 {about} \
             ) \
             SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM doomed), 0, {refusal_cols} {tail}",
            link_rows,
            about = LINKS_ABOUT_DOOMED
        ),
        BulkAction::DeleteConcepts => format!(
            "WITH RECURSIVE {head}, \
             gone AS (DELETE FROM kip.concepts x USING {} RETURNING x.id), \
             attached(id) AS ( \
                 SELECT p.id FROM gone JOIN kip.propositions p ON p.subject_concept = gone.id \
                 UNION \
                 SELECT p.id FROM gone JOIN kip.propositions p ON p.object_concept = gone.id \
             ), \
             doomed(id) AS ( \
                 SELECT id FROM attached \
                 UNION \
                 {about} \
             ) \
             SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM gone), (SELECT count(*) FROM doomed), {refusal_cols} {tail}",
            concept_rows,
            about = LINKS_ABOUT_DOOMED
        ),
    };
    Ok(BulkSql { sql, params })
}

/// The recursive term of a cascade over higher-order links: the links whose
/// subject or object is a link of the work table `doomed(id)`.
///
/// Each link is looked up by id (`LATERAL`, one probe of each partial index
/// per link), not joined with `subject_link = d.id OR object_link = d.id`:
/// against a work table without statistics that join was estimated at a
/// share of the whole table (1.4 million rows of 43,000), and the recursive
/// UNION sizes its hash table from the estimate at executor start, so every
/// DELETE paid for clearing up to `hash_mem` of memory (50 ms at a
/// `work_mem` of 32 MB), whatever it deleted. The estimate is now a few
/// rows per link.
pub(crate) const LINKS_ABOUT_DOOMED: &str = "SELECT l.id FROM doomed d CROSS JOIN LATERAL ( \
     SELECT p.id FROM kip.propositions p WHERE p.subject_link = d.id \
     UNION ALL SELECT p.id FROM kip.propositions p WHERE p.object_link = d.id) l";

/// After `FROM` / `USING` of a rewrite or removal of the table row `x`: the
/// targets of `kind` (concepts carry their type, links do not), in the
/// space, only when nothing was refused, and holding `recheck` (SQL over
/// `x`) when there is one.
fn allowed_targets(kind: ElementKind, recheck: Option<String>) -> String {
    let kind_test = match kind {
        ElementKind::Concept => "NOT NULL",
        ElementKind::Proposition => "NULL",
    };
    let recheck = recheck.map(|sql| format!(" AND ({sql})")).unwrap_or_default();
    format!("t, allowed WHERE allowed.ok AND x.id = t.id AND t.type IS {kind_test} AND x.space = $1::text{recheck}")
}
