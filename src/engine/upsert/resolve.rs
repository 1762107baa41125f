//! Resolving the references of an UPSERT to existing elements: local
//! handles, `{type, name}` / `{id}` concepts, `(id: …)` propositions,
//! structural `(s, "p", o)` references (higher-order) and bare ids.
//! References never create anything: a missing element is `KIP_3002`.

use crate::compile::ids::ElementKind;
use crate::compile::bound::lit_str;
use crate::compile::ids::{self, ElementRef};
use crate::engine::store as store;
use crate::exec::Ctx;
use kip_lang::ast::{ConceptSelector, Endpoint, PropPattern, Predicate};
use kip_lang::{ErrorCode, KipError};
use std::collections::HashMap;

/// Local handles of one UPSERT statement.
#[derive(Default)]
pub struct Handles(HashMap<String, ElementRef>);

impl Handles {
    pub fn define(&mut self, handle: &str, element: ElementRef) {
        self.0.insert(handle.to_string(), element);
    }

    fn get(&self, handle: &str) -> Result<ElementRef, KipError> {
        self.0.get(handle).copied().ok_or_else(|| {
            KipError::new(ErrorCode::ReferenceError, format!("handle ?{handle} is not defined"))
                .with_hint("Define the handle in a CONCEPT or PROPOSITION block above its first use.")
        })
    }
}

pub fn not_found(what: impl std::fmt::Display) -> KipError {
    KipError::new(ErrorCode::NotFound, format!("{what} does not exist"))
        .with_hint("References in UPSERT must point to existing elements (or to handles defined above). Create the element first, or check its type, name or id with SEARCH / FIND.")
}

/// A subject/object/target reference.
pub fn endpoint(ctx: &Ctx, handles: &Handles, endpoint: &Endpoint) -> Result<ElementRef, KipError> {
    match endpoint {
        Endpoint::Var(h) => handles.get(h),
        Endpoint::Concept(sel) => concept(ctx, sel),
        Endpoint::Proposition(p) => proposition(ctx, handles, p).map(|(r, _)| r),
        Endpoint::Id(id) => {
            let text = lit_str(id)?;
            let parsed = ids::parse(text)?;
            match parsed.kind {
                ElementKind::Concept => concept_id(ctx, text),
                ElementKind::Proposition => proposition_id(ctx, text).map(|(r, _)| r),
            }
        }
    }
}

/// An existing concept by `{type, name}` or `{id}`.
pub fn concept(ctx: &Ctx, sel: &ConceptSelector) -> Result<ElementRef, KipError> {
    match sel {
        ConceptSelector::TypeName { type_name, name } => {
            let (t, n) = (lit_str(type_name)?, lit_str(name)?);
            store::concept_by_identity(&ctx.space, t, n, false)?
                .map(|row| ElementRef::concept(row.id))
                .ok_or_else(|| not_found(format_args!("concept {{type: {t:?}, name: {n:?}}}")))
        }
        ConceptSelector::Id(id) => concept_id(ctx, lit_str(id)?),
        _ => Err(KipError::syntax("inside UPSERT a concept reference needs {type: …, name: …} or {id: …}")),
    }
}

fn concept_id(ctx: &Ctx, text: &str) -> Result<ElementRef, KipError> {
    let parsed = ids::parse_concept(text)?;
    let row = match parsed.id {
        Some(id) => store::concept_by_id(&ctx.space, id, false)?,
        None => None,
    };
    row.map(|r| ElementRef::concept(r.id)).ok_or_else(|| not_found(format_args!("concept {text:?}")))
}

/// An existing proposition (its reference and predicate).
pub fn proposition(ctx: &Ctx, handles: &Handles, pattern: &PropPattern) -> Result<(ElementRef, String), KipError> {
    match pattern {
        PropPattern::Id(id) => proposition_id(ctx, lit_str(id)?),
        PropPattern::Triple(t) => {
            let predicate = match &t.predicate {
                Predicate::Literal(p) => lit_str(p)?,
                _ => return Err(KipError::syntax("inside UPSERT a proposition needs a single literal predicate")),
            };
            let s = endpoint(ctx, handles, &t.subject)?;
            let o = endpoint(ctx, handles, &t.object)?;
            store::proposition_by_triple(&ctx.space, s, predicate, o, false)?
                .map(|row| (ElementRef::proposition(row.id), row.predicate))
                .ok_or_else(|| not_found(format_args!("proposition ({}, {predicate:?}, {})", describe(s), describe(o))))
        }
    }
}

fn proposition_id(ctx: &Ctx, text: &str) -> Result<(ElementRef, String), KipError> {
    let parsed = ids::parse_proposition(text)?;
    let row = match parsed.id {
        Some(id) => store::proposition_by_id(&ctx.space, id, parsed.predicate.as_deref(), false)?,
        None => None,
    };
    row.map(|r| (ElementRef::proposition(r.id), r.predicate)).ok_or_else(|| not_found(format_args!("proposition {text:?}")))
}

/// `C:<n>` / `P:<n>` for messages.
pub fn describe(r: ElementRef) -> String {
    match r.kind {
        ElementKind::Concept => format!("C:{}", r.id),
        ElementKind::Proposition => format!("P:{}", r.id),
    }
}
