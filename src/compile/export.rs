//! The statement that selects one page of EXPORT's elements.
//!
//! Page order is `(rank, id)`: schema definitions (`$ConceptType` /
//! `$PropositionType` concepts) first, then the other concepts, then
//! propositions — so that applying the pages of a paginated export in order
//! always defines a type before its instances and a concept before the links
//! that use it. Within a rank, element ids give a stable, deterministic order.
//!
//! A page is read one rank at a time, after the previous page's last id
//! (`rank_page_sql`, keyset pagination): each rank's statement is ordered by
//! the element id alone, which the pattern's index scans can produce in
//! order, so a page reads about its own rows and walking every page costs
//! time linear in the export. (An `OFFSET` page sorted every element of the
//! export and skipped the earlier ones: 45 µs a row over a 10,000-element
//! walk, 97 over 100,000.) `page_sql` keeps the offset form for tokens that
//! carry only an offset.

use super::distinct::solutions_are_distinct;
use super::env::Env;
use super::pattern::{compile_pattern, compile_pattern_rows, Pattern, VarBinding, VarKind};
use super::{Params, SqlParam};
use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::ast::WhereClause;
use kip_lang::{ErrorCode, KipError};

/// A compiled page selection: one `id` column, page order, at most
/// `limit + 1` rows (the extra one tells that another page follows).
#[derive(Debug)]
pub struct PageSql {
    pub sql: String,
    pub params: Params,
}

/// The kinds of element in page order (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// `$ConceptType` and `$PropositionType` concepts.
    Schema = 0,
    /// Every other concept.
    Concept = 1,
    Proposition = 2,
}

impl Rank {
    pub const ALL: [Rank; 3] = [Rank::Schema, Rank::Concept, Rank::Proposition];

    /// The rank a keyset cursor wrote as a number.
    pub fn from_number(n: i64) -> Option<Rank> {
        Rank::ALL.into_iter().find(|r| *r as i64 == n)
    }

    /// Whether a variable of this kind can bind elements of this rank.
    fn holds(self, kind: VarKind) -> bool {
        match kind {
            VarKind::Concept => self != Rank::Proposition,
            VarKind::Proposition => self == Rank::Proposition,
            VarKind::Element => true,
            VarKind::Predicate => false,
        }
    }
}

/// The target's binding in the compiled pattern, if it can be exported.
fn target_binding<'a>(pattern: &'a Pattern, target: &str) -> Result<&'a VarBinding, KipError> {
    let binding = pattern.vars.iter().find(|v| v.name == target).ok_or_else(|| {
        KipError::new(ErrorCode::ReferenceError, format!("?{target} is not bound by the WHERE pattern"))
            .with_hint(format!("Bind ?{target} in WHERE {{ … }} with a concept clause (?{target} {{type: …}}) or a proposition clause (?{target} (…))."))
    })?;
    if binding.kind == VarKind::Predicate {
        return Err(KipError::syntax(format!("?{target} binds a predicate name, not a concept or proposition"))
            .with_hint(format!("Export the links themselves: ?{target} (?s, \"predicate\", ?o).")));
    }
    Ok(binding)
}

/// At most `limit + 1` of the distinct elements of `rank` bound to
/// `?target` by `clauses`, in id order, after the id `after` when given;
/// `None` when the target cannot bind elements of that rank.
pub fn rank_page_sql(
    clauses: &[WhereClause],
    target: &str,
    env: Env,
    rank: Rank,
    after: Option<i64>,
    limit: u64,
) -> Result<Option<PageSql>, KipError> {
    let mut params = Params::new();
    // Solutions distinct on the target are distinct on every variable:
    // neither the pattern nor the page needs a DISTINCT, whose plan might
    // read every solution before the first row (a page of links of a
    // predicate with 500,000 took 300 ms, hashing them all).
    let distinct_solutions = solutions_are_distinct(clauses, &[target.to_string()]);
    let pattern = compile_pattern_rows(clauses, env, &mut params, !distinct_solutions)?;
    let binding = target_binding(&pattern, target)?;
    if !rank.holds(binding.kind) {
        return Ok(None);
    }
    // A target whose type the pattern fixes belongs to one of the two
    // concept ranks only: the other would test every element the pattern
    // binds to find none (the first page of a 100,000-member type spent
    // 150 ms proving it held no definitions).
    if let Some(ty) = kip_lang::ast::fixed_type(clauses, target).and_then(|t| t.as_str()) {
        let schema = ty == CONCEPT_TYPE || ty == PROPOSITION_TYPE;
        if (rank == Rank::Schema && !schema) || (rank == Rank::Concept && schema) {
            return Ok(None);
        }
    }
    let id = format!("m.{}", binding.column);
    let space = params.push(SqlParam::Text(env.space.to_string()));
    let schema_types = params.push(SqlParam::TextArray(vec![CONCEPT_TYPE.to_string(), PROPOSITION_TYPE.to_string()]));
    // The rank test is a per-row subquery on purpose: as an EXISTS the
    // planner may turn it into a join that reads every element of the
    // rank before the first row, where the page should stream from the
    // pattern's index scan in id order and stop at its LIMIT.
    let stored_type = format!("(SELECT c.type FROM kip.concepts c WHERE c.id = {id} AND c.space = {space}::text)");
    let of_rank = match (rank, binding.kind) {
        (Rank::Schema, _) => format!("{stored_type} = ANY({schema_types}::text[])"),
        (Rank::Concept, _) => format!("{stored_type} <> ALL({schema_types}::text[])"),
        (Rank::Proposition, VarKind::Proposition) => "TRUE".to_string(),
        (Rank::Proposition, _) => format!("{stored_type} IS NULL"),
    };
    let window = match after {
        Some(last) => format!("{id} > {}", params.int(last)),
        None => format!("{id} IS NOT NULL"),
    };
    let distinct = if distinct_solutions { "" } else { "DISTINCT " };
    // One extra row tells whether another page follows.
    let limit_sql = params.int(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX));
    let sql = format!(
        "SELECT {distinct}{id} AS id FROM ({pattern}) m WHERE {window} AND {of_rank} ORDER BY 1 LIMIT {limit_sql}",
        pattern = pattern.sql,
    );
    Ok(Some(PageSql { sql, params }))
}

/// The distinct elements bound to `?target` by `clauses`, skipping `offset`
/// and returning at most `limit + 1` of them.
pub fn page_sql(clauses: &[WhereClause], target: &str, env: Env, offset: u64, limit: u64) -> Result<PageSql, KipError> {
    let mut params = Params::new();
    let pattern = compile_pattern(clauses, env, &mut params)?;
    let binding = target_binding(&pattern, target)?;
    let schema_types = params.push(SqlParam::TextArray(vec![CONCEPT_TYPE.to_string(), PROPOSITION_TYPE.to_string()]));
    let space = params.push(SqlParam::Text(env.space.to_string()));
    let offset_sql = params.int(i64::try_from(offset).unwrap_or(i64::MAX));
    // One extra row tells whether another page follows.
    let limit_sql = params.int(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX));
    let sql = format!(
        "SELECT t.id FROM (SELECT DISTINCT m.{col} AS id FROM ({pattern}) m WHERE m.{col} IS NOT NULL) t \
         LEFT JOIN kip.concepts c ON c.id = t.id AND c.space = {space}::text \
         ORDER BY CASE WHEN c.id IS NULL THEN 2 WHEN c.type = ANY({schema_types}::text[]) THEN 0 ELSE 1 END, t.id \
         OFFSET {offset_sql} LIMIT {limit_sql}",
        col = binding.column,
        pattern = pattern.sql,
    );
    Ok(PageSql { sql, params })
}
