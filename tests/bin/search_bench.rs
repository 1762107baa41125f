//! SEARCH benchmark: keyword, semantic and hybrid latency through
//! `kip_execute` on a large memory, recall@10 of the HNSW path against an
//! exact scan, query-embedding time, backfill rate, and write throughput with
//! and without a backlog of elements waiting for their vectors. Prints a
//! Markdown table; asserts nothing.
//!
//!   cargo run --release -p kip-integration-tests --bin kip-search-bench [-- <concepts>]
//!
//! Default 100,000 concepts (people with a job, a city and two hobbies,
//! written by plain SQL to load fast, then embedded by the in-database model
//! like any backlog). Set `KIP_BENCH_KEEP=1` to keep the space and reuse it
//! on the next run (it is found by its name `bench_search_<concepts>`).

use kip_integration_tests::{connect, kip, use_space};
use postgres::Client;
use serde_json::{json, Value};
use std::time::Instant;

const JOBS: &[&str] = &[
    "chef", "nurse", "carpenter", "pilot", "teacher", "plumber", "lawyer", "baker", "farmer", "dentist",
    "architect", "journalist", "electrician", "librarian", "firefighter", "pharmacist", "gardener", "tailor",
    "veterinarian", "accountant", "photographer", "mechanic", "translator", "economist", "geologist",
];
const CITIES: &[&str] = &[
    "Paris", "Lyon", "Berlin", "Munich", "Madrid", "Lisbon", "Rome", "Milan", "Vienna", "Prague", "Warsaw",
    "Oslo", "Stockholm", "Helsinki", "Dublin", "Edinburgh", "Athens", "Istanbul", "Cairo", "Nairobi", "Tokyo",
    "Osaka", "Seoul", "Beijing", "Mumbai", "Sydney", "Toronto", "Chicago", "Denver", "Lima", "Bogota", "Quito",
];
const HOBBIES: &[&str] = &[
    "hiking", "chess", "knitting", "surfing", "painting", "cycling", "birdwatching", "pottery", "climbing",
    "sailing", "gardening", "baking bread", "playing the violin", "astronomy", "photography", "running marathons",
    "fishing", "woodworking", "dancing tango", "writing poetry", "skiing", "scuba diving", "yoga", "karaoke",
];

/// Vectors made stale again when the benchmark reuses an embedded memory.
const REUSED_BACKLOG: i64 = 20_000;

const KEYWORD_QUERIES: &[&str] = &[
    "person_17", "person_54321", "persn_1234", "hiking", "chess", "Paris", "chef Paris", "violin", "tango",
    "pilot sailing", "nurse Oslo", "marathons", "birdwatching Lima", "person_99999", "geologist",
];
const MEANING_QUERIES: &[&str] = &[
    "someone who cooks in France", "a medical worker who likes mountains", "builds furniture from wood",
    "flies airplanes and enjoys the sea", "enjoys looking at the stars", "plays a string instrument",
    "fixes cars in Japan", "teaches children and paints", "likes underwater adventures", "grows vegetables",
    "writes news articles", "takes pictures of birds", "designs buildings in Spain", "helps sick animals",
    "handles taxes and money", "bakes cakes in Italy", "rock climbing enthusiast", "snow sports lover",
    "a poet who travels", "sings at parties",
];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn timed(mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1000.0
}

struct Stats {
    p50: f64,
    p95: f64,
}

fn stats(mut ms: Vec<f64>) -> Stats {
    ms.sort_by(f64::total_cmp);
    Stats { p50: percentile(&ms, 0.5), p95: percentile(&ms, 0.95) }
}

fn result(envelope: Value) -> Value {
    match envelope.get("result") {
        Some(r) => r.clone(),
        None => panic!("KIP error: {envelope}"),
    }
}

fn load(c: &mut Client, space: &str, n: i64) {
    use_space(c, space);
    result(kip(c, r#"UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Person"} } }"#, json!({})));
    let existing: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Person' AND name LIKE 'person\\_%'", &[&space])
        .unwrap()
        .get(0);
    if existing >= n {
        println!("reusing {existing} people in space {space}");
        return;
    }
    let t = Instant::now();
    c.execute(
        "INSERT INTO kip.concepts (space, type, name, attributes)
         SELECT $1, 'Person', 'person_' || i,
                jsonb_build_object('description',
                    'Works as a ' || ($2::text[])[1 + i % array_length($2::text[], 1)]
                    || ' in ' || ($3::text[])[1 + (i / 7) % array_length($3::text[], 1)]
                    || '. Enjoys ' || ($4::text[])[1 + (i / 3) % array_length($4::text[], 1)]
                    || ' and ' || ($4::text[])[1 + (i / 11) % array_length($4::text[], 1)] || '.')
         FROM generate_series($5::bigint, $6::bigint) AS i
         ON CONFLICT DO NOTHING",
        &[&space, &JOBS, &CITIES, &HOBBIES, &(existing + 1), &n],
    )
    .unwrap();
    c.batch_execute("ANALYZE kip.concepts").unwrap();
    println!("loaded {} people in {:.1} s", n - existing, t.elapsed().as_secs_f64());
}

fn write_rate(c: &mut Client, label: &str, count: usize) -> f64 {
    let t = Instant::now();
    for i in 0..count {
        result(kip(
            c,
            r#"UPSERT { CONCEPT ?e { {type: "Person", name: :n} SET ATTRIBUTES { description: :d } } }"#,
            json!({"n": format!("writer_{label}_{i}_{}", std::process::id()), "d": "Writes a lot of notes about the weather."}),
        ));
    }
    count as f64 / t.elapsed().as_secs_f64()
}

/// recall@10 of semantic SEARCH against an exact scan, over the meaning
/// queries; `ef_search` is the session's `hnsw.ef_search`. Two figures:
/// * strict: the share of the exact top 10's ids that SEARCH returns;
/// * with ties: the share of SEARCH's 10 hits whose distance is at most the
///   exact 10th distance + 0.001 (the ANN-benchmarks definition, which
///   counts an equally near element as correct when many are nearly tied).
fn recall_at_10(c: &mut Client, space: &str, ef_search: Option<i32>) -> (f64, f64) {
    if let Some(ef) = ef_search {
        c.batch_execute(&format!("SET hnsw.ef_search = {ef}")).unwrap();
    }
    let mut overlap = 0usize;
    let mut within = 0usize;
    let mut total = 0usize;
    for q in MEANING_QUERIES {
        let hits = result(kip(c, r#"SEARCH CONCEPT :q WITH TYPE "Person" MODE "semantic" LIMIT 10"#, json!({"q": q})));
        let got: Vec<String> = hits.as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_string()).collect();
        let exact: Vec<(String, f64)> = c
            .query(
                "WITH q AS MATERIALIZED (SELECT kip_embed($2)::vector AS v)
                 SELECT 'C:' || id, (embedding <=> q.v)::float8 FROM kip.concepts, q
                 WHERE space = $1 AND type = 'Person' AND embedding IS NOT NULL
                 ORDER BY (embedding <=> q.v) + 0 LIMIT 10",
                &[&space, q],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let kth = exact.last().map_or(f64::INFINITY, |(_, d)| *d);
        let got_distances: Vec<f64> = c
            .query(
                "WITH q AS MATERIALIZED (SELECT kip_embed($2)::vector AS v)
                 SELECT (embedding <=> q.v)::float8 FROM kip.concepts, q
                 WHERE space = $1 AND 'C:' || id = ANY($3)",
                &[&space, q, &got],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        overlap += exact.iter().filter(|(id, _)| got.contains(id)).count();
        within += got_distances.iter().filter(|d| **d <= kth + 1e-3).count().min(exact.len());
        total += exact.len();
    }
    c.batch_execute("RESET hnsw.ef_search").unwrap();
    (overlap as f64 / total.max(1) as f64, within as f64 / total.max(1) as f64)
}

/// CPU time (user + system) a backend has used, in seconds, from
/// `/proc/<pid>/stat` (the benchmark runs on the database's machine).
fn backend_cpu_seconds(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

fn main() {
    let _awake = kip_integration_tests::hold_cpus_awake();
    let n: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut c = connect();
    let space = format!("bench_search_{n}");
    load(&mut c, &space, n);

    let mut backlog: i64 = c
        .query_one("SELECT count(*) FROM kip.concepts WHERE space = $1 AND embedding IS NULL", &[&space])
        .unwrap()
        .get(0);
    let latency_only = std::env::var("KIP_BENCH_LATENCY_ONLY").is_ok_and(|v| v == "1");
    if backlog == 0 && !latency_only {
        // A reused, fully embedded memory: make the vectors of a sample of
        // people stale again, so the backlog figures are measured on an
        // index that already holds the rest of the memory.
        backlog = c
            .execute(
                "UPDATE kip.concepts SET embedding = NULL
                 WHERE id IN (SELECT id FROM kip.concepts WHERE space = $1 AND name LIKE 'person\\_%' ORDER BY id DESC LIMIT $2)",
                &[&space, &REUSED_BACKLOG],
            )
            .unwrap() as i64;
        println!("made {backlog} vectors stale again");
    }
    let writes_with_backlog = write_rate(&mut c, "backlog", 300);
    println!("write rate with a backlog of {backlog} elements: {writes_with_backlog:.0}/s");

    // Backfill rate on one core, then the rest of the backlog.
    let mut backfill_rate = f64::NAN;
    let mut backfill_cpu_rate = f64::NAN;
    if backlog > 0 {
        c.batch_execute("SET kip.embedding_threads = 1").unwrap();
        let sample = backlog.min(2000) as i32;
        let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        let cpu_before = backend_cpu_seconds(pid);
        let load_before = load_average();
        let t = Instant::now();
        let done: i64 = c.query_one("SELECT kip_embed_pending($1, $2)", &[&sample, &space]).unwrap().get(0);
        let wall = t.elapsed().as_secs_f64();
        backfill_rate = done as f64 / wall;
        if let (Some(a), Some(b)) = (cpu_before, backend_cpu_seconds(pid)) {
            backfill_cpu_rate = done as f64 / (b - a).max(0.01);
        }
        println!(
            "backfill: {done} texts in {wall:.1} s = {backfill_rate:.0} texts/s (1 thread); {backfill_cpu_rate:.0} texts per CPU-second of the backend; load {load_before} -> {}",
            load_average()
        );
        // The rest with every core (the thread count is read when a
        // backend loads the model, so on a new connection).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut bulk = connect();
        use_space(&mut bulk, &space);
        bulk.batch_execute(&format!("SET kip.embedding_threads = {cores}")).unwrap();
        let t = Instant::now();
        let rest: i64 = bulk.query_one("SELECT kip_embed_pending(NULL, $1)", &[&space]).unwrap().get(0);
        println!("embedded the remaining {rest} in {:.0} s ({cores} threads)", t.elapsed().as_secs_f64());
    }
    // Latencies are measured in the steady state autovacuum reaches: the
    // dead row versions of the backfill removed, the GIN pending list
    // merged, statistics fresh.
    let t = Instant::now();
    c.batch_execute("VACUUM (ANALYZE) kip.concepts").unwrap();
    println!("VACUUM (ANALYZE) after the backfill: {:.0} s", t.elapsed().as_secs_f64());
    let writes_without_backlog = write_rate(&mut c, "clear", 300);
    c.execute("SELECT kip_embed_pending(NULL, $1)", &[&space]).unwrap();

    // Query embedding time (fresh texts: the per-backend cache is not hit).
    let mut embed_ms = Vec::new();
    for (i, q) in MEANING_QUERIES.iter().enumerate() {
        let text = format!("{q} {i}");
        embed_ms.push(timed(|| {
            c.query_one("SELECT kip_embed($1)", &[&text]).unwrap();
        }));
    }
    let rtt = stats((0..20).map(|_| timed(|| { c.query_one("SELECT 1", &[]).unwrap(); })).collect());
    let embed = stats(embed_ms);

    // Latency per mode; each query text is new to the backend's vector cache.
    let mut rows = Vec::new();
    for (mode, queries) in [("keyword", KEYWORD_QUERIES), ("semantic", MEANING_QUERIES), ("hybrid", MEANING_QUERIES)] {
        let mut ms = Vec::new();
        for round in 0..3 {
            for q in queries.iter() {
                let term = if mode == "keyword" { q.to_string() } else { format!("{q} ({mode} {round})") };
                let took = timed(|| {
                    result(kip(&mut c, &format!(r#"SEARCH CONCEPT :q MODE "{mode}" LIMIT 10"#), json!({"q": term})));
                });
                if std::env::var("KIP_BENCH_VERBOSE").is_ok_and(|v| v == "1") {
                    println!("{mode} {took:8.2} ms  {term}");
                }
                ms.push(took);
            }
        }
        rows.push((mode, stats(ms)));
    }

    // recall@10: kip's semantic SEARCH (HNSW with iterative scan above 2,000
    // elements) against an exact scan of the same vectors, at kip's own
    // ef_search and with the session asking for more.
    let (recall, recall_ties) = recall_at_10(&mut c, &space, None);
    let (recall_400, recall_400_ties) = recall_at_10(&mut c, &space, Some(400));

    println!("\n## SEARCH at {n} concepts (load average {})\n", load_average());
    println!("| measure | p50 | p95 |");
    println!("|---|---|---|");
    for (mode, s) in &rows {
        println!("| `SEARCH CONCEPT … MODE \"{mode}\" LIMIT 10` (ms, through kip_execute) | {:.2} | {:.2} |", s.p50, s.p95);
    }
    println!("| query embedding, `kip_embed` of a ≤ 16-token text (ms) | {:.2} | {:.2} |", embed.p50, embed.p95);
    println!("| client round trip of `SELECT 1` (ms) | {:.2} | {:.2} |", rtt.p50, rtt.p95);
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!("| recall@10 of semantic SEARCH (HNSW) vs exact scan, {} queries, strict (ids) | {recall:.3} |", MEANING_QUERIES.len());
    println!("| the same, ties counted (distance ≤ exact 10th + 0.001) | {recall_ties:.3} |");
    println!("| strict recall@10 with `SET hnsw.ef_search = 400` | {recall_400:.3} |");
    println!("| the same, ties counted | {recall_400_ties:.3} |");
    println!("| backfill rate, 1 thread (texts/s, wall clock) | {backfill_rate:.0} |");
    println!("| backfill rate per CPU-second of the backend (texts/s) | {backfill_cpu_rate:.0} |");
    println!("| UPSERT rate with a backlog of {backlog} waiting elements (/s) | {writes_with_backlog:.0} |");
    println!("| UPSERT rate with no backlog (/s) | {writes_without_backlog:.0} |");
    if std::env::var("KIP_BENCH_KEEP").map_or(true, |v| v != "1") {
        c.execute("SELECT kip_drop_space($1)", &[&space]).unwrap();
    }
}
