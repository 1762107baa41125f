//! Robustness: random and mutated inputs never panic or overflow the
//! stack; each either parses or yields a KipError. Whenever a mutant does
//! parse, it must also round-trip through the printer and survive `bind`.
//!
//! Deterministic (fixed-seed SplitMix64), no extra dependencies. The run is
//! split over two tests so the harness uses both cores. Total: 100,000
//! inputs (`FUZZ_CASES` env var overrides, e.g. for a longer soak).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

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

/// Size of the slice of a long seed that gets mutated.
const WINDOW: usize = 200;

fn mutate(rng: &mut Rng, seed: &str) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    // Work on a window of long seeds (capsules are up to tens of KB): keeps
    // the run fast while still reaching every part of every seed. Whole
    // seeds of moderate size are mutated too.
    if chars.len() > 1500 || (chars.len() > 400 && rng.below(4) != 0) {
        let start = rng.below(chars.len() - WINDOW);
        chars = chars[start..start + WINDOW].to_vec();
    }
    for _ in 0..=rng.below(4) {
        let len = chars.len();
        let at = rng.below(len + 1);
        match rng.below(9) {
            0 if len > 0 => {
                let end = (at + 1 + rng.below(8)).min(len);
                chars.drain(at.min(len)..end.max(at.min(len)));
            }
            1 => {
                let c = *rng.pick(&[
                    '(', ')', '{', '}', '[', ']', ',', ':', '?', '"', '!', '|', '.', '\\', '/',
                    ' ', '\n', 'a', '1', 'é',
                ]);
                chars.insert(at, c);
            }
            2 if len > 1 => {
                let b = rng.below(len);
                chars.swap(at.min(len - 1), b);
            }
            3 => {
                let t = rng.pick(TOKENS);
                chars.splice(at..at, t.chars());
            }
            4 if len > 0 => {
                // Duplicate a slice.
                let end = (at + rng.below(40)).min(len);
                let slice: Vec<char> = chars[at.min(len)..end.max(at.min(len))].to_vec();
                chars.splice(at..at, slice);
            }
            5 => chars.truncate(at),
            6 => {
                // Deep nesting of one bracket kind, or a long `!` run.
                let c = *rng.pick(&['(', '[', '{', '!']);
                let n = *rng.pick(&[63, 64, 65, 100, 1000, 10_000]);
                chars.splice(at..at, std::iter::repeat_n(c, n));
            }
            7 => {
                // Replace a word by a random token.
                let t: Vec<char> = rng.pick(TOKENS).chars().collect();
                let end = (at..len)
                    .find(|&i| !chars[i].is_alphanumeric())
                    .unwrap_or(len);
                chars.splice(at..end, t);
            }
            _ => {
                let c = char::from_u32(rng.below(0x3000) as u32).unwrap_or('x');
                chars.insert(at, c);
            }
        }
    }
    chars.into_iter().collect()
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
