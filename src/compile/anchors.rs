//! Which literal predicates and types a FIND may scan: those of its links,
//! and of its concept clauses selecting by type alone, that no named
//! concept or literal id reaches.
//!
//! A link clause reached from an anchor (`{type, name}`, `{name}`, an id, or
//! a variable bound to one, directly or through other links) is read by the
//! endpoint indexes from that anchor: how many links its predicate has does
//! not change the plan. A link clause no anchor reaches may be read by its
//! predicate: through the `(space, predicate)` index, or, under an ORDER BY
//! … LIMIT, by walking an endpoint index and keeping the predicate's links.
//! Which is better depends on how many links the predicate has, which a
//! generic plan does not know (`engine::find::planning` asks).
//!
//! Only the clauses that must match are looked at: the top-level block and
//! its UNION branches. The link clauses of an OPTIONAL or NOT block are
//! probed from the solutions of the pattern around them (a left join, an
//! anti-join), never the plan's first read, and planning such a statement
//! for its values let the planner pick worse plans for the rest: a walk of
//! the whole table's primary key, which it costs as sequential, for `?e
//! {type: "Event"} FILTER(?e.attributes.start_time < :cutoff) NOT { (?e,
//! "consolidated_to", ?s) }` (134 ms, against 0.7 ms on its generic plan).
//! Anchors spread across UNION branches alike: the answer is a guide for
//! planning, never for what the statement returns.

use crate::compile::bound::lit;
use kip_lang::ast::{ConceptSelector, Endpoint, HopRange, Predicate, PropPattern, StrArg, Triple, WhereClause};
use std::collections::HashSet;

/// The literal predicates of the link clauses of `clauses` that no anchor
/// reaches, each once, in order of appearance.
pub(crate) fn scanned_predicates(clauses: &[WhereClause]) -> Vec<String> {
    let mut links = Vec::new();
    collect(clauses, &mut links);
    let anchored = anchored_variables(clauses, &links);
    let mut out: Vec<String> = Vec::new();
    for link in links.iter().filter(|l| !reached(l, &anchored)) {
        for name in link.predicates() {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// The literal types of the concept clauses of `clauses` that select by
/// type alone (`?v {type: "T"}`) and whose variable no anchor reaches,
/// each once, in order of appearance: such a variable may be read as the
/// type's every member, and how many the type has changes the plan.
pub(crate) fn scanned_types(clauses: &[WhereClause]) -> Vec<String> {
    let mut links = Vec::new();
    collect(clauses, &mut links);
    let anchored = anchored_variables(clauses, &links);
    let mut out = Vec::new();
    type_clauses(clauses, &anchored, &mut out);
    out
}

/// The types of [`scanned_types`], from the clauses that must match.
fn type_clauses(clauses: &[WhereClause], anchored: &HashSet<&str>, out: &mut Vec<String>) {
    for c in clauses {
        match c {
            WhereClause::Concept { var, selector: ConceptSelector::Type(t) } if !anchored.contains(var.as_str()) => {
                if let Ok(name) = lit(t) {
                    if !out.contains(&name) {
                        out.push(name);
                    }
                }
            }
            WhereClause::Union(b) => type_clauses(b, anchored, out),
            _ => {}
        }
    }
}

/// Every literal type and predicate `clauses` name, in any block (OPTIONAL,
/// NOT and UNION ones, nested links), each once: part of the query's shape,
/// never of a call's values (`compile::template`), so a plan made for them
/// is a plan for every call of the text (`engine::find::planning`).
pub(crate) fn schema_names(clauses: &[WhereClause]) -> Vec<String> {
    fn add(out: &mut Vec<String>, arg: &StrArg) {
        if let Ok(name) = lit(arg) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    fn selector(out: &mut Vec<String>, sel: &ConceptSelector) {
        match sel {
            ConceptSelector::Type(t) | ConceptSelector::TypeName { type_name: t, .. } => add(out, t),
            ConceptSelector::Id(_) | ConceptSelector::Name(_) => {}
        }
    }
    fn endpoint(out: &mut Vec<String>, e: &Endpoint) {
        match e {
            Endpoint::Concept(sel) => selector(out, sel),
            Endpoint::Proposition(p) => pattern(out, p),
            Endpoint::Var(_) | Endpoint::Id(_) => {}
        }
    }
    fn pattern(out: &mut Vec<String>, p: &PropPattern) {
        if let PropPattern::Triple(t) = p {
            endpoint(out, &t.subject);
            match &t.predicate {
                Predicate::Literal(p) => add(out, p),
                Predicate::Alternatives(ps) | Predicate::Hops { predicates: ps, .. } => ps.iter().for_each(|p| add(out, p)),
                Predicate::Var(_) => {}
            }
            endpoint(out, &t.object);
        }
    }
    fn walk(out: &mut Vec<String>, clauses: &[WhereClause]) {
        for c in clauses {
            match c {
                WhereClause::Concept { selector: sel, .. } => selector(out, sel),
                WhereClause::Proposition { pattern: p, .. } => pattern(out, p),
                WhereClause::Optional(b) | WhereClause::Not(b) | WhereClause::Union(b) => walk(out, b),
                WhereClause::Filter(_) => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&mut out, clauses);
    out
}

/// Whether a variable of the clauses that must match is reached from no
/// anchor: one bound by a scan of a type, or of a predicate's links,
/// whose solutions may be the type's or the predicate's every member.
pub(crate) fn has_unanchored_variable(clauses: &[WhereClause]) -> bool {
    let mut links = Vec::new();
    collect(clauses, &mut links);
    let anchored = anchored_variables(clauses, &links);
    let mut all = HashSet::new();
    clause_variables(clauses, &mut all);
    all.extend(links.iter().flat_map(|l| l.variables()));
    all.iter().any(|v| !anchored.contains(v))
}

/// The variables anchors reach: those of concept clauses that name their
/// concept, spread along `links` until nothing changes (a chain of n links
/// takes at most n rounds).
fn anchored_variables<'a>(clauses: &'a [WhereClause], links: &[Link<'a>]) -> HashSet<&'a str> {
    let mut anchored: HashSet<&str> = HashSet::new();
    named_variables(clauses, &mut anchored);
    loop {
        let before = anchored.len();
        for link in links {
            if reached(link, &anchored) {
                anchored.extend(link.variables());
            }
        }
        if anchored.len() == before {
            return anchored;
        }
    }
}

/// Variables of concept clauses in the clauses that must match.
fn clause_variables<'a>(clauses: &'a [WhereClause], out: &mut HashSet<&'a str>) {
    for c in clauses {
        match c {
            WhereClause::Concept { var, .. } => {
                out.insert(var.as_str());
            }
            WhereClause::Union(b) => clause_variables(b, out),
            _ => {}
        }
    }
}

/// A link clause: its triple and the variable naming the link, if any.
struct Link<'a> {
    var: Option<&'a str>,
    triple: &'a Triple,
}

impl<'a> Link<'a> {
    /// The variables the link binds: its own and its endpoints'.
    fn variables(&self) -> impl Iterator<Item = &'a str> + '_ {
        let ends = [&self.triple.subject, &self.triple.object].into_iter().filter_map(|e| match e {
            Endpoint::Var(v) => Some(v.as_str()),
            _ => None,
        });
        self.var.into_iter().chain(ends)
    }

    /// The literal predicates a single link may be matched on (a walk of
    /// more than one hop starts from an anchor of its own, `compile::hops`).
    fn predicates(&self) -> Vec<String> {
        let names: &[_] = match &self.triple.predicate {
            Predicate::Literal(p) => std::slice::from_ref(p),
            Predicate::Alternatives(ps) => ps,
            Predicate::Hops { predicates, range } if *range == (HopRange { min: 1, max: Some(1) }) => predicates,
            Predicate::Hops { .. } | Predicate::Var(_) => &[],
        };
        names.iter().filter_map(|p| lit(p).ok()).collect()
    }
}

/// Whether an anchor reaches `link`: an endpoint that names its element, or
/// an anchored variable.
fn reached(link: &Link, anchored: &HashSet<&str>) -> bool {
    let anchors = |e: &Endpoint| match e {
        Endpoint::Var(v) => anchored.contains(v.as_str()),
        Endpoint::Concept(sel) => names_its_concept(sel),
        Endpoint::Id(_) => true,
        Endpoint::Proposition(p) => matches!(p.as_ref(), PropPattern::Id(_)),
    };
    link.var.is_some_and(|v| anchored.contains(v)) || anchors(&link.triple.subject) || anchors(&link.triple.object)
}

/// A selector that picks its concept by name or id (not by type alone).
fn names_its_concept(sel: &ConceptSelector) -> bool {
    !matches!(sel, ConceptSelector::Type(_))
}

/// Variables of concept clauses that name their concept, in the clauses
/// that must match.
fn named_variables<'a>(clauses: &'a [WhereClause], out: &mut HashSet<&'a str>) {
    for c in clauses {
        match c {
            WhereClause::Concept { var, selector } if names_its_concept(selector) => {
                out.insert(var.as_str());
            }
            WhereClause::Proposition { var: Some(v), pattern: PropPattern::Id(_) } => {
                out.insert(v.as_str());
            }
            WhereClause::Union(b) => named_variables(b, out),
            _ => {}
        }
    }
}

/// Every link clause with a triple of the clauses that must match, nested
/// ones included.
fn collect<'a>(clauses: &'a [WhereClause], out: &mut Vec<Link<'a>>) {
    for c in clauses {
        match c {
            WhereClause::Proposition { var, pattern: PropPattern::Triple(t) } => {
                out.push(Link { var: var.as_deref(), triple: t });
                nested(t, out);
            }
            WhereClause::Union(b) => collect(b, out),
            _ => {}
        }
    }
}

/// The link clauses written as endpoints of `t`.
fn nested<'a>(t: &'a Triple, out: &mut Vec<Link<'a>>) {
    for e in [&t.subject, &t.object] {
        if let Endpoint::Proposition(p) = e {
            if let PropPattern::Triple(inner) = p.as_ref() {
                out.push(Link { var: None, triple: inner });
                nested(inner, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scanned_predicates;
    use kip_lang::ast::Command;

    fn scanned(text: &str) -> Vec<String> {
        let Command::Find(q) = kip_lang::parse(text).unwrap().commands.remove(0) else { panic!("not a FIND") };
        scanned_predicates(&q.where_clauses)
    }

    #[test]
    fn links_no_anchor_reaches_are_scanned() {
        assert_eq!(scanned(r#"FIND(?a) WHERE { (?a, "prefers", ?b) }"#), ["prefers"]);
        // A type is not an anchor.
        assert_eq!(scanned(r#"FIND(?a) WHERE { ?b {type: "Domain"} (?a, "belongs_to_domain", ?b) }"#), ["belongs_to_domain"]);
        assert_eq!(scanned(r#"FIND(?a) WHERE { (?a, "x" | "y", {type: "T"}) }"#), ["x", "y"]);
        // Each name once.
        assert_eq!(scanned(r#"FIND(?a) WHERE { (?a, "p", ?b) (?b, "p", ?c) }"#), ["p"]);
    }

    fn unanchored(text: &str) -> bool {
        let Command::Find(q) = kip_lang::parse(text).unwrap().commands.remove(0) else { panic!("not a FIND") };
        super::has_unanchored_variable(&q.where_clauses)
    }

    #[test]
    fn a_variable_no_anchor_reaches_is_unanchored() {
        assert!(unanchored(r#"FIND(?e) WHERE { ?e {type: "Event"} }"#));
        assert!(unanchored(r#"FIND(?a) WHERE { (?a, "prefers", ?b) }"#));
        assert!(unanchored(r#"FIND(?a, ?x) WHERE { ?a {name: "n"} (?a, "p", ?b) ?x {type: "T"} }"#));
        assert!(!unanchored(r#"FIND(?o) WHERE { ?s {type: "Node", name: "n"} (?s, "links", ?o) OPTIONAL { (?o, "t", ?x) } }"#));
        assert!(!unanchored(r#"FIND(?e) WHERE { ?e {type: "Event"} (?e, "involves", {type: "Person", name: "p"}) }"#));
        assert!(!unanchored(r#"FIND(?x) WHERE { ?x {id: "C:1"} }"#));
    }

    #[test]
    fn anchors_spread_along_links() {
        assert!(scanned(r#"FIND(?b) WHERE { ?a {type: "Person", name: "x"} (?a, "prefers", ?b) }"#).is_empty());
        assert!(scanned(r#"FIND(?b) WHERE { (?a, "prefers", ?b) ?a {name: "x"} }"#).is_empty());
        assert!(scanned(r#"FIND(?c) WHERE { (?a, "p", ?b) (?b, "q", ?c) (?c, "r", {id: "C:1"}) }"#).is_empty());
        assert!(scanned(r#"FIND(?b) WHERE { ("C:1", "p", ?b) (?b, "q", ?c) }"#).is_empty());
        // Through a named link.
        assert!(scanned(r#"FIND(?b) WHERE { ?l (id: "P:1:p") ?m (?l, "q", ?b) }"#).is_empty());
        // A walk of several hops is not scanned by its predicate.
        assert!(scanned(r#"FIND(?b) WHERE { (?a, "p"{1,3}, ?b) }"#).is_empty());
        // OPTIONAL and NOT blocks are probed from the pattern around them.
        assert!(scanned(r#"FIND(?e) WHERE { ?e {type: "Event"} NOT { (?e, "p", ?s) } OPTIONAL { (?x, "q", ?e) } }"#).is_empty());
        // UNION branches must match.
        assert_eq!(scanned(r#"FIND(?a) WHERE { (?a, "p", ?b) UNION { (?a, "q", ?b) } }"#), ["p", "q"]);
        // A part no anchor reaches.
        assert_eq!(scanned(r#"FIND(?b) WHERE { ("C:1", "p", ?b) (?x, "q", ?y) }"#), ["q"]);
    }

    fn types(text: &str) -> Vec<String> {
        let Command::Find(q) = kip_lang::parse(text).unwrap().commands.remove(0) else { panic!("not a FIND") };
        super::scanned_types(&q.where_clauses)
    }

    #[test]
    fn types_no_anchor_reaches_are_scanned() {
        assert_eq!(types(r#"FIND(?e) WHERE { ?e {type: "Event"} }"#), ["Event"]);
        assert_eq!(types(r#"FIND(?n) WHERE { ?n {type: "Person"} NOT { (?n, "belongs_to_domain", ?d) } } LIMIT 100"#), ["Person"]);
        // Each name once, UNION branches included.
        assert_eq!(types(r#"FIND(?a) WHERE { ?a {type: "T"} ?b {type: "T"} UNION { ?a {type: "U"} } }"#), ["T", "U"]);
        // Reached from an anchor, a type's members are not scanned.
        assert!(types(r#"FIND(?e) WHERE { ?e {type: "Event"} (?e, "involves", {type: "Person", name: "p"}) }"#).is_empty());
        assert!(types(r#"FIND(?p) WHERE { ?p {type: "Person", name: "p"} }"#).is_empty());
        // OPTIONAL and NOT blocks are probed from the pattern around them.
        assert!(types(r#"FIND(?e) WHERE { ?e {name: "n"} OPTIONAL { ?x {type: "T"} (?x, "q", ?e) } }"#).is_empty());
    }

    #[test]
    fn schema_names_are_every_type_and_predicate_named() {
        let Command::Find(q) = kip_lang::parse(
            r#"FIND(?d.name, COUNT(?n)) WHERE { ?d {type: "Domain"} OPTIONAL { (?n, "belongs_to_domain", ?d) }
                NOT { (?d, "a" | "b", {type: "T", name: "x"}) } UNION { (?d, "c"{1,2}, ("C:1", "d", ?z)) } ?q {name: "n"} }"#,
        )
        .unwrap()
        .commands
        .remove(0) else {
            panic!("not a FIND")
        };
        assert_eq!(super::schema_names(&q.where_clauses), ["Domain", "belongs_to_domain", "a", "b", "T", "c", "d"]);
    }
}
