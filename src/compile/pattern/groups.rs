//! Independent clause groups of a WHERE block.
//!
//! Two clauses belong to one group when they share a variable, directly or
//! through other clauses. The reference engines evaluate groups that share
//! nothing independently: a group that matches nothing does not suppress the
//! solutions of the others (its variables are simply unbound), and when every
//! group matches, the solutions are their cross product. `FULL JOIN … ON
//! true` between the groups' SELECTs gives exactly that.
//!
//! Only blocks whose variables start fresh are split: a top-level WHERE and a
//! UNION branch. A block with a top-level `UNION` is not split (UNION already
//! combines everything before it with its branch).

use kip_lang::ast::{Endpoint, Expr, PropPattern, Predicate, WhereClause};

/// Variable names a clause mentions, including inside nested blocks.
pub(crate) fn clause_vars(clause: &WhereClause, out: &mut Vec<String>) {
    match clause {
        WhereClause::Concept { var, .. } => push(out, var),
        WhereClause::Proposition { var, pattern } => {
            if let Some(v) = var {
                push(out, v);
            }
            pattern_vars(pattern, out);
        }
        WhereClause::Filter(e) => expr_vars(e, out),
        WhereClause::Not(inner) | WhereClause::Optional(inner) | WhereClause::Union(inner) => {
            for c in inner {
                clause_vars(c, out);
            }
        }
    }
}

fn push(out: &mut Vec<String>, v: &str) {
    if !out.iter().any(|x| x == v) {
        out.push(v.to_string());
    }
}

fn pattern_vars(pattern: &PropPattern, out: &mut Vec<String>) {
    let PropPattern::Triple(t) = pattern else { return };
    for e in [&t.subject, &t.object] {
        match e {
            Endpoint::Var(v) => push(out, v),
            Endpoint::Proposition(p) => pattern_vars(p, out),
            Endpoint::Concept(_) | Endpoint::Id(_) => {}
        }
    }
    if let Predicate::Var(p) = &t.predicate {
        push(out, p);
    }
}

pub(crate) fn expr_vars(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Value(_) => {}
        Expr::Path(p) => push(out, &p.var),
        Expr::Not(x) => expr_vars(x, out),
        Expr::And(xs) | Expr::Or(xs) => xs.iter().for_each(|x| expr_vars(x, out)),
        Expr::Compare { left, right, .. } => {
            expr_vars(left, out);
            expr_vars(right, out);
        }
        Expr::Call { args, .. } => args.iter().for_each(|x| expr_vars(x, out)),
    }
}

/// The clause groups of a block, in order of their first clause, and the
/// clauses that mention no variable at all (constant FILTERs, which apply to
/// the whole block). A proposition clause without variables is a group of
/// its own.
pub(crate) fn split(clauses: &[WhereClause]) -> (Vec<Vec<&WhereClause>>, Vec<&WhereClause>) {
    let vars: Vec<Vec<String>> = clauses
        .iter()
        .map(|c| {
            let mut v = Vec::new();
            clause_vars(c, &mut v);
            v
        })
        .collect();
    // Union-find over clause indexes.
    let mut parent: Vec<usize> = (0..clauses.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..clauses.len() {
        for j in 0..i {
            if vars[i].iter().any(|v| vars[j].contains(v)) {
                let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
                parent[ri.max(rj)] = ri.min(rj);
            }
        }
    }
    let mut groups: Vec<(usize, Vec<&WhereClause>)> = Vec::new();
    let mut constant = Vec::new();
    for (i, clause) in clauses.iter().enumerate() {
        if vars[i].is_empty() && matches!(clause, WhereClause::Filter(_) | WhereClause::Not(_)) {
            constant.push(clause);
            continue;
        }
        let r = root(&mut parent, i);
        match groups.iter_mut().find(|(g, _)| *g == r) {
            Some((_, members)) => members.push(clause),
            None => groups.push((r, vec![clause])),
        }
    }
    (groups.into_iter().map(|(_, m)| m).collect(), constant)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn where_of(q: &str) -> Vec<WhereClause> {
        match kip_lang::parse(q).unwrap().commands.remove(0) {
            kip_lang::ast::Command::Find(f) => f.where_clauses,
            _ => unreachable!(),
        }
    }

    #[test]
    fn splits_on_shared_variables() {
        let w = where_of(r#"FIND(?a, ?b) WHERE { ?a {type: "T"} ?b {type: "U"} (?a, "p", ?c) FILTER(?b.name == "x") }"#);
        let (groups, constant) = split(&w);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].len(), 2);
        assert_eq!(groups[1].len(), 2);
        assert!(constant.is_empty());
    }

    #[test]
    fn a_filter_can_join_groups() {
        let w = where_of(r#"FIND(?a, ?b) WHERE { ?a {type: "T"} ?b {type: "U"} FILTER(?a.name == ?b.name) }"#);
        assert_eq!(split(&w).0.len(), 1);
    }

    #[test]
    fn constant_filters_apply_to_the_block() {
        let w = where_of(r#"FIND(?a) WHERE { ?a {type: "T"} FILTER(1 == 2) }"#);
        let (groups, constant) = split(&w);
        assert_eq!((groups.len(), constant.len()), (1, 1));
    }
}
