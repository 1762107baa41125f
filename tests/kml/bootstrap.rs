//! Every space starts from the project's capsules/: the schema, domains and
//! persons of the reference distribution, answerable by DESCRIBE PRIMER; and
//! re-running the bootstrap changes nothing.

use super::common::{run, space};
use kip_integration_tests::shared_dir;
use postgres::Client;
use std::collections::BTreeSet;
use std::path::Path;

/// What the issue requires to exist, independent of ../shared.
const REQUIRED: [(&str, &str); 32] = [
    ("$ConceptType", "$ConceptType"),
    ("$ConceptType", "$PropositionType"),
    ("$ConceptType", "Domain"),
    ("$ConceptType", "Person"),
    ("$ConceptType", "Event"),
    ("$ConceptType", "Preference"),
    ("$ConceptType", "Insight"),
    ("$ConceptType", "Commitment"),
    ("$ConceptType", "SleepTask"),
    ("$ConceptType", "Experience"),
    ("$ConceptType", "ExperienceStep"),
    ("$ConceptType", "Skill"),
    ("$PropositionType", "belongs_to_domain"),
    ("$PropositionType", "involves"),
    ("$PropositionType", "mentions"),
    ("$PropositionType", "consolidated_to"),
    ("$PropositionType", "derived_from"),
    ("$PropositionType", "prefers"),
    ("$PropositionType", "learned"),
    ("$PropositionType", "committed_to"),
    ("$PropositionType", "owed_to"),
    ("$PropositionType", "assigned_to"),
    ("$PropositionType", "has_step"),
    ("$PropositionType", "caused_by"),
    ("$PropositionType", "derived_insight"),
    ("$PropositionType", "compiled_to"),
    ("Domain", "CoreSchema"),
    ("Domain", "Unsorted"),
    ("Domain", "Archived"),
    ("Domain", "System"),
    ("Person", "$self"),
    ("Person", "$system"),
];

const KINDS: [&str; 4] = ["$ConceptType", "$PropositionType", "Domain", "Person"];

fn stored_identities(c: &mut Client) -> BTreeSet<(String, String)> {
    c.query(
        "SELECT type, name FROM kip.concepts WHERE space = current_setting('kip.space') AND type = ANY($1)",
        &[&KINDS.to_vec()],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// `{type: "T", name: "n"}` identities written in a capsule text.
fn capsule_identities(text: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("{type: \"") {
        rest = &rest[at + 8..];
        let Some(end) = rest.find('"') else { break };
        let type_name = &rest[..end];
        let tail = &rest[end + 1..];
        if let Some(after) = tail.strip_prefix(", name: \"") {
            if let Some(name_end) = after.find('"') {
                out.insert((type_name.to_string(), after[..name_end].to_string()));
            }
        }
    }
    out
}

fn kip_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            kip_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "kip") {
            out.push(p);
        }
    }
}

fn identities_in(dir: &Path) -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    kip_files(dir, &mut files);
    files
        .iter()
        .flat_map(|f| capsule_identities(&std::fs::read_to_string(f).unwrap()))
        .filter(|(t, _)| KINDS.contains(&t.as_str()))
        .collect()
}

#[test]
fn bootstrap_creates_the_required_schema_domains_and_persons() {
    let mut c = space("boot");
    run(&mut c, "DESCRIBE PRIMER");
    let stored = stored_identities(&mut c);
    for (t, n) in REQUIRED {
        assert!(stored.contains(&(t.to_string(), n.to_string())), "missing {{type: {t}, name: {n}}} after bootstrap");
    }
}

#[test]
fn bootstrap_matches_the_reference_distribution() {
    let Some(shared) = shared_dir() else {
        println!("bootstrap: ../shared is absent, reference comparison skipped");
        return;
    };
    let reference = identities_in(&shared.join("reference/rc11/capsules"));
    assert!(reference.len() >= REQUIRED.len(), "reference capsules not parsed: {reference:?}");
    let ours = identities_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../capsules"));
    assert_eq!(ours, reference, "capsules/ must define the reference types, predicates, domains and persons");
    let mut c = space("boot");
    run(&mut c, "DESCRIBE PRIMER");
    assert_eq!(stored_identities(&mut c), reference, "a bootstrapped space holds exactly the reference names");
}

#[test]
fn every_definition_is_described_and_filed_under_core_schema() {
    let mut c = space("boot");
    run(&mut c, "DESCRIBE PRIMER");
    let rows = c
        .query(
            "SELECT c.type, c.name, c.attributes ? 'description', c.attributes ? 'instance_schema', \
                    c.attributes ? 'subject_types' AND c.attributes ? 'object_types', \
                    EXISTS (SELECT 1 FROM kip.facts f WHERE f.space = c.space AND f.subject_id = 'C:' || c.id \
                            AND f.predicate = 'belongs_to_domain' AND f.object_name = 'CoreSchema') \
             FROM kip.concepts c WHERE c.space = current_setting('kip.space') AND c.type IN ('$ConceptType', '$PropositionType')",
            &[],
        )
        .unwrap();
    assert!(rows.len() >= 19, "{} definitions", rows.len());
    for r in rows {
        let (t, n): (String, String) = (r.get(0), r.get(1));
        assert!(r.get::<_, bool>(2), "{t}:{n} has no description");
        if t == "$ConceptType" {
            assert!(r.get::<_, bool>(3), "{t}:{n} has no instance_schema");
        }
        if t == "$PropositionType" {
            assert!(r.get::<_, bool>(4), "{t}:{n} lacks subject_types/object_types");
        }
        assert!(r.get::<_, bool>(5), "{t}:{n} does not belong to CoreSchema");
    }
}

#[test]
fn every_space_answers_describe_primer() {
    let mut c = space("boot");
    let primer = run(&mut c, "DESCRIBE PRIMER");
    assert_eq!(primer["identity"]["name"], "$self", "{primer}");
    let domains = primer["domain_map"].to_string();
    assert!(domains.contains("CoreSchema"), "{primer}");
}

type Snapshot = Vec<(String, String, i32, String)>;

fn snapshot(c: &mut Client) -> Snapshot {
    c.query(
        "SELECT 'C:' || id, type || ':' || name, version, attributes::text || metadata::text || updated_at::text \
         FROM kip.concepts WHERE space = current_setting('kip.space') \
         UNION ALL \
         SELECT 'P:' || id, subject || predicate || object, version, attributes::text || metadata::text || updated_at::text \
         FROM kip.propositions WHERE space = current_setting('kip.space') ORDER BY 1",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

#[test]
fn rerunning_the_bootstrap_changes_nothing() {
    let mut c = space("boot");
    run(&mut c, "DESCRIBE PRIMER");
    let before = snapshot(&mut c);
    assert!(before.iter().all(|(_, _, v, _)| *v == 1), "a fresh bootstrap leaves every element at _version 1");
    // Forget that the space was bootstrapped: the next call runs it again.
    c.execute("UPDATE kip.spaces SET bootstrapped_at = NULL WHERE name = current_setting('kip.space')", &[]).unwrap();
    run(&mut c, "DESCRIBE PRIMER");
    let reran: Option<bool> = c
        .query_one("SELECT bootstrapped_at IS NOT NULL FROM kip.spaces WHERE name = current_setting('kip.space')", &[])
        .unwrap()
        .get(0);
    assert_eq!(reran, Some(true));
    assert_eq!(snapshot(&mut c), before, "the second bootstrap must not change ids, versions, content or timestamps");
}
