//! `kip-lang` — the KIP language front end: grammar, typed AST, parameter
//! binding, standard errors and a canonical printer. No Postgres here.
//!
//! ```
//! let script = kip_lang::parse(r#"FIND(?d.name) WHERE { ?d {type: "Drug"} } LIMIT :n"#).unwrap();
//! let mut params = serde_json::Map::new();
//! params.insert("n".into(), 10.into());
//! let bound = kip_lang::bind(script, &params).unwrap();
//! assert!(bound.is_bound());
//! assert_eq!(kip_lang::parse(&kip_lang::print(&bound)).unwrap(), bound);
//! ```

pub mod ast;
pub mod bind;
mod depth;
pub mod error;
mod lexical;
mod parser;
pub mod printer;
mod syntax_error;

pub use error::{quoted, ErrorCode, KipError};
pub use lexical::{is_identifier, parse_number, NUMBER_RANGE_HINT};
pub use depth::MAX_VALUE_DEPTH;
pub use bind::kind_of as json_kind;

/// Maximum bracket nesting depth (`(`, `{`, `[`) accepted by [`parse`].
pub const MAX_NESTING_DEPTH: usize = depth::MAX_DEPTH;

/// Parse KIP text into a list of commands.
///
/// A text holds one KQL/META command, or one or more KML statements (as
/// capsules do). Errors: `KIP_1001` (syntax/structure, with line:column),
/// `KIP_1002` (illegal identifier).
pub fn parse(text: &str) -> Result<ast::Script, KipError> {
    // A leading UTF-8 byte-order mark (files saved on Windows) is not KIP.
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    depth::check(text)?;
    parser::parse_script(text)
}

/// Replace `:name` placeholders in the AST by JSON values (never text
/// substitution). A missing parameter, or a value of the wrong kind for its
/// position (e.g. a string for `LIMIT`), is a `KIP_1001` naming the parameter.
pub fn bind(
    script: ast::Script,
    params: &serde_json::Map<String, serde_json::Value>,
) -> Result<ast::Script, KipError> {
    bind::bind_script(script, params)
}

/// Canonical KIP text for an AST; `parse(&print(x)) == Ok(x)`.
pub fn print(script: &ast::Script) -> String {
    printer::print_script(script)
}
