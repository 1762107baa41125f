//! Static checks of one UPSERT statement, before anything is written:
//! reserved `_` metadata keys (`KIP_2002`), local handles defined once
//! (`KIP_1001`) and before use (`KIP_3001`), names of newly defined types and predicates (`KIP_1002`),
//! and the list of types and predicates that must already be registered —
//! all of them checked afterwards with a single query (`KIP_2001`).
//!
//! Types and predicates defined by an earlier block of the same statement
//! count as registered for the blocks after it (blocks run top to bottom).
//! `{type: "$ConceptType", name: "$ConceptType"}` defines itself: that is how
//! the Genesis capsule can run on an empty space.

use crate::compile::bound::lit_str;
use crate::engine::limits;
use crate::resolve::registry::{Kind, Requirement};
use crate::schema::{naming, reserved, CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::ast::{ConceptBlock, ConceptSelector, Endpoint, PropPattern, Predicate, PropositionBlock, Upsert, UpsertItem};
use kip_lang::{ErrorCode, KipError};
use std::collections::HashSet;

#[derive(Default)]
struct Walk {
    handles: HashSet<String>,
    defined_types: HashSet<String>,
    defined_predicates: HashSet<String>,
    needed: Vec<Requirement>,
}

/// Check the statement; return the names that must be registered already.
pub fn check(upsert: &Upsert) -> Result<Vec<Requirement>, KipError> {
    check_all(&[upsert])
}

/// Check the UPSERT statements of one text as one walk: a type or
/// predicate an earlier statement defines counts for the later ones, as it
/// does when they run, while each statement has handles of its own.
pub fn check_all(upserts: &[&Upsert]) -> Result<Vec<Requirement>, KipError> {
    let mut walk = Walk::default();
    for upsert in upserts {
        reserved::check_metadata_fields(upsert.metadata.as_deref())?;
        walk.handles.clear();
        for item in &upsert.items {
            match item {
                UpsertItem::Concept(block) => walk.concept_block(block)?,
                UpsertItem::Proposition(block) => walk.proposition_block(block)?,
            }
        }
    }
    Ok(walk.needed)
}

impl Walk {
    fn need(&mut self, kind: Kind, name: &str) {
        let defined = match kind {
            Kind::ConceptType => &self.defined_types,
            Kind::Predicate => &self.defined_predicates,
        };
        if !defined.contains(name) && !self.needed.iter().any(|r| r.kind == kind && r.name == name) {
            self.needed.push(Requirement { kind, name: name.to_string() });
        }
    }

    fn concept_block(&mut self, block: &ConceptBlock) -> Result<(), KipError> {
        reserved::check_metadata_fields(block.metadata.as_deref())?;
        if let ConceptSelector::TypeName { type_name, name } = &block.identity {
            let (type_name, name) = (lit_str(type_name)?, lit_str(name)?);
            limits::check_name("type", type_name)?;
            limits::check_name("concept name", name)?;
            match type_name {
                CONCEPT_TYPE => {
                    naming::check_concept_type_name(name)?;
                    if name != CONCEPT_TYPE {
                        self.need(Kind::ConceptType, CONCEPT_TYPE);
                    }
                    self.defined_types.insert(name.to_string());
                }
                PROPOSITION_TYPE => {
                    naming::check_predicate_name(name)?;
                    self.need(Kind::ConceptType, PROPOSITION_TYPE);
                    self.defined_predicates.insert(name.to_string());
                }
                _ => self.need(Kind::ConceptType, type_name),
            }
        }
        // The handle is usable from the block's own SET PROPOSITIONS on (a
        // link to itself is then reported as a self-loop, not a bad handle).
        self.define(&block.handle)?;
        for item in block.set_propositions.iter().flatten() {
            reserved::check_metadata_fields(item.metadata.as_deref())?;
            limits::check_name("predicate", lit_str(&item.predicate)?)?;
            self.need(Kind::Predicate, lit_str(&item.predicate)?);
            self.endpoint(&item.target)?;
        }
        Ok(())
    }

    fn proposition_block(&mut self, block: &PropositionBlock) -> Result<(), KipError> {
        reserved::check_metadata_fields(block.metadata.as_deref())?;
        self.pattern(&block.identity)?;
        if let Some(h) = &block.handle {
            self.define(h)?;
        }
        Ok(())
    }

    /// A handle names one block of the statement: a second definition
    /// would silently rebind the blocks after it to another element.
    fn define(&mut self, handle: &str) -> Result<(), KipError> {
        if self.handles.insert(handle.to_string()) {
            return Ok(());
        }
        Err(KipError::new(ErrorCode::InvalidSyntax, format!("handle ?{handle} is defined by two blocks of this UPSERT"))
            .with_hint("Give each CONCEPT and PROPOSITION block of an UPSERT its own handle; to write one element twice, write it in one block."))
    }

    fn pattern(&mut self, pattern: &PropPattern) -> Result<(), KipError> {
        if let PropPattern::Triple(t) = pattern {
            self.endpoint(&t.subject)?;
            match &t.predicate {
                Predicate::Literal(p) => {
                    limits::check_name("predicate", lit_str(p)?)?;
                    self.need(Kind::Predicate, lit_str(p)?)
                }
                _ => return Err(KipError::syntax("inside UPSERT a proposition needs a single literal predicate")),
            }
            self.endpoint(&t.object)?;
        }
        Ok(())
    }

    fn endpoint(&mut self, endpoint: &Endpoint) -> Result<(), KipError> {
        match endpoint {
            Endpoint::Var(h) if !self.handles.contains(h) => Err(KipError::new(
                ErrorCode::ReferenceError,
                format!("handle ?{h} is used before a CONCEPT or PROPOSITION block defines it"),
            )
            .with_hint("Blocks run top to bottom: move the block defining the handle above its first use, or refer to the element by {type: …, name: …} / {id: …}.")),
            Endpoint::Concept(ConceptSelector::TypeName { type_name, .. }) => {
                self.need(Kind::ConceptType, lit_str(type_name)?);
                Ok(())
            }
            Endpoint::Proposition(p) => self.pattern(p),
            _ => Ok(()),
        }
    }
}
