//! Naming rules for schema-level names (RC10 §2.8).
//!
//! A name registered as a concept type or predicate must be a KIP identifier
//! (`[A-Za-z_][A-Za-z0-9_]*`). On top of that the conventions the spec calls
//! required are enforced at their cheapest, unambiguous point: a concept type
//! starts with an upper-case letter (UpperCamelCase), a predicate with a
//! lower-case letter (snake_case). `$`-names are reserved for the two
//! meta-types. Violations are `KIP_1002`.

use super::{CONCEPT_TYPE, PROPOSITION_TYPE};
use kip_lang::{is_identifier, ErrorCode, KipError};

/// Check the name of a new `{type: "$ConceptType", name: …}` node.
pub fn check_concept_type_name(name: &str) -> Result<(), KipError> {
    if name == CONCEPT_TYPE || name == PROPOSITION_TYPE {
        return Ok(());
    }
    if name.starts_with('$') {
        return Err(KipError::new(ErrorCode::InvalidIdentifier, format!("concept type name {name:?} uses the `$` prefix reserved for the meta-types"))
            .with_hint("Only $ConceptType and $PropositionType start with `$`. Name concept types in UpperCamelCase, e.g. \"MedicalDevice\"."));
    }
    if !is_identifier(name) || !name.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Err(KipError::new(ErrorCode::InvalidIdentifier, format!("invalid concept type name {name:?}"))
            .with_hint("Concept types are identifiers in UpperCamelCase: a capital letter, then letters, digits or '_' (e.g. \"Drug\", \"ClinicalTrial\")."));
    }
    Ok(())
}

/// Check the name of a new `{type: "$PropositionType", name: …}` node.
pub fn check_predicate_name(name: &str) -> Result<(), KipError> {
    if !is_identifier(name) || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(KipError::new(ErrorCode::InvalidIdentifier, format!("invalid predicate name {name:?}"))
            .with_hint("Predicates are identifiers in snake_case: a lower-case letter, then letters, digits or '_' (e.g. \"treats\", \"has_side_effect\")."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concept_type_names() {
        assert!(check_concept_type_name("Drug").is_ok());
        assert!(check_concept_type_name("ClinicalTrial2").is_ok());
        assert!(check_concept_type_name("$ConceptType").is_ok());
        assert!(check_concept_type_name("drug").is_err());
        assert!(check_concept_type_name("$Thing").is_err());
        assert!(check_concept_type_name("Bad Name").is_err());
        assert!(check_concept_type_name("").is_err());
    }

    #[test]
    fn predicate_names() {
        assert!(check_predicate_name("treats").is_ok());
        assert!(check_predicate_name("belongs_to_domain").is_ok());
        assert!(check_predicate_name("Treats").is_err());
        assert!(check_predicate_name("has-effect").is_err());
        assert!(check_predicate_name("1st").is_err());
    }
}
