//! Moving every link of a merged-away element onto the surviving one,
//! keeping link ids (RC10 §4.4 step 1).
//!
//! For each link that references `from` (as subject or object):
//! * the endpoint is rewritten in place to `to` — same id, so higher-order
//!   references stay valid; the trigger bumps the link's `_version`;
//! * if that would duplicate an existing `(s, p, o)` link, the existing link
//!   survives: it takes the dropped link's missing attribute and metadata keys
//!   (its own keys win), the links that referenced the dropped link are moved
//!   onto it (the same procedure, recursively), and the duplicate is removed;
//! * a link between `from` and `to` would become a self-loop, which KIP does
//!   not allow: it is removed.
//!
//! The report counts each link once, as the merge leaves it: repointed, a
//! link that survives with an endpoint moved (however many of its
//! endpoints moved, in however many steps); deduplicated, every link the
//! merge removed: duplicates, would-be self-loops, and the links about
//! either, which their foreign keys delete with them.

use crate::compile::ids::ElementRef;
use crate::exec::{spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::KipError;
use serde_json::Value;

#[derive(Debug, Default)]
pub struct Counts {
    moved: std::collections::HashSet<i64>,
    removed: std::collections::HashSet<i64>,
}

impl Counts {
    /// Links that survive the merge with an endpoint moved.
    pub fn repointed(&self) -> u64 {
        self.moved.difference(&self.removed).count() as u64
    }

    /// Links the merge removed.
    pub fn deduplicated(&self) -> u64 {
        self.removed.len() as u64
    }
}

struct Link {
    id: i64,
    subject: i64,
    predicate: String,
    object: i64,
}

fn links_referencing(space: &Space, element: i64) -> Result<Vec<Link>, KipError> {
    let rows = spi::query(
        "SELECT id, subject, predicate, object FROM kip.propositions \
         WHERE space = $1 AND (subject = $2 OR object = $2) ORDER BY id FOR UPDATE",
        &[space.param(), SqlParam::Int(element)],
        Access::ReadWrite,
    )?;
    Ok(rows.iter().map(|r| link_of(r)).collect())
}

/// Link `id` as it is now; `None` once it was removed.
fn link_by_id(space: &Space, id: i64) -> Result<Option<Link>, KipError> {
    let rows = spi::query(
        "SELECT id, subject, predicate, object FROM kip.propositions WHERE space = $1 AND id = $2",
        &[space.param(), SqlParam::Int(id)],
        Access::ReadWrite,
    )?;
    Ok(rows.first().map(|r| link_of(r)))
}

fn link_of(r: &[Value]) -> Link {
    Link {
        id: r.first().and_then(Value::as_i64).unwrap_or_default(),
        subject: r.get(1).and_then(Value::as_i64).unwrap_or_default(),
        predicate: r.get(2).and_then(Value::as_str).unwrap_or_default().to_string(),
        object: r.get(3).and_then(Value::as_i64).unwrap_or_default(),
    }
}

fn existing(space: &Space, subject: i64, predicate: &str, object: i64) -> Result<Option<i64>, KipError> {
    let v = spi::query_scalar(
        "SELECT id FROM kip.propositions WHERE space = $1 AND subject = $2 AND predicate = $3 AND object = $4",
        &[space.param(), SqlParam::Int(subject), SqlParam::Text(predicate.into()), SqlParam::Int(object)],
        Access::ReadWrite,
    )?;
    Ok(v.as_i64())
}

/// Move every link of `from` onto `to`.
pub fn repoint(space: &Space, from: ElementRef, to: ElementRef, counts: &mut Counts) -> Result<(), KipError> {
    // A duplicate's links move onto its survivor by a recursive call, which
    // may move or remove links of this list too (a link about the duplicate
    // that also references `from`): after one, each link is read again.
    let mut recursed = false;
    for listed in links_referencing(space, from.id)? {
        let link = if recursed {
            match link_by_id(space, listed.id)? {
                Some(link) if link.subject == from.id || link.object == from.id => link,
                _ => continue,
            }
        } else {
            listed
        };
        let subject = if link.subject == from.id { to.id } else { link.subject };
        let object = if link.object == from.id { to.id } else { link.object };
        if subject == object {
            delete_link(space, link.id, counts)?;
            continue;
        }
        match existing(space, subject, &link.predicate, object)? {
            Some(survivor) if survivor != link.id => {
                fill_survivor(space, survivor, link.id)?;
                repoint(space, ElementRef::proposition(link.id), ElementRef::proposition(survivor), counts)?;
                recursed = true;
                delete_link(space, link.id, counts)?;
            }
            _ => {
                move_endpoints(space, link.id, from, to)?;
                counts.moved.insert(link.id);
            }
        }
    }
    Ok(())
}

/// Rewrite whichever endpoint of link `id` is `from` to `to`.
fn move_endpoints(space: &Space, id: i64, from: ElementRef, to: ElementRef) -> Result<(), KipError> {
    spi::execute(
        "UPDATE kip.propositions SET \
           subject_concept = CASE WHEN subject = $3 THEN (CASE WHEN $5 THEN $4 END) ELSE subject_concept END, \
           subject_link    = CASE WHEN subject = $3 THEN (CASE WHEN NOT $5 THEN $4 END) ELSE subject_link END, \
           object_concept  = CASE WHEN object = $3 THEN (CASE WHEN $5 THEN $4 END) ELSE object_concept END, \
           object_link     = CASE WHEN object = $3 THEN (CASE WHEN NOT $5 THEN $4 END) ELSE object_link END \
         WHERE space = $1 AND id = $2",
        &[space.param(), SqlParam::Int(id), SqlParam::Int(from.id), SqlParam::Int(to.id), SqlParam::Bool(to.is_concept())],
        Access::ReadWrite,
    )?;
    Ok(())
}

/// The surviving link takes the dropped link's missing keys; its own win.
fn fill_survivor(space: &Space, survivor: i64, dropped: i64) -> Result<(), KipError> {
    spi::execute(
        "UPDATE kip.propositions s SET attributes = d.attributes || s.attributes, metadata = d.metadata || s.metadata \
         FROM kip.propositions d WHERE s.space = $1 AND s.id = $2 AND d.id = $3",
        &[space.param(), SqlParam::Int(survivor), SqlParam::Int(dropped)],
        Access::ReadWrite,
    )?;
    Ok(())
}

/// Delete link `id`, and with it (foreign keys' cascade) the links about
/// it, every one of them counted as removed.
fn delete_link(space: &Space, id: i64, counts: &mut Counts) -> Result<(), KipError> {
    // The same statement at every call, composed once.
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "WITH RECURSIVE doomed(id) AS (SELECT $2::bigint UNION {}), \
             deleted AS (DELETE FROM kip.propositions WHERE space = $1 AND id = $2) \
             SELECT id FROM doomed",
            crate::compile::kml_bulk::LINKS_ABOUT_DOOMED
        )
    });
    let rows = spi::query(
        &SQL,
        &[space.param(), SqlParam::Int(id)],
        Access::ReadWrite,
    )?;
    counts.removed.extend(rows.iter().filter_map(|r| r.first().and_then(Value::as_i64)));
    Ok(())
}
