//! Schema discipline for KML that needs no database: how schema names must
//! look, which metadata keys belong to the engine, and the meta-type names.
//! The checks that read the catalog (which types and predicates exist, RC10
//! §2.9; which elements are protected) live in `resolve`.

pub mod naming;
pub mod reserved;

/// The meta-type whose instances define concept types.
pub const CONCEPT_TYPE: &str = "$ConceptType";
/// The meta-type whose instances define predicates.
pub const PROPOSITION_TYPE: &str = "$PropositionType";
