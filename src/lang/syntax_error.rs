//! Turn a pest failure into a readable KIP_1001.
//!
//! pest reports the grammar rules (and, with error detail on, the literal
//! tokens) it tried at the furthest position. Rule names mean nothing to an
//! LLM agent, so each is mapped to plain words ("a variable like ?x"), the
//! list is deduplicated, and the message names what was found instead.

use crate::depth::line_col;
use crate::error::KipError;
use crate::parser::Rule;
use pest::error::{ErrorVariant, InputLocation};

pub fn translate(
    err: pest::error::Error<Rule>,
    detail: Option<pest::error::Error<Rule>>,
    text: &str,
) -> KipError {
    let rule_pos = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((p, _)) => p,
    };
    // pest positions its error at the furthest *rule* attempt; a literal
    // token (`(` after FIND) may have been tried further on. Report the
    // furthest of the two.
    let attempts = detail.as_ref().and_then(|d| d.parse_attempts());
    let tok_pos = attempts.as_ref().map_or(0, |a| a.max_position);
    let pos = rule_pos.max(tok_pos);

    let mut expected: Vec<String> = Vec::new();
    let push = |list: &mut Vec<String>, s: String| {
        if !list.contains(&s) {
            list.push(s);
        }
    };
    let context = Context::of(text, pos);
    if pos == rule_pos {
        if let ErrorVariant::ParsingError { positives, .. } = &err.variant {
            for r in positives {
                if let Some(w) = context.describe(*r) {
                    push(&mut expected, w.to_string());
                }
            }
        }
    }
    if let Some(a) = attempts.filter(|_| tok_pos == pos) {
        // `ParsingToken` is not re-exported by pest; its Display gives the
        // literal. Punctuation is always worth naming; keywords only when no
        // rule described the position; whitespace/comment tokens never.
        let tokens: Vec<String> = a.expected_tokens().iter().map(|t| t.to_string()).collect();
        let had_rules = !expected.is_empty();
        for t in &tokens {
            // Opening tokens (`"`, `{`, …) only start what a rule already
            // described ("a value"); name them only when no rule did.
            let closing = CLOSING.contains(&t.as_str());
            if PUNCTUATION.contains(&t.as_str()) && (closing || !had_rules) {
                push(&mut expected, format!("'{t}'"));
            }
        }
        if !had_rules {
            for t in &tokens {
                // pest names its built-in character classes (the letters
                // and digits that may continue a name) BUILTIN_RULE.
                if t.len() > 1 && t != "BUILTIN_RULE" && t.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    push(&mut expected, t.clone());
                }
            }
        }
    }
    let found = found_at(text, pos);
    let (line, col) = line_col(text, pos);
    let what = if expected.is_empty() {
        "unexpected input".to_string()
    } else {
        format!("expected {}", join_or(&expected))
    };
    let message = format!("line {line}, column {col}: {what}, found {found}");
    KipError::syntax(message).with_hint(hint_for(text, pos))
}

/// The command a syntax error is in, as far as the words the rule names
/// depend on it: `WITH` starts `WITH TYPE` in SEARCH and `WITH METADATA`
/// elsewhere, and only an UPSERT may be followed by another command (the
/// grammar takes a script of commands, and offered FIND, UPSERT, … after a
/// complete FIND).
struct Context {
    /// The text starts with SEARCH.
    search: bool,
    /// The position is past the first word of a command that no other
    /// command may follow.
    sole_command: bool,
    /// The position is past the first word of an UPSERT: only another
    /// UPSERT may follow it.
    upserts: bool,
}

impl Context {
    fn of(text: &str, pos: usize) -> Context {
        let start = first_word_at(text);
        let first: String = text[start..].chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        let past_first = pos > start + first.len();
        let command = matches!(first.as_str(), "FIND" | "UPDATE" | "MERGE" | "DELETE" | "DESCRIBE" | "SEARCH" | "EXPORT");
        Context { search: first == "SEARCH", sole_command: command && past_first, upserts: first == "UPSERT" && past_first }
    }

    /// Plain-words description of a grammar rule here; `None` hides it.
    fn describe(&self, rule: Rule) -> Option<&'static str> {
        use Rule::*;
        let starts_a_command = matches!(
            rule,
            kw_find | kw_upsert | kw_update | kw_merge | kw_delete | kw_describe | kw_search | kw_export | script
                | find | upsert | update | merge | delete | describe | search | export
        );
        let another_upsert = matches!(rule, kw_upsert | upsert);
        match rule {
            kw_with if self.search => Some("WITH TYPE"),
            _ if starts_a_command && (self.sole_command || (self.upserts && !another_upsert)) => None,
            _ => self::describe(rule),
        }
    }
}

/// Whether the error at `pos` cuts a number short (`007`, `1.`, `1e`): the
/// word before it is a digit run, perhaps with a point or an exponent.
fn in_number(text: &str, pos: usize) -> bool {
    let before = &text[..pos.min(text.len())];
    let word: String = before.chars().rev().take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')).collect();
    let word: String = word.chars().rev().collect();
    let word = word.trim_start_matches(['-', '+']);
    word.starts_with(|c: char| c.is_ascii_digit())
        && (word.ends_with(['.', 'e', 'E', '+', '-']) || (word == "0" && text[pos.min(text.len())..].starts_with(|c: char| c.is_ascii_digit())))
}

/// Where the first word of `text` starts, past whitespace and `//` comments.
fn first_word_at(text: &str) -> usize {
    let mut at = 0;
    loop {
        let rest = &text[at..];
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        if !trimmed.starts_with("//") {
            return at;
        }
        at += trimmed.find('\n').unwrap_or(trimmed.len());
    }
}

/// Plain-words description of a grammar rule; `None` hides it.
fn describe(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        EOI => "end of input",
        script | find | upsert | update | merge | delete | describe | search | export => {
            "a command (FIND, UPSERT, UPDATE, MERGE, DELETE, DESCRIBE, SEARCH or EXPORT)"
        }
        kw_find => "FIND",
        kw_where | where_block => "WHERE {…}",
        kw_filter | filter | kw_optional | optional_clause | kw_not | not_clause | kw_union
        | union_clause | concept_clause | prop_clause => {
            "a WHERE clause (?var {…}, (…), FILTER, OPTIONAL, NOT or UNION)"
        }
        kw_order | order_by => "ORDER BY",
        kw_by => "BY",
        kw_asc | kw_desc => "ASC or DESC",
        kw_limit | limit => "LIMIT",
        kw_cursor | cursor => "CURSOR",
        kw_distinct => "DISTINCT",
        kw_upsert => "UPSERT",
        kw_concept => "CONCEPT",
        kw_proposition => "PROPOSITION",
        kw_propositions => "PROPOSITIONS",
        kw_set => "SET",
        kw_attributes => "ATTRIBUTES",
        kw_metadata => "METADATA",
        kw_with | with_metadata => "WITH METADATA",
        kw_expect | expect_version => "EXPECT VERSION",
        kw_version => "VERSION",
        kw_update => "UPDATE",
        kw_merge => "MERGE",
        kw_into => "INTO",
        kw_delete => "DELETE",
        kw_from => "FROM",
        kw_detach => "DETACH",
        kw_describe => "DESCRIBE",
        kw_types => "TYPES",
        kw_type => "TYPE",
        kw_primer | describe_primer => "PRIMER",
        kw_domains | describe_domains => "DOMAINS",
        describe_concept_types | describe_concept_type => "CONCEPT",
        describe_prop_types | describe_prop_type => "PROPOSITION",
        kw_search => "SEARCH",
        kw_mode | search_mode => "MODE",
        kw_threshold | search_threshold => "THRESHOLD",
        search_with_type => "WITH TYPE",
        kw_export => "EXPORT",
        kw_true | kw_false | kw_null | value => "a value",
        word | key | key_item => "a key",
        var => "a variable like ?x",
        param => "a parameter like :name",
        string | str_body => "a string in double quotes",
        str_arg => "a string or :parameter",
        number => "a number",
        object | fields => "an object {…}",
        pair => "a key: value pair",
        array => "an array […]",
        dot_path => "a variable or dot path like ?x.name",
        projection | order_key => "a variable, dot path or aggregation",
        aggregate | agg_func => "an aggregation (COUNT, SUM, AVG, MIN, MAX)",
        concept_sel => "a concept clause {type: …, name: …}",
        prop_pattern => "a proposition clause (…)",
        prop_id | id_key => "id",
        triple | endpoint => "a subject/object (?var, {…}, (…) or an id string)",
        predicate | pred_group | pred_alt | bad_pred_tail => "a predicate like \"treats\" or ?p",
        // Only ever tried as an optional continuation; naming it misleads.
        hop_range | hop_comma => return None,
        expr | and_expr | cmp_expr | unary | primary => "an expression",
        func_call | filter_func => {
            "a function (IN, IS_NULL, IS_NOT_NULL, CONTAINS, STARTS_WITH, ENDS_WITH, REGEX)"
        }
        or_op => "'||'",
        and_op => "'&&'",
        cmp_op => "a comparison (==, !=, <, >, <=, >=)",
        not_op => "'!'",
        concept_block | prop_block => "a CONCEPT or PROPOSITION block",
        set_attributes => "SET ATTRIBUTES",
        set_propositions => "SET PROPOSITIONS",
        set_prop_item => "a proposition entry (\"predicate\", target)",
        update_set => "SET ATTRIBUTES or SET METADATA",
        update_field => "a key: value pair",
        update_expr | update_call | update_func => {
            "a value or update expression (ADD, MUL, CLAMP, COALESCE)"
        }
        delete_attrs | delete_meta | delete_props | delete_concept => {
            "ATTRIBUTES, METADATA, PROPOSITIONS or CONCEPT"
        }
        key_set => "a key list {\"key\", …}",
        WHITESPACE | COMMENT | command | ident_char | find_modifier | where_clause
        | upsert_item | block_set | page_modifier | search_option => return None,
    })
}

const PUNCTUATION: &[&str] = &["(", ")", "{", "}", "[", "]", ",", ":", "|", "\""];
const CLOSING: &[&str] = &[")", "}", "]", ",", "|"];

fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {}", rest.join(", "), last),
    }
}

/// A short description of the input at `pos` ("'?x'", "end of input").
fn found_at(text: &str, pos: usize) -> String {
    let rest = &text[pos.min(text.len())..];
    let Some(first) = rest.chars().next() else {
        return "end of input".into();
    };
    let token: String = if first.is_alphanumeric()
        || first == '_'
        || first == '?'
        || first == ':'
        || first == '$'
    {
        let mut s = String::new();
        for (i, c) in rest.chars().enumerate() {
            if i > 0 && !(c.is_alphanumeric() || c == '_') {
                break;
            }
            s.push(c);
        }
        s
    } else if first == '"' {
        let body: String = rest
            .chars()
            .skip(1)
            .take_while(|&c| c != '"' && c != '\n')
            .take(24)
            .collect();
        format!("\"{body}\"")
    } else {
        first.to_string()
    };
    let shown: String = token
        .chars()
        .take(32)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    format!("`{shown}`")
}

const KEYWORDS: &[&str] = &[
    "FIND",
    "WHERE",
    "FILTER",
    "OPTIONAL",
    "NOT",
    "UNION",
    "ORDER",
    "BY",
    "ASC",
    "DESC",
    "LIMIT",
    "CURSOR",
    "DISTINCT",
    "UPSERT",
    "CONCEPT",
    "PROPOSITION",
    "PROPOSITIONS",
    "SET",
    "ATTRIBUTES",
    "METADATA",
    "WITH",
    "EXPECT",
    "VERSION",
    "UPDATE",
    "MERGE",
    "INTO",
    "DELETE",
    "FROM",
    "DETACH",
    "DESCRIBE",
    "PRIMER",
    "DOMAINS",
    "TYPES",
    "TYPE",
    "SEARCH",
    "MODE",
    "THRESHOLD",
    "EXPORT",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "IN",
    "IS_NULL",
    "IS_NOT_NULL",
    "CONTAINS",
    "STARTS_WITH",
    "ENDS_WITH",
    "REGEX",
    "ADD",
    "MUL",
    "CLAMP",
    "COALESCE",
];

fn hint_for(text: &str, pos: usize) -> String {
    let rest = &text[pos.min(text.len())..];
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !word.is_empty() {
        let upper = word.to_ascii_uppercase();
        if upper != word && KEYWORDS.contains(&upper.as_str()) {
            return format!("KIP keywords are uppercase: write {upper} instead of {word}.");
        }
    }
    if word == "EXPECT" {
        return "EXPECT VERSION goes right after the identity clause of the block, before any SET."
            .into();
    }
    if (word == "LIMIT" || word == "CURSOR") && text[..pos.min(text.len())].trim_start().starts_with("DESCRIBE") {
        return "Only DESCRIBE CONCEPT TYPES and DESCRIBE PROPOSITION TYPES take LIMIT and CURSOR; \
                DESCRIBE PRIMER, DOMAINS and a single TYPE \"…\" return their whole answer."
            .into();
    }
    if rest.starts_with('\'') {
        return "Strings use double quotes: \"like this\".".into();
    }
    if in_number(text, pos) {
        return "Numbers are written as in JSON: no leading zeros (7, not 007), digits after a decimal point (1.0, not 1.) and after an exponent (1e5, not 1e).".into();
    }
    if rest.starts_with('?') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return "Variable names must start with a letter or underscore.".into();
    }
    crate::ErrorCode::InvalidSyntax.default_hint().into()
}
