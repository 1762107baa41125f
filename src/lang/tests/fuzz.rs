//! Robustness: random and mutated inputs never panic or overflow the
//! stack; each either parses or yields a KipError. Whenever a mutant does
//! parse, it must also round-trip through the printer and survive `bind`.
//!
//! Deterministic (fixed-seed SplitMix64 and the mutations of `kip-mutate`,
//! shared with the fuzz run through SQL). The run is
//! split over two tests so the harness uses both cores. Total: 100,000
//! inputs (`FUZZ_CASES` env var overrides, e.g. for a longer soak).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use kip_mutate::{Options, Rng};

const TOKENS: &[&str] = &[
    "FIND",
    "WHERE",
    "FILTER",
    "OPTIONAL",
    "NOT",
    "UNION",
    "ORDER BY",
    "ASC",
    "DESC",
    "LIMIT",
    "CURSOR",
    "COUNT",
    "DISTINCT",
    "UPSERT",
    "CONCEPT",
    "PROPOSITION",
    "SET ATTRIBUTES",
    "SET PROPOSITIONS",
    "WITH METADATA",
    "EXPECT VERSION",
    "UPDATE",
    "SET METADATA",
    "MERGE",
    "INTO",
    "DELETE",
    "DETACH",
    "FROM",
    "DESCRIBE",
    "PRIMER",
    "TYPES",
    "TYPE",
    "SEARCH",
    "MODE",
    "THRESHOLD",
    "EXPORT",
    "IN",
    "IS_NULL",
    "CONTAINS",
    "ADD",
    "CLAMP",
    "?x",
    "?1bad",
    ":p",
    ":",
    "\"s\"",
    "\"",
    "\\",
    "\\u",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "|",
    "||",
    "&&",
    "!",
    "==",
    "<=",
    ".",
    ".attributes",
    ".metadata.k",
    "{1,3}",
    "{0,}",
    "-1",
    "1e999",
    "0.5",
    "true",
    "null",
    "//",
    "\n",
    " ",
    "é",
    "😀",
    "\u{0}",
    "id:",
    "type:",
    "name:",
];

const FALLBACK_SEEDS: &[&str] = &[
    r#"FIND(?a.name, COUNT(?b)) WHERE { ?a {type: "T"} (?a, "p"{1,3}, ?b) FILTER(?a.attributes.x > 1 || !IS_NULL(?b.name)) } ORDER BY ?a.name DESC LIMIT 5"#,
    r#"UPSERT { CONCEPT ?c { {type: "T", name: "n"} SET ATTRIBUTES { a: [1, {b: :p}] } SET PROPOSITIONS { ("p", ?c) } } WITH METADATA { s: 1 } }"#,
    r#"UPDATE ?t SET ATTRIBUTES { n: ADD(COALESCE(?t.attributes.n, 0), 1) } WHERE { ?t {type: "T"} } LIMIT 10"#,
    r#"SEARCH CONCEPT "x" WITH TYPE "T" MODE "hybrid" THRESHOLD 0.5 LIMIT 3"#,
    r#"DELETE CONCEPT ?x DETACH WHERE { ?x {type: "T", name: "n"} }"#,
];

fn seeds() -> Vec<String> {
    let mut s: Vec<String> = FALLBACK_SEEDS.iter().map(|s| s.to_string()).collect();
    if common::shared_available() {
        for (_, samples) in common::corpus() {
            s.extend(samples.into_iter().map(|x| x.text));
        }
        s.extend(common::fixture_commands().into_iter().map(|c| c.text));
    }
    s
}

/// The parser sees every character, NUL included; long seeds are mutated
/// in windows of 200 characters.
const OPTIONS: Options = Options { tokens: TOKENS, window: 200, allow_nul: true };

fn mutate(rng: &mut Rng, seed: &str) -> String {
    kip_mutate::mutate(rng, seed, &OPTIONS)
}

fn random_text(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(40) {
        let t: &&str = rng.pick(TOKENS);
        s.push_str(t);
        if rng.below(2) == 0 {
            s.push(' ');
        }
    }
    s
}

fn run(stream: u64, cases: usize) {
    let seeds = seeds();
    let mut rng = Rng(0x5EED_0000 + stream);
    let (mut ok, mut err) = (0usize, 0usize);
    let empty = serde_json::Map::new();
    for i in 0..cases {
        let input = match i % 10 {
            0 => random_text(&mut rng),
            _ => {
                let seed = rng.pick(&seeds).clone();
                mutate(&mut rng, &seed)
            }
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| match kip_lang::parse(&input) {
            Ok(ast) => {
                let printed = kip_lang::print(&ast);
                let again = kip_lang::parse(&printed)
                    .unwrap_or_else(|e| panic!("printed text fails: {e}\n{printed}"));
                assert_eq!(again, ast, "round trip changed the AST\n{printed}");
                let _ = kip_lang::bind(ast, &empty);
                true
            }
            Err(e) => {
                assert!(
                    e.code.as_str().starts_with("KIP_1"),
                    "parse error with non-syntax code {e}"
                );
                assert!(!e.message.is_empty());
                false
            }
        }));
        match outcome {
            Ok(true) => ok += 1,
            Ok(false) => err += 1,
            Err(_) => panic!("panic on input #{i} of stream {stream}:\n{input:?}"),
        }
    }
    println!("fuzz stream {stream}: {cases} inputs, {ok} parsed, {err} rejected with a KipError");
}

fn cases_per_stream() -> usize {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
        / 2
}

#[test]
fn fuzz_stream_a() {
    run(1, cases_per_stream());
}

#[test]
fn fuzz_stream_b() {
    run(2, cases_per_stream());
}

#[test]
fn deep_nesting_is_refused_cleanly() {
    for (open, close) in [("(", ")"), ("[", "]"), ("{", "}")] {
        let deep = format!(
            "FIND(?a) WHERE {{ FILTER({}?a{}) }}",
            open.repeat(10_000),
            close.repeat(10_000)
        );
        let e = kip_lang::parse(&deep).unwrap_err();
        assert_eq!(e.code.as_str(), "KIP_1001", "{e}");
        let json = format!("UPSERT {{ CONCEPT ?c {{ {{type: \"T\", name: \"n\"}} SET ATTRIBUTES {{ a: {}1{} }} }} }}", open.repeat(10_000), close.repeat(10_000));
        assert_eq!(
            kip_lang::parse(&json).unwrap_err().code.as_str(),
            "KIP_1001"
        );
    }
    let bangs = format!(
        "FIND(?a) WHERE {{ FILTER({}?a.name) }}",
        "!".repeat(100_000)
    );
    assert_eq!(
        kip_lang::parse(&bangs).unwrap_err().code.as_str(),
        "KIP_1001"
    );
    // `!` inside parentheses inside `!`: bounded as a whole, not per run.
    let mixed = format!(
        "FIND(?a) WHERE {{ FILTER({}?a.name{}) }}",
        "!!!!!!!!!!!!!!!!!!!!(".repeat(60),
        ")".repeat(60)
    );
    assert_eq!(
        kip_lang::parse(&mixed).unwrap_err().code.as_str(),
        "KIP_1001"
    );
    // Long flat chains are fine (n-ary AND/OR, no recursion).
    let chain = vec!["?a.name == \"x\""; 20_000].join(" || ");
    let q = format!("FIND(?a) WHERE {{ ?a {{type: \"T\"}} FILTER({chain}) }}");
    let ast = kip_lang::parse(&q).unwrap();
    assert_eq!(kip_lang::parse(&kip_lang::print(&ast)).unwrap(), ast);
    // Nesting just under the cap still parses.
    let ok = format!(
        "FIND(?a) WHERE {{ FILTER({}?a.name{}) }}",
        "(".repeat(60),
        ")".repeat(60)
    );
    assert!(kip_lang::parse(&ok).is_ok());
}
