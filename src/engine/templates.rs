//! A per-backend memo of compiled FINDs, as templates over their holes
//! (`compile::template`), by command text.
//!
//! An application sends the same few FIND texts with other parameters
//! again and again; compiling one was a fifth of a small FIND's call
//! (benches/KQL-BENCH.md). A template is a pure function of the query's
//! shape and of the compiler's environment, so an entry is used only when
//! every input of the compile is equal: the shape (the query with its hole
//! values taken out), the space, the limits, the page size and the catalog
//! facts `resolve` read for this call. Nothing the database holds is
//! remembered, so nothing needs invalidating. A shape's template is made
//! the second time the shape is seen (`Compiled::Seen`).
//!
//! A text whose placeholders all stand in holes goes further (`direct`):
//! the next call of the text takes its hole values from its parameters and
//! fills the template, with no parse, binding, `resolve` or comparison of
//! shapes, when nothing else the template was made from could differ (the
//! space, the settings, and facts that are the shape's alone). A small
//! FIND's call spent 4-5 µs of its ~20 µs over the hand-written statement
//! on those steps (benches/KQL-BENCH.md).

use crate::compile::env::{Env, Facts, InStatement, Limits};
use crate::compile::find::{compile_find, FindSql};
use crate::compile::template::{self, Hole, HoleSource, Shape, Template};
use crate::resolve::collect;
use kip_lang::ast::{Command, FindQuery};
use kip_lang::KipError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Longer texts are compiled every time (as `engine::parsed` parses them).
const MAX_TEXT_BYTES: usize = 4096;
/// Texts kept; the memo starts afresh when full.
const MAX_TEXTS: usize = 256;
/// Shapes kept per text (a text's placeholders may be bound to values of
/// other kinds, or the settings change); the oldest is dropped.
const MAX_SHAPES_PER_TEXT: usize = 4;

/// One shape of a text, with its compiler inputs and what it holds of it.
struct Entry {
    shape: Shape,
    space: String,
    limits: Limits,
    limit: u64,
    facts: Facts,
    compiled: Compiled,
}

/// What an entry holds of its shape.
enum Compiled {
    /// The shape was seen once, and its call compiled. A shape seen again
    /// gets its template: making one is two compiles (with probes), and a
    /// text whose FILTER values change at every call (a time `:now`, a
    /// cutoff) sends a new shape each time; templating each doubled its
    /// compile (0.59 → 0.72 ms a call of a Brain FIND with `:now`).
    Seen,
    /// The shape's template; `None`: not templated, each call compiles.
    Made(Option<Template>),
}

impl Entry {
    fn template(&self) -> Option<&Template> {
        match &self.compiled {
            Compiled::Made(template) => template.as_ref(),
            Compiled::Seen => None,
        }
    }
}

/// How a text's next calls reach its template directly: the entry, and
/// where its holes take their values (`None`: they cannot, and the text's
/// calls go the whole way).
struct Direct {
    entry: Rc<Entry>,
    sources: Option<Vec<HoleSource>>,
    /// The LIMIT written in the text.
    written_limit: Option<u64>,
    /// The clauses and FILTER terms of its pattern (`kip.max_clauses`).
    clauses: usize,
}

thread_local! {
    static TEMPLATES: RefCell<HashMap<Rc<str>, Vec<Rc<Entry>>>> = RefCell::new(HashMap::new());
    static DIRECT: RefCell<HashMap<Rc<str>, Rc<Direct>>> = RefCell::new(HashMap::new());
}

/// A call that reached its text's template directly: the first page's
/// statement, and what the answer needs besides.
pub(crate) struct DirectCall {
    pub plan: FindSql,
    /// The page size.
    pub limit: u64,
    direct: Rc<Direct>,
    holes: Vec<Hole>,
}

impl DirectCall {
    /// The call's query, as binding its parameters would give it (for a
    /// next page's cursor).
    pub(crate) fn query(&self) -> FindQuery {
        template::fill(&self.direct.entry.shape, &self.holes)
    }
}

/// The first page of the FIND sent as `text` with `parameters`, straight
/// from the template an earlier call of the text left (see the module
/// comment): `None` when there is none, or anything it was made from may
/// differ for this call; the call then goes the whole way (and reports
/// any error of its own).
pub(crate) fn direct(text: &str, parameters: &serde_json::Map<String, serde_json::Value>, space: &str) -> Option<DirectCall> {
    let direct = DIRECT.with(|d| d.borrow().get(text).cloned())?;
    let entry = &direct.entry;
    let sources = direct.sources.as_ref()?;
    let fits = entry.space == space
        && entry.limits == crate::resolve::limits()
        && entry.limit == super::limits::page_size(direct.written_limit)
        && super::limits::check_command_size(text).is_ok()
        && super::limits::clauses_allowed(direct.clauses);
    if !fits {
        return None;
    }
    let holes = template::holes_from(sources, parameters)?;
    let plan = entry.template()?.instantiate(&holes)?;
    Some(DirectCall { plan, limit: entry.limit, direct: direct.clone(), holes })
}

/// Remember how the next calls of `text` can reach `entry` directly, once
/// per entry. Only when the facts of a query of its shape are the shape's
/// alone (none read from the database: proposition ids, the space's size
/// for an unanchored scan) and its plan is generic (a plan for each call's
/// values first looks up the named concepts' ids).
fn remember_direct(text: &Rc<str>, q: &FindQuery, env: Env, entry: &Rc<Entry>, holes: &[Hole]) {
    let known = DIRECT.with(|d| d.borrow().get(text).is_some_and(|known| Rc::ptr_eq(&known.entry, entry)));
    if known {
        return;
    }
    let facts = env.facts;
    let shape_only = facts.concepts.is_empty() && facts.propositions.is_empty() && facts.unanchored_over_cap.is_none();
    let generic = entry.template().is_some_and(|t| !t.plan_per_call());
    let sources = (shape_only && generic && q.cursor.is_none())
        .then(|| super::parsed::parse(text).ok())
        .flatten()
        .and_then(|script| match <[Command; 1]>::try_from(script.commands) {
            Ok([Command::Find(unbound)]) => template::hole_sources(&unbound, &entry.shape, holes),
            _ => None,
        });
    let written_limit = crate::compile::bound::opt_lit(&q.limit).ok().flatten();
    let direct = Rc::new(Direct { entry: entry.clone(), sources, written_limit, clauses: super::limits::clause_count(&q.where_clauses) });
    DIRECT.with(|d| {
        let mut known = d.borrow_mut();
        if known.len() >= MAX_TEXTS && !known.contains_key(text) {
            known.clear();
        }
        known.insert(text.clone(), direct);
    });
}

/// The statement of the first page (`limit` rows) of the FIND `q`, sent as
/// `text`: from a remembered template when one fits, else compiled (and a
/// template remembered for the next call).
pub(crate) fn first_page(text: &Rc<str>, q: &FindQuery, env: Env, limit: u64) -> Result<FindSql, KipError> {
    if text.len() > MAX_TEXT_BYTES {
        return compile_find(q, env, limit, 0, None);
    }
    let (shape, holes) = template::split(q);
    let facts = shape_facts(env.facts);
    let fits = |e: &Entry| e.limit == limit && e.limits == env.limits && e.space == env.space && e.facts == facts && e.shape == shape;
    let found = TEMPLATES.with(|t| t.borrow().get(text).and_then(|entries| entries.iter().find(|e| fits(e)).cloned()));
    let entry = match found {
        Some(entry) if matches!(entry.compiled, Compiled::Made(_)) => entry,
        None => {
            // A shape seen for the first time is compiled for its call.
            let entry = Entry { shape, space: env.space.to_string(), limits: env.limits, limit, facts, compiled: Compiled::Seen };
            remember(text, None, Rc::new(entry));
            return compile_find(q, env, limit, 0, None);
        }
        Some(seen) => {
            // The facts of a query of this shape: the call's, except the
            // named concepts the statement verifies, which are hole values.
            let facts_for = |query: &FindQuery| {
                let mut f = env.facts.clone();
                if f.verified_in_statement.is_some() {
                    f.verified_in_statement = Some(InStatement { named_concepts: collect::named_concepts(&query.where_clauses) });
                }
                f
            };
            let template = Template::make(&shape, &holes, env, &facts_for, limit);
            let entry = Entry { shape, space: env.space.to_string(), limits: env.limits, limit, facts, compiled: Compiled::Made(template) };
            let entry = Rc::new(entry);
            remember(text, Some(&seen), entry.clone());
            entry
        }
    };
    remember_direct(text, q, env, &entry, &holes);
    match entry.template().and_then(|t| t.instantiate(&holes)) {
        Some(sql) => Ok(sql),
        None => compile_find(q, env, limit, 0, None),
    }
}

/// The facts as an entry compares them: without the named concepts the
/// statement verifies (hole values, part of no shape).
fn shape_facts(facts: &Facts) -> Facts {
    let mut f = facts.clone();
    if f.verified_in_statement.is_some() {
        f.verified_in_statement = Some(InStatement::default());
    }
    f
}

/// Remember `entry` for `text`, in place of `replaced` when that is still
/// remembered.
fn remember(text: &Rc<str>, replaced: Option<&Rc<Entry>>, entry: Rc<Entry>) {
    TEMPLATES.with(|t| {
        let mut texts = t.borrow_mut();
        if texts.len() >= MAX_TEXTS && !texts.contains_key(text) {
            texts.clear();
        }
        let entries = texts.entry(text.clone()).or_default();
        if let Some(slot) = replaced.and_then(|old| entries.iter_mut().find(|e| Rc::ptr_eq(e, old))) {
            *slot = entry;
            return;
        }
        if entries.len() >= MAX_SHAPES_PER_TEXT {
            entries.remove(0);
        }
        entries.push(entry);
    });
}

#[cfg(test)]
mod tests {
    use crate::compile::env::{Env, Facts, InStatement, Limits};
    use crate::compile::find::compile_find;
    use kip_lang::ast::Command;

    fn env(facts: &Facts) -> Env<'_> {
        Env { space: "s", limits: Limits::default(), facts }
    }

    /// The facts `resolve` gives a FIND: named concepts and concept ids left to
    /// the statement, every proposition id existing with its written predicate
    /// (or "p"), the space small enough for unanchored scans.
    fn find_facts_of(q: &kip_lang::ast::FindQuery) -> Facts {
        let named = crate::resolve::collect::named_concepts(&q.where_clauses);
        let literals = crate::resolve::collect::pattern_literals(&q.where_clauses).unwrap_or_default();
        let mut facts = Facts {
            verified_in_statement: Some(InStatement { named_concepts: named }),
            unanchored_over_cap: Some(false),
            ..Facts::default()
        };
        for id in literals.proposition_ids {
            facts.propositions.insert(id, Some("p".into()));
        }
        facts
    }

    /// FINDs with holes in every kind of position, and the FINDs of the
    /// conformance fixtures when `../shared` is beside the project.
    fn find_corpus() -> Vec<String> {
        let mut texts: Vec<String> = [
            r#"FIND(?x) WHERE { ?x {id: "C:5"} }"#,
            r#"FIND(?o.name) WHERE { ?s {type: "Node", name: "n1"} (?s, "links", ?o) }"#,
            r#"FIND(?o.name) WHERE { ?s {type: "Node", name: "n1"} (?s, "links", ?m) (?m, "links", ?o) } LIMIT 5000"#,
            r#"FIND(?o.name) WHERE { ?s {type: "Node", name: "n1"} (?s, "links"{1,3}, ?o) } LIMIT 5000"#,
            r#"FIND(?o.name, ?o.attributes.score, ?x.name) WHERE { ?s {type: "Node", name: "n1"} (?s, "links", ?o) FILTER(?o.attributes.score >= 30) OPTIONAL { (?o, "tagged", ?x) } } ORDER BY ?o.attributes.score DESC LIMIT 20"#,
            r#"FIND(COUNT(?s)) WHERE { ?o {type: "Node", name: "n1"} (?s, "links", ?o) }"#,
            r#"FIND(?x, ?y) WHERE { ?x {id: "C:5"} ?y {id: "C:5"} }"#,
            r#"FIND(?x.name) WHERE { ?x {name: "a"} }"#,
            r#"FIND(?l) WHERE { ?l ("C:3", "p", {type: "T", name: "b"}) }"#,
            r#"FIND(?l) WHERE { ?l ({id: "C:3"}, "p", (id: "P:4:p")) }"#,
            r#"FIND(?x.name) WHERE { ?x {type: "T"} OPTIONAL { (?x, "p", {id: "C:9"}) } NOT { (?x, "q", {type: "U", name: "z"}) } }"#,
            r#"FIND(?x.name) WHERE { UNION { ?x {type: "T", name: "a"} } UNION { ?x {name: "b"} } }"#,
            r#"FIND(?x.name) WHERE { ?x {type: "T", name: "a"} FILTER(?x.name == "a") }"#,
            r#"FIND(?x.name, COUNT(?y)) WHERE { ?x {type: "T", name: "a"} (?x, "p", ?y) } ORDER BY ?x.name"#,
            r#"FIND(?x) WHERE { ?x {id: "C:99999999999999999999"} }"#,
            r#"FIND(?x) WHERE { ?x {id: "P:4"} }"#,
            r#"FIND(?e.name) WHERE { ?e {type: "Event"} FILTER(?e.attributes.start_time >= "2025-06-01") } ORDER BY ?e.attributes.start_time DESC LIMIT 50"#,
            r#"FIND(?e.name) WHERE { ?e {type: "Event"} FILTER("2025" < ?e.attributes.t || !(?e.attributes.n > 3) && ?e.metadata.created_at <= "x") }"#,
            r#"FIND(?l) WHERE { ?l (?s, "p", ?o) FILTER(IS_NOT_NULL(?l.metadata.expires_at)) FILTER(?l.metadata.expires_at < "2026-01-01T00:00:00Z") }"#,
            r#"FIND(?x.name) WHERE { ?x {type: "T", name: "a"} FILTER(?x.metadata._created_at > "2020" && ?x.metadata._version >= "1" && ?x.name > "b") }"#,
            r#"FIND(?o.name) WHERE { ?s {name: "n"} (?s, "p", ?o) OPTIONAL { (?o, "q", ?z) FILTER(?z.attributes.k < "m") } NOT { (?o, "r", ?w) FILTER(?w.attributes.k >= "m") } }"#,
            r#"FIND(?x.name) WHERE { ?x {type: "T"} FILTER(?x.attributes.k == "v" && ?x.attributes.j != "w" && ?x.attributes.i > 4) }"#,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/kip-conformance");
        for file in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(fixture) = std::fs::read_to_string(file.path()) else { continue };
            let Ok(fixture) = serde_json::from_str::<serde_json::Value>(&fixture) else { continue };
            for case in fixture["cases"].as_array().into_iter().flatten() {
                if let Some(text) = case["command"].as_str().filter(|t| t.trim_start().starts_with("FIND")) {
                    texts.push(text.to_string());
                }
            }
        }
        texts
    }

    fn find_of(text: &str, params: &serde_json::Value) -> Result<kip_lang::ast::FindQuery, kip_lang::KipError> {
        let script = kip_lang::bind(kip_lang::parse(text)?, params.as_object().unwrap())?;
        match script.commands.into_iter().next() {
            Some(Command::Find(q)) => Ok(q),
            _ => panic!("not a FIND: {text}"),
        }
    }

    fn unbound(text: &str) -> kip_lang::ast::FindQuery {
        match kip_lang::parse(text).unwrap().commands.into_iter().next() {
            Some(Command::Find(q)) => q,
            _ => panic!("not a FIND: {text}"),
        }
    }

    /// Another call of a text whose placeholders stand only in holes gets,
    /// from its parameters, the shape and holes binding and splitting it
    /// give; a call whose parameters would give another shape, or fail to
    /// bind, gets none.
    #[test]
    fn hole_sources_give_what_binding_gives() {
        use crate::compile::template::{hole_sources, holes_from, split, HoleSource};
        use serde_json::json;
        let cases = [
            (r#"FIND(?o.name) WHERE { ?s {type: "Node", name: :a} (?s, "links", ?o) }"#, json!({"a": "n1"}), json!({"a": "other's"})),
            (r#"FIND(?x) WHERE { ?x {id: :id} }"#, json!({"id": "C:5"}), json!({"id": "C:77"})),
            (
                r#"FIND(?l) WHERE { ?l (:s, "p", {type: "T", name: "b"}) (?l, "q", {name: :n}) }"#,
                json!({"s": "C:3", "n": "x", "unused": 1}),
                json!({"s": "C:4", "n": "", "unused": "y"}),
            ),
            (r#"FIND(?x.name) WHERE { UNION { ?x {type: "T", name: :a} } UNION { ?x {name: :a} } } LIMIT 5"#, json!({"a": "z"}), json!({"a": "w"})),
            (
                r#"FIND(?l) WHERE { ?l (?s, "p", {name: :a}) FILTER(?l.metadata.expires_at < :now || :now >= ?s.attributes.t) }"#,
                json!({"a": "x", "now": "2026-01-01"}),
                json!({"a": "y", "now": "2027-02-02"}),
            ),
            (r#"FIND(?e.name) WHERE { ?e {type: "Event"} FILTER(?e.attributes.n > 3 && ?e.attributes.t >= :c) }"#, json!({"c": "a"}), json!({"c": ""})),
        ];
        for (text, first, next) in cases {
            let q = find_of(text, &first).unwrap();
            let (shape, holes) = split(&q);
            let sources = hole_sources(&unbound(text), &shape, &holes).unwrap_or_else(|| panic!("no sources: {text}"));
            assert!(sources.iter().any(|s| matches!(s, HoleSource::Parameter(..))), "{text}: {sources:?}");
            for params in [&first, &next] {
                let (bound_shape, bound_holes) = split(&find_of(text, params).unwrap());
                assert_eq!(bound_shape, shape, "{text} with {params}");
                assert_eq!(holes_from(&sources, params.as_object().unwrap()), Some(bound_holes), "{text} with {params}");
            }
            // Parameters missing or of another kind: binding fails, or a
            // FILTER value that is no string makes another shape.
            for params in [json!({}), json!({"a": 1, "id": 5, "s": null, "n": ["x"], "now": 3, "c": true})] {
                if let Ok(q) = find_of(text, &params) {
                    assert_ne!(split(&q).0, shape, "{text} with {params}");
                }
                assert_eq!(holes_from(&sources, params.as_object().unwrap()), None, "{text} with {params}");
            }
        }
        // An id parameter that holds a link's id: another shape.
        let text = r#"FIND(?x) WHERE { ?x {id: :id} }"#;
        let (shape, holes) = split(&find_of(text, &json!({"id": "C:5"})).unwrap());
        let sources = hole_sources(&unbound(text), &shape, &holes).unwrap();
        let (link_shape, _) = split(&find_of(text, &json!({"id": "P:5"})).unwrap());
        assert_ne!(link_shape, shape);
        assert_eq!(holes_from(&sources, json!({"id": "P:5"}).as_object().unwrap()), None);
        assert_eq!(holes_from(&sources, json!({"id": "C:99999999999999999999"}).as_object().unwrap()), None);
        // Bound to a link's id, the position is no hole: no sources.
        let (shape, holes) = split(&find_of(text, &json!({"id": "P:5"})).unwrap());
        assert_eq!(hole_sources(&unbound(text), &shape, &holes), None);
        // Placeholders outside holes (a type, a predicate, a FILTER value, LIMIT).
        for (text, params) in [
            (r#"FIND(?x) WHERE { ?x {type: :t, name: :a} }"#, json!({"t": "T", "a": "n"})),
            (r#"FIND(?o) WHERE { ?s {name: :a} (?s, :p, ?o) }"#, json!({"p": "links", "a": "n"})),
            (r#"FIND(?x) WHERE { ?x {name: :a} FILTER(?x.attributes.n == :v) }"#, json!({"v": 3, "a": "n"})),
            (r#"FIND(?x) WHERE { ?x {name: :a} FILTER(?x.attributes.n == :v) }"#, json!({"v": "3", "a": "n"})),
            (r#"FIND(?x) WHERE { ?x {name: :a} FILTER(?x.attributes.n >= :v) }"#, json!({"v": 3, "a": "n"})),
            (r#"FIND(?x) WHERE { ?x {name: :a} FILTER(?x.name >= :v) }"#, json!({"v": "m", "a": "n"})),
            (r#"FIND(?x) WHERE { ?x {name: :a} } LIMIT :l"#, json!({"l": 3, "a": "n"})),
        ] {
            let q = find_of(text, &params).unwrap();
            let (shape, holes) = split(&q);
            assert_eq!(hole_sources(&unbound(text), &shape, &holes), None, "{text}");
        }
    }

    /// A template filled with a call's own values gives what compiling the
    /// call gives, and filled with another call's values of the same shape,
    /// what compiling that one gives.
    #[test]
    fn templates_compile_as_the_compiler_does() {
        use crate::compile::template::{split, Hole, Template};
        let (mut templated, mut with_filter_holes) = (0, 0);
        let corpus = find_corpus();
        for text in &corpus {
            // Fixtures of syntax errors have no query to compile.
            let Ok(script) = kip_lang::parse(text).and_then(|s| kip_lang::bind(s, &serde_json::Map::new())) else { continue };
            let Some(Command::Find(q)) = script.commands.into_iter().next() else { continue };
            let facts = find_facts_of(&q);
            let direct = compile_find(&q, env(&facts), 100, 0, None);
            let (shape, holes) = split(&q);
            let facts_for = |query: &kip_lang::ast::FindQuery| find_facts_of(query);
            let Some(template) = Template::make(&shape, &holes, env(&facts), &facts_for, 100) else {
                assert!(direct.is_err() || holes.is_empty() || text.contains("FILTER"), "not templated: {text}");
                continue;
            };
            templated += 1;
            with_filter_holes += usize::from(holes.iter().any(|h| matches!(h, Hole::Text(_))));
            assert_eq!(template.instantiate(&holes).as_ref(), direct.as_ref().ok(), "{text}");
            // Other values of the same kinds.
            let others: Vec<Hole> = holes
                .iter()
                .enumerate()
                .map(|(k, h)| match h {
                    Hole::Name(s) => Hole::Name(format!("{s}'{k}")),
                    Hole::Concept(n, _) => Hole::Concept(n + 7, format!("C:{}", n + 7)),
                    Hole::Text(s) => Hole::Text(format!("{s}'{k}")),
                })
                .collect();
            let other_q = crate::compile::template::fill(&shape, &others);
            let other_facts = find_facts_of(&other_q);
            let other_direct = compile_find(&other_q, env(&other_facts), 100, 0, None).unwrap();
            assert_eq!(template.instantiate(&others), Some(other_direct), "{text} with {others:?}");
        }
        assert!(templated >= 14, "{templated} of {} FINDs templated", corpus.len());
        assert!(with_filter_holes >= 5, "{with_filter_holes} FINDs templated over FILTER values");
    }
}
