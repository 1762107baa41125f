//! A per-backend memo of parsed command texts.
//!
//! Parsing is a pure function of the text, and an application that sends
//! its values as parameters (`:name` placeholders) sends the same few texts
//! again and again: a parse of a small FIND was a tenth of its call. The
//! memo keeps the unbound AST of short texts; binding, the limits and
//! everything after run on every call, since they depend on the parameters
//! and settings.

use kip_lang::ast::Script;
use kip_lang::KipError;
use std::cell::RefCell;
use std::collections::HashMap;

/// Longer texts are parsed every time: they are capsules, rarely sent twice,
/// and their ASTs are the large ones.
const MAX_TEXT_BYTES: usize = 4096;
/// Entries kept; the memo starts afresh when full (as `exec::spi`'s plans).
const MAX_ENTRIES: usize = 256;

thread_local! {
    static PARSED: RefCell<HashMap<String, Script>> = RefCell::new(HashMap::new());
}

/// The unbound AST of `text`: from the memo, or parsed (and remembered when
/// short and valid).
pub fn parse(text: &str) -> Result<Script, KipError> {
    if text.len() > MAX_TEXT_BYTES {
        return kip_lang::parse(text);
    }
    if let Some(script) = PARSED.with(|p| p.borrow().get(text).cloned()) {
        return Ok(script);
    }
    let script = kip_lang::parse(text)?;
    PARSED.with(|p| {
        let mut parsed = p.borrow_mut();
        if parsed.len() >= MAX_ENTRIES {
            parsed.clear();
        }
        parsed.insert(text.to_string(), script.clone());
    });
    Ok(script)
}
