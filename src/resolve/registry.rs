//! The schema registry is the graph itself: a concept type `T` is registered
//! when the node `{type: "$ConceptType", name: "T"}` exists, a predicate `p`
//! when `{type: "$PropositionType", name: "p"}` exists (RC10 §2.9).
//! Unknown names are `KIP_2001`, with a "did you mean" hint built from the
//! registered names (case mistakes such as `drug` for `Drug` first).

use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use crate::exec::{known, spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::{ErrorCode, KipError};
use std::collections::HashSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ConceptType,
    Predicate,
}

impl Kind {
    /// The meta-type whose instances register names of this kind.
    pub fn meta_type(self) -> &'static str {
        match self {
            Kind::ConceptType => CONCEPT_TYPE,
            Kind::Predicate => PROPOSITION_TYPE,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::ConceptType => "concept type",
            Kind::Predicate => "predicate",
        }
    }
}

/// A name that must be registered, in the order it is used by the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub kind: Kind,
    pub name: String,
}

/// Check every requirement with one query; the first unknown name (in use
/// order) is reported. (Read-write SPI access so the query sees what earlier
/// statements of the same command text registered.)
pub fn require_all(space: &Space, needed: &[Requirement]) -> Result<(), KipError> {
    require_all_with(space, needed, Access::ReadWrite)
}

/// [`require_all`] with the caller's SPI access: a read checks with
/// read-only access.
pub fn require_all_with(space: &Space, needed: &[Requirement], access: Access) -> Result<(), KipError> {
    if needed.is_empty() {
        return Ok(());
    }
    // One probe of the (space, type, name) unique index per distinct pair:
    // written as pairs so no plan can turn it into a scan of the space's
    // names (a `name = ANY(...)` filter was once planned on the trigram index).
    let mut pairs: Vec<(String, String)> =
        needed.iter().map(|r| (r.kind.meta_type().to_string(), r.name.clone())).collect();
    pairs.sort();
    pairs.dedup();
    // Definitions this backend knows to exist need no query (`exec::known`).
    let known = known::registered(space, &pairs);
    let mut found: HashSet<(String, String)> = HashSet::new();
    let mut unknown_pairs = Vec::new();
    for (pair, is_known) in pairs.into_iter().zip(known) {
        if is_known {
            found.insert(pair);
        } else {
            unknown_pairs.push(pair);
        }
    }
    if !unknown_pairs.is_empty() {
        let (types, names): (Vec<String>, Vec<String>) = unknown_pairs.into_iter().unzip();
        let rows = spi::lookup(
            "SELECT c.type, c.name, c.xmin::text FROM unnest($2::text[], $3::text[]) AS r(type, name) \
             JOIN kip.concepts c ON c.space = $1 AND c.type = r.type AND c.name = r.name",
            &[space.param(), SqlParam::TextArray(types), SqlParam::TextArray(names)],
            access,
        )?;
        for row in rows {
            let text = |i: usize| row.get(i).and_then(|v| v.as_str()).map(str::to_string);
            if let (Some(t), Some(n)) = (text(0), text(1)) {
                known::remember_registered(space, &t, &n, text(2).as_deref())?;
                found.insert((t, n));
            }
        }
    }
    for r in needed {
        if !found.contains(&(r.kind.meta_type().to_string(), r.name.clone())) {
            return Err(unknown(space, r.kind, &r.name, access));
        }
    }
    Ok(())
}

/// `KIP_2001` for an unregistered name, with the closest registered name as hint.
fn unknown(space: &Space, kind: Kind, name: &str, access: Access) -> KipError {
    let candidates = registered_names(space, kind, access).unwrap_or_default();
    let err = KipError::new(ErrorCode::TypeMismatch, format!("{} {name:?} is not registered", kind.noun()));
    match suggest(name, &candidates) {
        Some(s) => err.with_hint(format!(
            "Did you mean {s:?}? Names are case-sensitive. Run DESCRIBE {} to list the registered ones.",
            if kind == Kind::ConceptType { "CONCEPT TYPES" } else { "PROPOSITION TYPES" }
        )),
        None => err.with_hint(format!(
            "Register it first: UPSERT {{ CONCEPT ?t {{ {{type: {:?}, name: {name:?}}} SET ATTRIBUTES {{ description: \"…\" }} }} }}, or run DESCRIBE {} to pick an existing one.",
            kind.meta_type(),
            if kind == Kind::ConceptType { "CONCEPT TYPES" } else { "PROPOSITION TYPES" }
        )),
    }
}

fn registered_names(space: &Space, kind: Kind, access: Access) -> Result<Vec<String>, KipError> {
    let rows = spi::query(
        "SELECT name FROM kip.concepts WHERE space = $1 AND type = $2 ORDER BY name LIMIT 5000",
        &[space.param(), SqlParam::Text(kind.meta_type().into())],
        access,
    )?;
    Ok(rows.into_iter().filter_map(|r| r.into_iter().next()?.as_str().map(str::to_string)).collect())
}

/// The registered name closest to `name`: an exact case-insensitive match
/// first, then the smallest edit distance within a third of the length.
pub fn suggest(name: &str, candidates: &[String]) -> Option<String> {
    let lower = name.to_lowercase();
    let folded = |s: &str| s.to_lowercase().replace('_', "");
    if let Some(c) = candidates.iter().find(|c| c.to_lowercase() == lower || folded(c) == folded(name)) {
        return Some(c.clone());
    }
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.clone())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn suggests_case_fixes_first() {
        let c = names(&["Drug", "Symptom", "Person"]);
        assert_eq!(suggest("drug", &c), Some("Drug".into()));
        assert_eq!(suggest("Symptm", &c), Some("Symptom".into()));
        assert_eq!(suggest("Spaceship", &c), None);
        let p = names(&["belongs_to_domain", "treats"]);
        assert_eq!(suggest("belongsToDomain", &p), Some("belongs_to_domain".into()));
        assert_eq!(suggest("treat", &p), Some("treats".into()));
    }
}
