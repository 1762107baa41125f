//! Shared helpers of the integration tests: connecting to the test cluster,
//! fresh memory spaces, calling kip_execute, and the conformance fixtures'
//! result normalization.
//!
//! The tests talk to a real PostgreSQL with the extension installed
//! (`scripts/test.sh` starts the project's cluster). `KIP_TEST_DSN` overrides
//! the connection string; the default database `kip_test` is created on
//! first use.

pub mod brain;
pub mod normalize;
pub mod reliability;

use postgres::{Client, NoTls};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn port() -> String {
    std::env::var("KIP_PGPORT").unwrap_or_else(|_| "54329".to_string())
}

/// Connection string of a server-level database (for CREATE DATABASE).
pub fn admin_dsn() -> String {
    format!("host=localhost port={} user=postgres dbname=postgres", port())
}

/// Connection string of a test database, as `postgres` or as the role in
/// `KIP_TEST_USER` (scripts/test.sh runs suites again as a non-superuser
/// member of kip_admin).
pub fn dsn_for(db: &str) -> String {
    let user = std::env::var("KIP_TEST_USER").unwrap_or_else(|_| "postgres".to_string());
    std::env::var("KIP_TEST_DSN").unwrap_or_else(|_| format!("host=localhost port={} user={user} dbname={db}", port()))
}

/// Create a database (if missing) with the kip extension installed. Test
/// threads and binaries may race here, so creation is serialized with an
/// advisory lock held by the admin session.
pub fn ensure_database(db: &str) {
    let mut admin = Client::connect(&admin_dsn(), NoTls).expect("connect to the test cluster (is it running? scripts/cluster.sh start)");
    admin.execute("SELECT pg_advisory_lock(727001)", &[]).expect("advisory lock");
    let exists = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])
        .expect("query pg_database")
        .is_some();
    if !exists {
        // Identifier from test code, not user input; quoted anyway.
        admin.batch_execute(&format!("CREATE DATABASE \"{db}\"")).unwrap_or_else(|e| panic!("create database {db}: {e:?}"));
    }
    let mut client = Client::connect(&dsn_for(db), NoTls).expect("connect to test database");
    client.batch_execute("CREATE EXTENSION IF NOT EXISTS kip CASCADE").unwrap_or_else(|e| panic!("CREATE EXTENSION kip: {e:?}"));
    admin.execute("SELECT pg_advisory_unlock(727001)", &[]).expect("advisory unlock");
}

/// A client connected to the shared test database `kip_test`.
pub fn connect() -> Client {
    ensure_database("kip_test");
    Client::connect(&dsn_for("kip_test"), NoTls).expect("connect to kip_test")
}

/// A unique space name, so tests never see each other's data.
pub fn unique_space(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}_{}_{}_{}", std::process::id(), nanos % 1_000_000_000, COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Select a space for the session.
pub fn use_space(client: &mut Client, space: &str) {
    client
        .execute("SELECT set_config('kip.space', $1, false)", &[&space])
        .expect("set kip.space");
}

/// Select a brand-new space for the session and return its name.
pub fn fresh_space(client: &mut Client, prefix: &str) -> String {
    let space = unique_space(prefix);
    use_space(client, &space);
    space
}

/// `kip_execute(command, parameters)`.
pub fn kip(client: &mut Client, command: &str, params: Value) -> Value {
    client
        .query_one("SELECT kip_execute($1::text, $2::jsonb)", &[&command, &params])
        .expect("kip_execute")
        .get(0)
}

/// `kip_execute(request jsonb)`.
pub fn kip_request(client: &mut Client, request: Value) -> Value {
    client.query_one("SELECT kip_execute($1::jsonb)", &[&request]).expect("kip_execute(request)").get(0)
}

/// `kip_execute_readonly(command, parameters)`.
pub fn kip_readonly(client: &mut Client, command: &str, params: Value) -> Value {
    client
        .query_one("SELECT kip_execute_readonly($1::text, $2::jsonb)", &[&command, &params])
        .expect("kip_execute_readonly")
        .get(0)
}

/// The `result` of a successful envelope; panics with the error otherwise.
pub fn ok(envelope: Value) -> Value {
    match envelope.get("result") {
        Some(r) if envelope.get("error").is_none() => r.clone(),
        _ => panic!("expected a result, got {envelope}"),
    }
}

/// The error code of a failed envelope; panics on success.
pub fn err_code(envelope: &Value) -> String {
    envelope["error"]["code"].as_str().unwrap_or_else(|| panic!("expected an error, got {envelope}")).to_string()
}

/// `../shared` beside the project, when present.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    dir.is_dir().then(|| dir.canonicalize().unwrap_or(dir))
}

/// Holds `/dev/cpu_dma_latency` at 0 while the returned file is open: the
/// kernel then keeps idle CPUs polling instead of halting them. On a
/// virtual machine a halted vCPU takes long to wake (on the 2-core VM of
/// benches/RESULTS.md it added ~110 µs to a 30 µs primary-key read), which
/// every client/server round trip pays and which varies with whatever else keeps a CPU busy;
/// latency benchmarks hold it, as `cyclictest` does. Needs root; without
/// it the benchmark runs as is and says so.
pub fn hold_cpus_awake() -> Option<std::fs::File> {
    use std::io::Write;
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|()| f));
    match held {
        Ok(f) => {
            println!("CPU idle states: held at polling while the benchmark runs (/dev/cpu_dma_latency = 0)");
            Some(f)
        }
        Err(e) => {
            println!("CPU idle states: not held ({e}): round trips include waking idle CPUs");
            None
        }
    }
}
