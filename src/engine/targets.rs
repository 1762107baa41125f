//! The targets of UPDATE / DELETE: compile the command into its one
//! statement (`compile::kml_bulk`) with the protection rules
//! (`resolve::protection`), run it, and turn its answer row into counts, a
//! refusal, or, when nothing matched, the reason the pattern names
//! something absent.

use crate::compile::env::Env;
use crate::compile::kml_bulk::{bulk_sql, BulkAction};
use crate::exec::{spi, Access, Ctx};
use crate::resolve::protection::{refusal_sql, BulkRules, Refusal};
use crate::resolve::{self, identities};
use kip_lang::ast::WhereClause;
use kip_lang::KipError;
use serde_json::Value;

/// What a bulk statement did (its columns 1–3, see `compile::kml_bulk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkCounts {
    pub matched: i64,
    pub first: i64,
    pub second: i64,
}

/// A target the rules refused: nothing was changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub reason: Refusal,
    pub id: i64,
    /// Type and name: the concept's, or for an anchoring link, the
    /// anchored concept's; absent for a link of the wrong kind.
    pub identity: Option<(String, String)>,
}

impl Refused {
    /// The KIP_3004 error for `action` (`WrongKind` is the caller's to word).
    pub fn error(&self, action: &str) -> KipError {
        let (t, n) = self.identity.clone().unwrap_or_default();
        self.reason.error(action, self.id, &t, &n)
    }
}

/// Run `action` on the elements bound to `?var` by `clauses` (at most
/// `limit`), in one statement, unless `rules` refuse one of them.
pub fn run(clauses: &[WhereClause], ctx: &Ctx, var: &str, limit: Option<u64>, rules: BulkRules, action: BulkAction) -> Result<Result<BulkCounts, Refused>, KipError> {
    let facts = resolve::pattern_facts(&ctx.space, clauses, Access::ReadWrite)?;
    let env = Env { space: ctx.space.name(), limits: resolve::limits(), facts: &facts };
    let compiled = bulk_sql(clauses, env, var, limit, &refusal_sql(rules, "$1::text"), action)?;
    let rows = spi::query(&compiled.sql, compiled.params.values(), Access::ReadWrite)?;
    let row = rows.first().cloned().unwrap_or_default();
    let int = |i: usize| row.get(i).and_then(Value::as_i64).unwrap_or_default();
    let text = |i: usize| row.get(i).and_then(Value::as_str).map(str::to_string);
    if let Some(reason) = row.get(3).and_then(Value::as_i64).and_then(Refusal::from_code) {
        let identity = text(5).zip(text(6));
        return Ok(Err(Refused { reason, id: int(4), identity }));
    }
    let counts = BulkCounts { matched: int(0), first: int(1), second: int(2) };
    if counts.matched == 0 {
        identities::explain_empty_match(&ctx.space, clauses)?;
    }
    Ok(Ok(counts))
}
