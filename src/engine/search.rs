//! Execution of SEARCH commands (RC10 §5.2): validation of the term, mode,
//! THRESHOLD and LIMIT, then retrieval by `crate::search`.

use crate::exec::{Access, Ctx};
use crate::resolve::registry;
use crate::engine::envelope::Outcome;
use crate::compile::ids::ElementKind;
use crate::search::{self, Mode, Query};
use kip_lang::ast::{Bindable, Command, SearchMode, SearchTarget};
use kip_lang::{ErrorCode, KipError};
use serde_json::Value;

/// Hits returned when SEARCH has no LIMIT.
const DEFAULT_SEARCH_LIMIT: u64 = 10;

/// Longest SEARCH term, in characters: a search term names or describes
/// something; the embedding model reads 256 tokens at most anyway.
pub const MAX_TERM_CHARS: usize = 1000;

/// A character that shows nothing: control characters, format characters
/// (zero-width space and joiners, direction marks and embeddings, word
/// joiner, byte-order mark, soft hyphen, tags), the combining grapheme
/// joiner, variation selectors, and the blank letters (Hangul fillers,
/// Braille blank). A term of only these and spaces is empty, as one of
/// spaces is: the model would embed it as the empty text and answer its
/// nearest neighbours.
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}'
            | '\u{2800}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E007F}' | '\u{E0100}'..='\u{E01EF}')
}

fn unbound(what: &str) -> KipError {
    KipError::new(ErrorCode::InternalError, format!("SEARCH {what} reached execution unbound"))
}

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Search(search) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "SEARCH executor called with another command"));
    };
    let term = search.term.as_str().ok_or_else(|| unbound("term"))?.trim();
    if term.chars().all(|c| c.is_whitespace() || is_invisible(c)) {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "SEARCH term is empty")
            .with_hint("Give the words to look for, e.g. SEARCH CONCEPT \"aspirin\"."));
    }
    let chars = term.chars().count();
    if chars > MAX_TERM_CHARS {
        return Err(KipError::new(
            ErrorCode::ResourceExhausted,
            format!("SEARCH term has {chars} characters; the limit is {MAX_TERM_CHARS}"),
        )
        .with_hint("Search with the few words that name or describe what you look for."));
    }
    if term.contains('\0') {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "SEARCH term contains a NUL character")
            .with_hint("Remove the \\u0000 character from the term."));
    }
    let with_type = match &search.with_type {
        Some(t) => Some(t.as_str().ok_or_else(|| unbound("WITH TYPE"))?),
        None => None,
    };
    let mode = match &search.mode {
        Some(Bindable::Lit(SearchMode::Keyword)) => Some(Mode::Keyword),
        Some(Bindable::Lit(SearchMode::Semantic)) => Some(Mode::Semantic),
        Some(Bindable::Lit(SearchMode::Hybrid)) => Some(Mode::Hybrid),
        Some(Bindable::Param(_)) => return Err(unbound("MODE")),
        None => None,
    };
    let threshold = match &search.threshold {
        Some(Bindable::Lit(t)) if (0.0..=1.0).contains(t) => *t,
        Some(Bindable::Lit(t)) => {
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("THRESHOLD {t} is outside [0, 1]"))
                .with_hint("THRESHOLD takes a score between 0.0 and 1.0."))
        }
        Some(Bindable::Param(_)) => return Err(unbound("THRESHOLD")),
        None => 0.0,
    };
    let max = crate::guc::MAX_LIMIT.get().max(1) as u64;
    let limit = match &search.limit {
        Some(Bindable::Lit(n)) => (*n).min(max),
        Some(Bindable::Param(_)) => return Err(unbound("LIMIT")),
        None => DEFAULT_SEARCH_LIMIT,
    } as i64;
    let kind = match search.target {
        SearchTarget::Concept => ElementKind::Concept,
        SearchTarget::Proposition => ElementKind::Proposition,
    };
    let q = Query { kind, term, with_type, threshold, limit };
    let hits = if limit == 0 { Vec::new() } else { search::run(&q, mode, ctx)? };
    // Nothing found WITH TYPE a type or predicate that is not registered:
    // KIP_2001 with a "did you mean" (RC10 §2.8.2), as FIND answers, not
    // an empty list an agent would read as "nothing by that name yet".
    if let (true, Some(name)) = (hits.is_empty(), with_type) {
        let kind = match kind {
            ElementKind::Concept => registry::Kind::ConceptType,
            ElementKind::Proposition => registry::Kind::Predicate,
        };
        registry::require_all_with(&ctx.space, &[registry::Requirement { kind, name: name.to_string() }], Access::ReadOnly)?;
    }
    Ok(Outcome::new(Value::Array(hits)))
}
