//! Schema discipline for KML: which types and predicates exist (the schema is
//! itself part of the graph, RC10 §2.9), how schema names must look, which
//! metadata keys belong to the engine, and which elements are protected.
//!
//! Every check here is a pure function of the command plus, for the registry,
//! one lookup query; executors call them before writing so a refused command
//! fails fast (the subtransaction guarantees no partial write either way).

pub mod naming;
pub mod protection;
pub mod registry;
pub mod reserved;

/// The meta-type whose instances define concept types.
pub const CONCEPT_TYPE: &str = "$ConceptType";
/// The meta-type whose instances define predicates.
pub const PROPOSITION_TYPE: &str = "$PropositionType";
