//! Semantic and hybrid SEARCH with the in-database embedding model:
//! vectors equal to an independent reference, paraphrases found by meaning,
//! staleness, the background worker's backfill, the external provider, and
//! the fallback to keyword without a model.

use kip_integration_tests::{connect, dsn_for, ensure_database, err_code, fresh_space, kip, ok, use_space};
use postgres::{Client, NoTls};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn embed(c: &mut Client, text: &str) -> Vec<f64> {
    let v: Vec<f32> = c.query_one("SELECT kip_embed($1)", &[&text]).expect("kip_embed").get(0);
    v.into_iter().map(f64::from).collect()
}

fn names(hits: &Value) -> Vec<String> {
    hits.as_array().unwrap_or_else(|| panic!("not an array: {hits}")).iter().map(|h| h["name"].as_str().unwrap_or("").to_string()).collect()
}

fn scores(hits: &Value) -> Vec<f64> {
    hits.as_array().unwrap().iter().map(|h| h["metadata"]["_score"].as_f64().unwrap()).collect()
}

fn embed_space(c: &mut Client, space: &str) -> i64 {
    c.query_one("SELECT kip_embed_pending(NULL, $1)", &[&space]).expect("kip_embed_pending").get(0)
}

/// kip's vectors for fixed texts equal the reference vectors computed once
/// with onnxruntime in Python (scripts/reference_embeddings.py).
#[test]
fn vectors_match_the_python_reference() {
    let mut c = connect();
    let reference: Value =
        serde_json::from_str(include_str!("data/embedding_reference.json")).expect("reference vectors");
    for item in reference["vectors"].as_array().unwrap() {
        let text = item["text"].as_str().unwrap();
        let expected: Vec<f64> = item["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let got = embed(&mut c, text);
        assert_eq!(got.len(), 384);
        let cos = cosine(&got, &expected);
        assert!(cos >= 0.999, "cosine {cos} for {text:?}");
        let norm = got.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm} for {text:?}");
    }
}

/// A memory where the right answer shares meaning, not words, with the question.
const MEMORY: &[(&str, &str)] = &[
    ("Cetirizine", "An antihistamine that relieves seasonal allergies such as sneezing and itchy eyes."),
    ("Ibuprofen", "A nonsteroidal anti-inflammatory drug that reduces pain, fever and swelling."),
    ("Omeprazole", "Reduces stomach acid; used for heartburn and acid reflux."),
    ("Metformin", "First-line medication for type 2 diabetes; lowers blood sugar."),
    ("Atorvastatin", "A statin that lowers LDL cholesterol and cardiovascular risk."),
    ("Melatonin", "A hormone supplement that helps regulate sleep and jet lag."),
    ("Loperamide", "Slows intestinal movement to stop diarrhea."),
    ("Amoxicillin", "A penicillin antibiotic against bacterial infections such as strep throat."),
    ("Salbutamol", "A bronchodilator inhaler that opens the airways during an asthma attack."),
    ("Sertraline", "An antidepressant (SSRI) prescribed for depression and anxiety."),
    ("Dark mode", "A user interface colour scheme with light text on a dark background, easier on the eyes at night."),
    ("Sourdough", "Bread leavened with wild yeast and lactic acid bacteria, with a tangy flavour."),
];

const QUESTIONS: &[(&str, &str)] = &[
    ("pill for hay fever", "Cetirizine"),
    ("something for a headache and temperature", "Ibuprofen"),
    ("burning feeling in the chest after meals", "Omeprazole"),
    ("medicine that controls glucose", "Metformin"),
    ("drug to bring down cholesterol", "Atorvastatin"),
    ("I cannot fall asleep", "Melatonin"),
    ("upset stomach with loose stools", "Loperamide"),
    ("treatment for a bacterial sore throat", "Amoxicillin"),
    ("help breathing when wheezing", "Salbutamol"),
    ("feeling very sad for weeks", "Sertraline"),
    ("black theme for the screen", "Dark mode"),
    ("tangy fermented loaf", "Sourdough"),
];

fn build_memory(c: &mut Client) -> String {
    let space = fresh_space(c, "semantic");
    ok(kip(
        c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Item"} SET ATTRIBUTES { description: "A thing worth remembering." } } }"#,
        json!({}),
    ));
    for (name, description) in MEMORY {
        ok(kip(
            c,
            r#"UPSERT { CONCEPT ?i { {type: "Item", name: :name} SET ATTRIBUTES { description: :description } } }"#,
            json!({"name": name, "description": description}),
        ));
    }
    assert!(embed_space(c, &space) >= MEMORY.len() as i64);
    space
}

fn rank_of(hits: &Value, name: &str) -> Option<usize> {
    names(hits).iter().position(|n| n == name)
}

#[test]
fn semantic_and_hybrid_find_paraphrases() {
    let mut c = connect();
    build_memory(&mut c);
    for mode in ["semantic", "hybrid"] {
        let mut found = 0;
        let mut misses = Vec::new();
        for (question, answer) in QUESTIONS {
            let hits = ok(kip(
                &mut c,
                &format!(r#"SEARCH CONCEPT :q WITH TYPE "Item" MODE "{mode}" LIMIT 5"#),
                json!({"q": question}),
            ));
            let s = scores(&hits);
            assert!(s.iter().all(|x| (0.0..1.0).contains(x)) && s.windows(2).all(|w| w[0] >= w[1]), "{mode}: {hits}");
            match rank_of(&hits, answer) {
                Some(_) => found += 1,
                None => misses.push(format!("{question:?} → {:?}", names(&hits))),
            }
        }
        assert!(found * 10 >= QUESTIONS.len() * 9, "{mode}: {found}/{} in the top 5; misses: {misses:?}", QUESTIONS.len());
        println!("{mode}: {found}/{} paraphrases in the top 5", QUESTIONS.len());
    }
    // The default mode is hybrid when the model is available.
    let hits = ok(kip(&mut c, r#"SEARCH CONCEPT "pill for hay fever" WITH TYPE "Item" LIMIT 3"#, json!({})));
    assert!(rank_of(&hits, "Cetirizine").is_some(), "{hits}");
    // Exact names still win in hybrid, and THRESHOLD 1.0 returns nothing.
    let hits = ok(kip(&mut c, r#"SEARCH CONCEPT "Metformin" MODE "hybrid" LIMIT 3"#, json!({})));
    assert_eq!(names(&hits)[0], "Metformin", "{hits}");
    for mode in ["keyword", "semantic", "hybrid"] {
        let hits = ok(kip(&mut c, &format!(r#"SEARCH CONCEPT "Metformin" MODE "{mode}" THRESHOLD 1.0"#), json!({})));
        assert_eq!(hits, json!([]), "{mode}");
    }
}

/// In hybrid mode THRESHOLD asks for likeness: a hit found by meaning
/// alone, whose fused score (a rank) is at most 0.49, stays under a
/// THRESHOLD its cosine similarity reaches.
#[test]
fn a_hybrid_threshold_is_met_by_the_hits_similarity_not_its_rank() {
    let mut c = connect();
    build_memory(&mut c);
    let mut checked = 0;
    for (question, answer) in QUESTIONS {
        let semantic = ok(kip(&mut c, r#"SEARCH CONCEPT :q WITH TYPE "Item" MODE "semantic" LIMIT 5"#, json!({"q": question})));
        let Some(rank) = rank_of(&semantic, answer) else { continue };
        let similarity = scores(&semantic)[rank];
        let threshold = ((similarity - 0.005) * 100.0).floor() / 100.0;
        if threshold <= 0.5 {
            continue;
        }
        let hybrid = ok(kip(
            &mut c,
            r#"SEARCH CONCEPT :q WITH TYPE "Item" MODE "hybrid" THRESHOLD :t LIMIT 5"#,
            json!({"q": question, "t": threshold}),
        ));
        assert!(rank_of(&hybrid, answer).is_some(), "{question:?} (cosine {similarity}) at THRESHOLD {threshold}: {hybrid}");
        checked += 1;
    }
    assert!(checked > 0, "no answer was alike enough to test a THRESHOLD above 0.5");
}

#[test]
fn hybrid_finds_elements_not_embedded_yet_and_rewrites_make_vectors_stale() {
    let mut c = connect();
    build_memory(&mut c);
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?i { {type: "Item", name: "Zolpidem"} SET ATTRIBUTES { description: "A sedative for short-term insomnia." } } }"#,
        json!({}),
    ));
    let pending: bool = c
        .query_one("SELECT embedding IS NULL FROM kip.concepts WHERE space = current_setting('kip.space') AND name = 'Zolpidem'", &[])
        .unwrap()
        .get(0);
    assert!(pending, "a new element waits for its vector");
    let hybrid = ok(kip(&mut c, r#"SEARCH CONCEPT "Zolpidem" MODE "hybrid""#, json!({})));
    assert_eq!(names(&hybrid)[0], "Zolpidem", "keyword half of hybrid: {hybrid}");
    let semantic = ok(kip(&mut c, r#"SEARCH CONCEPT "Zolpidem" MODE "semantic""#, json!({})));
    assert!(rank_of(&semantic, "Zolpidem").is_none(), "not embedded yet: {semantic}");

    // Metadata does not touch the grounding text; a new description does.
    let stale = |c: &mut Client, name: &str| -> bool {
        c.query_one(
            "SELECT embedding IS NULL FROM kip.concepts WHERE space = current_setting('kip.space') AND name = $1",
            &[&name],
        )
        .unwrap()
        .get(0)
    };
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?i { {type: "Item", name: "Melatonin"} } WITH METADATA { confidence: 0.5 } }"#, json!({})));
    assert!(!stale(&mut c, "Melatonin"));
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?i { {type: "Item", name: "Melatonin"} SET ATTRIBUTES { description: "A cheese made from sheep milk." } } }"#,
        json!({}),
    ));
    assert!(stale(&mut c, "Melatonin"));
    // Plain SQL writes are caught by the same trigger.
    c.execute(
        "UPDATE kip.concepts SET attributes = attributes || '{\"description\": \"Bread.\"}' WHERE space = current_setting('kip.space') AND name = 'Sourdough'",
        &[],
    )
    .unwrap();
    assert!(stale(&mut c, "Sourdough"));
    let space: String = c.query_one("SELECT current_setting('kip.space')", &[]).unwrap().get(0);
    assert_eq!(embed_space(&mut c, &space), 3);
    let hits = ok(kip(&mut c, r#"SEARCH CONCEPT "sheep cheese" WITH TYPE "Item" MODE "semantic" LIMIT 1"#, json!({})));
    assert_eq!(names(&hits), vec!["Melatonin"], "re-embedded from its new text");
}

/// The backfill never waits for a row another transaction holds: it skips
/// it (the row stays in the backlog for the next pass) and embeds the rest,
/// so the background worker neither blocks nor deadlocks a writer.
#[test]
fn the_backfill_skips_rows_another_transaction_holds() {
    let mut c = connect();
    let space = fresh_space(&mut c, "emb_skip_locked");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Item"} } }"#, json!({})));
    embed_space(&mut c, &space);
    ok(kip(
        &mut c,
        r#"UPSERT {
            CONCEPT ?h { {type: "Item", name: "Held"} SET ATTRIBUTES { description: "A row a writer holds." } }
            CONCEPT ?f { {type: "Item", name: "Free"} SET ATTRIBUTES { description: "A row nobody holds." } }
        }"#,
        json!({}),
    ));
    let mut writer = connect();
    writer.batch_execute("BEGIN").unwrap();
    writer.execute("SELECT 1 FROM kip.concepts WHERE space = $1 AND name = 'Held' FOR UPDATE", &[&space]).unwrap();
    // Waiting for the writer would end in this error instead of a result.
    c.batch_execute("SET lock_timeout = '3s'").unwrap();
    assert_eq!(embed_space(&mut c, &space), 1, "only the free row is embedded");
    let waiting = |c: &mut Client| -> Vec<String> {
        c.query("SELECT c.name FROM kip.concepts c WHERE c.space = $1 AND c.embedding IS NULL ORDER BY c.name", &[&space])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    assert_eq!(waiting(&mut c), vec!["Held".to_string()]);
    writer.batch_execute("ROLLBACK").unwrap();
    assert_eq!(embed_space(&mut c, &space), 1, "the next pass embeds the row the writer released");
    assert!(waiting(&mut c).is_empty());
}

#[test]
fn propositions_are_searched_by_meaning() {
    let mut c = connect();
    let space = fresh_space(&mut c, "semprop");
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?d { {type: "$ConceptType", name: "Drug"} }
          CONCEPT ?s { {type: "$ConceptType", name: "Symptom"} }
          CONCEPT ?t { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { subject_types: ["Drug"], object_types: ["Symptom"] } }
          CONCEPT ?c { {type: "$PropositionType", name: "causes"} SET ATTRIBUTES { subject_types: ["Drug"], object_types: ["Symptom"] } }
        }"#,
        json!({}),
    ));
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?n { {type: "Symptom", name: "Nausea"} }
          CONCEPT ?m { {type: "Symptom", name: "Migraine"} }
          CONCEPT ?a { {type: "Drug", name: "Sumatriptan"} SET PROPOSITIONS { ("treats", ?m) ("causes", ?n) } }
        }"#,
        json!({}),
    ));
    assert!(embed_space(&mut c, &space) > 0);
    let hits = ok(kip(&mut c, r#"SEARCH PROPOSITION "medicine that relieves bad headaches" MODE "semantic" LIMIT 1"#, json!({})));
    assert_eq!(hits[0]["predicate"], "treats", "{hits}");
    let hits = ok(kip(&mut c, r#"SEARCH PROPOSITION "side effect: feeling sick" MODE "semantic" LIMIT 1"#, json!({})));
    assert_eq!(hits[0]["predicate"], "causes", "{hits}");
}

/// A vector is discarded only when its element's text changes: a concept
/// or link written again with the same content (a capsule re-asserting it,
/// with new metadata) keeps its vector; a new description, or another
/// endpoint, makes it stale.
#[test]
fn a_vector_survives_a_write_that_leaves_its_text_alone() {
    let mut c = connect();
    let space = fresh_space(&mut c, "emb_keep");
    ok(kip(
        &mut c,
        r#"UPSERT {
          CONCEPT ?d { {type: "$ConceptType", name: "Drug"} }
          CONCEPT ?s { {type: "$ConceptType", name: "Symptom"} }
          CONCEPT ?t { {type: "$PropositionType", name: "treats"} SET ATTRIBUTES { subject_types: ["Drug"], object_types: ["Symptom"] } }
        }"#,
        json!({}),
    ));
    let capsule = r#"UPSERT {
          CONCEPT ?m { {type: "Symptom", name: "Migraine"} }
          CONCEPT ?a { {type: "Drug", name: "Sumatriptan"} SET ATTRIBUTES { description: "A triptan." }
                       SET PROPOSITIONS { ("treats", ?m) WITH METADATA { confidence: :c } } }
        } WITH METADATA { source: :source }"#;
    ok(kip(&mut c, capsule, json!({"c": 0.5, "source": "first"})));
    assert!(embed_space(&mut c, &space) > 0);
    let stale = |c: &mut Client| -> (bool, bool) {
        let r = c
            .query_one(
                "SELECT (SELECT embedding IS NULL FROM kip.concepts WHERE space = $1 AND name = 'Sumatriptan'), \
                        (SELECT embedding IS NULL FROM kip.propositions WHERE space = $1 AND predicate = 'treats')",
                &[&space],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(stale(&mut c), (false, false));
    ok(kip(&mut c, capsule, json!({"c": 0.9, "source": "second"})));
    assert_eq!(stale(&mut c), (false, false), "the same text written again kept neither vector");
    c.execute("UPDATE kip.propositions SET attributes = attributes WHERE space = $1 AND predicate = 'treats'", &[&space]).unwrap();
    assert_eq!(stale(&mut c), (false, false));
    // Another object is another text.
    c.execute(
        "UPDATE kip.propositions SET object_concept = (SELECT id FROM kip.concepts WHERE space = $1 AND type = '$ConceptType' AND name = 'Symptom') \
         WHERE space = $1 AND predicate = 'treats'",
        &[&space],
    )
    .unwrap();
    assert_eq!(stale(&mut c), (false, true));
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Drug", name: "Sumatriptan"} SET ATTRIBUTES { description: "A migraine drug." } } }"#, json!({})));
    assert_eq!(stale(&mut c), (true, true));
}

#[test]
fn primer_advertises_the_search_capability() {
    let mut c = connect();
    fresh_space(&mut c, "primer");
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    assert_eq!(primer["search"]["modes"], json!(["keyword", "semantic", "hybrid"]), "{primer}");
    assert_eq!(primer["search"]["default_mode"], "hybrid");
    assert!(primer["search"]["embedding_model"].as_str().unwrap().contains("MiniLM"));
}

#[test]
fn without_a_model_semantic_and_hybrid_fall_back_to_keyword() {
    // A fresh backend: the model loads once per backend.
    ensure_database("kip_test");
    let mut c = Client::connect(&dsn_for("kip_test"), NoTls).unwrap();
    c.batch_execute("SET kip.embedding_model_dir = '/nonexistent/kip-model'").unwrap();
    fresh_space(&mut c, "nomodel");
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} }
                    CONCEPT ?d { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { description: "Relieves pain." } } }"#,
        json!({}),
    ));
    for mode in ["semantic", "hybrid"] {
        let hits = ok(kip(&mut c, &format!(r#"SEARCH CONCEPT "aspirin" MODE "{mode}""#), json!({})));
        assert_eq!(names(&hits)[0], "Aspirin", "{mode}: {hits}");
    }
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    assert_eq!(primer["search"]["modes"], json!(["keyword"]), "{primer}");
    assert!(primer["search"]["fallback"].as_str().unwrap().contains("/nonexistent/kip-model"), "{primer}");
    let err = c.query_one("SELECT kip_embed('x')", &[]).unwrap_err();
    assert!(format!("{err:?}").contains("KIP_4003"), "{err:?}");
}

#[test]
fn a_corrupt_model_file_is_a_fallback_not_a_crash() {
    let dir = std::env::temp_dir().join(format!("kip-corrupt-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.onnx"), b"this is not an ONNX model").unwrap();
    std::fs::copy("/usr/share/postgresql/15/kip/all-minilm-l6-v2/tokenizer.json", dir.join("tokenizer.json"))
        .or_else(|_| std::fs::write(dir.join("tokenizer.json"), b"{}").map(|_| 0))
        .unwrap();
    ensure_database("kip_test");
    let mut c = Client::connect(&dsn_for("kip_test"), NoTls).unwrap();
    c.execute("SELECT set_config('kip.embedding_model_dir', $1, false)", &[&dir.to_string_lossy().as_ref()]).unwrap();
    fresh_space(&mut c, "corrupt");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?d { {type: "Drug", name: "Aspirin"} } }"#, json!({})));
    let hits = ok(kip(&mut c, r#"SEARCH CONCEPT "aspirin" MODE "semantic""#, json!({})));
    assert_eq!(names(&hits)[0], "Aspirin", "{hits}");
    let status: Value = c.query_one("SELECT kip_embedding_status()", &[]).unwrap().get(0);
    assert_eq!(status["available"], false, "{status}");
    assert!(status["fallback"].as_str().unwrap().contains("cannot load the model"), "{status}");
    // The backend is alive and answers.
    let one: i32 = c.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An application's vector is stored with the text it was computed from:
/// an agent changing the text meanwhile makes the store a no-op (false),
/// and the element stays in the backlog with its new text.
#[test]
fn an_application_vector_of_an_old_text_is_not_stored() {
    let mut c = connect();
    c.batch_execute("SET kip.embedding_provider = 'external'").unwrap();
    let space = fresh_space(&mut c, "external_text");
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} }
                    CONCEPT ?a { {type: "Note", name: "Castle"} SET ATTRIBUTES { description: "Medieval castles." } } }"#,
        json!({}),
    ));
    let row = c
        .query_one("SELECT id, grounding_text FROM kip.embedding_backlog WHERE space = $1 AND grounding_text LIKE 'Note: Castle%'", &[&space])
        .unwrap();
    let (id, old_text): (String, String) = (row.get(0), row.get(1));
    let vector: Vec<f32> = (0..384).map(|d| if d == 3 { 1.0 } else { 0.0 }).collect();
    // The agent rewrites the note before the application stores its vector.
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?a { {type: "Note", name: "Castle"} SET ATTRIBUTES { description: "Deep sea fishing boats." } } }"#, json!({})));
    let stored: bool = c.query_one("SELECT kip_set_embedding($1, $2, $3)", &[&id, &vector, &old_text]).unwrap().get(0);
    assert!(!stored, "a vector of the old text was stored");
    let new_text: String = c
        .query_one("SELECT grounding_text FROM kip.embedding_backlog WHERE space = $1 AND id = $2", &[&space, &id])
        .expect("the element still waits")
        .get(0);
    assert!(new_text.contains("Deep sea"), "{new_text}");
    let stored: bool = c.query_one("SELECT kip_set_embedding($1, $2, $3)", &[&id, &vector, &new_text]).unwrap().get(0);
    assert!(stored);
    let waiting: i64 = c.query_one("SELECT count(*) FROM kip.embedding_backlog WHERE space = $1 AND id = $2", &[&space, &id]).unwrap().get(0);
    assert_eq!(waiting, 0);
}

/// A stored vector does not depend on the texts embedded with it: a short
/// note embedded in one batch with a long one gets the vector kip_embed
/// gives its text alone (the model's int8 activations are scaled over its
/// whole input, so a padded batch moved it: cosine 0.96-0.98).
#[test]
fn a_vector_does_not_depend_on_its_batch() {
    let mut c = connect();
    let space = fresh_space(&mut c, "batch_free");
    let long = "A long account of the migration of arctic terns, which fly from pole to pole every year. ".repeat(18);
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} }
                    CONCEPT ?a { {type: "Note", name: "zebra"} }
                    CONCEPT ?b { {type: "Note", name: "terns"} SET ATTRIBUTES { description: :long } } }"#,
        json!({"long": long}),
    ));
    c.batch_execute("SET kip.embedding_batch = 16").unwrap();
    embed_space(&mut c, &space);
    let (text, stored): (String, Vec<f32>) = {
        let row = c
            .query_one(
                "SELECT kip.concept_grounding_text(type, name, attributes), embedding::real[] FROM kip.concepts
                 WHERE space = $1 AND type = 'Note' AND name = 'zebra'",
                &[&space],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    let stored: Vec<f64> = stored.into_iter().map(f64::from).collect();
    let alone = embed(&mut c, &text);
    assert!(cosine(&stored, &alone) > 0.9999, "cosine {} against the text embedded alone", cosine(&stored, &alone));
}

#[test]
fn the_external_provider_stores_and_searches_application_vectors() {
    let mut c = connect();
    c.batch_execute("SET kip.embedding_provider = 'external'").unwrap();
    let space = fresh_space(&mut c, "external");
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} }
                    CONCEPT ?a { {type: "Note", name: "Alpha"} SET ATTRIBUTES { description: "First." } }
                    CONCEPT ?b { {type: "Note", name: "Beta"} SET ATTRIBUTES { description: "Second." } } }"#,
        json!({}),
    ));
    let backlog = c
        .query(
            "SELECT id, grounding_text FROM kip.embedding_backlog WHERE space = $1 AND grounding_text LIKE 'Note: %' ORDER BY grounding_text",
            &[&space],
        )
        .unwrap();
    let texts: Vec<String> = backlog.iter().map(|r| r.get(1)).collect();
    assert_eq!(texts, vec!["Note: Alpha. First.", "Note: Beta. Second."]);
    let ids: Vec<String> = backlog.iter().map(|r| r.get(0)).collect();
    let unit = |i: usize| -> Vec<f32> { (0..384).map(|d| if d == i { 1.0 } else { 0.0 }).collect() };
    for (id, axis) in ids.iter().zip([0, 1]) {
        let stored: bool = c.query_one("SELECT kip_set_embedding($1, $2)", &[id, &unit(axis)]).unwrap().get(0);
        assert!(stored);
    }
    // Wrong dimension, NaN, zero vector, unknown and malformed ids.
    let short: Vec<f32> = vec![1.0; 3];
    let err = c.query_one("SELECT kip_set_embedding($1, $2)", &[&ids[0], &short]).unwrap_err();
    assert!(format!("{err:?}").contains("384"), "{err:?}");
    let nan: Vec<f32> = (0..384).map(|_| f32::NAN).collect();
    assert!(c.query_one("SELECT kip_set_embedding($1, $2)", &[&ids[0], &nan]).is_err());
    let zero: Vec<f32> = vec![0.0; 384];
    assert!(c.query_one("SELECT kip_set_embedding($1, $2)", &[&ids[0], &zero]).is_err());
    // Norms that single precision cannot hold: a cosine of ±1 or NaN to
    // everything.
    for tiny_or_huge in [1e-30f32, 1e30f32] {
        let v: Vec<f32> = vec![tiny_or_huge; 384];
        assert!(c.query_one("SELECT kip_set_embedding($1, $2)", &[&ids[0], &v]).is_err(), "{tiny_or_huge}");
    }
    // 384 numbers in two rows are no vector.
    let e = c.query_one("SELECT kip_set_embedding($1, array_fill(0.05::real, ARRAY[2, 192]))", &[&ids[0]]).unwrap_err();
    assert!(format!("{e:?}").contains("2 × 192 array"), "{e:?}");
    let out: Value =
        c.query_one("SELECT kip_search('SEARCH CONCEPT \"x\"', array_fill(0.05::real, ARRAY[2, 192]))", &[]).unwrap().get(0);
    assert_eq!(out["error"]["code"], "KIP_1001", "{out}");
    // NULL arguments of kip_search are KIP errors in the envelope.
    let none: Option<Vec<f32>> = None;
    let out: Value = c.query_one("SELECT kip_search('SEARCH CONCEPT \"x\"', $1)", &[&none]).unwrap().get(0);
    assert_eq!(out["error"]["code"], "KIP_1001", "{out}");
    // kip_execute cannot search by meaning here, and DESCRIBE says so.
    let primer = ok(kip(&mut c, "DESCRIBE PRIMER", json!({})));
    assert_eq!(primer["search"]["modes"], json!(["keyword"]), "{primer}");
    assert!(primer["search"]["fallback"].as_str().unwrap().contains("kip_search"), "{primer}");
    let missing: bool = c.query_one("SELECT kip_set_embedding('C:999999999', $1)", &[&unit(0)]).unwrap().get(0);
    assert!(!missing);
    assert!(c.query_one("SELECT kip_set_embedding('X:1', $1)", &[&unit(0)]).is_err());
    // The in-database model does not embed under the external provider.
    assert!(c.query_one("SELECT kip_embed_pending()", &[]).is_err());

    let search = |c: &mut Client, v: &Vec<f32>| -> Value {
        c.query_one("SELECT kip_search($1, $2, '{}')", &[&r#"SEARCH CONCEPT "ignored words" WITH TYPE "Note" MODE "semantic""#, v])
            .unwrap()
            .get(0)
    };
    let near_beta: Vec<f32> = (0..384).map(|d| match d { 0 => 0.2, 1 => 0.9, _ => 0.0 }).collect();
    let hits = ok(search(&mut c, &near_beta));
    assert_eq!(names(&hits), vec!["Beta", "Alpha"], "{hits}");
    assert!(scores(&hits)[0] > 0.9 && scores(&hits)[0] < 1.0);
    let bad = c.query_one("SELECT kip_search('FIND(?x) WHERE { ?x {type: \"Note\"} }', $1)", &[&unit(0)]).unwrap();
    let bad: Value = bad.get(0);
    assert_eq!(err_code(&bad), "KIP_1001");
    // A KML command gets kip_search's own refusal, not another function's.
    let bad: Value = c
        .query_one("SELECT kip_search('UPSERT { CONCEPT ?n { {type: \"Note\", name: \"x\"} } }', $1)", &[&unit(0)])
        .unwrap()
        .get(0);
    assert!(bad["error"]["message"].as_str().unwrap_or_default().contains("kip_search"), "{bad}");
    // Through kip_execute, the external provider has no query vector: keyword.
    let hits = ok(kip(&mut c, r#"SEARCH CONCEPT "Alpha" MODE "semantic""#, json!({})));
    assert_eq!(names(&hits)[0], "Alpha");
    // With no provider, search is keyword only, through kip_search too.
    c.batch_execute("SET kip.embedding_provider = 'none'").unwrap();
    let hits = ok(search(&mut c, &near_beta));
    assert_eq!(hits, json!([]), "the words \"ignored words\" match nothing: {hits}");
    c.batch_execute("SET kip.embedding_provider = 'external'").unwrap();
}

/// The background worker embeds a new element soon after its commit (it
/// naps 500 ms between looks; the time it took is printed, and bounded
/// loosely here: other tests run the model on the same cores meanwhile).
/// It serves the database `kip_worker_test` (scripts/cluster.sh).
#[test]
fn the_worker_embeds_new_elements_soon_after_commit() {
    ensure_database("kip_worker_test");
    let mut c = Client::connect(&dsn_for("kip_worker_test"), NoTls).unwrap();
    // The worker restarts every 10 s until its database exists.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let up: bool = c
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'kip worker' AND datname = current_database())",
                &[],
            )
            .unwrap()
            .get(0);
        if up {
            break;
        }
        assert!(Instant::now() < deadline, "no kip worker serves kip_worker_test (kip.worker_databases)");
        std::thread::sleep(Duration::from_millis(200));
    }
    // kip_embedding_status says whether a worker drains this database's
    // backlog: here one does, in kip_test (not in kip.worker_databases) none.
    let status: Value = c.query_one("SELECT kip_embedding_status()", &[]).unwrap().get(0);
    assert_eq!(status["worker"], "running", "{status}");
    ensure_database("kip_test");
    let mut other = Client::connect(&dsn_for("kip_test"), NoTls).unwrap();
    let status: Value = other.query_one("SELECT kip_embedding_status()", &[]).unwrap().get(0);
    assert!(status["worker"].as_str().unwrap().contains("kip_embed_pending()"), "{status}");
    let space = fresh_space(&mut c, "worker");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Item"} } }"#, json!({})));
    // Let the worker clear the bootstrap backlog of the new space first.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = c
            .query_one("SELECT count(*) FROM kip.embedding_backlog WHERE space = $1", &[&space])
            .unwrap()
            .get(0);
        if waiting == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the worker left {waiting} elements unembedded for 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    use_space(&mut c, &space);
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?i { {type: "Item", name: "Cetirizine"} SET ATTRIBUTES { description: "An antihistamine for seasonal allergies." } } }"#,
        json!({}),
    ));
    let committed = Instant::now();
    loop {
        let hits = ok(kip(&mut c, r#"SEARCH CONCEPT "pill for hay fever" WITH TYPE "Item" MODE "semantic" LIMIT 1"#, json!({})));
        if names(&hits) == vec!["Cetirizine"] {
            break;
        }
        assert!(committed.elapsed() < Duration::from_secs(30), "not searchable by meaning 30 s after commit: {hits}");
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("semantically searchable {} ms after commit", committed.elapsed().as_millis());

    // A worker terminated while the server runs (pg_terminate_backend, or
    // DROP DATABASE ... WITH (FORCE) on another database it served) comes back.
    let pid = |c: &mut Client| -> Option<i32> {
        c.query_opt(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'kip worker' AND datname = current_database()",
            &[],
        )
        .unwrap()
        .map(|r| r.get(0))
    };
    let first = pid(&mut c).expect("the worker serves this database");
    let terminated: bool = c.query_one("SELECT pg_terminate_backend($1)", &[&first]).unwrap().get(0);
    assert!(terminated);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if pid(&mut c).is_some_and(|p| p != first) {
            break;
        }
        assert!(Instant::now() < deadline, "the terminated worker did not come back within 60 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?i { {type: "Item", name: "Loratadine"} SET ATTRIBUTES { description: "Another antihistamine." } } }"#,
        json!({}),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let waiting: i64 = c
            .query_one("SELECT count(*) FROM kip.embedding_backlog WHERE space = $1", &[&space])
            .unwrap()
            .get(0);
        if waiting == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the restarted worker embeds nothing");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn hostile_search_input_gets_kip_errors() {
    let mut c = connect();
    fresh_space(&mut c, "hostile");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Setting"} SET ATTRIBUTES { description: "A preference." } } }"#, json!({})));
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?d { {type: "Setting", name: "深色模式"} SET ATTRIBUTES { aliases: ["ダークモード", "dark theme"], description: "界面使用深色背景。" } } }"#,
        json!({}),
    ));
    for mode in ["keyword", "semantic", "hybrid"] {
        assert_eq!(err_code(&kip(&mut c, &format!(r#"SEARCH CONCEPT "" MODE "{mode}""#), json!({}))), "KIP_1001");
        let huge = "word ".repeat(20_000);
        assert_eq!(err_code(&kip(&mut c, &format!(r#"SEARCH CONCEPT :t MODE "{mode}""#), json!({"t": huge}))), "KIP_4002");
        for t in ["-0.1", "1.5"] {
            assert_eq!(err_code(&kip(&mut c, &format!(r#"SEARCH CONCEPT "x" MODE "{mode}" THRESHOLD {t}"#), json!({}))), "KIP_1001");
        }
        // Any script: CJK names and aliases are found by keyword (and so by
        // hybrid, whose semantic half has no vectors here yet).
        let hits = ok(kip(&mut c, &format!(r#"SEARCH CONCEPT "深色模式" MODE "{mode}""#), json!({})));
        let alias = ok(kip(&mut c, &format!(r#"SEARCH CONCEPT "ダークモード" MODE "{mode}""#), json!({})));
        if mode != "semantic" {
            assert_eq!(names(&hits)[0], "深色模式", "{mode}: {hits}");
            assert_eq!(names(&alias)[0], "深色模式", "{mode}: {alias}");
        }
        for term in ["'; DROP TABLE kip.concepts; --", "%_\\", "🙂🙃", "\u{202e}rtl", "ñ"] {
            ok(kip(&mut c, &format!(r#"SEARCH CONCEPT :t MODE "{mode}""#), json!({"t": term})));
        }
    }
    assert_eq!(err_code(&kip(&mut c, r#"SEARCH CONCEPT "x" MODE "telepathic""#, json!({}))), "KIP_1001");
    assert_eq!(err_code(&kip(&mut c, r#"SEARCH CONCEPT "x" MODE :m"#, json!({"m": "fuzzy"}))), "KIP_1001");
}

#[test]
fn search_works_with_an_empty_search_path() {
    let mut c = connect();
    let space = fresh_space(&mut c, "searchpath");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Drug"} } CONCEPT ?d { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { description: "Relieves pain." } } }"#, json!({})));
    embed_space(&mut c, &space);
    c.batch_execute("SET search_path = ''").unwrap();
    for (term, mode) in [("aspirn", "keyword"), ("aspirin", "keyword"), ("aspirin", "semantic"), ("aspirin", "hybrid")] {
        let env: Value = c
            .query_one(
                "SELECT public.kip_execute($1::text, '{}'::jsonb)",
                &[&format!(r#"SEARCH CONCEPT "{term}" WITH TYPE "Drug" MODE "{mode}""#)],
            )
            .unwrap()
            .get(0);
        assert_eq!(names(&ok(env.clone()))[0], "Aspirin", "{mode}: {env}");
    }
    c.batch_execute("RESET search_path").unwrap();
}

/// kip_search answers as kip_execute_readonly does: within
/// `kip.command_timeout` (KIP_4001, here while another session holds the
/// concepts table), and with KIP_3004 for a space the caller may not read
/// (not "does not exist yet", which row-level security made it look like).
#[test]
fn kip_search_keeps_the_command_timeout_and_says_access_is_denied() {
    let db = "kip_search_rules_test";
    kip_integration_tests::reliability::fresh_database(db);
    let dsn = |user: &str| format!("host=localhost port={} user={user} dbname={db}", kip_integration_tests::port());
    let mut admin = Client::connect(&dsn("postgres"), NoTls).unwrap();
    admin.batch_execute("SET kip.embedding_provider = 'external'").unwrap();
    for space in ["granted", "other"] {
        use_space(&mut admin, space);
        ok(kip(&mut admin, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} } CONCEPT ?a { {type: "Note", name: "Alpha"} } }"#, json!({})));
    }
    let unit: Vec<f32> = (0..384).map(|d| if d == 0 { 1.0 } else { 0.0 }).collect();
    let search = |c: &mut Client| -> Value {
        c.query_one("SELECT kip_search($1, $2, '{}')", &[&r#"SEARCH CONCEPT "alpha" MODE "semantic""#, &unit]).unwrap().get(0)
    };

    let role = kip_integration_tests::unique_space("kip_search_reader").to_lowercase();
    admin.batch_execute(&format!("CREATE ROLE \"{role}\" LOGIN IN ROLE kip_reader")).unwrap();
    let granted: bool = admin.query_one("SELECT kip_grant('granted', $1::name, 'read')", &[&role]).unwrap().get(0);
    assert!(granted);
    let mut reader = Client::connect(&dsn(&role), NoTls).unwrap();
    reader.batch_execute("SET kip.embedding_provider = 'external'").unwrap();
    use_space(&mut reader, "granted");
    ok(search(&mut reader));
    use_space(&mut reader, "other");
    let denied = search(&mut reader);
    assert_eq!(err_code(&denied), "KIP_3004", "{denied}");
    drop(reader);

    let mut holder = Client::connect(&dsn("postgres"), NoTls).unwrap();
    holder.batch_execute("BEGIN; LOCK TABLE kip.concepts IN ACCESS EXCLUSIVE MODE").unwrap();
    use_space(&mut admin, "granted");
    admin.batch_execute("SET kip.command_timeout = '300ms'").unwrap();
    let started = Instant::now();
    let timed_out = search(&mut admin);
    assert_eq!(err_code(&timed_out), "KIP_4001", "{timed_out}");
    assert!(started.elapsed() < Duration::from_secs(20));
    holder.batch_execute("ROLLBACK").unwrap();
    admin.batch_execute("RESET kip.command_timeout").unwrap();
    ok(search(&mut admin));
    drop((admin, holder));
    kip_integration_tests::reliability::drop_database(db);
    let mut server = Client::connect(&kip_integration_tests::admin_dsn(), NoTls).unwrap();
    server.batch_execute(&format!("DROP ROLE IF EXISTS \"{role}\"")).unwrap();
}

/// An Experience is found by meaning from its goal or how it ended (RC11's
/// Experience profile: goal, initial state, outcome and context are
/// grounding text, as are a Skill's conditions, procedure and failure
/// signals); before, only its name was embedded.
#[test]
fn experiences_are_found_by_their_goal_and_outcome() {
    let mut c = connect();
    let space = fresh_space(&mut c, "experience_search");
    ok(kip(
        &mut c,
        r#"UPSERT { CONCEPT ?e { {type: "Experience", name: "Experience:2026-09-01T09:00:rotate_keys"}
                    SET ATTRIBUTES { experience_class: "task", status: "completed", success: false,
                                     goal: "Renew the TLS certificate on the production load balancer",
                                     initial_state: { certificate: "expires in two days", chain: "intermediate missing" },
                                     outcome: "Failed: browsers rejected the incomplete certificate chain" } }
                    CONCEPT ?o { {type: "Experience", name: "Experience:2026-09-02T10:00:garden"}
                    SET ATTRIBUTES { experience_class: "task", status: "completed", success: true,
                                     goal: "Plant tomato seedlings in the vegetable garden",
                                     initial_state: { weather: "sunny" }, outcome: "The seedlings took root" } } }"#,
        json!({}),
    ));
    let text: String = c
        .query_one(
            "SELECT kip.concept_grounding_text(type, name, attributes) FROM kip.concepts WHERE space = $1 AND name LIKE '%rotate_keys'",
            &[&space],
        )
        .unwrap()
        .get(0);
    assert!(
        text.contains("Renew the TLS certificate") && text.contains("intermediate missing") && text.contains("browsers rejected"),
        "{text}"
    );
    embed_space(&mut c, &space);
    for probe in ["renewing the TLS certificate of the load balancer", "browsers rejected the certificate chain"] {
        let hits = ok(kip(
            &mut c,
            r#"SEARCH CONCEPT :q WITH TYPE "Experience" MODE "semantic" THRESHOLD 0.45 LIMIT 10"#,
            json!({"q": probe}),
        ));
        assert_eq!(names(&hits).first().map(String::as_str), Some("Experience:2026-09-01T09:00:rotate_keys"), "{probe}: {hits}");
    }
}

/// The signals Postgres handles (SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2,
/// SIGALRM, SIGTERM), as bits of a `/proc/…/status` signal mask.
const POSTGRES_SIGNALS: u64 = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 9 | 1 << 11 | 1 << 13 | 1 << 14;

/// The threads of process `pid` other than its main thread, each with its
/// blocked-signal mask; `None` when the backend's `/proc` cannot be read
/// (a server on another machine).
fn other_threads(pid: i32) -> Option<Vec<(String, u64)>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        if task.file_name().to_string_lossy() == pid.to_string() {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).ok()?;
        let blocked = status.lines().find_map(|l| l.strip_prefix("SigBlk:"))?.trim();
        threads.push((task.file_name().to_string_lossy().into_owned(), u64::from_str_radix(blocked, 16).ok()?));
    }
    Some(threads)
}

/// The threads the embedding runtime starts in a backend block every signal
/// Postgres handles: a SIGALRM (kip's command budget, statement_timeout)
/// handled on one of them ran pgrx's thread check inside the handler,
/// which aborted the backend and made the postmaster restart the cluster.
/// Then commands keep timing out cleanly in a backend that searches.
#[test]
fn postgres_signals_never_reach_the_embedding_runtime_threads() {
    let mut c = connect();
    let space = fresh_space(&mut c, "signals");
    ok(kip(&mut c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Note"} } CONCEPT ?a { {type: "Note", name: "Marathon shoes"} SET ATTRIBUTES { description: "Running shoes for long races." } } }"#, json!({})));
    embed_space(&mut c, &space);
    ok(kip(&mut c, r#"SEARCH CONCEPT "training for a marathon" MODE "hybrid""#, json!({})));
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let Some(threads) = other_threads(pid) else {
        eprintln!("skipped: /proc/{pid} of the backend cannot be read here");
        return;
    };
    eprintln!("the backend runs {} thread(s) besides its own", threads.len());
    assert!(!threads.is_empty(), "the model runs no thread of its own here: nothing to check");
    for (tid, blocked) in &threads {
        assert_eq!(blocked & POSTGRES_SIGNALS, POSTGRES_SIGNALS, "thread {tid} of backend {pid} takes signals: mask {blocked:x}");
    }
    // Budgets that expire anywhere in a SEARCH: each answer is a result or
    // KIP_4001, on the same connection.
    for ms in (1..=40).step_by(3) {
        c.batch_execute(&format!("SET kip.command_timeout = '{ms}ms'")).unwrap();
        let env = kip(&mut c, r#"SEARCH CONCEPT "shoes for a long race" MODE "hybrid" LIMIT 50"#, json!({}));
        assert!(env.get("result").is_some() || err_code(&env) == "KIP_4001", "{ms} ms: {env}");
    }
    c.batch_execute("RESET kip.command_timeout").unwrap();
}
