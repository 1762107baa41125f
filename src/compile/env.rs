//! What the compiler knows beyond the command itself: the memory space, the
//! settings that shape SQL, and the catalog facts `resolve` read before
//! compilation. Plain data, so the compiler can run (and be tested) without
//! a database.

use std::collections::HashMap;

/// The compiler's whole view of the world for one command.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    /// Name of the memory space every table reference is restricted to.
    pub space: &'a str,
    pub limits: Limits,
    pub facts: &'a Facts,
}

/// Settings read once per command (`kip.max_hops`, `kip.max_limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Depth bound of hop walks.
    pub max_hops: u32,
    /// Largest page size; an unanchored `(?s, ?p, ?o)` may scan ten times it.
    pub max_limit: i64,
}

impl Limits {
    /// The largest number of propositions an unanchored `(?s, ?p, ?o)`
    /// clause may scan: ten times `kip.max_limit`.
    pub fn unanchored_scan_cap(&self) -> i64 {
        self.max_limit.saturating_mul(10)
    }
}

impl Default for Limits {
    /// The settings' defaults (`kip.max_hops` 10, `kip.max_limit` 10,000).
    fn default() -> Self {
        Limits { max_hops: 10, max_limit: 10_000 }
    }
}

/// Catalog facts about the literals of a command, read by `resolve` in one
/// query per kind of lookup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Literal concept row ids (`C:<n>`) → whether the concept exists.
    pub concepts: HashMap<i64, bool>,
    /// Literal proposition row ids (`P:<n>`) → its predicate, when it exists.
    pub propositions: HashMap<i64, Option<String>>,
    /// Whether the space holds more propositions than an unanchored scan may
    /// read; `None` when the command has no clause that could need it.
    pub unanchored_over_cap: Option<bool>,
    /// Existence checks left to the statement itself (FIND), instead of a
    /// lookup before it; `None` when `resolve` looked everything up.
    pub verified_in_statement: Option<InStatement>,
    /// The ids of named concepts (`{type, name}`) of the mandatory pattern,
    /// looked up before a FIND planned for its values
    /// (`engine::find::with_named_ids`): each of their selectors in the
    /// mandatory pattern also says `id = $n`, so that plan knows the
    /// concept, and how many links it has (a hub such as `$self`). Empty
    /// otherwise.
    pub named_ids: Vec<((String, String), i64)>,
    /// The statement is compiled for a plan made for each call's values
    /// (`FindSql::plan_per_call`; `compile::find::compile_find` compiles it
    /// again with this set): its scans of a type in the mandatory pattern
    /// name their space so that only the space's own indexes can give the
    /// page its order (`pattern::endpoint::concept_clause`).
    pub per_call: bool,
    /// Every literal id is taken to name an element of its kind (and the
    /// predicate it says): a dry run compiles the command to find what is
    /// wrong with it, and reads no element.
    pub assume_literals_exist: bool,
}

impl Facts {
    /// The id looked up for the named concept `{type, name}`, if any.
    pub fn named_id(&self, type_name: &str, name: &str) -> Option<i64> {
        self.named_ids.iter().find(|((t, n), _)| t == type_name && n == name).map(|(_, id)| *id)
    }
}

/// What a FIND leaves to its statement's answer (`compile::find::Guard`):
/// an answer that shows a solution proves these elements exist, so a
/// lookup runs only after one that does not (or always, for a pattern of
/// independent groups). A failed check is the same `KIP_3002` a lookup
/// before the statement would have raised; the answer is then discarded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InStatement {
    /// The `{type, name}` identities of the mandatory pattern, in order:
    /// each must name a concept of the space. The literal concept ids
    /// (`C:<n>`) of the mandatory pattern are verified too: they are assumed
    /// to exist while compiling (`facts.concepts` is then empty).
    pub named_concepts: Vec<(String, String)>,
}

#[cfg(test)]
impl Facts {
    /// A concept known to exist.
    pub fn with_concept(mut self, id: i64) -> Self {
        self.concepts.insert(id, true);
        self
    }

    /// A proposition known to exist with `predicate`.
    pub fn with_proposition(mut self, id: i64, predicate: &str) -> Self {
        self.propositions.insert(id, Some(predicate.to_string()));
        self
    }
}
