//! Helpers of the reliability suites (`tests/bin/reliability_*.rs`): sizes
//! from the environment, a dedicated database per suite, calls that tell a
//! KIP envelope from a Postgres error and from a lost connection, the server
//! log's crash lines, and waiting for the cluster after a crash.

use postgres::{Client, NoTls};
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::{admin_dsn, dsn_for, port};

/// A size or duration of a suite: `name` from the environment, else `default`
/// (`scripts/reliability.sh` sets the short values for `make test` and the
/// full ones for `make soak`).
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// Deterministic SplitMix64, so a failing run can be replayed with its seed.
pub use kip_mutate::Rng;

/// Drop and recreate `db` with the kip extension: each suite owns its
/// database, so it never disturbs other data and starts from a known state.
pub fn fresh_database(db: &str) {
    let mut admin = Client::connect(&admin_dsn(), NoTls).expect("connect to the cluster (is it running? scripts/cluster.sh start)");
    // Test-chosen identifiers, quoted anyway.
    for sql in [format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"), format!("CREATE DATABASE \"{db}\"")] {
        admin.batch_execute(&sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    // The extension is created by the superuser (it requires one); the
    // suite then connects as `KIP_TEST_USER` when that is set.
    let mut c = Client::connect(&format!("host=localhost port={} user=postgres dbname={db}", port()), NoTls)
        .unwrap_or_else(|e| panic!("connect to {db} as postgres: {e:?}"));
    c.batch_execute("SET client_min_messages = warning; CREATE EXTENSION kip CASCADE")
        .unwrap_or_else(|e| panic!("CREATE EXTENSION kip in {db}: {e:?}"));
}

/// Drop a suite's database at the end of a passing run.
pub fn drop_database(db: &str) {
    if let Ok(mut admin) = Client::connect(&admin_dsn(), NoTls) {
        let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"));
    }
}

pub fn connect_db(db: &str) -> Client {
    Client::connect(&dsn_for(db), NoTls).unwrap_or_else(|e| panic!("connect to {db}: {e:?}"))
}

/// What one `kip_execute` call came back with.
#[derive(Debug)]
pub enum Call {
    /// A KIP envelope: `{"result": …}` or `{"error": {"code": …}}`.
    Envelope(Value),
    /// The call raised a Postgres error instead of returning an envelope.
    SqlError { sqlstate: String, message: String },
    /// The connection broke: the backend died, or the server went away.
    Lost(String),
}

impl Call {
    /// The KIP error code of an error envelope, `None` for a result.
    pub fn code(&self) -> Option<&str> {
        match self {
            Call::Envelope(v) => v["error"]["code"].as_str(),
            _ => None,
        }
    }
}

/// `kip_execute(command, parameters)`, never panicking.
pub fn call(client: &mut Client, command: &str, params: &Value) -> Call {
    call_sql(client, "SELECT kip_execute($1::text, $2::jsonb)", command, params)
}

/// Like [`call`], with the SQL of the call given (`$1` command, `$2`
/// parameters), e.g. schema-qualified under `search_path = ''`.
pub fn call_sql(client: &mut Client, sql: &str, command: &str, params: &Value) -> Call {
    match client.query_one(sql, &[&command, params]) {
        Ok(row) => {
            let v: Value = row.get(0);
            let is_envelope = v.is_object()
                && (v.get("result").is_some() != v.get("error").is_some())
                && (v.get("error").is_none() || v["error"]["code"].as_str().is_some_and(|c| c.starts_with("KIP_")));
            if is_envelope {
                Call::Envelope(v)
            } else {
                Call::SqlError { sqlstate: "-".into(), message: format!("not a KIP envelope: {v}") }
            }
        }
        Err(e) if e.is_closed() || e.as_db_error().is_none() => Call::Lost(e.to_string()),
        Err(e) => {
            let db = e.as_db_error().unwrap();
            // Admin shutdown / crash of another backend also arrive as errors
            // (57P01, 57P02, 57P03): the session is gone either way.
            if db.code().code().starts_with("57P") {
                Call::Lost(format!("{}: {}", db.code().code(), db.message()))
            } else {
                Call::SqlError { sqlstate: db.code().code().to_string(), message: db.message().to_string() }
            }
        }
    }
}

/// The cluster's server log (`$KIP_PGDATA/server.log`, the `-l` file of
/// scripts/cluster.sh), read from a mark so a suite only sees its own window.
pub struct ServerLog {
    path: PathBuf,
    mark: u64,
}

impl ServerLog {
    pub fn path() -> PathBuf {
        let data = std::env::var("KIP_PGDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.pgdata"));
        data.join("server.log")
    }

    /// Start of the window: the current end of the log.
    pub fn mark() -> ServerLog {
        let path = Self::path();
        let mark = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("server log {} is not readable ({e}); set KIP_PGDATA", path.display()))
            .len();
        ServerLog { path, mark }
    }

    /// Every line written since the mark.
    pub fn since_mark(&self) -> String {
        let mut f = std::fs::File::open(&self.path).expect("open the server log");
        f.seek(SeekFrom::Start(self.mark)).expect("seek the server log");
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).expect("read the server log");
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// Lines since the mark that report a backend crash.
    pub fn crash_lines(&self) -> Vec<String> {
        self.since_mark()
            .lines()
            .filter(|l| {
                l.contains("terminated by signal")
                    || l.contains("was terminated by exception")
                    || (l.contains("server process") && l.contains("exited with exit code"))
                    || l.contains("terminating any other active server processes")
                    || l.contains("PANIC:")
            })
            .map(String::from)
            .collect()
    }
}

/// Wait until the cluster accepts connections and answers a query again
/// (after a backend crash the postmaster resets every session and replays
/// the WAL; after an immediate stop the cluster must be started).
pub fn wait_until_up(db: &str, timeout: Duration) -> Duration {
    let start = Instant::now();
    let answers = || Client::connect(&dsn_for(db), NoTls).is_ok_and(|mut c| c.query_one("SELECT 1", &[]).is_ok());
    loop {
        // Twice, half a second apart: right after a backend is killed the
        // cluster may still answer before the postmaster starts its crash
        // recovery, and refuse connections during it.
        if answers() {
            std::thread::sleep(Duration::from_millis(500));
            if answers() {
                return start.elapsed();
            }
        }
        if start.elapsed() > timeout {
            panic!("the cluster on port {} did not come back within {timeout:?}", port());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Errors counted by code, printed sorted.
#[derive(Default, Debug, Clone)]
pub struct Tally(pub std::collections::BTreeMap<String, u64>);

impl Tally {
    pub fn add(&mut self, key: &str) {
        *self.0.entry(key.to_string()).or_default() += 1;
    }
    pub fn merge(&mut self, other: &Tally) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_default() += v;
        }
    }
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return write!(f, "none");
        }
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k} {v}")).collect();
        write!(f, "{}", parts.join(", "))
    }
}
