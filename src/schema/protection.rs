//! Protected system structure (RC10 §4.2.4, Appendix 4 `KIP_3004`).
//!
//! Two kinds of protection:
//!
//! * **Structure** — the meta-type definitions (`$ConceptType`,
//!   `$PropositionType`), the `Domain` type and `belongs_to_domain`
//!   predicate definitions, and the core domains. They cannot be deleted,
//!   merged, bulk-`UPDATE`d or have keys deleted. `UPSERT` may still refine
//!   their attributes: the spec lets the schema, meta-types included, evolve
//!   (§2.9.1), and the Genesis capsule must stay re-runnable.
//! * **System actors** — `$self` and `$system`. Their identity tuple cannot
//!   be deleted or merged away, and their `core_directives` cannot change once
//!   set; every other attribute evolves freely.

use super::{CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::{ErrorCode, KipError};

pub const CORE_DOMAINS: [&str; 4] = ["CoreSchema", "Unsorted", "Archived", "System"];
pub const SYSTEM_ACTORS: [&str; 2] = ["$self", "$system"];
/// The one attribute of the system actors that is immutable.
pub const CORE_DIRECTIVES: &str = "core_directives";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    None,
    Structure,
    SystemActor,
}

pub fn classify(type_name: &str, name: &str) -> Protection {
    let structural = match type_name {
        CONCEPT_TYPE => matches!(name, CONCEPT_TYPE | PROPOSITION_TYPE | "Domain"),
        PROPOSITION_TYPE => name == "belongs_to_domain",
        "Domain" => CORE_DOMAINS.contains(&name),
        _ => false,
    };
    if structural {
        Protection::Structure
    } else if type_name == "Person" && SYSTEM_ACTORS.contains(&name) {
        Protection::SystemActor
    } else {
        Protection::None
    }
}

pub fn is_protected_node(type_name: &str, name: &str) -> bool {
    classify(type_name, name) != Protection::None
}

/// `{type: "T", name: "n"}` for messages.
pub fn describe(type_name: &str, name: &str) -> String {
    format!("{{type: {type_name:?}, name: {name:?}}}")
}

/// KIP_3004 for an operation on a protected node.
pub fn refused(action: &str, type_name: &str, name: &str) -> KipError {
    let what = match classify(type_name, name) {
        Protection::SystemActor => "the identity of a system actor",
        _ => "protected system structure",
    };
    KipError::new(ErrorCode::ImmutableTarget, format!("cannot {action} {}: it is {what}", describe(type_name, name)))
        .with_hint("Meta-types, the Domain type, belongs_to_domain, the core domains and the identities of $self/$system are protected. Narrow the WHERE pattern to exclude them; ordinary $self attributes can be changed with UPSERT.")
}

/// KIP_3004 for a change of `core_directives` on `$self` / `$system`.
pub fn directives_refused(name: &str) -> KipError {
    KipError::new(ErrorCode::ImmutableTarget, format!("the core_directives of {name} are immutable"))
        .with_hint("core_directives are set at bootstrap and never change. Evolve other attributes instead (persona, values, behavior_preferences, identity_narrative, …).")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert_eq!(classify("$ConceptType", "$ConceptType"), Protection::Structure);
        assert_eq!(classify("$ConceptType", "Domain"), Protection::Structure);
        assert_eq!(classify("$ConceptType", "Drug"), Protection::None);
        assert_eq!(classify("$PropositionType", "belongs_to_domain"), Protection::Structure);
        assert_eq!(classify("$PropositionType", "treats"), Protection::None);
        assert_eq!(classify("Domain", "CoreSchema"), Protection::Structure);
        assert_eq!(classify("Domain", "Medical"), Protection::None);
        assert_eq!(classify("Person", "$self"), Protection::SystemActor);
        assert_eq!(classify("Person", "Alice"), Protection::None);
    }
}
