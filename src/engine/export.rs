//! Execution of EXPORT (RC10 §5.3): the elements bound to the target
//! variable become one idempotent UPSERT statement — a knowledge capsule.
//!
//! The capsule is built as a `kip_lang::ast::Upsert` and rendered with the
//! canonical printer, so quoting and escaping are the language's own.
//! Exported elements get local handles (`?c<id>`, `?p<id>`); elements they
//! point to outside the page are referenced by `{type, name}` (concepts) or
//! by a nested structural clause (propositions: link ids are not portable).
//! Structural clauses nest at most `MAX_NESTED_LINKS` deep: a longer chain of
//! links about links is cut into identity-only blocks, so every capsule kip
//! writes stays within what kip's parser reads back.
//! Reserved `_` metadata is engine bookkeeping and never exported.

mod load;

use super::limits::page_size;
use crate::compile::bound::opt_lit;
use crate::compile::env::Env;
use crate::compile::export::{page_sql, rank_page_sql, Rank};
use crate::engine::envelope::Outcome;
use crate::exec::{cursor, spi, Access, Ctx};
use crate::resolve;
use load::{load_closure, EndpointId, Stored};
use kip_lang::ast::{
    Bindable, Command, ConceptBlock, ConceptSelector, Endpoint, Export, Field, Fields, Predicate, PropPattern,
    PropositionBlock, Script, Triple, Upsert, UpsertItem, ValueOrParam,
};
use kip_lang::{ErrorCode, KipError};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};

/// One page of the elements bound to the export target.
struct Page {
    /// Element ids of the page, in page order.
    ids: Vec<i64>,
    /// Where the next page starts, when more matched elements follow.
    next: Option<Start>,
}

/// Where a page starts.
#[derive(Clone, Copy)]
enum Start {
    /// After the element of this rank and id (a keyset token), or at the
    /// first element when `None`.
    After(Option<(Rank, i64)>),
    /// After skipping this many elements (a token with only an offset).
    Offset(u64),
}

/// At most `limit` of the distinct elements bound to `?target`, in page
/// order, from `start`.
fn select_page(export: &Export, ctx: &Ctx, start: Start, limit: u64) -> Result<Page, KipError> {
    let facts = resolve::pattern_facts(&ctx.space, &export.where_clauses, Access::ReadOnly)?;
    let env = Env { space: ctx.space.name(), limits: resolve::limits(), facts: &facts };
    let after = match start {
        Start::After(after) => after,
        Start::Offset(offset) => return offset_page(export, env, offset, limit),
    };
    // Rank by rank, after the last element for its rank, until the page
    // and the one element telling that another follows are read.
    let mut rows: Vec<(Rank, i64)> = Vec::new();
    for rank in Rank::ALL.into_iter().filter(|r| after.map_or(true, |(last, _)| *r >= last)) {
        let want = (limit + 1).saturating_sub(rows.len() as u64);
        if want == 0 {
            break;
        }
        let from = after.filter(|(last, _)| *last == rank).map(|(_, id)| id);
        let Some(compiled) = rank_page_sql(&export.where_clauses, &export.target, env, rank, from, want - 1)? else {
            continue;
        };
        let found = spi::query(&compiled.sql, compiled.params.values(), Access::ReadOnly)?;
        rows.extend(found.iter().filter_map(|r| r.first().and_then(Value::as_i64)).map(|id| (rank, id)));
    }
    let more = rows.len() as u64 > limit;
    rows.truncate(limit as usize);
    let next = if more { rows.last().map(|last| Start::After(Some(*last))) } else { None };
    Ok(Page { ids: rows.into_iter().map(|(_, id)| id).collect(), next })
}

/// [`select_page`] for a token that carries only an offset.
fn offset_page(export: &Export, env: Env, offset: u64, limit: u64) -> Result<Page, KipError> {
    let compiled = page_sql(&export.where_clauses, &export.target, env, offset, limit)?;
    let rows = spi::query(&compiled.sql, compiled.params.values(), Access::ReadOnly)?;
    let mut ids: Vec<i64> = rows.iter().filter_map(|r| r.first().and_then(Value::as_i64)).collect();
    let more = ids.len() as u64 > limit;
    ids.truncate(limit as usize);
    Ok(Page { ids, next: more.then_some(Start::Offset(offset.saturating_add(limit))) })
}

/// Attempts at reading a consistent page when concurrent deletes race it.
const EXPORT_ATTEMPTS: u32 = 4;

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Export(export) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "EXPORT executor called with another command"));
    };
    let limit = page_size(opt_lit(&export.limit)?);
    let shape = cursor::query_shape(&ctx.space, command);
    let start = match opt_lit(&export.cursor)? {
        None => Start::After(None),
        Some(token) => {
            let resume = cursor::decode_resume(&shape, &token)?;
            match resume.after.as_deref() {
                None => Start::Offset(resume.offset),
                Some(&[rank, id]) => match Rank::from_number(rank) {
                    Some(rank) => Start::After(Some((rank, id))),
                    None => return Err(cursor::invalid(&token)),
                },
                Some(_) => return Err(cursor::invalid(&token)),
            }
        }
    };
    // Under READ COMMITTED each query of the page and of its closure sees
    // its own snapshot, so a concurrent DELETE can remove an element between
    // them ("vanished"). Starting over from the page query sees the graph
    // after that delete; a few attempts make the race practically harmless.
    let mut attempt = 0;
    let (page, upsert, stubs) = loop {
        attempt += 1;
        let page = select_page(export, ctx, start, limit)?;
        let loaded = load_closure(ctx, &page.ids)?;
        match Capsule::new(&page.ids, &loaded).and_then(|capsule| Ok((capsule.build(&page.ids)?, capsule.stubs.len()))) {
            Ok((upsert, stubs)) => break (page, upsert, stubs),
            Err(e) if e.code == ErrorCode::InternalError && attempt < EXPORT_ATTEMPTS => continue,
            Err(e) => return Err(e),
        }
    };
    // LIMIT 0 has no next page: a token for the same start would loop.
    let next_cursor = match page.next {
        _ if limit == 0 => None,
        Some(Start::After(Some((rank, id)))) => cursor::encode_resume(&shape, 0, Some(&[rank as i64, id]))?,
        Some(Start::Offset(offset)) => cursor::encode(&shape, offset)?,
        Some(Start::After(None)) | None => None,
    };
    // The counts are of the page's elements: an identity-only block of a
    // link outside the page (a stub) names an element exported elsewhere.
    let (concepts, blocks) = count(&upsert);
    let propositions = blocks - stubs;
    let text = kip_lang::print(&Script { commands: vec![Command::Upsert(upsert)] });
    Ok(Outcome { result: json!({ "capsule": text, "concepts": concepts, "propositions": propositions }).into(), next_cursor })
}


fn count(upsert: &Upsert) -> (usize, usize) {
    let concepts = upsert.items.iter().filter(|i| matches!(i, UpsertItem::Concept(_))).count();
    (concepts, upsert.items.len() - concepts)
}

fn handle(id: i64, concept: bool) -> String {
    format!("{}{id}", if concept { "c" } else { "p" })
}

fn lit(s: &str) -> Bindable<String> {
    Bindable::Lit(s.to_string())
}

/// Object entries as UPSERT fields; `None` when there is nothing to write.
fn fields(map: &Map<String, Value>, skip_reserved: bool) -> Option<Fields> {
    let out: Fields = map
        .iter()
        .filter(|(k, _)| !(skip_reserved && k.starts_with('_')))
        .map(|(k, v)| Field { key: k.clone(), value: ValueOrParam::Value(v.clone()) })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// How many outside propositions may be nested inside one another in a
/// structural reference `((s, "p", o), "q", x)`. A longer chain of links
/// about links would make the capsule nest deeper than the KIP parser
/// accepts, so the links beyond this depth are written as identity-only
/// `PROPOSITION` blocks with handles instead (see [`Capsule::stubs`]).
const MAX_NESTED_LINKS: usize = 3;

struct Capsule<'a> {
    /// Ids with a handle in this capsule: the page, plus the outside
    /// propositions written as identity-only blocks.
    page: HashSet<i64>,
    /// Outside propositions written as identity-only blocks.
    stubs: HashSet<i64>,
    /// The page's elements and everything they reference.
    loaded: &'a BTreeMap<i64, Stored>,
}

impl Capsule<'_> {
    fn new<'a>(page: &[i64], loaded: &'a BTreeMap<i64, Stored>) -> Result<Capsule<'a>, KipError> {
        let mut capsule = Capsule { page: page.iter().copied().collect(), stubs: HashSet::new(), loaded };
        capsule.find_stubs()?;
        Ok(capsule)
    }

    /// Walk the references of every block (explicit stack, no recursion on
    /// the graph's depth) and turn each outside proposition that would sit
    /// more than [`MAX_NESTED_LINKS`] levels deep into a stub block; stubs
    /// are blocks too, so their own references are walked in turn.
    fn find_stubs(&mut self) -> Result<(), KipError> {
        let mut blocks: Vec<i64> = self.page.iter().copied().collect();
        while let Some(block) = blocks.pop() {
            pgrx::check_for_interrupts!();
            let Stored::Proposition { subject, object, .. } = self.stored(block)? else { continue };
            let mut stack: Vec<(EndpointId, usize)> = vec![(*subject, 1), (*object, 1)];
            while let Some((endpoint, depth)) = stack.pop() {
                let EndpointId::Proposition(id) = endpoint else { continue };
                if self.page.contains(&id) {
                    continue;
                }
                if depth > MAX_NESTED_LINKS {
                    self.page.insert(id);
                    self.stubs.insert(id);
                    blocks.push(id);
                    continue;
                }
                if let Stored::Proposition { subject, object, .. } = self.stored(id)? {
                    stack.push((*subject, depth + 1));
                    stack.push((*object, depth + 1));
                }
            }
        }
        Ok(())
    }

    fn stored(&self, id: i64) -> Result<&Stored, KipError> {
        self.loaded.get(&id).ok_or_else(|| {
            KipError::new(ErrorCode::InternalError, format!("element {id} vanished while being exported"))
                .with_hint("Retry the EXPORT.")
        })
    }

    /// Blocks in dependency order: concepts (page order), then propositions,
    /// each after every exported proposition it refers to.
    fn build(&self, ids: &[i64]) -> Result<Upsert, KipError> {
        let mut items = Vec::with_capacity(ids.len());
        let mut links = Vec::new();
        for &id in ids {
            match self.stored(id)? {
                Stored::Concept { type_name, name, attributes, metadata } => {
                    items.push(UpsertItem::Concept(ConceptBlock {
                        handle: handle(id, true),
                        identity: ConceptSelector::TypeName { type_name: lit(type_name), name: lit(name) },
                        expect_version: None,
                        set_attributes: fields(attributes, false),
                        set_propositions: None,
                        metadata: fields(metadata, true),
                    }));
                }
                Stored::Proposition { .. } => links.push(id),
            }
        }
        links.extend(self.stubs.iter().copied());
        links.sort_unstable();
        for id in self.dependency_order(&links)? {
            let Stored::Proposition { subject, predicate, object, attributes, metadata } = self.stored(id)? else {
                continue;
            };
            // A stub only names the link (it must exist, or is created bare).
            let stub = self.stubs.contains(&id);
            items.push(UpsertItem::Proposition(PropositionBlock {
                handle: Some(handle(id, false)),
                identity: PropPattern::Triple(Box::new(Triple {
                    subject: self.reference(*subject)?,
                    predicate: Predicate::Literal(lit(predicate)),
                    object: self.reference(*object)?,
                })),
                expect_version: None,
                set_attributes: if stub { None } else { fields(attributes, false) },
                metadata: if stub { None } else { fields(metadata, true) },
            }));
        }
        Ok(Upsert { items, metadata: None })
    }

    /// How a block refers to an endpoint: its handle when exported on this
    /// page (or a stub), otherwise its portable identity. The recursion is
    /// at most `MAX_NESTED_LINKS` deep: `find_stubs` gave a handle to every
    /// outside link further down.
    fn reference(&self, endpoint: EndpointId) -> Result<Endpoint, KipError> {
        let (EndpointId::Concept(id) | EndpointId::Proposition(id)) = endpoint;
        if self.page.contains(&id) {
            return Ok(Endpoint::Var(handle(id, matches!(endpoint, EndpointId::Concept(_)))));
        }
        Ok(match self.stored(id)? {
            Stored::Concept { type_name, name, .. } => {
                Endpoint::Concept(ConceptSelector::TypeName { type_name: lit(type_name), name: lit(name) })
            }
            Stored::Proposition { subject, predicate, object, .. } => {
                Endpoint::Proposition(Box::new(PropPattern::Triple(Box::new(Triple {
                    subject: self.reference(*subject)?,
                    predicate: Predicate::Literal(lit(predicate)),
                    object: self.reference(*object)?,
                }))))
            }
        })
    }

    /// Exported propositions whose references (direct, or nested inside an
    /// outside proposition's structural clause) use `id`'s handle.
    fn page_dependencies(&self, endpoint: EndpointId, out: &mut Vec<i64>) -> Result<(), KipError> {
        let mut stack = vec![endpoint];
        while let Some(endpoint) = stack.pop() {
            let EndpointId::Proposition(id) = endpoint else { continue };
            if self.page.contains(&id) {
                out.push(id);
                continue;
            }
            if let Stored::Proposition { subject, object, .. } = self.stored(id)? {
                stack.push(*subject);
                stack.push(*object);
            }
        }
        Ok(())
    }

    /// `links` (sorted by id) reordered so every handle is defined before
    /// use; ties keep id order. A proposition's endpoints exist before it, so
    /// this is normally plain id order.
    fn dependency_order(&self, links: &[i64]) -> Result<Vec<i64>, KipError> {
        let mut deps = BTreeMap::new();
        for &id in links {
            let mut d = Vec::new();
            if let Stored::Proposition { subject, object, .. } = self.stored(id)? {
                self.page_dependencies(*subject, &mut d)?;
                self.page_dependencies(*object, &mut d)?;
            }
            deps.insert(id, d);
        }
        // Passes in id order; a pass defers links whose dependencies are not
        // emitted yet. One pass is the normal case.
        let mut done: HashSet<i64> = HashSet::new();
        let mut order = Vec::with_capacity(links.len());
        let mut pending: Vec<i64> = links.to_vec();
        while !pending.is_empty() {
            let before = pending.len();
            let mut deferred = Vec::new();
            for id in pending {
                if deps[&id].iter().all(|d| done.contains(d)) {
                    done.insert(id);
                    order.push(id);
                } else {
                    deferred.push(id);
                }
            }
            if deferred.len() == before {
                // A cycle cannot be stored; keep id order rather than loop.
                order.extend(deferred);
                break;
            }
            pending = deferred;
        }
        Ok(order)
    }
}
