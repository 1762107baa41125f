//! Execution of SEARCH commands (RC10 §5.2): keyword retrieval, with
//! "semantic" and "hybrid" degrading to keyword (see `crate::search`).

use super::Ctx;
use crate::api::envelope::Outcome;
use crate::search::keyword::{self, Query};
use kip_lang::ast::{Bindable, Command, SearchTarget};
use kip_lang::{ErrorCode, KipError};
use serde_json::Value;

/// Hits returned when SEARCH has no LIMIT.
const DEFAULT_SEARCH_LIMIT: u64 = 10;

fn unbound(what: &str) -> KipError {
    KipError::new(ErrorCode::InternalError, format!("SEARCH {what} reached execution unbound"))
}

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Search(search) = command else {
        return Err(super::not_supported(command));
    };
    let term = search.term.as_str().ok_or_else(|| unbound("term"))?.trim();
    if term.is_empty() {
        return Err(KipError::new(ErrorCode::InvalidSyntax, "SEARCH term is empty")
            .with_hint("Give the words to look for, e.g. SEARCH CONCEPT \"aspirin\"."));
    }
    let with_type = match &search.with_type {
        Some(t) => Some(t.as_str().ok_or_else(|| unbound("WITH TYPE"))?),
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
    let q = Query { term, with_type, threshold, limit };
    let hits = match search.target {
        SearchTarget::Concept => keyword::concepts(&q, ctx)?,
        SearchTarget::Proposition => keyword::propositions(&q, ctx)?,
    };
    Ok(Outcome::new(Value::Array(hits)))
}
