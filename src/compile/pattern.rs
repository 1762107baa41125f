//! The shared pattern compiler: a KIP `WHERE { … }` block → one SQL SELECT.
//!
//! Used by FIND (through [`compile_block`], which also keeps a branch
//! ordinal for natural result order) and by UPDATE, DELETE, MERGE and EXPORT
//! (through [`compile_pattern`]).
//!
//! # Contract of [`compile_pattern`]
//!
//! * `Pattern::sql` is a `SELECT` returning **one row per solution** (rows
//!   are distinct: a binding produced by two UNION branches appears once) and
//!   **one column per variable visible at top level** (`Pattern::vars`, in
//!   order of first binding). Variables bound only inside `NOT { … }` are not
//!   visible; variables of `OPTIONAL { … }` / `UNION { … }` are, and are SQL
//!   NULL in the solutions where they are unbound.
//! * A column holds the bigint element id for `Concept`, `Proposition` and
//!   `Element` variables, and the predicate name (text) for `Predicate`
//!   variables. `Element` means "concept or proposition": a variable that only
//!   appears as a proposition endpoint, so either table may hold it (ids are
//!   drawn from one sequence, so a join with `kip.concepts` or
//!   `kip.propositions` by id picks the right one). Join `kip.concepts` /
//!   `kip.propositions` by `id` to get anything else.
//! * Column aliases are generated (`v_1`, `v_2`, …); KIP variable names never
//!   reach SQL text, and every literal is a bind parameter in `params`.
//! * Every table reference is restricted to `env.space`; literal ids and
//!   the unanchored-scan guard are decided from `env.facts` (read by
//!   `resolve::pattern_facts` before compilation).
//! * Errors: `{id: …}` / `(id: …)` / bare ids naming nothing in the space →
//!   `KIP_3002`; a malformed id → `KIP_1001`; a multi-hop clause without a
//!   grounded endpoint → `KIP_1001`; a hop bound above `kip.max_hops`, an open
//!   walk that would go deeper than it, or an unanchored `(?s, ?p, ?o)` scan
//!   of a space holding more than `10 × kip.max_limit` propositions →
//!   `KIP_4002`; a variable used both as a predicate and as an element →
//!   `KIP_1001`; a FILTER problem (unbound variable `KIP_3001`, whole-object
//!   comparison `KIP_1001`).

mod block;
mod builder;
mod endpoint;
pub(crate) mod ground;
pub(crate) mod groups;
pub(crate) mod scope;

pub(crate) use block::{compile_block, has_independent_parts};
pub(crate) use builder::either_link_row;
pub(crate) use scope::{Carry, Cx, Row, Scope, Var, VarBinding, VarKind};

use crate::compile::Params;
use crate::compile::env::Env;
use kip_lang::ast::WhereClause;
use kip_lang::KipError;

/// A compiled WHERE block.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub sql: String,
    pub vars: Vec<VarBinding>,
}

/// Compile a WHERE block into SQL: a SELECT returning one row per solution,
/// one column per variable visible at top level.
pub fn compile_pattern(
    clauses: &[WhereClause],
    env: Env,
    params: &mut Params,
) -> Result<Pattern, KipError> {
    compile_pattern_rows(clauses, env, params, true)
}

/// [`compile_pattern`], without its `DISTINCT` when `distinct` is false:
/// for a caller that knows the solutions are distinct already
/// (`distinct::solutions_are_distinct`), whose page should stream from
/// the pattern's index scan and stop at its LIMIT, where a `DISTINCT` over
/// every variable may hash every solution first.
pub fn compile_pattern_rows(
    clauses: &[WhereClause],
    env: Env,
    params: &mut Params,
    distinct: bool,
) -> Result<Pattern, KipError> {
    let mut cx = Cx::new(env, params);
    let rel = compile_block(clauses, &Scope::default(), &mut cx, false)?;
    let cols: Vec<String> = rel.vars.iter().map(|v| v.column.clone()).collect();
    let distinct = if distinct { "DISTINCT " } else { "" };
    let sql = if cols.is_empty() {
        format!("SELECT {distinct}1 AS unit FROM ({}) s", rel.sql)
    } else {
        let list = cols.iter().map(|c| format!("s.{c}")).collect::<Vec<_>>().join(", ");
        format!("SELECT {distinct}{list} FROM ({}) s", rel.sql)
    };
    Ok(Pattern { sql, vars: rel.vars })
}
