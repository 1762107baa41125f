//! Bringing a space bootstrapped at an older capsule level up to `LEVEL`.
//!
//! Every capsule changed since the space's level is applied in load order,
//! one schema node at a time:
//!
//! - a node the space lacks is created exactly as a new space would create
//!   it (the capsule's attributes, propositions and metadata);
//! - a node the space has gains only what it lacks (`merge`): missing
//!   attributes and keys, missing array elements. Nothing it holds is
//!   replaced, its metadata and propositions are left alone, and a node that
//!   already holds everything is not written at all (its `_version` stays).
//!
//! The write goes through the engine's UPSERT with `EXPECT VERSION` set to
//! the version just read, so a concurrent change by an agent is never
//! overwritten. A capsule that cannot be merged (a value of another kind
//! where the capsule has an object or array) fails with a message naming the
//! capsule, the node and the attribute; the caller runs the whole upgrade in
//! one subtransaction, so the space is then left exactly as it was.

use super::merge::{additions, Conflict};
use super::capsules::CAPSULES;
use crate::engine;
use crate::exec::{Ctx, Origin};
use crate::exec::{spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::ast::{Bindable, Command, ConceptBlock, ConceptSelector, Endpoint, Field, Upsert, UpsertItem, ValueOrParam};
use kip_lang::{ErrorCode, KipError};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Apply to `space` every capsule changed after capsule level `from`.
pub fn upgrade(space: &Space, from: i32) -> Result<(), KipError> {
    let ctx = Ctx { space: space.clone(), access: Access::ReadWrite, origin: Origin::Bootstrap, text: None };
    for capsule in CAPSULES.iter().filter(|c| c.changed_in > from) {
        let refuse = |message: String| {
            KipError::new(
                ErrorCode::ConstraintViolation,
                format!("capsule {} cannot be applied to memory space {:?}: {message}", capsule.file, space.name()),
            )
            .with_hint(
                "The space was left as it was. Make the named attribute an object (or array) as the capsule defines it, or remove it, then run any command in the space again to retry the upgrade.",
            )
        };
        let script = kip_lang::parse(capsule.text).map_err(|e| refuse(e.to_string()))?;
        for command in &script.commands {
            let Command::Upsert(upsert) = command else {
                return Err(refuse("a bootstrap capsule holds UPSERT statements only".into()));
            };
            for block in standalone_blocks(upsert) {
                apply_block(&ctx, block, upsert.metadata.clone()).map_err(|e| refuse(e.to_string()))?;
            }
        }
    }
    Ok(())
}

/// The statement's CONCEPT blocks, each made independent of the others: a
/// `SET PROPOSITIONS` target naming another block's local handle names that
/// block's `{type, name}` instead.
fn standalone_blocks(upsert: &Upsert) -> Vec<ConceptBlock> {
    let mut identities: HashMap<String, ConceptSelector> = HashMap::new();
    let mut blocks = Vec::new();
    for item in &upsert.items {
        let UpsertItem::Concept(block) = item else { continue };
        let mut block = block.clone();
        for entry in block.set_propositions.iter_mut().flatten() {
            if let Endpoint::Var(handle) = &entry.target {
                if let Some(identity) = identities.get(handle) {
                    entry.target = Endpoint::Concept(identity.clone());
                }
            }
        }
        identities.insert(block.handle.clone(), block.identity.clone());
        blocks.push(block);
    }
    blocks
}

fn apply_block(ctx: &Ctx, block: ConceptBlock, statement_meta: Option<Vec<Field>>) -> Result<(), KipError> {
    let ConceptSelector::TypeName { type_name: Bindable::Lit(ty), name: Bindable::Lit(name) } = &block.identity else {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "a capsule node is named by a literal {type, name}"));
    };
    let node = format!("{{type: {ty:?}, name: {name:?}}}");
    let existing = spi::query(
        "SELECT attributes, version FROM kip.concepts WHERE space = $1 AND type = $2 AND name = $3",
        &[ctx.space.param(), SqlParam::Text(ty.clone()), SqlParam::Text(name.clone())],
        Access::ReadWrite,
    )?;
    let Some(row) = existing.into_iter().next() else {
        let upsert = Upsert { items: vec![UpsertItem::Concept(block)], metadata: statement_meta };
        engine::execute(&Command::Upsert(upsert), ctx)?;
        return Ok(());
    };
    let have = row.first().and_then(Value::as_object).cloned().unwrap_or_default();
    let version = row.get(1).and_then(Value::as_u64).unwrap_or(0);
    let wanted = capsule_attributes(&block)?;
    let add = additions(&have, &wanted).map_err(|Conflict(path)| {
        KipError::new(
            ErrorCode::ConstraintViolation,
            format!("{node} holds a value at attribute {path} that is not of the kind the capsule defines, so merging would lose one of them"),
        )
        .with_hint(format!("Give {node} a value of the capsule's kind at {path} (or remove it), then run the maintenance cycle again."))
    })?;
    if add.is_empty() {
        return Ok(());
    }
    let fields = add.into_iter().map(|(key, value)| Field { key, value: ValueOrParam::Value(value) }).collect();
    let patch = ConceptBlock {
        handle: block.handle,
        identity: block.identity,
        expect_version: Some(Bindable::Lit(version)),
        set_attributes: Some(fields),
        set_propositions: None,
        metadata: None,
    };
    engine::execute(&Command::Upsert(Upsert { items: vec![UpsertItem::Concept(patch)], metadata: None }), ctx)?;
    Ok(())
}

/// The block's `SET ATTRIBUTES` as a JSON object (capsules hold literals only).
fn capsule_attributes(block: &ConceptBlock) -> Result<Map<String, Value>, KipError> {
    let mut out = Map::new();
    for field in block.set_attributes.iter().flatten() {
        let value = field
            .value
            .as_json()
            .ok_or_else(|| KipError::new(ErrorCode::InvalidSyntax, "a capsule attribute is a literal"))?;
        out.insert(field.key.clone(), value.clone());
    }
    Ok(out)
}
