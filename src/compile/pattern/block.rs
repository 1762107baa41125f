//! Compiling one `{ … }` block (the WHERE body, or the body of OPTIONAL /
//! NOT / UNION) into a SELECT.
//!
//! The block's FROM is one left-deep join tree, built clause by clause:
//! concept and proposition clauses add inner items (conditions go to WHERE),
//! hop walks add `CROSS JOIN LATERAL` subqueries, `OPTIONAL` adds a
//! `LEFT JOIN LATERAL … ON true`. A `UNION { … }` closes the tree built so far
//! into a subquery, `UNION ALL`s it with the independently compiled branch
//! (missing variables padded with NULL), and continues from that. `FILTER`
//! and `NOT` apply to the block's solutions wherever they are written, so
//! they are compiled last, with every variable of the block in scope;
//! except that those written before a UNION that read only the variables
//! bound before it apply to that UNION's left operand (the block preceding
//! it, RC10 §3.4.7.3), not to the branch's rows.

use super::builder::{Builder, Rel};
use super::scope::{kind_conflict, Cx, Scope, VarBinding, VarKind};
use super::{endpoint, groups};
use crate::compile::filter;
use kip_lang::ast::{Expr, WhereClause};
use kip_lang::KipError;

/// Whether a block whose variables start fresh is split into its
/// independent clause groups (see `groups`).
fn splittable(clauses: &[WhereClause]) -> bool {
    !crate::compile::distinct::has_union(clauses)
}

/// Whether a top-level WHERE block has parts that give solutions whatever
/// the others match: independent clause groups (`FULL JOIN`ed) or UNION
/// branches. A solution then proves nothing about a part that matched
/// nothing.
pub(crate) fn has_independent_parts(clauses: &[WhereClause]) -> bool {
    !splittable(clauses) || groups::split(clauses).0.len() > 1
}

/// Compile a block. `outer` holds the variables of enclosing blocks (empty
/// for a top-level block and for UNION branches, which are independent).
/// `with_ord` adds the `ord` column (FIND's natural order of UNION branches).
pub(crate) fn compile_block(
    clauses: &[WhereClause],
    outer: &Scope,
    cx: &mut Cx,
    with_ord: bool,
) -> Result<Rel, KipError> {
    if outer.is_empty() && splittable(clauses) {
        let (groups, constant) = groups::split(clauses);
        if groups.len() > 1 {
            return independent_groups(groups, constant, cx, with_ord);
        }
    }
    let mut b = Builder::new(outer);
    let mut filters: Vec<&Expr> = Vec::new();
    let mut negations: Vec<&[WhereClause]> = Vec::new();
    let mut unions = 0usize;
    // The clauses before a UNION are its other operand (`{ A UNION { B } C }`
    // is `(A ∪ B) ⋈ C`): like the branch, they need not match, so a literal
    // id there that names nothing matches nothing instead of being
    // `KIP_3002`, whichever side of the UNION it is written on.
    let union_operand = clauses.iter().rposition(|c| matches!(c, WhereClause::Union(_))).unwrap_or(0);
    for (i, clause) in clauses.iter().enumerate() {
        match clause {
            WhereClause::Concept { var, selector } if i < union_operand => {
                cx.in_optional_part(|cx| endpoint::concept_clause(&mut b, cx, var, selector))?;
            }
            WhereClause::Proposition { var, pattern } if i < union_operand => {
                cx.in_optional_part(|cx| endpoint::proposition_clause(&mut b, cx, var.as_deref(), pattern))?;
            }
            WhereClause::Concept { var, selector } => endpoint::concept_clause(&mut b, cx, var, selector)?,
            WhereClause::Proposition { var, pattern } => {
                endpoint::proposition_clause(&mut b, cx, var.as_deref(), pattern)?;
            }
            WhereClause::Filter(e) => filters.push(e),
            WhereClause::Not(inner) => negations.push(inner),
            WhereClause::Optional(inner) => optional(&mut b, cx, inner)?,
            WhereClause::Union(branch) => {
                // The block before a UNION is its own operand (RC10
                // §3.4.7.3): the FILTERs and NOTs written so far that read
                // only its variables narrow it, not the branch's rows.
                if !b.is_empty() {
                    let visible = b.visible();
                    let (now, later): (Vec<_>, Vec<_>) =
                        negations.into_iter().partition(|inner| shares_a_variable(inner, &visible));
                    negations = later;
                    apply_negations(&mut b, cx, now)?;
                    let (now, later): (Vec<_>, Vec<_>) = filters.into_iter().partition(|e| reads_only(e, &visible));
                    filters = later;
                    apply_filters(&mut b, cx, now)?;
                }
                unions += 1;
                union(&mut b, cx, branch, unions)?;
            }
        }
    }
    apply_negations(&mut b, cx, negations)?;
    apply_filters(&mut b, cx, filters)?;
    Ok(b.render_carrying(with_ord, with_ord && cx.carry_rows))
}

/// Each `NOT { … }` as a condition on the solutions built so far.
fn apply_negations(b: &mut Builder, cx: &mut Cx, negations: Vec<&[WhereClause]>) -> Result<(), KipError> {
    for inner in negations {
        let visible = b.visible();
        let rel = cx.in_optional_part(|cx| compile_block(inner, &visible, cx, false))?;
        // A NOT that mentions no variable of its block excludes nothing (as
        // the reference engines answer); it is still compiled, so its errors
        // are reported.
        if shares_a_variable(inner, &visible) {
            b.cond(format!("NOT EXISTS ({})", rel.sql));
        }
    }
    Ok(())
}

/// Each FILTER as a condition on the solutions built so far.
fn apply_filters(b: &mut Builder, cx: &mut Cx, filters: Vec<&Expr>) -> Result<(), KipError> {
    for e in filters {
        let sql = filter::compile_filter(b, cx, e)?;
        b.cond(sql);
    }
    Ok(())
}

/// Whether every variable a FILTER reads is in `visible`.
fn reads_only(e: &Expr, visible: &Scope) -> bool {
    let mut names = Vec::new();
    groups::expr_vars(e, &mut names);
    names.iter().all(|n| visible.get(n).is_some())
}

/// `OPTIONAL { … }`: a LEFT JOIN LATERAL of the inner block; its new
/// variables become visible (NULL on a miss).
fn optional(b: &mut Builder, cx: &mut Cx, inner: &[WhereClause]) -> Result<(), KipError> {
    let visible = b.visible();
    let rel = cx.in_optional_part(|cx| compile_block(inner, &visible, cx, false))?;
    let alias = cx.alias("o");
    b.optional(format!("LATERAL ({}) {alias}", rel.sql));
    for v in rel.vars {
        b.bind_new(&v.name, v.kind, format!("{alias}.{}", v.column), None);
    }
    Ok(())
}

/// `UNION { … }`: the rows so far, UNION ALL the independent branch.
fn union(b: &mut Builder, cx: &mut Cx, branch: &[WhereClause], ordinal: usize) -> Result<(), KipError> {
    let left = b.render(true);
    let mut right = cx.in_optional_part(|cx| compile_block(branch, &Scope::default(), cx, false))?;
    // A variable of an enclosing block (the UNION sits in an OPTIONAL or a
    // NOT) keeps its value: the branch binds it independently, so its rows
    // must agree with that value to join the enclosing solution, and it is
    // not a variable of the UNION's rows (it would replace the enclosing
    // binding, and the rows before the UNION, which read that binding, do
    // not carry it).
    let mut agree = Vec::new();
    let mut own_vars = Vec::with_capacity(right.vars.len());
    for rv in std::mem::take(&mut right.vars) {
        match b.lookup(&rv.name) {
            Some(enclosing) if !enclosing.own => {
                merge_kind(enclosing.kind, rv.kind).ok_or_else(|| kind_conflict(&rv.name))?;
                agree.push(format!("s.{} = {}", rv.column, enclosing.expr));
            }
            _ => own_vars.push(rv),
        }
    }
    right.vars = own_vars;
    // Merged variable list: left's first, then the branch's new ones.
    let mut merged: Vec<VarBinding> = left.vars.clone();
    for rv in &right.vars {
        match merged.iter_mut().find(|m| m.name == rv.name) {
            Some(m) => {
                m.kind = merge_kind(m.kind, rv.kind).ok_or_else(|| kind_conflict(&rv.name))?;
            }
            None => merged.push(rv.clone()),
        }
    }
    let side = |rel: &Rel, ord: String, conds: &[String]| -> String {
        let mut cols = Vec::new();
        for (i, m) in merged.iter().enumerate() {
            let value = match rel.vars.iter().find(|v| v.name == m.name) {
                Some(v) => format!("s.{}", v.column),
                None if m.kind == VarKind::Predicate => "NULL::text".to_string(),
                None => "NULL::bigint".to_string(),
            };
            cols.push(format!("{value} AS u_{}", i + 1));
        }
        cols.push(format!("{ord} AS ord"));
        let filter = if conds.is_empty() { String::new() } else { format!(" WHERE {}", conds.join(" AND ")) };
        format!("SELECT {} FROM ({}) s{filter}", cols.join(", "), rel.sql)
    };
    let alias = cx.alias("u");
    // Nothing before the UNION: the branch alone (not an extra empty row).
    let nothing_before = b.is_empty() && left.vars.is_empty();
    let sql = if nothing_before {
        format!("({}) {alias}", side(&right, ordinal.to_string(), &agree))
    } else {
        format!(
            "({} UNION ALL {}) {alias}",
            side(&left, "s.ord".to_string(), &[]),
            side(&right, ordinal.to_string(), &agree)
        )
    };
    b.restart_from(sql, format!("{alias}.ord"));
    for (i, m) in merged.iter().enumerate() {
        b.bind_new(&m.name, m.kind, format!("{alias}.u_{}", i + 1), None);
    }
    Ok(())
}

/// The kind of a variable bound by two UNION branches.
fn merge_kind(a: VarKind, b: VarKind) -> Option<VarKind> {
    match (a, b) {
        (x, y) if x == y => Some(x),
        (VarKind::Predicate, _) | (_, VarKind::Predicate) => None,
        _ => Some(VarKind::Element),
    }
}

/// Whether a `NOT` body mentions any variable visible to its block.
fn shares_a_variable(inner: &[WhereClause], visible: &Scope) -> bool {
    let mut names = Vec::new();
    for c in inner {
        groups::clause_vars(c, &mut names);
    }
    names.iter().any(|n| visible.get(n).is_some())
}

/// A block made of clause groups that share no variable: each group is
/// compiled on its own and the groups are `FULL JOIN`ed on true, so a group
/// without solutions leaves the others' solutions intact (see `groups`).
/// Constant FILTERs apply to the combined solutions.
fn independent_groups(
    groups: Vec<Vec<&WhereClause>>,
    constant: Vec<&WhereClause>,
    cx: &mut Cx,
    with_ord: bool,
) -> Result<Rel, KipError> {
    let mut b = Builder::new(&Scope::default());
    for group in groups {
        let clauses: Vec<WhereClause> = group.into_iter().cloned().collect();
        let rel = compile_block(&clauses, &Scope::default(), cx, false)?;
        let alias = cx.alias("g");
        let item = format!("({}) {alias}", rel.sql);
        b.group(item);
        for v in rel.vars {
            b.bind_new(&v.name, v.kind, format!("{alias}.{}", v.column), None);
        }
    }
    for clause in constant {
        match clause {
            WhereClause::Filter(e) => {
                let sql = filter::compile_filter(&mut b, cx, e)?;
                b.cond(sql);
            }
            // A NOT without variables mentions nothing of the block: it is
            // compiled for its errors and excludes nothing.
            WhereClause::Not(inner) => {
                cx.in_optional_part(|cx| compile_block(inner, &Scope::default(), cx, false))?;
            }
            _ => {}
        }
    }
    Ok(b.render(with_ord))
}
