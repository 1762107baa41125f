//! Runs the cross-engine conformance fixtures of `../shared/kip-conformance`
//! against the extension, one fresh bootstrapped space per fixture file, and
//! prints `passed/total` per file.
//!
//! Files listed in `conformance_required.txt` must pass completely (minus
//! cases marked `skip`, which still execute so state stays identical); the
//! others are reported. When `../shared` is absent the test says so and
//! passes.

use kip_integration_tests::normalize::{canonical, normalize};
use kip_integration_tests::{connect, fresh_space, kip, shared_dir};
use serde_json::{json, Value};
use std::collections::BTreeSet;

struct FileReport {
    file: String,
    passed: usize,
    total: usize,
    skipped: usize,
    failures: Vec<String>,
}

fn check_case(case: &Value, actual: &Value) -> Result<(), String> {
    let expect = &case["expect"];
    if let Some(code) = expect.get("error").and_then(|e| e.get("code")).and_then(Value::as_str) {
        return match actual.get("error").and_then(|e| e.get("code")).and_then(Value::as_str) {
            Some(c) if c == code => Ok(()),
            Some(c) => Err(format!("expected error {code}, got error {c}: {}", actual["error"])),
            None => Err(format!("expected error {code}, got {actual}")),
        };
    }
    let Some(expected) = expect.get("result") else {
        return Err(format!("fixture case has no expect.result or expect.error: {expect}"));
    };
    let Some(result) = actual.get("result").filter(|_| actual.get("error").is_none()) else {
        return Err(format!("expected a result, got {actual}"));
    };
    let ordered = case.get("ordered").and_then(Value::as_bool).unwrap_or(false);
    let (want, got) = (canonical(&normalize(expected, ordered)), canonical(&normalize(result, ordered)));
    if want == got {
        Ok(())
    } else {
        Err(format!("\n      expected {want}\n      actual   {got}"))
    }
}

fn run_file(path: &std::path::Path) -> FileReport {
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut client = connect();
    fresh_space(&mut client, "conf");
    let mut report = FileReport { file: file.clone(), passed: 0, total: 0, skipped: 0, failures: Vec::new() };
    for (i, cmd) in fixture["setup"].as_array().cloned().unwrap_or_default().iter().enumerate() {
        let out = kip(&mut client, cmd.as_str().unwrap(), json!({}));
        if out.get("error").is_some() {
            report.failures.push(format!("setup[{i}] failed: {}", out["error"]));
        }
    }
    for case in fixture["cases"].as_array().cloned().unwrap_or_default() {
        let name = case["name"].as_str().unwrap_or("?").to_string();
        let command = case["command"].as_str().unwrap_or("");
        let actual = kip(&mut client, command, case.get("parameters").cloned().unwrap_or(json!({})));
        if case.get("skip").is_some() {
            report.skipped += 1;
            continue;
        }
        report.total += 1;
        match check_case(&case, &actual) {
            Ok(()) => report.passed += 1,
            Err(why) => report.failures.push(format!("{name}: {why}")),
        }
    }
    report
}

fn required_files() -> BTreeSet<String> {
    include_str!("conformance_required.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

#[test]
fn conformance_fixtures() {
    let Some(shared) = shared_dir() else {
        println!("conformance: ../shared is absent, fixtures skipped");
        return;
    };
    let dir = shared.join("kip-conformance");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let required = required_files();
    let (mut all_passed, mut all_total) = (0, 0);
    let mut broken = Vec::new();
    for path in files {
        let r = run_file(&path);
        all_passed += r.passed;
        all_total += r.total;
        println!("{:<32} {:>3}/{:<3} passed ({} skipped)", r.file, r.passed, r.total, r.skipped);
        let verbose = std::env::var("KIP_CONFORMANCE_VERBOSE").is_ok();
        for f in &r.failures {
            if verbose || required.contains(&r.file) {
                println!("    FAIL {f}");
            }
        }
        if required.contains(&r.file) && !r.failures.is_empty() {
            broken.push(r.file.clone());
        }
    }
    println!("conformance total: {all_passed}/{all_total} passed");
    assert!(broken.is_empty(), "required fixture files with failures: {broken:?}");
}
