//! The FILTERs a bulk UPDATE or DELETE checks again on the very row it is
//! about to change.
//!
//! The targets of UPDATE and DELETE are selected once, into a materialised
//! CTE, on the statement's snapshot. Under READ COMMITTED a row that another
//! transaction changed meanwhile is then written after waiting for its lock,
//! and Postgres re-evaluates only the UPDATE's or DELETE's own `WHERE` on
//! the row's newest version (EvalPlanQual): the join to the CTE would pass
//! it whatever it now holds. So the FILTERs of the top level of the WHERE
//! block that name the target variable alone are compiled a second time,
//! against the row being written, into that `WHERE`. A marker guard
//! (`FILTER(IS_NULL(?d.metadata.decay_applied_at) || …)`, RC10 §4.3) then
//! holds when two sweeps race, and a link strengthened while a DELETE of
//! weak links waited for it is kept. Conditions over other variables are not
//! checked again: their rows are not the ones being written.

use super::env::Env;
use super::filter::{compile_filter, VarAccess};
use super::ids::ElementKind;
use super::pattern::groups::expr_vars;
use super::pattern::scope::{Cx, Row, Var, VarKind};
use super::Params;
use kip_lang::ast::WhereClause;
use kip_lang::KipError;

/// The one variable of a recheck, read from the row `alias`.
struct RowAccess {
    name: String,
    var: Var,
}

impl VarAccess for RowAccess {
    fn var(&self, name: &str) -> Option<Var> {
        (name == self.name).then(|| self.var.clone())
    }

    fn row(&mut self, _cx: &mut Cx, name: &str) -> Option<Row> {
        if name == self.name {
            self.var.row.clone()
        } else {
            None
        }
    }
}

/// `AND`-ed SQL of the top-level FILTERs of `clauses` that mention only
/// `target`, over the row `alias` of the table of `kind`; `None` when there
/// are none. Only those after the block's last UNION: one written before a
/// UNION narrows the UNION's left operand (`pattern::block`), not the
/// branch's targets.
pub fn recheck_sql(clauses: &[WhereClause], env: Env, params: &mut Params, target: &str, kind: ElementKind, alias: &str) -> Result<Option<String>, KipError> {
    let filters: Vec<_> = kip_lang::ast::after_last_union(clauses)
        .iter()
        .filter_map(|c| match c {
            WhereClause::Filter(e) => Some(e),
            _ => None,
        })
        .filter(|e| {
            let mut vars = Vec::new();
            expr_vars(e, &mut vars);
            !vars.is_empty() && vars.iter().all(|v| v == target)
        })
        .collect();
    if filters.is_empty() {
        return Ok(None);
    }
    let (var_kind, row) = match kind {
        ElementKind::Concept => (VarKind::Concept, Row::Concept(alias.to_string())),
        ElementKind::Proposition => (VarKind::Proposition, Row::Proposition(alias.to_string())),
    };
    let var = Var { kind: var_kind, expr: format!("{alias}.id"), row: Some(row), row_owner: 0, own: true };
    let mut access = RowAccess { name: target.to_string(), var };
    let mut cx = Cx::new(env, params);
    let parts = filters.into_iter().map(|e| compile_filter(&mut access, &mut cx, e)).collect::<Result<Vec<_>, _>>()?;
    Ok(Some(parts.join(" AND ")))
}
