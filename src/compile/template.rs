//! A compiled FIND as a template over its *holes*, so that a FIND sent again
//! with other names or ids is not compiled again.
//!
//! A hole is a position whose value the compiler only passes to SQL as a
//! bind parameter (and to the guard, `compile::find::Guard`), whatever the
//! value: the name of a concept selector (`{name}`, `{type, name}`), a
//! concept id (`{id: "C:<n>"}`, a bare `"C:<n>"` endpoint), and the string
//! an attribute or metadata value is ordered against in a FILTER
//! (`?e.attributes.start_time >= :cutoff`, `?l.metadata.expires_at < :now`:
//! `compile::filter::json_vs_literal`). An application that sends
//! `FIND(?o.name) WHERE { ?s {type: "Node", name: :anchor} … }` with a
//! thousand anchors sends one query shape; type names, predicates,
//! proposition ids, other FILTER values (`==` on an attribute becomes a
//! containment the plan depends on, an id is parsed) and LIMIT stay part
//! of the shape, since the compiler (or `resolve`) decides on them.
//!
//! A template is made by compiling the query with *probe* values in its
//! holes: strings that hold a NUL (which no stored text can) and ids beyond
//! any row id, so that every occurrence of a probe in the output is a hole's
//! value. A second compile with other probes must give exactly what the
//! template gives for them, or the query is not templated: that catches a
//! compiler that would ever decide on a hole's value. Filling the template
//! with a call's values gives what compiling that call would give (the
//! tests of `engine::templates` check this over a corpus of FINDs).

use crate::compile::env::{Env, Facts};
use crate::compile::find::{compile_find, FindSql, Guard};
use crate::compile::ids::{self, ElementKind};
use crate::compile::{Params, SqlParam};
use kip_lang::ast::{
    Bindable, CompareOp, ConceptSelector, Endpoint, Expr, FindQuery, PathField, PropPattern, StrArg, ValueOrParam, WhereClause,
};
use serde_json::Value as Json;

/// The value of one hole of a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Hole {
    /// A concept selector's name.
    Name(String),
    /// A concept id: its row id and the id as written.
    Concept(i64, String),
    /// The string a FILTER orders an attribute or metadata value against.
    Text(String),
}

/// A FIND with its hole values taken out: the shape a template is made for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    /// The query with every hole emptied.
    pub query: FindQuery,
    /// For each position of [`walk`] in order, whether it is a hole (an id
    /// position is one only when it holds a concept id, a FILTER value only
    /// when it is a string).
    pub mask: Vec<bool>,
}

/// Take the hole values out of `q`: its shape and the values, in walk order.
pub(crate) fn split(q: &FindQuery) -> (Shape, Vec<Hole>) {
    let mut query = q.clone();
    let mut mask = Vec::new();
    let mut holes = Vec::new();
    walk(&mut query.where_clauses, &mut |slot| {
        let hole = match slot {
            Slot::Arg(Position::Name, Bindable::Lit(text)) => Some(Hole::Name(std::mem::take(text))),
            Slot::Arg(Position::Id, Bindable::Lit(text)) => match ids::parse(text) {
                Ok(ids::ParsedId { kind: ElementKind::Concept, id: Some(n), .. }) => Some(Hole::Concept(n, std::mem::take(text))),
                _ => None,
            },
            Slot::Value(ValueOrParam::Value(Json::String(text))) => Some(Hole::Text(std::mem::take(text))),
            _ => None,
        };
        mask.push(hole.is_some());
        holes.extend(hole);
    });
    (Shape { query, mask }, holes)
}

/// Where a hole of a FIND sent as text takes its value from, read off the
/// text's query as parsed, before its placeholders are bound.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HoleSource {
    /// A value written in the text.
    Written(Hole),
    /// The string parameter of this name, a hole of this kind.
    Parameter(String, HoleKind),
}

/// What a hole holds (see [`Hole`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HoleKind {
    Name,
    Concept,
    Text,
}

/// The sources of the holes of `shape` (the shape of the bound query,
/// whose hole values are `holes`) in the query as parsed, `unbound`: `None`
/// when a placeholder stands anywhere but in a hole (its value is then part
/// of the shape), or in an id position whose bound value was not a concept
/// id. With sources, the holes of another call of the same text are its
/// parameters' values ([`holes_from`]), and its shape is `shape`, with no
/// binding and no split.
pub(crate) fn hole_sources(unbound: &FindQuery, shape: &Shape, holes: &[Hole]) -> Option<Vec<HoleSource>> {
    let mut query = unbound.clone();
    let mut sources = Vec::with_capacity(holes.len());
    let mut values = holes.iter();
    let mut position = 0;
    let mut fits = true;
    walk(&mut query.where_clauses, &mut |slot| {
        let is_hole = shape.mask.get(position).copied().unwrap_or(false);
        position += 1;
        let value = if is_hole { values.next() } else { None };
        let parameter = match slot {
            Slot::Arg(kind, arg @ Bindable::Param(_)) => {
                let Bindable::Param(name) = std::mem::replace(arg, Bindable::Lit(String::new())) else { unreachable!() };
                Some((name, if matches!(kind, Position::Id) { HoleKind::Concept } else { HoleKind::Name }))
            }
            Slot::Value(value @ ValueOrParam::Param(_)) => {
                let ValueOrParam::Param(name) = std::mem::replace(value, ValueOrParam::Value(Json::String(String::new()))) else {
                    unreachable!()
                };
                Some((name, HoleKind::Text))
            }
            _ => None,
        };
        match (parameter, is_hole) {
            (Some((name, kind)), true) => sources.push(HoleSource::Parameter(name, kind)),
            // A placeholder whose value is part of the shape.
            (Some(_), false) => fits = false,
            (None, true) => match value {
                Some(hole) => sources.push(HoleSource::Written(hole.clone())),
                None => fits = false,
            },
            (None, false) => {}
        }
    });
    // Every placeholder stood in a hole: none is left.
    fits &= position == shape.mask.len() && values.next().is_none();
    fits &= kip_lang::ast::Script { commands: vec![kip_lang::ast::Command::Find(query)] }.is_bound();
    fits.then_some(sources)
}

/// A call's hole values from its parameters, as binding and [`split`]
/// would give them: `None` when a parameter is missing or not a string, or
/// a concept id's parameter holds no concept id (the call's shape is then
/// another, or binding fails).
pub(crate) fn holes_from(sources: &[HoleSource], parameters: &serde_json::Map<String, serde_json::Value>) -> Option<Vec<Hole>> {
    sources
        .iter()
        .map(|source| match source {
            HoleSource::Written(hole) => Some(hole.clone()),
            HoleSource::Parameter(name, HoleKind::Name) => Some(Hole::Name(parameters.get(name)?.as_str()?.to_string())),
            HoleSource::Parameter(name, HoleKind::Text) => Some(Hole::Text(parameters.get(name)?.as_str()?.to_string())),
            HoleSource::Parameter(name, HoleKind::Concept) => {
                let text = parameters.get(name)?.as_str()?;
                match ids::parse(text) {
                    Ok(ids::ParsedId { kind: ElementKind::Concept, id: Some(n), .. }) => Some(Hole::Concept(n, text.to_string())),
                    _ => None,
                }
            }
        })
        .collect()
}

/// A compiled FIND whose hole values are probes (see the module comment).
#[derive(Debug)]
pub(crate) struct Template {
    compiled: FindSql,
}

impl Template {
    /// Whether the template's statement is planned for each call's values.
    pub(crate) fn plan_per_call(&self) -> bool {
        self.compiled.plan_per_call
    }
}

const PROBE_IDS: i64 = 4_000_000_000_000_000_000;
const PROBE_SET: i64 = 1_000_000_000;

/// The probes of probe set `set` for holes of the kinds of `like`: names
/// with a NUL, and concept row ids far beyond any real one (row ids come
/// from a sequence).
fn probes(like: &[Hole], set: u8) -> Vec<Hole> {
    like.iter()
        .enumerate()
        .map(|(k, hole)| match hole {
            Hole::Name(_) => Hole::Name(format!("\0kip-probe-{set}-{k}")),
            Hole::Text(_) => Hole::Text(format!("\0kip-probe-{set}-{k}")),
            Hole::Concept(..) => {
                let n = PROBE_IDS + i64::from(set) * PROBE_SET + k as i64;
                Hole::Concept(n, format!("C:{n}"))
            }
        })
        .collect()
}

/// `shape` with `holes` put back in.
pub(crate) fn fill(shape: &Shape, holes: &[Hole]) -> FindQuery {
    let mut query = shape.query.clone();
    let mut position = 0;
    let mut next = holes.iter();
    walk(&mut query.where_clauses, &mut |slot| {
        if shape.mask.get(position).copied().unwrap_or(false) {
            let value = match next.next() {
                Some(Hole::Name(s) | Hole::Concept(_, s) | Hole::Text(s)) => s.clone(),
                None => String::new(),
            };
            match slot {
                Slot::Arg(_, arg) => *arg = Bindable::Lit(value),
                Slot::Value(v) => *v = ValueOrParam::Value(Json::String(value)),
            }
        }
        position += 1;
    });
    query
}

impl Template {
    /// Compile `shape` into a template for the first page of `limit` rows,
    /// given the kinds of its holes (a call's values) and the facts of a
    /// query of that shape (`facts_for`: the named concepts a FIND verifies
    /// are its hole values). `None` when the compiler decides on a hole's
    /// value or refuses the probed query: the caller then compiles the call
    /// itself, and reports its error.
    pub(crate) fn make(shape: &Shape, kinds: &[Hole], env: Env, facts_for: &dyn Fn(&FindQuery) -> Facts, limit: u64) -> Option<Template> {
        let compile = |set: u8| -> Option<(Vec<Hole>, FindSql)> {
            let probes = probes(kinds, set);
            let query = fill(shape, &probes);
            let facts = facts_for(&query);
            let compiled = compile_find(&query, Env { facts: &facts, ..env }, limit, 0, None).ok()?;
            Some((probes, compiled))
        };
        let (_, compiled) = compile(1)?;
        let template = Template { compiled };
        // Filled with the second probes, the template must give what the
        // compiler gives for them.
        let (second, expected) = compile(2)?;
        (template.instantiate(&second)? == expected).then_some(template)
    }

    /// The statement for a call whose hole values are `holes` (in walk
    /// order, as [`split`] returns them): every probe replaced by the value
    /// of its hole. `None` when a probe stands where no value of its kind
    /// can go.
    pub(crate) fn instantiate(&self, to: &[Hole]) -> Option<FindSql> {
        let c = &self.compiled;
        let mut params = Params::new();
        for p in c.params.values() {
            params.append(substitute(p, to)?);
        }
        let guard = match &c.guard {
            None => None,
            Some(g) => Some(Guard {
                named: g.named.iter().map(|(t, n)| Some((t.clone(), name_of(n, to)?))).collect::<Option<_>>()?,
                concept_ids: g.concept_ids.iter().map(|(n, _)| concept_of(*n, to)).collect::<Option<_>>()?,
                always: g.always,
            }),
        };
        Some(FindSql {
            sql: c.sql.clone(),
            params,
            shape: c.shape.clone(),
            layout: c.layout,
            guard,
            keyset: c.keyset.clone(),
            ranking: c.ranking.clone(),
            plan_per_call: c.plan_per_call,
            scanned_predicates: c.scanned_predicates.clone(),
            scanned_types: c.scanned_types.clone(),
            schema_names: c.schema_names.clone(),
        })
    }
}

/// The hole index a probe name or id stands for, of any probe set.
fn probe_name_index(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("\0kip-probe-")?;
    let (_, k) = rest.split_once('-')?;
    k.parse().ok()
}

fn probe_id_index(n: i64) -> Option<usize> {
    (n >= PROBE_IDS).then(|| ((n - PROBE_IDS) % PROBE_SET) as usize)
}

fn name_of(s: &str, to: &[Hole]) -> Option<String> {
    match probe_name_index(s) {
        None => Some(s.to_string()),
        Some(k) => match to.get(k)? {
            Hole::Name(v) | Hole::Text(v) => Some(v.clone()),
            Hole::Concept(..) => None,
        },
    }
}

fn id_of(n: i64, to: &[Hole]) -> Option<i64> {
    match probe_id_index(n) {
        None => Some(n),
        Some(k) => match to.get(k)? {
            Hole::Concept(v, _) => Some(*v),
            Hole::Name(_) | Hole::Text(_) => None,
        },
    }
}

fn concept_of(n: i64, to: &[Hole]) -> Option<(i64, String)> {
    match probe_id_index(n) {
        None => None,
        Some(k) => match to.get(k)? {
            Hole::Concept(v, text) => Some((*v, text.clone())),
            Hole::Name(_) | Hole::Text(_) => None,
        },
    }
}

/// A bind parameter with the probes in it replaced. A jsonb value is kept
/// as it is: a probe inside one makes the two compiles differ, and the
/// query is not templated.
fn substitute(p: &SqlParam, to: &[Hole]) -> Option<SqlParam> {
    Some(match p {
        SqlParam::Text(s) => SqlParam::Text(name_of(s, to)?),
        SqlParam::Int(n) => SqlParam::Int(id_of(*n, to)?),
        SqlParam::TextArray(v) => SqlParam::TextArray(v.iter().map(|s| name_of(s, to)).collect::<Option<_>>()?),
        SqlParam::IntArray(v) => SqlParam::IntArray(v.iter().map(|n| id_of(*n, to)).collect::<Option<_>>()?),
        other => other.clone(),
    })
}

/// Where a selector value sits.
#[derive(Clone, Copy)]
enum Position {
    /// A concept selector's name.
    Name,
    /// A concept selector's id or a bare id endpoint.
    Id,
}

/// A position [`walk`] visits.
enum Slot<'a> {
    /// A selector's name or id, a value or a placeholder.
    Arg(Position, &'a mut StrArg),
    /// The value a FILTER orders an attribute or metadata path against
    /// (`<`, `<=`, `>`, `>=`), a value or a placeholder: a hole when it is a
    /// string.
    Value(&'a mut ValueOrParam),
}

/// Visit every position that may be a hole, clause by clause in a fixed
/// order: selector names and ids, and FILTER values. Over a query as
/// parsed and the same query bound, the same positions in the same order.
fn walk(clauses: &mut [WhereClause], visit: &mut dyn FnMut(Slot)) {
    for clause in clauses {
        match clause {
            WhereClause::Concept { selector, .. } => selector_walk(selector, visit),
            WhereClause::Proposition { pattern, .. } => pattern_walk(pattern, visit),
            WhereClause::Filter(e) => filter_walk(e, visit),
            WhereClause::Optional(inner) | WhereClause::Not(inner) | WhereClause::Union(inner) => walk(inner, visit),
        }
    }
}

fn selector_walk(selector: &mut ConceptSelector, visit: &mut dyn FnMut(Slot)) {
    match selector {
        ConceptSelector::Id(id) => visit(Slot::Arg(Position::Id, id)),
        ConceptSelector::TypeName { name, .. } | ConceptSelector::Name(name) => visit(Slot::Arg(Position::Name, name)),
        ConceptSelector::Type(_) => {}
    }
}

fn pattern_walk(pattern: &mut PropPattern, visit: &mut dyn FnMut(Slot)) {
    let PropPattern::Triple(t) = pattern else { return };
    for e in [&mut t.subject, &mut t.object] {
        match e {
            Endpoint::Var(_) => {}
            Endpoint::Concept(selector) => selector_walk(selector, visit),
            Endpoint::Proposition(nested) => pattern_walk(nested, visit),
            Endpoint::Id(id) => visit(Slot::Arg(Position::Id, id)),
        }
    }
}

/// The values of a FILTER's orderings of an attribute or metadata path
/// (`compile::filter::json_vs_literal` binds such a string as it is,
/// whatever it holds; `==` and `!=` are left out: an attribute equality is
/// a containment whose plan depends on its value, an id equality parses
/// its string).
fn filter_walk(e: &mut Expr, visit: &mut dyn FnMut(Slot)) {
    match e {
        Expr::Not(inner) => filter_walk(inner, visit),
        Expr::And(items) | Expr::Or(items) => items.iter_mut().for_each(|i| filter_walk(i, visit)),
        Expr::Compare { op: CompareOp::Lt | CompareOp::Le | CompareOp::Gt | CompareOp::Ge, left, right } => {
            let value = match (&mut **left, &mut **right) {
                (Expr::Path(p), Expr::Value(v)) | (Expr::Value(v), Expr::Path(p)) => {
                    matches!(p.field, PathField::Attributes(Some(_)) | PathField::Metadata(Some(_))).then_some(v)
                }
                _ => None,
            };
            if let Some(v) = value {
                visit(Slot::Value(v));
            }
        }
        Expr::Value(_) | Expr::Path(_) | Expr::Compare { .. } | Expr::Call { .. } => {}
    }
}
