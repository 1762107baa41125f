//! Parser benchmark (harness = false): `cargo bench -p kip-lang`.
//!
//! Parses a typical Formation-shaped Event capsule (~1.6 KB) many times and
//! prints the mean time per parse, plus bind, print and error-path figures
//! and, when /work/shared is present, the reference capsules.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// A Formation Event capsule as BrainFormation §5a writes it, with literal
/// values (what arrives after the agent filled everything in).
const EVENT_CAPSULE: &str = r#"// Formation: one conversation turn, episodic Event + participants
UPSERT {
  CONCEPT ?domain {
    {type: "Domain", name: "UserPreferences"}
  }
  CONCEPT ?participant {
    {type: "Person", name: "user_alice_01"}
    SET ATTRIBUTES { person_class: "Human" }
  }
  CONCEPT ?topic {
    {type: "Preference", name: "alice_prefers_dark_mode"}
  }
  CONCEPT ?event {
    {type: "Event", name: "Conversation:2026-07-10T14:05:dark_mode_settings"}
    SET ATTRIBUTES {
      event_class: "Conversation",
      start_time: "2026-07-10T14:05:12Z",
      participants: ["$self", "user_alice_01"],
      content_summary: "Alice asked to switch every app to dark mode and mentioned eye strain at night; agreed to remember it as a stable preference.",
      key_concepts: ["dark mode", "eye strain", "UI settings"],
      outcome: "Preference recorded",
      context: { channel: "chat", session: "s-4411", turn: 17 },
      salience_score: 0.62
    }
    SET PROPOSITIONS {
      ("belongs_to_domain", ?domain)
      ("involves", ?participant)
      ("mentions", ?topic) WITH METADATA { confidence: 0.8 }
    }
  }
  WITH METADATA { memory_tier: "short-term", expires_at: "2026-10-08T14:05:12Z" }
  PROPOSITION ?pref_link {
    (?participant, "prefers", ?topic)
    SET ATTRIBUTES { strength: "strong" }
  }
  WITH METADATA { confidence: 0.85, evidence: ["Conversation:2026-07-10T14:05:dark_mode_settings"] }
}
WITH METADATA {
  source: "conversation:s-4411", author: "$self", confidence: 0.9,
  created_at: "2026-07-10T14:05:12Z", observed_at: "2026-07-10T14:05:12Z"
}
"#;

const FIND_QUERY: &str = r#"FIND(?pred, ?neighbor, ?link.metadata.confidence)
WHERE {
  ?person {type: "Person", name: :name}
  ?link (?person, ?pred, ?neighbor)
  FILTER(?pred != "belongs_to_domain" && (IS_NULL(?link.metadata.superseded) || ?link.metadata.superseded != true))
}
ORDER BY ?link.metadata.confidence DESC, ?link.metadata.created_at DESC
LIMIT 50"#;

fn measure(label: &str, bytes: usize, mut f: impl FnMut()) {
    // Warm up, then run for ~1 s.
    for _ in 0..200 {
        f();
    }
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(1) {
        for _ in 0..100 {
            f();
        }
        n += 100;
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let mbps = bytes as f64 / us; // bytes per µs = MB/s
    println!("{label:<44} {bytes:>6} B  {us:>9.2} µs/op  {mbps:>7.1} MB/s  ({n} runs)");
}

fn main() {
    println!("kip-lang parser benchmark");
    measure("parse Event capsule", EVENT_CAPSULE.len(), || {
        black_box(kip_lang::parse(black_box(EVENT_CAPSULE)).unwrap());
    });
    measure("parse FIND query", FIND_QUERY.len(), || {
        black_box(kip_lang::parse(black_box(FIND_QUERY)).unwrap());
    });
    let mut params = serde_json::Map::new();
    params.insert("name".into(), "Alice".into());
    measure("parse + bind FIND query", FIND_QUERY.len(), || {
        let s = kip_lang::parse(black_box(FIND_QUERY)).unwrap();
        black_box(kip_lang::bind(s, &params).unwrap());
    });
    let ast = kip_lang::parse(EVENT_CAPSULE).unwrap();
    measure("print Event capsule", EVENT_CAPSULE.len(), || {
        black_box(kip_lang::print(black_box(&ast)));
    });
    let broken = EVENT_CAPSULE.replacen("SET PROPOSITIONS {", "SET PROPOSITIONS ", 1);
    measure("syntax error in Event capsule", broken.len(), || {
        black_box(kip_lang::parse(black_box(&broken)).unwrap_err());
    });
    let dir = std::path::Path::new("/work/shared/reference/capsules-rc10");
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut files: Vec<_> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "kip"))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let name = format!(
                "parse capsules-rc10/{}",
                f.file_name().unwrap().to_string_lossy()
            );
            measure(&name, text.len(), || {
                black_box(kip_lang::parse(black_box(&text)).unwrap());
            });
        }
    }
}
