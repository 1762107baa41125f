//! Lexical helpers shared by the parser and the printer: identifier rules,
//! string escapes, numbers.

/// `[a-zA-Z_][a-zA-Z0-9_]*` (spec §2.8.1).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Decode the body of a `"…"` literal (between the quotes).
///
/// JSON escapes are supported (`\" \\ \/ \b \f \n \r \t \uXXXX`, with
/// surrogate pairs; `\u0000` is refused, as PostgreSQL text cannot hold it). Raw control characters such as newlines are accepted
/// as-is: LLM-written capsules contain multi-line strings and refusing them
/// would help nobody. On error returns the byte offset (in `body`) of the
/// bad escape and a message.
pub fn unescape(body: &str) -> Result<String, (usize, String)> {
    if let Some(at) = body.find('\0') {
        return Err((at, "strings cannot contain the NUL character".into()));
    }
    if !body.contains('\\') {
        return Ok(body.to_string());
    }
    let mut out = String::with_capacity(body.len());
    let mut iter = body.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = iter.next() else {
            return Err((i, "unterminated escape sequence".into()));
        };
        match e {
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => {
                let hi = read_hex4(body, i + 2)
                    .ok_or((i, "expected 4 hex digits after \\u".to_string()))?;
                skip(&mut iter, 4);
                let code = if (0xD800..0xDC00).contains(&hi) {
                    // High surrogate: must be followed by \uDC00-\uDFFF.
                    let lo = if body[i + 6..].starts_with("\\u") {
                        read_hex4(body, i + 8)
                    } else {
                        None
                    };
                    match lo {
                        Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                            skip(&mut iter, 6);
                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                        }
                        _ => return Err((i, "unpaired UTF-16 surrogate in \\u escape".into())),
                    }
                } else if (0xDC00..0xE000).contains(&hi) {
                    return Err((i, "unpaired UTF-16 surrogate in \\u escape".into()));
                } else if hi == 0 {
                    // PostgreSQL text (and jsonb) cannot hold U+0000: storing
                    // it would silently cut the string short.
                    return Err((i, "\\u0000 is not allowed: strings cannot contain the NUL character".into()));
                } else {
                    hi
                };
                out.push(char::from_u32(code).ok_or((i, "invalid \\u escape".to_string()))?);
            }
            other => return Err((i, format!("invalid escape sequence '\\{other}'"))),
        }
    }
    Ok(out)
}

fn read_hex4(s: &str, at: usize) -> Option<u32> {
    let digits = s.get(at..at + 4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

fn skip<I: Iterator>(iter: &mut I, n: usize) {
    for _ in 0..n {
        iter.next();
    }
}

/// Canonical quoted form of a string (JSON escaping).
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

/// Parse a number token with JSON semantics: an integer within 64 bits
/// stays an integer, anything else is the nearest double (a decimal with
/// more digits than a double holds is rounded, as JSON parsers read it).
/// A number a double cannot stand for is an error, since it would be
/// stored as another one: beyond its range (above ~1.8e308), non-zero
/// below its smallest magnitude (~4.9e-324, read as 0), and an integer
/// beyond 64 bits written as one (no fraction, no exponent) that is not
/// the double as printed, shortest or with 17 digits (`18446744073709551616`
/// would be stored as `18446744073709552000`, `10000000000000001000000` as
/// `1e22`; `100000000000000000000` is `1e20` exactly, and
/// `99999999999999992000000`, how jsonb writes the `9.9999999999999992e+22`
/// a C program prints for 1e23, is that double to 17 digits). The rule reads
/// digits, not notation, since a parameter's numbers reach kip as jsonb
/// prints them (`1e20` sent by an application is `100000000000000000000`
/// there).
pub fn parse_number(text: &str) -> Result<serde_json::Number, String> {
    let n = serde_json::from_str::<serde_json::Number>(text)
        .map_err(|_| format!("number {} is out of range (beyond a double's ±1.8e308)", shown(text)))?;
    let Some(f) = n.as_f64().filter(|_| n.is_f64()) else { return Ok(n) };
    let digits = text.split(['e', 'E']).next().unwrap_or(text);
    if f == 0.0 && digits.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return Err(format!(
            "number {} is out of range (below a double's smallest magnitude, ~4.9e-324: it would be stored as 0)",
            shown(text)
        ));
    }
    let written = text.trim_start_matches('-').trim_start_matches('0');
    let gives_back = |form: String| written == integer_digits(&form);
    if f != 0.0 && !text.contains(['.', 'e', 'E']) && !gives_back(format!("{:e}", f.abs())) && !gives_back(format!("{:.16e}", f.abs())) {
        return Err(format!("integer {} is beyond 64 bits (it would be stored as {f:e})", shown(text)));
    }
    Ok(n)
}

/// A number's text quoted for a message, its middle elided when long:
/// jsonb prints `1e999` as a thousand digits.
fn shown(text: &str) -> String {
    const KEEP: usize = 24;
    if text.len() <= 2 * KEEP || !text.is_ascii() {
        return format!("'{text}'");
    }
    format!("'{}…{}' ({} characters)", &text[..KEEP], &text[text.len() - 8..], text.len())
}

/// The digits of the integer a decimal form `d.ddde<n>` of an integral
/// double at least 2^63 in magnitude stands for: 1.8446744073709552e19 is
/// `18446744073709552000`. An integer written so is the double exactly as
/// printed (shortest, or with 17 digits as C's `%.17g` prints it), so
/// nothing is lost in storing the double.
fn integer_digits(form: &str) -> String {
    let (mantissa, exponent) = form.split_once('e').unwrap_or((form, "0"));
    let digits = mantissa.replace('.', "");
    let zeros = exponent.parse::<usize>().unwrap_or(0).saturating_add(1).saturating_sub(digits.len());
    digits + &"0".repeat(zeros)
}

/// The hint for a number [`parse_number`] refuses.
pub const NUMBER_RANGE_HINT: &str =
    "KIP numbers are 64-bit integers or doubles: write a number outside them as a string to keep it as written, or with an exponent (1.8e19) to store the nearest double.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_identifier("risk_level"));
        assert!(is_identifier("_version"));
        assert!(!is_identifier("1abc"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("naïve"));
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape(r#"a\"b\\c\/\n\t"#).unwrap(), "a\"b\\c/\n\t");
        assert_eq!(unescape(r"\u00e9\ud83d\ude00").unwrap(), "é😀");
        assert!(unescape(r"\q").is_err());
        assert!(unescape(r"\ud83d").is_err());
        assert!(unescape(r"\u12").is_err());
        assert_eq!(unescape("line\nbreak").unwrap(), "line\nbreak");
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("42").unwrap().as_u64(), Some(42));
        assert_eq!(parse_number("-3").unwrap().as_i64(), Some(-3));
        assert_eq!(parse_number("2.5e3").unwrap().as_f64(), Some(2500.0));
        assert!(parse_number("18446744073709551615").unwrap().is_u64());
        assert!(parse_number("-9223372036854775808").unwrap().is_i64());
        assert!(parse_number("18446744073709551616").unwrap_err().contains("beyond 64 bits"));
        assert!(parse_number("-9223372036854775809").unwrap_err().contains("beyond 64 bits"));
        assert!(parse_number("123456789012345678901234567890").unwrap_err().contains("beyond 64 bits"));
        // Beyond 64 bits, but exactly the double it is read as.
        assert_eq!(parse_number("100000000000000000000").unwrap().as_f64(), Some(1e20));
        assert_eq!(parse_number("-18446744073709552000").unwrap().as_f64(), Some(-18446744073709552000.0));
        // A double printed with 17 digits (C's %.17g), as jsonb writes it.
        assert_eq!(parse_number("99999999999999992000000").unwrap().as_f64(), Some(1e23));
        for f in [1.2345678901234567e25_f64, 3.0e19, 7.000000000000001e300, 1.8446744073709552e19] {
            for form in [format!("{f:e}"), format!("{f:.16e}")] {
                assert_eq!(parse_number(&integer_digits(&form)).unwrap().as_f64(), Some(f), "{form}");
            }
        }
        // Within 17 digits, but not the double: stored, it would change.
        for changed in ["10000000000000001000000", "99999999999999999000000", "1844674407370955100000"] {
            assert!(parse_number(changed).unwrap_err().contains("beyond 64 bits"), "{changed}");
        }
        assert_eq!(parse_number("1.8446744073709552e19").unwrap().as_f64(), Some(18446744073709551616.0));
        assert!(parse_number("1e-400").unwrap_err().contains("smallest"));
        assert!(parse_number("1e309").unwrap_err().contains("out of range"));
        assert_eq!(parse_number("0e-400").unwrap().as_f64(), Some(0.0));
        assert_eq!(parse_number("-0").unwrap().as_f64(), Some(0.0));
        assert_eq!(parse_number("0.0").unwrap().as_f64(), Some(0.0));
        // Rounded to the nearest double, as JSON parsers read it.
        assert_eq!(parse_number("3.14159265358979323846").unwrap().as_f64(), Some(std::f64::consts::PI));
        // Correctly rounded (serde_json's float_roundtrip): its default
        // parser missed by one unit in the last place for about a quarter
        // of shortest-form doubles, so a double sent by an application came
        // back as another.
        assert_eq!(parse_number("45931773795037525048e-98").unwrap().as_f64(), "45931773795037525048e-98".parse::<f64>().ok());
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_finite() {
                let text = format!("{f:e}");
                assert_eq!(parse_number(&text).unwrap().as_f64(), Some(f), "{text}");
            }
        }
        assert!(parse_number("1e400").is_err());
    }
}
