//! SEARCH: grounding natural-language terms to concepts and propositions
//! (RC10 §5.2).
//!
//! Retrieval is keyword-based: the engine has no in-database embedding model
//! yet, so `MODE "semantic"` and `MODE "hybrid"` degrade to keyword as the
//! spec requires ("degraded recall beats no recall"). The `embedding`
//! columns and their HNSW indexes are in place for the semantic path.

pub mod keyword;
