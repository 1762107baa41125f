//! Corpus extraction shared by the integration tests.
//!
//! Sources: the RC10 spec and syntax card, the Brain prompts, the seed
//! texts (all Markdown-style, KIP in ``` fences), the capsule `.kip` files
//! (whole file = one script) and the conformance fixtures.
//!
//! ## Which fenced blocks are KIP (the rule)
//! * A fence tagged `prolog`, `kip`, `kql` or `kml` is KIP.
//! * An untagged fence is KIP only if its first meaningful line (ignoring
//!   blank lines and `//` comments) starts with a command keyword (FIND,
//!   UPSERT, UPDATE, MERGE, DELETE, DESCRIBE, SEARCH, EXPORT).
//! * Every other tag (`json`, `js`, `typescript`, `markdown`, `mermaid`,
//!   `bash`, …) is not KIP: JSON responses and requests are excluded here by
//!   their tag, never by hand. One exception by rule: inside `json`/`js`
//!   blocks (request examples), a string literal whose text starts with a
//!   command keyword is a KIP command (`"command": "FIND(…)"`) and is checked
//!   like a block.
//!
//! ## How a KIP block is checked
//! * **Templates**: a command (after splitting, below) that uses meta-syntax outside string literals
//!   and comments — `<placeholder>`, `...`/`…`, optional-part brackets like
//!   `[LIMIT N]`, or a bare `LIMIT N` — documents syntax rather than being
//!   KIP. It must be rejected with KIP_1001.
//! * **Fragments**: a block whose first token is not a command keyword is
//!   a piece of a command, as the spec shows WHERE clauses on their own.
//!   A fragment starting with `CONCEPT`/`PROPOSITION` is wrapped in
//!   `UPSERT { … }`; any other fragment in `FIND(?fragment) WHERE { … }`.
//! * **Several commands**: a block is split at lines that start in column 0
//!   with a command keyword. Consecutive KML statements stay together (one
//!   text may carry several, as capsules do); each read command stands
//!   alone, as the spec requires one KQL/META command per text.
//! * Blocks listed in [`KNOWN_INVALID`] must fail with KIP_1001.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub const SHARED: &str = "/work/shared";

pub const COMMAND_KEYWORDS: &[&str] = &[
    "FIND", "UPSERT", "UPDATE", "MERGE", "DELETE", "DESCRIBE", "SEARCH", "EXPORT",
];
const KML_KEYWORDS: &[&str] = &["UPSERT", "UPDATE", "MERGE", "DELETE"];

/// Blocks known to be invalid KIP: (file name suffix, 1-based line of the
/// opening fence, why). They must fail with KIP_1001. The RC10 spec and the
/// Brain prompts contain none; the one entry is an error in a seed text.
pub const KNOWN_INVALID: &[(&str, usize, &str)] = &[(
    "001_anda_kip_instructions.txt",
    113,
    "old SDK README example `?drug (\"has_side_effect\", ?effect)`: a proposition clause needs (subject, predicate, object)",
)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Must parse.
    Parse,
    /// Template or counter-example: must fail with KIP_1001.
    Fail,
}

#[derive(Debug, Clone)]
pub struct Sample {
    /// `file:line` for messages.
    pub origin: String,
    pub text: String,
    pub expect: Expect,
}

pub fn shared_available() -> bool {
    Path::new(SHARED).join("reference").is_dir()
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![
        PathBuf::from(SHARED).join("reference/SPECIFICATION-v1.0-RC10.md"),
        PathBuf::from(SHARED).join("reference/KIPSyntax-v1.0-RC10.md"),
    ];
    files.extend(sorted_glob(
        &PathBuf::from(SHARED).join("reference/brain"),
        |n| n.starts_with("Brain") && n.ends_with(".md"),
    ));
    files.extend(sorted_glob(&PathBuf::from(SHARED).join("seeds"), |n| {
        n.ends_with(".txt")
    }));
    // KIP v1.0-RC11: the same language, new documents.
    files.push(PathBuf::from(SHARED).join("reference/rc11/SPECIFICATION.md"));
    files.push(PathBuf::from(SHARED).join("reference/rc11/KIPSyntax.md"));
    files.extend(sorted_glob(
        &PathBuf::from(SHARED).join("reference/rc11/brain"),
        |n| n.ends_with(".md"),
    ));
    files
}

fn sorted_glob(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&keep))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn kip_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            kip_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "kip") {
            out.push(p);
        }
    }
}

/// Every corpus sample, grouped by file (file display name, samples).
pub fn corpus() -> Vec<(String, Vec<Sample>)> {
    let mut groups = Vec::new();
    for f in markdown_files() {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let name = f
            .strip_prefix(SHARED)
            .map(|p| p.to_string_lossy().trim_start_matches('/').to_string())
            .unwrap_or_else(|_| f.file_name().unwrap().to_string_lossy().to_string());
        groups.push((name.clone(), samples_from_markdown(&name, &text)));
    }
    let mut capsules = Vec::new();
    kip_files(
        &PathBuf::from(SHARED).join("reference/capsules-rc10"),
        &mut capsules,
    );
    kip_files(
        &PathBuf::from(SHARED).join("reference/rc11/capsules"),
        &mut capsules,
    );
    for f in capsules {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f
            .strip_prefix(SHARED)
            .unwrap_or(&f)
            .to_string_lossy()
            .to_string();
        groups.push((
            name.clone(),
            vec![Sample {
                origin: name,
                text,
                expect: Expect::Parse,
            }],
        ));
    }
    groups
}

pub fn samples_from_markdown(file: &str, text: &str) -> Vec<Sample> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if let Some(tag) = t.strip_prefix("```") {
            let tag = tag.trim();
            let start = i + 1;
            let mut j = start;
            while j < lines.len() && lines[j].trim() != "```" {
                j += 1;
            }
            let body = lines[start..j.min(lines.len())].join("\n");
            if tag == "json" || tag == "js" {
                for (k, cmd) in command_strings(&body).into_iter().enumerate() {
                    let expect = if is_template(&cmd) {
                        Expect::Fail
                    } else {
                        Expect::Parse
                    };
                    out.push(Sample {
                        origin: format!("{file}:{} string #{}", i + 1, k + 1),
                        text: cmd,
                        expect,
                    });
                }
            } else if is_kip_block(tag, &body) {
                let origin = format!("{file}:{}", i + 1);
                let listed = KNOWN_INVALID
                    .iter()
                    .any(|(f, l, _)| file.ends_with(f) && *l == i + 1);
                if listed {
                    out.push(Sample {
                        origin,
                        text: body,
                        expect: Expect::Fail,
                    });
                } else {
                    for (k, chunk) in split_commands(&body).into_iter().enumerate() {
                        let origin = format!("{origin}#{}", k + 1);
                        if is_template(&chunk) {
                            out.push(Sample {
                                origin,
                                text: chunk,
                                expect: Expect::Fail,
                            });
                        } else {
                            out.push(Sample {
                                origin,
                                text: wrap_fragment(&chunk),
                                expect: Expect::Parse,
                            });
                        }
                    }
                }
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// String literals of a JSON/JS block that hold a KIP command.
fn command_strings(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            let literal = &body[start..(i + 1).min(body.len())];
            if let Ok(text) = serde_json::from_str::<String>(literal) {
                if first_meaningful_line(&text)
                    .is_some_and(|l| starts_with_keyword(l, COMMAND_KEYWORDS))
                {
                    out.push(text);
                }
            }
        }
        i += 1;
    }
    out
}

fn first_meaningful_line(body: &str) -> Option<&str> {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("//"))
}

fn starts_with_keyword(line: &str, kws: &[&str]) -> bool {
    kws.iter().any(|k| {
        line.starts_with(k)
            && !line[k.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

pub fn is_kip_block(tag: &str, body: &str) -> bool {
    match tag {
        "prolog" | "kip" | "kql" | "kml" => true,
        "" => first_meaningful_line(body).is_some_and(|l| starts_with_keyword(l, COMMAND_KEYWORDS)),
        _ => false,
    }
}

/// Text with string literals and `//` comments blanked out.
fn code_only(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == '"' {
                        break;
                    }
                }
                out.push('"');
            }
            '/' if chars.peek() == Some(&'/') => {
                while let Some(&d) = chars.peek() {
                    if d == '\n' {
                        break;
                    }
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

pub fn is_template(body: &str) -> bool {
    let code = code_only(body);
    let bytes: Vec<char> = code.chars().collect();
    // `<ident…>` meta-variables.
    for (i, &c) in bytes.iter().enumerate() {
        if c == '<' {
            let rest: String = bytes[i + 1..]
                .iter()
                .take_while(|&&d| d != '>' && d != '\n')
                .collect();
            if i + 1 + rest.len() < bytes.len()
                && !rest.is_empty()
                && rest.starts_with(|d: char| d.is_ascii_alphabetic())
                && rest
                    .chars()
                    .all(|d| d.is_ascii_alphanumeric() || d == '_' || d == ' ' || d == '-')
            {
                return true;
            }
        }
    }
    code.contains("...")
        || code.contains('…')
        || ["[LIMIT", "[CURSOR", "[WITH", "[MODE", "[THRESHOLD", "[ASC"]
            .iter()
            .any(|m| code.contains(m))
        || code
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0] == "LIMIT" && w[1] == "N")
}

/// Split at column-0 command keywords; consecutive KML statements stay in
/// one chunk, read commands are alone.
pub fn split_commands(body: &str) -> Vec<String> {
    let mut chunks: Vec<(bool, String)> = Vec::new(); // (is_kml, text)
    let mut current: Option<(bool, String)> = None;
    for line in body.lines() {
        let starts =
            !line.starts_with(char::is_whitespace) && starts_with_keyword(line, COMMAND_KEYWORDS);
        if starts {
            let kml = starts_with_keyword(line, KML_KEYWORDS);
            match &mut current {
                Some((true, text)) if kml => {
                    text.push('\n');
                    text.push_str(line);
                    continue;
                }
                _ => {}
            }
            if let Some(c) = current.take() {
                chunks.push(c);
            }
            current = Some((kml, line.to_string()));
        } else {
            match &mut current {
                Some((_, text)) => {
                    text.push('\n');
                    text.push_str(line);
                }
                None => current = Some((false, line.to_string())),
            }
        }
    }
    if let Some(c) = current {
        chunks.push(c);
    }
    // A leading comment-only chunk belongs to the next command.
    let mut merged: Vec<String> = Vec::new();
    let mut pending = String::new();
    for (_, text) in chunks {
        if first_meaningful_line(&text).is_none() {
            pending.push_str(&text);
            pending.push('\n');
        } else {
            merged.push(format!("{pending}{text}"));
            pending.clear();
        }
    }
    if merged.is_empty() && !pending.trim().is_empty() {
        merged.push(pending);
    }
    merged
}

/// Wrap a WHERE-body or UPSERT-body fragment into a complete command.
pub fn wrap_fragment(chunk: &str) -> String {
    match first_meaningful_line(chunk) {
        Some(l) if starts_with_keyword(l, COMMAND_KEYWORDS) => chunk.to_string(),
        Some(l) if starts_with_keyword(l, &["CONCEPT", "PROPOSITION"]) => {
            format!("UPSERT {{\n{chunk}\n}}")
        }
        _ => format!("FIND(?fragment) WHERE {{\n{chunk}\n}}"),
    }
}

/// A conformance fixture command.
#[derive(Debug, Clone)]
pub struct FixtureCommand {
    pub origin: String,
    pub text: String,
    /// `expect.error.code`, if any.
    pub error_code: Option<String>,
    pub error_message: Option<String>,
}

pub fn fixture_commands() -> Vec<FixtureCommand> {
    let mut out = Vec::new();
    for f in sorted_glob(&PathBuf::from(SHARED).join("kip-conformance"), |n| {
        n.ends_with(".json")
    }) {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for (i, s) in doc["setup"].as_array().into_iter().flatten().enumerate() {
            if let Some(t) = s.as_str() {
                out.push(FixtureCommand {
                    origin: format!("{name} setup[{i}]"),
                    text: t.to_string(),
                    error_code: None,
                    error_message: None,
                });
            }
        }
        for c in doc["cases"].as_array().into_iter().flatten() {
            let Some(t) = c["command"].as_str() else {
                continue;
            };
            let err = &c["expect"]["error"];
            out.push(FixtureCommand {
                origin: format!("{name} case '{}'", c["name"].as_str().unwrap_or("?")),
                text: t.to_string(),
                error_code: err["code"].as_str().map(String::from),
                error_message: err["message"].as_str().map(String::from),
            });
        }
    }
    out
}
