//! Element ids: external ids (`C:<n>`, `P:<n>[:<pred>]`) parsed with the
//! errors KIP reports, and the resolved form the executors pass around.

use kip_lang::{ErrorCode, KipError};

/// Whether an element is a concept node or a proposition link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementKind {
    Concept,
    Proposition,
}

/// A resolved element: its kind and row id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementRef {
    pub kind: ElementKind,
    pub id: i64,
}

impl ElementRef {
    pub fn concept(id: i64) -> Self {
        ElementRef { kind: ElementKind::Concept, id }
    }

    pub fn proposition(id: i64) -> Self {
        ElementRef { kind: ElementKind::Proposition, id }
    }

    pub fn is_concept(&self) -> bool {
        self.kind == ElementKind::Concept
    }
}

/// A syntactically valid external id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedId {
    pub kind: ElementKind,
    /// `None` when the number is well-formed but beyond any row id: such an
    /// element cannot exist (`KIP_3002`, not a syntax error).
    pub id: Option<i64>,
    /// The `:<predicate>` suffix of a proposition id, when written.
    pub predicate: Option<String>,
}

/// Parse `C:<n>` / `P:<n>[:<predicate>]`; anything else is `KIP_1001`.
///
/// This is the one parser of external ids in kip: every command accepts
/// exactly the form the engine prints, `<n>` being a decimal number without
/// sign or leading zeros (`C:+5` and `C:007` are malformed everywhere).
pub fn parse(text: &str) -> Result<ParsedId, KipError> {
    let (kind, rest) = if let Some(r) = text.strip_prefix("C:") {
        (ElementKind::Concept, r)
    } else if let Some(r) = text.strip_prefix("P:") {
        (ElementKind::Proposition, r)
    } else {
        return Err(malformed(text));
    };
    let (num, predicate) = match (kind, rest.split_once(':')) {
        (ElementKind::Proposition, Some((n, p))) if !p.is_empty() => (n, Some(p.to_string())),
        (_, None) => (rest, None),
        _ => return Err(malformed(text)),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || num.starts_with('0') {
        return Err(malformed(text));
    }
    let id = num.parse::<i64>().ok().filter(|n| *n > 0);
    Ok(ParsedId { kind, id, predicate })
}

fn malformed(text: &str) -> KipError {
    KipError::new(ErrorCode::InvalidSyntax, format!("malformed element id {}", kip_lang::quoted(text)))
        .with_hint("Element ids look like \"C:12\" (concept) or \"P:40:treats\" (proposition); copy them from a FIND or UPSERT result.")
}

/// Parse an id that must denote a concept (`{id: …}` selectors).
pub fn parse_concept(text: &str) -> Result<ParsedId, KipError> {
    let parsed = parse(text)?;
    if parsed.kind != ElementKind::Concept {
        return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{text:?} must be a Concept ID (C:<n>) here"))
            .with_hint("{id: …} selects a concept node; use (id: \"P:…\") for a proposition."));
    }
    Ok(parsed)
}

/// Parse an id that must denote a proposition (`(id: …)` selectors).
pub fn parse_proposition(text: &str) -> Result<ParsedId, KipError> {
    let parsed = parse(text)?;
    if parsed.kind != ElementKind::Proposition {
        return Err(KipError::new(ErrorCode::InvalidSyntax, format!("{text:?} must be a Proposition ID (P:<n>:<predicate>) here"))
            .with_hint("(id: …) selects a proposition link; use {id: \"C:…\"} for a concept."));
    }
    Ok(parsed)
}

/// The kind and row id of an external id, or `None` when it is malformed or
/// beyond any row id. The strict parser is [`parse`]; this is its
/// lenient view for FILTER comparisons, where a malformed id matches nothing.
pub fn parse_ref(id: &str) -> Option<(ElementKind, i64)> {
    let parsed = parse(id).ok()?;
    parsed.id.map(|n| (parsed.kind, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids() {
        assert_eq!(parse("C:12").unwrap(), ParsedId { kind: ElementKind::Concept, id: Some(12), predicate: None });
        let p = parse("P:40:treats").unwrap();
        assert_eq!((p.kind, p.id, p.predicate.as_deref()), (ElementKind::Proposition, Some(40), Some("treats")));
        assert_eq!(parse("P:40").unwrap().predicate, None);
        assert_eq!(parse("C:18446744073709551615").unwrap().id, None);
        assert!(parse("C:x").is_err());
        assert!(parse("C:1:x").is_err());
        assert!(parse("12").is_err());
        for bad in ["C:+5", "C:007", "C:0", "C:-1", "C: 5", "P:05:treats", "P:5:", "c:5", "C:"] {
            assert!(parse(bad).is_err(), "{bad} must be malformed");
        }
        assert!(parse_proposition("C:1").unwrap_err().message.contains("must be a Proposition ID"));
        assert!(parse_concept("P:1:x").is_err());
    }

    #[test]
    fn parses_external_ids() {
        assert_eq!(parse_ref("C:12"), Some((ElementKind::Concept, 12)));
        assert_eq!(parse_ref("P:40:treats"), Some((ElementKind::Proposition, 40)));
        assert_eq!(parse_ref("P:40"), Some((ElementKind::Proposition, 40)));
        assert_eq!(parse_ref("C:x"), None);
        assert_eq!(parse_ref("C:-1"), None);
        assert_eq!(parse_ref("12"), None);
        assert_eq!(parse_ref("C:+5"), None);
        assert_eq!(parse_ref("C:007"), None);
    }
}
