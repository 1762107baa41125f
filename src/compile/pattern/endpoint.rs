//! Concept clauses, proposition clauses and their endpoints.

use super::builder::Builder;
use super::ground;
use super::scope::{kind_conflict, lit, Cx, Row, Var, VarKind};
use crate::compile::hops;
use crate::params::SqlParam;
use kip_lang::ast::{ConceptSelector, Endpoint, HopRange, PropPattern, Predicate, Triple};
use kip_lang::{ErrorCode, KipError};

/// Conditions of a `{…}` selector on the concepts row `alias`.
fn selector_conds(cx: &mut Cx, alias: &str, sel: &ConceptSelector) -> Result<Vec<String>, KipError> {
    Ok(match sel {
        ConceptSelector::Id(id) => {
            let n = ground::concept_id(cx, &lit(id)?)?;
            vec![format!("{alias}.id = {}", cx.params.int(n))]
        }
        ConceptSelector::TypeName { type_name, name } => {
            let (type_name, name) = (lit(type_name)?, lit(name)?);
            // Only where a stale id (the concept deleted and created again
            // since the lookup) leaves the whole answer empty, which is then
            // asked again without it (`engine::find::with_named_ids`).
            let id = cx.env.facts.named_id(&type_name, &name).filter(|_| cx.mandatory);
            let mut conds = vec![
                format!("{alias}.type = {}", cx.params.text(type_name)),
                format!("{alias}.name = {}", cx.params.text(name)),
            ];
            if let Some(id) = id {
                conds.push(format!("{alias}.id = {}", cx.params.int(id)));
            }
            conds
        }
        ConceptSelector::Type(t) => vec![format!("{alias}.type = {}", cx.params.text(lit(t)?))],
        ConceptSelector::Name(n) => vec![format!("{alias}.name = {}", cx.params.text(lit(n)?))],
    })
}

/// A new `kip.concepts` item restricted to the space.
fn concepts_item(b: &mut Builder, cx: &mut Cx) -> String {
    concepts_item_in(b, cx, false)
}

/// [`concepts_item`], its space written `= ANY` of itself when
/// `ordered_by_space` (see `concept_clause`).
fn concepts_item_in(b: &mut Builder, cx: &mut Cx, ordered_by_space: bool) -> String {
    let a = cx.alias("c");
    b.inner(format!("kip.concepts {a}"));
    if ordered_by_space {
        b.cond(format!("{a}.space = ANY(ARRAY[{}])", cx.space_sql));
    } else {
        b.cond(format!("{a}.space = {}", cx.space_sql));
    }
    a
}

/// `?var {…}`.
pub(super) fn concept_clause(b: &mut Builder, cx: &mut Cx, var: &str, sel: &ConceptSelector) -> Result<(), KipError> {
    match b.lookup(var).cloned() {
        Some(v) if v.kind == VarKind::Predicate => Err(kind_conflict(var)),
        // Already a concept row of this block: narrow it.
        Some(Var { row: Some(Row::Concept(alias)), row_owner, .. }) if row_owner == b.id => {
            for c in selector_conds(cx, &alias, sel)? {
                b.cond(c);
            }
            Ok(())
        }
        Some(v) => {
            let a = concepts_item(b, cx);
            b.cond(format!("{a}.id = {}", v.expr));
            for c in selector_conds(cx, &a, sel)? {
                b.cond(c);
            }
            let owner = b.id;
            b.set_var(var, Var { kind: VarKind::Concept, row: Some(Row::Concept(a)), row_owner: owner, ..v });
            Ok(())
        }
        None => {
            // A scan of a type, in a statement planned for its values: its
            // space is named as `= ANY` of itself, which makes no
            // equivalence of the space with a constant, and the page orders
            // the variable by its space, then its id (`Cx::space_ordered`).
            // Only the indexes that lead with the space give that order;
            // the primary key no longer does. Under a LIMIT the planner
            // otherwise walked the whole table's primary key for a value
            // common in the table, which it costs as sequential and expects
            // to meet the space's members all along: when they came after
            // every other space's rows, `?e {type: "Event"}
            // FILTER(?e.attributes.event_class == "Conversation") LIMIT 10`
            // read 1.3 million rows for ten.
            let ordered_by_space = matches!(sel, ConceptSelector::Type(_)) && cx.env.facts.per_call && cx.mandatory;
            let a = concepts_item_in(b, cx, ordered_by_space);
            for c in selector_conds(cx, &a, sel)? {
                b.cond(c);
            }
            if ordered_by_space {
                cx.space_ordered.push(var.to_string());
            }
            b.bind_new(var, VarKind::Concept, format!("{a}.id"), Some(Row::Concept(a)));
            Ok(())
        }
    }
}

/// An endpoint after compilation: an id expression, or a variable to bind.
enum End {
    Id(String),
    Free(String),
}

fn endpoint(b: &mut Builder, cx: &mut Cx, e: &Endpoint) -> Result<End, KipError> {
    Ok(match e {
        Endpoint::Var(v) => match b.lookup(v) {
            Some(var) if var.kind == VarKind::Predicate => return Err(kind_conflict(v)),
            Some(var) => End::Id(var.expr.clone()),
            None => End::Free(v.clone()),
        },
        Endpoint::Concept(ConceptSelector::Id(id)) => {
            let n = ground::concept_id(cx, &lit(id)?)?;
            End::Id(cx.params.int(n))
        }
        Endpoint::Concept(sel) => {
            let a = concepts_item(b, cx);
            for c in selector_conds(cx, &a, sel)? {
                b.cond(c);
            }
            End::Id(format!("{a}.id"))
        }
        Endpoint::Proposition(p) => match p.as_ref() {
            PropPattern::Id(id) => End::Id(cx.params.int(ground::proposition_id(cx, &lit(id)?)?)),
            pattern => End::Id(proposition_clause(b, cx, None, pattern)?),
        },
        Endpoint::Id(id) => {
            let (_, n) = ground::element_id(cx, &lit(id)?)?;
            End::Id(cx.params.int(n))
        }
    })
}

/// Attach an endpoint to `column` (`p.subject`, `h.node`, …).
fn attach(b: &mut Builder, end: End, column: String) {
    match end {
        End::Id(expr) => b.cond(format!("{column} = {expr}")),
        // A repeated free variable (`(?x, "p", ?x)`) is bound by its first use.
        End::Free(name) => match b.lookup(&name) {
            Some(v) => {
                let expr = v.expr.clone();
                b.cond(format!("{column} = {expr}"));
            }
            None => b.bind_new(&name, VarKind::Element, column, None),
        },
    }
}

/// `[?var] (…)`; returns the SQL expression of the matched link's id.
pub(super) fn proposition_clause(
    b: &mut Builder,
    cx: &mut Cx,
    var: Option<&str>,
    pattern: &PropPattern,
) -> Result<String, KipError> {
    let (a, link_id) = match pattern {
        PropPattern::Id(id) => {
            let n = ground::proposition_id(cx, &lit(id)?)?;
            let a = cx.alias("p");
            b.inner(format!("kip.propositions {a}"));
            b.cond(format!("{a}.space = {}", cx.space_sql));
            b.cond(format!("{a}.id = {}", cx.params.int(n)));
            (a.clone(), format!("{a}.id"))
        }
        PropPattern::Triple(t) => {
            if let Predicate::Hops { predicates, range } = &t.predicate {
                if *range != (HopRange { min: 1, max: Some(1) }) {
                    if let Some(v) = var {
                        return Err(KipError::new(
                            ErrorCode::InvalidSyntax,
                            format!("?{v} cannot bind a multi-hop path: only single links bind a proposition variable"),
                        )
                        .with_hint("Drop the variable before the multi-hop clause, or match one hop at a time."));
                    }
                    let names = predicates.iter().map(lit).collect::<Result<Vec<_>, _>>()?;
                    hop_clause(b, cx, t, names, *range)?;
                    return Ok("NULL::bigint".to_string());
                }
            }
            let a = triple_clause(b, cx, t)?;
            (a.clone(), format!("{a}.id"))
        }
    };
    if let Some(v) = var {
        match b.lookup(v).cloned() {
            Some(existing) if existing.kind == VarKind::Predicate => return Err(kind_conflict(v)),
            Some(existing) => {
                b.cond(format!("{link_id} = {}", existing.expr));
                let owner = b.id;
                b.set_var(v, Var { kind: VarKind::Proposition, row: Some(Row::Proposition(a)), row_owner: owner, ..existing });
            }
            None => b.bind_new(v, VarKind::Proposition, link_id.clone(), Some(Row::Proposition(a))),
        }
    }
    Ok(link_id)
}

/// A single-link `(s, p, o)`; returns the propositions alias.
fn triple_clause(b: &mut Builder, cx: &mut Cx, t: &Triple) -> Result<String, KipError> {
    let subject = endpoint(b, cx, &t.subject)?;
    let fresh_predicate = matches!(&t.predicate, Predicate::Var(p) if b.lookup(p).is_none());
    if fresh_predicate {
        let object_free = matches!(&t.object, Endpoint::Var(o) if b.lookup(o).is_none());
        if matches!(subject, End::Free(_)) && object_free {
            ground::check_unanchored_scan(cx)?;
        }
    }
    let a = cx.alias("p");
    b.inner(format!("kip.propositions {a}"));
    b.cond(format!("{a}.space = {}", cx.space_sql));
    attach(b, subject, format!("{a}.subject"));
    match &t.predicate {
        Predicate::Literal(p) => b.cond(format!("{a}.predicate = {}", cx.params.text(lit(p)?))),
        // `{1}` / `{1,1}` is one link: no walk needed.
        Predicate::Hops { predicates: ps, .. } if ps.len() == 1 => {
            b.cond(format!("{a}.predicate = {}", cx.params.text(lit(&ps[0])?)))
        }
        Predicate::Alternatives(ps) | Predicate::Hops { predicates: ps, .. } => {
            let names = ps.iter().map(lit).collect::<Result<Vec<_>, _>>()?;
            let ph = cx.params.push(SqlParam::TextArray(names));
            b.cond(format!("{a}.predicate = ANY({ph}::text[])"));
        }
        Predicate::Var(p) => match b.lookup(p) {
            Some(v) if v.kind != VarKind::Predicate => return Err(kind_conflict(p)),
            Some(v) => {
                let expr = v.expr.clone();
                b.cond(format!("{a}.predicate = {expr}"));
            }
            None => b.bind_new(p, VarKind::Predicate, format!("{a}.predicate"), None),
        },
    }
    let object = endpoint(b, cx, &t.object)?;
    attach(b, object, format!("{a}.object"));
    Ok(a)
}

/// `(s, "p"{m,n}, o)` or `(s, ("a" | "b"){m,n}, o)`: a walk from the
/// grounded endpoint, each hop along any of `predicates`.
fn hop_clause(b: &mut Builder, cx: &mut Cx, t: &Triple, predicates: Vec<String>, range: HopRange) -> Result<(), KipError> {
    hops::check_range(range, cx.env.limits.max_hops.max(1))?;
    let subject = endpoint(b, cx, &t.subject)?;
    let object = endpoint(b, cx, &t.object)?;
    let (anchor, target, forward) = match (subject, object) {
        (End::Id(s), o) => (s, o, true),
        (s @ End::Free(_), End::Id(o)) => (o, s, false),
        (End::Free(s), End::Free(o)) => {
            return Err(KipError::new(
                ErrorCode::InvalidSyntax,
                format!("subject ?{s} and object ?{o} cannot both be variables in multi-hop matching"),
            )
            .with_hint("Ground one end first: bind it in an earlier clause (e.g. ?x {type: \"T\", name: \"N\"}) or write it literally."))
        }
    };
    let alias = cx.alias("h");
    let walk = hops::walk_sql(cx, &anchor, forward, &predicates, range)?;
    b.inner(format!("LATERAL ({walk}) {alias}"));
    attach(b, target, format!("{alias}.node"));
    Ok(())
}
