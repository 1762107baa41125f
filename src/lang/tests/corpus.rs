//! Every KIP block of the reference material parses (or, for templates and
//! counter-examples, fails with KIP_1001), and every conformance fixture
//! command parses unless it is a syntax-error case. See common/mod.rs for
//! the extraction rule.

mod common;

use common::{Expect, SHARED};

#[test]
fn reference_corpus_parses() {
    if !common::shared_available() {
        eprintln!("skip: {SHARED} is absent");
        return;
    }
    let mut failures = Vec::new();
    let (mut total_parsed, mut total) = (0, 0);
    for (file, samples) in common::corpus() {
        let mut parsed = 0;
        let mut templates = 0;
        for s in &samples {
            let r = kip_lang::parse(&s.text);
            match (s.expect, r) {
                (Expect::Parse, Ok(_)) => parsed += 1,
                (Expect::Parse, Err(e)) => {
                    failures.push(format!("{}: {e}\n---\n{}\n---", s.origin, s.text))
                }
                (Expect::Fail, Err(e)) if e.code.as_str() == "KIP_1001" => {
                    templates += 1;
                    if std::env::var_os("KIP_CORPUS_VERBOSE").is_some() {
                        let first = s
                            .text
                            .lines()
                            .map(str::trim)
                            .find(|l| !l.is_empty() && !l.starts_with("//"))
                            .unwrap_or("");
                        println!("  rejected {}: {first}", s.origin);
                    }
                }
                (Expect::Fail, Err(e)) => failures.push(format!(
                    "{}: template should be KIP_1001, got {e}",
                    s.origin
                )),
                (Expect::Fail, Ok(_)) => failures.push(format!(
                    "{}: template/counter-example parsed\n{}",
                    s.origin, s.text
                )),
            }
        }
        let expected_ok = samples.iter().filter(|s| s.expect == Expect::Parse).count();
        println!("{file}: parsed {parsed}/{expected_ok} (+{templates} templates/known-invalid rejected with KIP_1001)");
        total_parsed += parsed;
        total += expected_ok;
    }
    println!("corpus total: parsed {total_parsed}/{total}");
    assert!(total > 100, "suspiciously small corpus: {total}");
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// KIP_1001 cases that are *structural/semantic* checks of the engine, not
/// syntax: the text is well-formed KIP, so the front end must parse it and
/// leave the error to the compiler/executor. (fixture file, case name, why)
const ENGINE_KIP_1001: &[(&str, &str, &str)] = &[
    (
        "kml-upsert.json",
        "a proposition (id:) matcher rejects a concept id",
        "id kinds (C:/P:) are an engine format",
    ),
    (
        "kml-upsert.json",
        "subject and object of a proposition must differ",
        "a self-loop is a data rule",
    ),
    (
        "kml-upsert.json",
        "a SET PROPOSITIONS self-loop is rejected by the preflight",
        "a self-loop is a data rule",
    ),
    (
        "kql-find-concepts.json",
        "an unparseable CURSOR is rejected instead of replaying page one",
        "cursor tokens are opaque to the parser",
    ),
    (
        "kql-multi-hop.json",
        "a multi-hop pattern needs at least one grounded endpoint",
        "an engine limit on hop expansion",
    ),
    (
        "kql-multi-hop.json",
        "a non-offset CURSOR on a multi-hop page is rejected",
        "cursor tokens are opaque to the parser",
    ),
    (
        "smoke-basics.json",
        "a malformed cursor is rejected rather than restarting pagination",
        "cursor tokens are opaque to the parser",
    ),
];

fn engine_raised(origin: &str) -> bool {
    ENGINE_KIP_1001
        .iter()
        .any(|(file, case, _)| origin == format!("{file} case '{case}'"))
}

#[test]
fn conformance_fixtures_parse() {
    if !common::shared_available() {
        eprintln!("skip: {SHARED} is absent");
        return;
    }
    let cmds = common::fixture_commands();
    let mut failures = Vec::new();
    let (mut parsed, mut rejected) = (0, 0);
    for c in &cmds {
        let r = kip_lang::parse(&c.text);
        let syntax_case = c.error_code.as_deref() == Some("KIP_1001") && !engine_raised(&c.origin);
        match (syntax_case, r) {
            (false, Ok(_)) => parsed += 1,
            (false, Err(e)) => failures.push(format!("{}: {e}\n  {}", c.origin, c.text)),
            (true, Err(e)) if e.code.as_str() == "KIP_1001" => rejected += 1,
            (true, Err(e)) => failures.push(format!("{}: expected KIP_1001, got {e}", c.origin)),
            (true, Ok(_)) => failures.push(format!(
                "{}: expected KIP_1001 but parsed\n  {}",
                c.origin, c.text
            )),
        }
    }
    println!(
        "fixtures: parsed {parsed}, rejected {rejected} syntax-error cases, of {}",
        cmds.len()
    );
    assert!(cmds.len() > 50);
    // Every listed engine-raised case must still exist (no stale entries).
    for (file, case, _) in ENGINE_KIP_1001 {
        let origin = format!("{file} case '{case}'");
        assert!(
            cmds.iter().any(|c| c.origin == origin),
            "stale ENGINE_KIP_1001 entry: {origin}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} fixture failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
