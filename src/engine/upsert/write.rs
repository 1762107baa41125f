//! Executing the blocks of an UPSERT statement: match-or-create, guards,
//! shallow merges and the links of `SET PROPOSITIONS`.

use super::resolve::{self, describe, Handles};
use crate::compile::bound::{layered, lit_str, lit_u64, optional_object};
use crate::compile::ids::{self, ElementRef};
use crate::engine::store::{self as store, JsonMap};
use crate::exec::{Ctx, Origin};
use crate::resolve::protection::{self, Protection, CORE_DIRECTIVES};
use kip_lang::ast::{ConceptBlock, ConceptSelector, Endpoint, PropPattern, Predicate, PropositionBlock, SetProposition, UIntArg};
use kip_lang::{ErrorCode, KipError};

fn version_conflict(what: &str, expected: u64, current: Option<i64>) -> KipError {
    let state = match current {
        Some(v) => format!("its current _version is {v}"),
        None => "it does not exist".to_string(),
    };
    let message = if expected == 0 {
        format!("EXPECT VERSION 0 requires {what} not to exist yet, but it does (_version {})", current.unwrap_or_default())
    } else {
        format!("EXPECT VERSION {expected} failed for {what}: {state}")
    };
    KipError::new(ErrorCode::VersionConflict, message)
        .with_hint("The whole UPSERT was aborted and nothing was written. Re-read the element to get its fresh _version and value, re-apply your change, then retry the guarded write.")
}

fn expected(guard: &Option<UIntArg>) -> Result<Option<u64>, KipError> {
    guard.as_ref().map(lit_u64).transpose()
}

fn check_version(what: &str, expected: Option<u64>, current: i64) -> Result<(), KipError> {
    match expected {
        Some(v) if i64::try_from(v).ok() != Some(current) => Err(version_conflict(what, v, Some(current))),
        _ => Ok(()),
    }
}

fn self_loop(subject: ElementRef, predicate: &str) -> KipError {
    KipError::syntax(format!(
        "Subject and object cannot be the same: ({}, {predicate:?}, {0}) would be a self-loop",
        describe(subject)
    ))
    .with_hint("A proposition links two different elements. Check the handles and identities of subject and object.")
}

/// `core_directives` of `$self` / `$system` may be written once (bootstrap)
/// and then only with the very same value.
fn guard_directives(ctx: &Ctx, type_name: &str, name: &str, id: Option<i64>, attrs: &JsonMap) -> Result<(), KipError> {
    let Some(new) = attrs.get(CORE_DIRECTIVES) else { return Ok(()) };
    if protection::classify(type_name, name) != Protection::SystemActor {
        return Ok(());
    }
    let id = match id {
        Some(id) => id,
        None => match store::concept_by_identity(&ctx.space, type_name, name, false)? {
            Some(row) => row.id,
            None => return Ok(()),
        },
    };
    match store::concept_attribute(&ctx.space, id, CORE_DIRECTIVES)? {
        Some(current) if &current != new => Err(protection::directives_refused(name)),
        _ => Ok(()),
    }
}

/// A caller's write of the link `(subject, predicate, object)` must not
/// change a link anchoring protected structure.
fn check_link(ctx: &Ctx, subject: ElementRef, predicate: &str, object: ElementRef, attrs: &JsonMap, meta: &JsonMap) -> Result<(), KipError> {
    if ctx.origin != Origin::Caller {
        return Ok(());
    }
    let concept = |e: ElementRef| e.is_concept().then_some(e.id);
    protection::check_link_upsert(&ctx.space, concept(subject), predicate, concept(object), attrs, meta)
}

/// One `CONCEPT ?h { … }` block; returns the concept's row id.
pub fn concept_block(ctx: &Ctx, handles: &mut Handles, block: &ConceptBlock, statement_meta: &JsonMap) -> Result<i64, KipError> {
    let attrs = optional_object(block.set_attributes.as_deref())?;
    let meta = layered(statement_meta, block.metadata.as_deref())?;
    let guard = expected(&block.expect_version)?;
    // The immutable core gains no links (`check_core_link`): whether the
    // block's concept is part of it, from its identity.
    let core: Option<(String, String)>;
    let immutable = |t: &str, n: &str| protection::is_immutable(t, n).then(|| (t.to_string(), n.to_string()));
    let id = match &block.identity {
        ConceptSelector::TypeName { type_name, name } => {
            let (t, n) = (lit_str(type_name)?, lit_str(name)?);
            core = immutable(t, n);
            let what = format!("concept {}", protection::describe(t, n));
            guard_directives(ctx, t, n, None, &attrs)?;
            if ctx.origin == Origin::Caller {
                protection::check_concept_upsert(&ctx.space, t, n, &attrs, &meta)?;
            }
            match guard {
                None => store::concept_upsert(&ctx.space, t, n, &attrs, &meta)?,
                Some(0) => match store::concept_create(&ctx.space, t, n, &attrs, &meta)? {
                    Some(id) => id,
                    None => {
                        let current = store::concept_by_identity(&ctx.space, t, n, false)?.map(|r| r.version);
                        return Err(version_conflict(&what, 0, current));
                    }
                },
                Some(v) => {
                    let row = store::concept_by_identity(&ctx.space, t, n, true)?.ok_or_else(|| version_conflict(&what, v, None))?;
                    check_version(&what, guard, row.version)?;
                    store::concept_patch(&ctx.space, row.id, &attrs, &meta)?;
                    row.id
                }
            }
        }
        ConceptSelector::Id(id) => {
            let text = lit_str(id)?;
            let parsed = ids::parse_concept(text)?;
            let row = match parsed.id {
                Some(id) => store::concept_by_id(&ctx.space, id, guard.is_some())?,
                None => None,
            };
            let row = row.ok_or_else(|| resolve::not_found(format_args!("concept {text:?}")))?;
            let what = format!("concept {text}");
            if guard == Some(0) {
                return Err(version_conflict(&what, 0, Some(row.version)));
            }
            check_version(&what, guard, row.version)?;
            core = immutable(&row.type_name, &row.name);
            guard_directives(ctx, &row.type_name, &row.name, Some(row.id), &attrs)?;
            if ctx.origin == Origin::Caller {
                protection::check_concept_upsert(&ctx.space, &row.type_name, &row.name, &attrs, &meta)?;
            }
            store::concept_patch(&ctx.space, row.id, &attrs, &meta)?;
            row.id
        }
        _ => return Err(KipError::syntax("a CONCEPT block is identified by {type: …, name: …} or {id: …}")),
    };
    block_links(ctx, handles, block, id, &meta, core.as_ref())?;
    Ok(id)
}

/// KIP_3004 when a caller's link from the immutable core node `core` is
/// neither there already nor its anchoring in `CoreSchema`: the core's
/// links are that anchoring, which the Genesis capsule writes (a caller may
/// run it on a space of its own) and re-asserts, and nothing else.
fn check_core_link(ctx: &Ctx, core: Option<&(String, String)>, link: &store::LinkWrite<'_>) -> Result<(), KipError> {
    let Some((t, n)) = core.filter(|_| ctx.origin == Origin::Caller) else { return Ok(()) };
    if store::proposition_by_triple(&ctx.space, link.subject, link.predicate, link.object, false)?.is_some() {
        return Ok(());
    }
    let anchoring = link.predicate == protection::BELONGS_TO_DOMAIN
        && link.object.is_concept()
        && store::concept_by_id(&ctx.space, link.object.id, false)?
            .is_some_and(|o| o.type_name == protection::DOMAIN && o.name == protection::CORE_SCHEMA);
    if anchoring {
        return Ok(());
    }
    Err(protection::refused(&format!("add a {:?} link from", link.predicate), t, n))
}

/// After a concept block's own write: define its handle, then write its
/// `SET PROPOSITIONS` links.
fn block_links(ctx: &Ctx, handles: &mut Handles, block: &ConceptBlock, id: i64, meta: &JsonMap, core: Option<&(String, String)>) -> Result<(), KipError> {
    let subject = ElementRef::concept(id);
    handles.define(&block.handle, subject);
    // Only a link from protected structure can anchor it; a block named by
    // `{type, name}` tells without a query whether its concept is that.
    let may_anchor = match &block.identity {
        ConceptSelector::TypeName { type_name, name } => {
            protection::classify(lit_str(type_name)?, lit_str(name)?) == Protection::Structure
        }
        _ => true,
    };
    let mut links = Vec::new();
    for item in block.set_propositions.iter().flatten() {
        let link = set_proposition(ctx, handles, subject, item, meta, may_anchor)?;
        check_core_link(ctx, core, &link)?;
        links.push(link);
    }
    write_links(ctx, &links)
}

/// A concept block that can share one statement with its neighbours (see
/// [`concept_run`]): identified by `{type, name}`, no `EXPECT VERSION`,
/// something to write, and no protection rule to check (an ordinary node:
/// neither structure nor a system actor). Its identity, attributes and
/// layered metadata.
pub struct Plain<'a> {
    pub block: &'a ConceptBlock,
    pub type_name: &'a str,
    pub name: &'a str,
    pub attrs: JsonMap,
    pub meta: JsonMap,
}

impl<'a> Plain<'a> {
    pub fn of(block: &'a ConceptBlock, statement_meta: &JsonMap) -> Result<Option<Plain<'a>>, KipError> {
        let ConceptSelector::TypeName { type_name, name } = &block.identity else { return Ok(None) };
        if block.expect_version.is_some() {
            return Ok(None);
        }
        let (type_name, name) = (lit_str(type_name)?, lit_str(name)?);
        if protection::classify(type_name, name) != Protection::None {
            return Ok(None);
        }
        let attrs = optional_object(block.set_attributes.as_deref())?;
        let meta = layered(statement_meta, block.metadata.as_deref())?;
        if attrs.is_empty() && meta.is_empty() {
            return Ok(None);
        }
        Ok(Some(Plain { block, type_name, name, attrs, meta }))
    }

    /// Whether this block's links name the concept `{type_name, name}`
    /// anywhere (as a target, or inside a structural reference).
    pub fn mentions(&self, type_name: &str, name: &str) -> bool {
        self.block.set_propositions.iter().flatten().any(|p| endpoint_mentions(&p.target, type_name, name))
    }
}

fn endpoint_mentions(e: &Endpoint, type_name: &str, name: &str) -> bool {
    match e {
        Endpoint::Concept(ConceptSelector::TypeName { type_name: t, name: n }) => {
            lit_str(t).ok() == Some(type_name) && lit_str(n).ok() == Some(name)
        }
        Endpoint::Proposition(p) => match p.as_ref() {
            PropPattern::Triple(t) => endpoint_mentions(&t.subject, type_name, name) || endpoint_mentions(&t.object, type_name, name),
            PropPattern::Id(_) => false,
        },
        _ => false,
    }
}

/// Consecutive plain concept blocks: their concepts in one statement, then
/// each block's handle and links in order, which is what the blocks one by
/// one would do, as long as no block's links name a concept of a later
/// block of the run (the caller ends the run before such a block) and no
/// identity repeats. Returns the row ids in block order.
pub fn concept_run(ctx: &Ctx, handles: &mut Handles, run: &[Plain<'_>]) -> Result<Vec<i64>, KipError> {
    let writes: Vec<store::ConceptWrite<'_>> = run
        .iter()
        .map(|p| store::ConceptWrite { type_name: p.type_name, name: p.name, attrs: &p.attrs, meta: &p.meta })
        .collect();
    let ids = store::concepts_merge(&ctx.space, &writes)?;
    for (p, id) in run.iter().zip(&ids) {
        // A run holds no protected node (`Plain::of`).
        block_links(ctx, handles, p.block, *id, &p.meta, None)?;
    }
    Ok(ids)
}

/// One `("predicate", target) [WITH METADATA {…}]` entry, checked: additive;
/// an existing `(s, p, o)` link only gets the metadata merged in.
fn set_proposition<'a>(
    ctx: &Ctx,
    handles: &Handles,
    subject: ElementRef,
    item: &'a SetProposition,
    block_meta: &JsonMap,
    may_anchor: bool,
) -> Result<store::LinkWrite<'a>, KipError> {
    let predicate = lit_str(&item.predicate)?;
    let object = resolve::endpoint(ctx, handles, &item.target)?;
    if object == subject {
        return Err(self_loop(subject, predicate));
    }
    let meta = layered(block_meta, item.metadata.as_deref())?;
    if may_anchor {
        check_link(ctx, subject, predicate, object, &JsonMap::new(), &meta)?;
    }
    Ok(store::LinkWrite { subject, predicate, object, meta })
}

/// The links of a block's `SET PROPOSITIONS`: one statement for all of them
/// (fewer round trips, and one firing of the history triggers instead of
/// one per link), or one per link when a triple repeats (a statement cannot
/// update the same row twice; the later entry's metadata merges last).
fn write_links(ctx: &Ctx, links: &[store::LinkWrite<'_>]) -> Result<(), KipError> {
    let distinct = links.iter().enumerate().all(|(i, a)| {
        links[..i].iter().all(|b| (b.subject, b.predicate, b.object) != (a.subject, a.predicate, a.object))
    });
    match links {
        [] => Ok(()),
        [_, _, ..] if distinct => store::propositions_merge(&ctx.space, links),
        _ => {
            for l in links {
                store::proposition_upsert(&ctx.space, l.subject, l.predicate, l.object, &JsonMap::new(), &l.meta)?;
            }
            Ok(())
        }
    }
}

/// One `PROPOSITION [?h] { … }` block; returns the link's row id and predicate.
pub fn proposition_block(ctx: &Ctx, handles: &mut Handles, block: &PropositionBlock, statement_meta: &JsonMap) -> Result<(i64, String), KipError> {
    let attrs = optional_object(block.set_attributes.as_deref())?;
    let meta = layered(statement_meta, block.metadata.as_deref())?;
    let guard = expected(&block.expect_version)?;
    let (id, predicate) = match &block.identity {
        PropPattern::Id(id) => {
            let text = lit_str(id)?;
            let parsed = ids::parse_proposition(text)?;
            let row = match parsed.id {
                Some(id) => store::proposition_by_id(&ctx.space, id, parsed.predicate.as_deref(), guard.is_some())?,
                None => None,
            };
            let row = row.ok_or_else(|| resolve::not_found(format_args!("proposition {text:?}")))?;
            let what = format!("proposition {text}");
            if guard == Some(0) {
                return Err(version_conflict(&what, 0, Some(row.version)));
            }
            check_version(&what, guard, row.version)?;
            if ctx.origin == Origin::Caller {
                protection::check_link_patch(&ctx.space, row.id, &attrs, &meta)?;
            }
            store::proposition_patch(&ctx.space, row.id, &attrs, &meta)?;
            (row.id, row.predicate)
        }
        PropPattern::Triple(t) => {
            let predicate = match &t.predicate {
                Predicate::Literal(p) => lit_str(p)?.to_string(),
                _ => return Err(KipError::syntax("inside UPSERT a proposition needs a single literal predicate")),
            };
            let s = resolve::endpoint(ctx, handles, &t.subject)?;
            let o = resolve::endpoint(ctx, handles, &t.object)?;
            if s == o {
                return Err(self_loop(s, &predicate));
            }
            check_link(ctx, s, &predicate, o, &attrs, &meta)?;
            // A subject written as a core node's identity tells without a query.
            if let Endpoint::Concept(ConceptSelector::TypeName { type_name, name }) = &t.subject {
                let core = (lit_str(type_name)?.to_string(), lit_str(name)?.to_string());
                if protection::is_immutable(&core.0, &core.1) {
                    let link = store::LinkWrite { subject: s, predicate: &predicate, object: o, meta: JsonMap::new() };
                    check_core_link(ctx, Some(&core), &link)?;
                }
            }
            let what = format!("proposition ({}, {predicate:?}, {})", describe(s), describe(o));
            let id = match guard {
                None => store::proposition_upsert(&ctx.space, s, &predicate, o, &attrs, &meta)?,
                Some(0) => match store::proposition_create(&ctx.space, s, &predicate, o, &attrs, &meta)? {
                    Some(id) => id,
                    None => {
                        let current = store::proposition_by_triple(&ctx.space, s, &predicate, o, false)?.map(|r| r.version);
                        return Err(version_conflict(&what, 0, current));
                    }
                },
                Some(v) => {
                    let row = store::proposition_by_triple(&ctx.space, s, &predicate, o, true)?
                        .ok_or_else(|| version_conflict(&what, v, None))?;
                    check_version(&what, guard, row.version)?;
                    store::proposition_patch(&ctx.space, row.id, &attrs, &meta)?;
                    row.id
                }
            };
            (id, predicate)
        }
    };
    if let Some(h) = &block.handle {
        handles.define(h, ElementRef::proposition(id));
    }
    Ok((id, predicate))
}
