//! When a pattern's solutions are already distinct on the variables a FIND
//! projects, so that deduplicating them (a GROUP BY that reads every
//! solution before the first row of the page) would change nothing.
//!
//! A solution is one row of each clause's table, so solutions are distinct
//! on the keys when every row is *determined* by them: two solutions that
//! agree on the keys then agree on every row, and are the same solution.
//! What determines a row:
//!
//! * a concept clause's row is its variable's concept; an identity selector
//!   (`{id}`, `{type, name}`) names at most one, so it is determined by
//!   nothing (a constant), and its variable with it;
//! * a proposition clause's row is one link. `(space, subject, predicate,
//!   object)` is unique, so the link is determined by its two endpoints and
//!   a single predicate; a named link (`?l (…)`) determines its endpoints
//!   and its predicate in turn. A `{id}` link is a constant;
//! * an anonymous endpoint: an element id or an identity selector is a
//!   constant; a broad selector (`{type}`, `{name}`) is determined only
//!   through the link; a nested link as a proposition clause.
//!
//! Predicate alternatives can join the same endpoints more than once, and
//! UNION adds branches, so a pattern that holds them is not known to be
//! distinct. A hop walk yields each node it reaches once per anchor, so it
//! is determined by its two ends, as a single link is. An OPTIONAL block is, when its own rows are
//! determined (`block_distinct`). FILTER and NOT only remove solutions.

use kip_lang::ast::{Endpoint, HopRange, Predicate, PropPattern, WhereClause};
use std::collections::HashSet;

/// Whether the solutions of `clauses` are distinct on the variables `keys`.
pub(crate) fn solutions_are_distinct<'a>(clauses: &'a [WhereClause], keys: &'a [String]) -> bool {
    block_distinct(clauses, keys.iter().map(String::as_str).collect())
}

/// Whether the pattern has an OPTIONAL block at its top level: its
/// variables may be NULL, so its solutions cannot be paged by keyset.
pub(crate) fn has_optional(clauses: &[WhereClause]) -> bool {
    clauses.iter().any(|c| matches!(c, WhereClause::Optional(_)))
}

/// Whether the block has a UNION at its top level: its solutions come from
/// branches (numbered by FIND's `ord`), and a solution may repeat across them.
pub(crate) fn has_union(clauses: &[WhereClause]) -> bool {
    clauses.iter().any(|c| matches!(c, WhereClause::Union(_)))
}

/// [`solutions_are_distinct`] for one block, given the variables `known`
/// to be determined outside it. An OPTIONAL block is distinct when each of
/// its rows is determined by what is known around it plus what it learns
/// itself; what it learns stays inside (when it matches nothing its
/// variables are NULL and determine nothing), and for a given outer
/// solution it either matches or yields one row of NULLs, never both.
fn block_distinct<'a>(clauses: &'a [WhereClause], mut known: HashSet<&'a str>) -> bool {
    if has_union(clauses) {
        return false;
    }
    learn(clauses, &mut known);
    clauses.iter().all(|c| match c {
        WhereClause::Concept { var, .. } => known.contains(var.as_str()),
        WhereClause::Proposition { var, pattern } => {
            var.as_deref().is_some_and(|v| known.contains(v)) || link_determined(pattern, &known)
        }
        WhereClause::Filter(_) | WhereClause::Not(_) => true,
        WhereClause::Optional(inner) => block_distinct(inner, known.clone()),
        WhereClause::Union(_) => false,
    })
}

/// The variables the concept and proposition clauses of one block
/// determine, to a fixpoint (each pass may determine more; at most one pass
/// per clause can add one).
fn learn<'a>(clauses: &'a [WhereClause], known: &mut HashSet<&'a str>) {
    loop {
        let before = known.len();
        for clause in clauses {
            match clause {
                WhereClause::Concept { var, selector } if selector.is_identity() => {
                    known.insert(var);
                }
                WhereClause::Proposition { var, pattern } => {
                    let link_known = var.as_deref().is_some_and(|v| known.contains(v));
                    if link_known {
                        learn_endpoints(pattern, known);
                    }
                    if let Some(v) = var {
                        if link_determined(pattern, known) {
                            known.insert(v);
                        }
                    }
                }
                _ => {}
            }
        }
        if known.len() == before {
            break;
        }
    }
}

/// Whether the link a pattern matches is determined by the known variables.
fn link_determined(pattern: &PropPattern, known: &HashSet<&str>) -> bool {
    match pattern {
        PropPattern::Id(_) => true,
        PropPattern::Triple(t) => {
            let predicate = match &t.predicate {
                Predicate::Literal(_) => true,
                Predicate::Var(p) => known.contains(p.as_str()),
                Predicate::Alternatives(_) => false,
                // A walk is one row per node it reaches from its anchor
                // (`compile::hops` returns the reached nodes DISTINCT); a
                // one-link walk (`{1}`) is a link of one of its predicates.
                Predicate::Hops { predicates, range } => *range != HopRange { min: 1, max: Some(1) } || predicates.len() == 1,
            };
            predicate && endpoint_determined(&t.subject, known) && endpoint_determined(&t.object, known)
        }
    }
}

fn endpoint_determined(endpoint: &Endpoint, known: &HashSet<&str>) -> bool {
    match endpoint {
        Endpoint::Var(v) => known.contains(v.as_str()),
        Endpoint::Id(_) => true,
        Endpoint::Concept(selector) => selector.is_identity(),
        Endpoint::Proposition(nested) => link_determined(nested, known),
    }
}

/// A known link determines its endpoint variables and its predicate
/// variable (one link, one value each). Hop walks are left out: the
/// variables at their ends are not the ends of one link.
fn learn_endpoints<'a>(pattern: &'a PropPattern, known: &mut HashSet<&'a str>) {
    let PropPattern::Triple(t) = pattern else { return };
    if matches!(t.predicate, Predicate::Hops { .. }) {
        return;
    }
    if let Predicate::Var(p) = &t.predicate {
        known.insert(p);
    }
    for endpoint in [&t.subject, &t.object] {
        match endpoint {
            Endpoint::Var(v) => {
                known.insert(v);
            }
            Endpoint::Proposition(nested) => learn_endpoints(nested, known),
            Endpoint::Id(_) | Endpoint::Concept(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::solutions_are_distinct;
    use kip_lang::ast::{Command, WhereClause};

    fn clauses(find: &str) -> Vec<WhereClause> {
        match kip_lang::parse(find).unwrap().commands.remove(0) {
            Command::Find(q) => q.where_clauses,
            other => panic!("not a FIND: {other:?}"),
        }
    }

    fn distinct(find: &str, keys: &[&str]) -> bool {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        solutions_are_distinct(&clauses(find), &keys)
    }

    #[test]
    fn concept_clauses_are_distinct_on_their_variables() {
        assert!(distinct(r#"FIND(?x) WHERE { ?x {type: "T"} }"#, &["x"]));
        assert!(!distinct(r#"FIND(?x) WHERE { ?x {type: "T"} ?y {type: "U"} }"#, &["x"]));
        // An identity selector matches at most one concept.
        assert!(distinct(r#"FIND(?x) WHERE { ?x {type: "T"} ?y {type: "U", name: "u"} }"#, &["x"]));
        assert!(!distinct(r#"FIND(?x) WHERE { ?x {type: "T"} ?y {name: "u"} }"#, &["x"]));
    }

    #[test]
    fn a_link_from_a_known_subject_is_determined_by_its_object() {
        let one_hop = r#"FIND(?o.name) WHERE { ?s {type: "Node", name: "a"} (?s, "links", ?o) }"#;
        assert!(distinct(one_hop, &["o"]));
        // A broad subject repeats the object once per subject linking to it.
        assert!(!distinct(r#"FIND(?o) WHERE { ?s {type: "Node"} (?s, "links", ?o) }"#, &["o"]));
        assert!(distinct(r#"FIND(?s, ?o) WHERE { ?s {type: "Node"} (?s, "links", ?o) }"#, &["s", "o"]));
        // Reverse: the subjects of links to a known object.
        assert!(distinct(r#"FIND(?s) WHERE { ?o {id: "C:1"} (?s, "links", ?o) }"#, &["s"]));
        assert!(distinct(r#"FIND(?s) WHERE { (?s, "links", "C:1") }"#, &["s"]));
        assert!(distinct(r#"FIND(?s) WHERE { (?s, "links", {type: "Node", name: "a"}) }"#, &["s"]));
        assert!(!distinct(r#"FIND(?s) WHERE { (?s, "links", {type: "Node"}) }"#, &["s"]));
    }

    #[test]
    fn two_hops_repeat_what_two_paths_reach() {
        let two_hop = r#"FIND(?o) WHERE { ?s {type: "Node", name: "a"} (?s, "links", ?m) (?m, "links", ?o) }"#;
        assert!(!distinct(two_hop, &["o"]));
        assert!(distinct(two_hop, &["m", "o"]));
    }

    #[test]
    fn alternatives_walks_and_blocks_are_not_known_distinct() {
        assert!(!distinct(r#"FIND(?o) WHERE { ?s {id: "C:1"} (?s, "a" | "b", ?o) }"#, &["o"]));
        assert!(!distinct(r#"FIND(?o) WHERE { ?s {id: "C:1"} (?s, ("a" | "b"){1}, ?o) }"#, &["o"]));
        assert!(!distinct(r#"FIND(?o) WHERE { ?s {id: "C:1"} (?s, ?p, ?o) }"#, &["o"]));
        assert!(distinct(r#"FIND(?o, ?p) WHERE { ?s {id: "C:1"} (?s, ?p, ?o) }"#, &["o", "p"]));
        assert!(!distinct(r#"FIND(?o) WHERE { ?o {type: "T"} OPTIONAL { (?o, "a", ?x) } }"#, &["o"]));
        // With ?x a key, each optional link is its own solution.
        assert!(distinct(r#"FIND(?o, ?x) WHERE { ?o {type: "T"} OPTIONAL { (?o, "a", ?x) } }"#, &["o", "x"]));
        // What an optional link determines stays inside it: when it does
        // not match, ?l is NULL and says nothing about ?s.
        assert!(!distinct(r#"FIND(?l) WHERE { ?s {type: "T"} OPTIONAL { ?l (?s, "a", ?o) } }"#, &["l"]));
        assert!(!distinct(r#"FIND(?o, ?x) WHERE { ?o {type: "T"} OPTIONAL { (?o, "a" | "b", ?x) } }"#, &["o", "x"]));
        assert!(!distinct(r#"FIND(?o) WHERE { ?o {type: "T"} UNION { ?o {type: "U"} } }"#, &["o"]));
        // FILTER and NOT only remove solutions.
        assert!(distinct(
            r#"FIND(?o) WHERE { ?s {id: "C:1"} (?s, "a", ?o) FILTER(?o.name != "x") NOT { (?o, "b", ?z) } }"#,
            &["o"]
        ));
    }

    #[test]
    fn a_walk_reaches_each_node_once_from_its_anchor() {
        assert!(distinct(r#"FIND(?o) WHERE { ?s {id: "C:1"} (?s, "a"{1,3}, ?o) }"#, &["o"]));
        assert!(distinct(r#"FIND(?o) WHERE { ?s {id: "C:1"} (?s, ("a" | "b"){0,}, ?o) }"#, &["o"]));
        assert!(distinct(r#"FIND(?s) WHERE { (?s, "a"{2}, {type: "T", name: "t"}) }"#, &["s"]));
        // From a broad anchor, one node is reached from many anchors.
        assert!(!distinct(r#"FIND(?o) WHERE { ?s {type: "T"} (?s, "a"{1,3}, ?o) }"#, &["o"]));
        assert!(distinct(r#"FIND(?s, ?o) WHERE { ?s {type: "T"} (?s, "a"{1,3}, ?o) }"#, &["s", "o"]));
    }

    #[test]
    fn a_known_link_determines_its_endpoints() {
        assert!(distinct(r#"FIND(?l) WHERE { ?l (?s, "a", ?o) }"#, &["l"]));
        assert!(distinct(r#"FIND(?l) WHERE { ?l (?s, "a", ?o) ?s {type: "T"} }"#, &["l"]));
        assert!(!distinct(r#"FIND(?s) WHERE { ?l (?s, "a", ?o) }"#, &["s"]));
        // The objects of the links about a known link.
        assert!(distinct(r#"FIND(?o) WHERE { ?l (id: "P:1") (?l, "about", ?o) }"#, &["o"]));
    }
}
