//! Nesting-depth pre-scan.
//!
//! pest is a recursive-descent parser and the AST builder, printer and
//! binder are recursive too; all of their recursion goes through brackets
//! (`( { [`). Scanning the raw text once and refusing anything nested deeper
//! than [`MAX_DEPTH`] bounds the stack use of every later stage, so hostile
//! input such as 10,000 `(` yields a clean KIP_1001 instead of a stack
//! overflow. Brackets inside string literals and `//` comments are ignored,
//! mirroring the lexer. Unbalanced brackets are left for the parser to
//! report.

use crate::KipError;

/// Deepest bracket nesting accepted. Real KIP (capsules, Brain prompts)
/// stays below 10, but a JSON parameter may nest 128 levels
/// (`MAX_JSON_DEPTH` of the extension), and EXPORT writes such a value
/// into its capsule as a literal inside the capsule's own brackets: 160
/// leaves room for both, so every capsule EXPORT gives reads back. Every
/// stage costs about 1.5 kB of stack a level (parsing, printing and parsing
/// again, release build): 160 levels stay under 256 kB.
pub const MAX_DEPTH: usize = 160;

/// Deepest nesting of one value (an attribute, a metadata value, a FILTER
/// literal), written in the text or passed as a parameter, after binding.
/// Readers of stored values (serde_json, whose recursion limit is 128)
/// meet them inside rows and envelopes a few levels deep: a value stored
/// 128 levels deep was written, then failed EXPORT and grouped FINDs.
pub const MAX_VALUE_DEPTH: usize = 100;

/// Deepest nesting of a FILTER expression (parentheses, calls and `!`):
/// the compiler recurses on it as well, and no real condition nests so.
pub const MAX_FILTER_DEPTH: usize = 64;

pub fn check(text: &str) -> Result<(), KipError> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string literal, honouring backslash escapes.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
                    i += 1;
                }
            }
            b'(' | b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    let (line, col) = line_col(text, i);
                    return Err(KipError::syntax(format!(
                        "nesting deeper than {MAX_DEPTH} levels of brackets at line {line}, column {col}"
                    ))
                    .with_hint("Flatten the query: bind nested clauses to variables in separate clauses."));
                }
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|p| p + 1).unwrap_or(0);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_deep_nesting() {
        let deep = "(".repeat(10_000);
        let err = check(&deep).unwrap_err();
        assert_eq!(err.code.as_str(), "KIP_1001");
        assert!(check(&"[".repeat(MAX_DEPTH)).is_ok());
    }

    #[test]
    fn ignores_strings_and_comments() {
        let s = format!("\"{}\" // {}\n", "(".repeat(500), "{".repeat(500));
        assert!(check(&s).is_ok());
    }

    #[test]
    fn positions() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é(", 2), (1, 2));
    }
}
