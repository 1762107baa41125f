//! The resolve stage: the catalog reads a command needs before its main
//! statement, each batched into one query per kind of lookup.
//!
//! * [`pattern_facts`]: literal ids of a WHERE block (do they exist?), the
//!   size guard of unanchored `(?s, ?p, ?o)` scans, and the validity of
//!   literal regular expressions — the [`Facts`] the compiler decides on;
//! * [`limits`]: the settings that shape compiled SQL;
//! * [`identities`]: named concepts a command must find (`KIP_3002`), and
//!   why a KML pattern matched nothing;
//! * [`registry`]: which concept types and predicates exist (`KIP_2001`);
//! * [`protection`]: which elements are immutable or protected.
//!
//! `compile` never reads the database; everything it needs comes from here
//! as plain data (`compile::env`).

pub mod collect;
pub mod identities;
pub mod protection;
pub mod registry;

use crate::compile::env::{Facts, InStatement, Limits};
use crate::exec::{spi, subxact, Access, SqlParam};
use crate::space::Space;
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};
use serde_json::Value;

/// Literal REGEX patterns this backend has compiled without error: a
/// pattern's validity depends on nothing but its text, so a FIND sent again
/// checks none again. Starts afresh when full, as the other memos do.
const MAX_VALID_PATTERNS: usize = 256;

thread_local! {
    static VALID_PATTERNS: std::cell::RefCell<std::collections::HashSet<String>> = Default::default();
}

/// Compiles each literal REGEX pattern not seen before, in a subtransaction
/// of its own: an invalid pattern raises SQLSTATE 2201B, which becomes
/// `KIP_1001`. When that happens the patterns are tried one by one (only on
/// this error path) so that the error names the pattern at fault, not just
/// Postgres's complaint about it.
fn check_regexes(mut patterns: Vec<String>) -> Result<(), KipError> {
    VALID_PATTERNS.with(|v| {
        let valid = v.borrow();
        patterns.retain(|p| !valid.contains(p));
    });
    if patterns.is_empty() {
        return Ok(());
    }
    let compile_all = |patterns: Vec<String>| {
        subxact::run_isolated(|| {
            spi::query(
                "SELECT bool_and(''::text ~ p) FROM unnest($1::text[]) p",
                &[SqlParam::TextArray(patterns)],
                Access::ReadOnly,
            )
            .map(drop)
        })
    };
    let Err(e) = compile_all(patterns.clone()) else {
        VALID_PATTERNS.with(|v| {
            let mut valid = v.borrow_mut();
            if valid.len() + patterns.len() > MAX_VALID_PATTERNS {
                valid.clear();
            }
            valid.extend(patterns);
        });
        return Ok(());
    };
    if e.code != ErrorCode::InvalidSyntax {
        return Err(e);
    }
    let culprit = if patterns.len() == 1 {
        patterns.into_iter().next()
    } else {
        patterns.into_iter().find(|p| compile_all(vec![p.clone()]).is_err())
    };
    Err(match culprit {
        Some(p) => KipError { message: format!("REGEX pattern {p:?}: {}", e.message), ..e },
        None => e,
    })
}

/// `kip.max_hops` and `kip.max_limit` as the compiler uses them.
pub fn limits() -> Limits {
    Limits {
        max_hops: crate::guc::MAX_HOPS.get().max(1) as u32,
        max_limit: i64::from(crate::guc::MAX_LIMIT.get().max(1)),
    }
}

/// The facts the pattern compiler needs about `clauses` in `space`.
///
/// `access` is the access of the statement the pattern will run in: a
/// read-write lookup sees what earlier statements of the same transaction
/// wrote, a read-only one reads the caller's snapshot, like the statement.
/// An invalid literal regular expression is `KIP_1001` here, even when no
/// row would reach the comparison.
pub fn pattern_facts(space: &Space, clauses: &[WhereClause], access: Access) -> Result<Facts, KipError> {
    facts_of(space, clauses, access, None)
}

/// The facts of a FIND's WHERE block: as [`pattern_facts`], except that the
/// named concepts and literal concept ids of its mandatory pattern are
/// left for the FIND statement to verify itself (`InStatement`): a FIND
/// anchored on a name or an id is then one statement, not a lookup and a
/// statement.
pub fn find_facts(space: &Space, clauses: &[WhereClause]) -> Result<Facts, KipError> {
    let checks = InStatement { named_concepts: collect::named_concepts(clauses) };
    facts_of(space, clauses, Access::ReadOnly, Some(checks))
}

/// The facts a dry run compiles a command with: every literal id taken to
/// exist, the space small enough for an unanchored scan. Nothing is read;
/// what the statement would find is left to the run.
pub fn assumed_facts() -> Facts {
    Facts { assume_literals_exist: true, unanchored_over_cap: Some(false), ..Facts::default() }
}

/// `KIP_1001` for a malformed literal id or an invalid literal REGEX of the
/// pattern, as resolving it for a run reports them; no data is read.
pub fn check_pattern_literals(clauses: &[WhereClause]) -> Result<(), KipError> {
    let literals = collect::pattern_literals(clauses)?;
    if literals.regexes.is_empty() {
        return Ok(());
    }
    check_regexes(literals.regexes)
}

fn facts_of(space: &Space, clauses: &[WhereClause], access: Access, checks: Option<InStatement>) -> Result<Facts, KipError> {
    let literals = collect::pattern_literals(clauses)?;
    let mut facts = Facts::default();
    if !literals.concept_ids.is_empty() && checks.is_none() {
        let rows = spi::lookup(
            "SELECT id FROM kip.concepts WHERE space = $1 AND id = ANY($2::bigint[])",
            &[space.param(), SqlParam::IntArray(literals.concept_ids.clone())],
            access,
        )?;
        facts.concepts = literals.concept_ids.iter().map(|id| (*id, false)).collect();
        for row in rows {
            if let Some(id) = row.first().and_then(Value::as_i64) {
                facts.concepts.insert(id, true);
            }
        }
    }
    if !literals.proposition_ids.is_empty() {
        let rows = spi::lookup(
            "SELECT id, predicate FROM kip.propositions WHERE space = $1 AND id = ANY($2::bigint[])",
            &[space.param(), SqlParam::IntArray(literals.proposition_ids.clone())],
            access,
        )?;
        facts.propositions = literals.proposition_ids.iter().map(|id| (*id, None)).collect();
        for row in rows {
            if let (Some(id), Some(predicate)) = (row.first().and_then(Value::as_i64), row.get(1).and_then(Value::as_str)) {
                facts.propositions.insert(id, Some(predicate.to_string()));
            }
        }
    }
    if literals.may_scan_unanchored {
        let cap = limits().unanchored_scan_cap();
        let over = spi::lookup_scalar(
            "SELECT count(*) > $2 FROM (SELECT 1 FROM kip.propositions WHERE space = $1 LIMIT $2 + 1) t",
            &[space.param(), SqlParam::Int(cap)],
            access,
        )?;
        facts.unanchored_over_cap = Some(over == Value::Bool(true));
    }
    if !literals.regexes.is_empty() {
        check_regexes(literals.regexes)?;
    }
    facts.verified_in_statement = checks;
    Ok(facts)
}
