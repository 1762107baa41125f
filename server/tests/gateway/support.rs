//! Test harness: start `kip-server` processes against the test database,
//! call them over HTTP, and put a cuttable TCP proxy in front of Postgres.
//!
//! The database comes from `KIP_GATEWAY_TEST_DATABASE_URL` (a database with
//! `CREATE EXTENSION kip CASCADE`); without it every test returns early
//! with a message (scripts/gateway_test.sh sets it).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub fn database_url() -> Option<String> {
    match std::env::var("KIP_GATEWAY_TEST_DATABASE_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            eprintln!("skipped: set KIP_GATEWAY_TEST_DATABASE_URL to a database with the kip extension (scripts/gateway_test.sh does)");
            None
        }
    }
}

/// Return early from a test when no test database is configured.
#[macro_export]
macro_rules! db_or_skip {
    () => {
        match $crate::support::database_url() {
            Some(u) => u,
            None => return,
        }
    };
}

pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `kip-server`; stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub log_path: PathBuf,
}

impl Server {
    /// `kip-server --database-url URL --listen 127.0.0.1:<free> ARGS`, with `envs`.
    ///
    /// The free port is free when chosen, not when the server binds it: the
    /// tests running beside this one open client connections whose local
    /// ports come from the same range. A server that found its port taken
    /// is started again on another.
    pub async fn start(url: &str, args: &[&str], envs: &[(&str, &str)]) -> Server {
        const ATTEMPTS: u32 = 5;
        for attempt in 1..=ATTEMPTS {
            let port = free_port();
            let log_path = std::env::temp_dir().join(format!("kip-server-test-{port}.log"));
            let log = std::fs::File::create(&log_path).unwrap();
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_kip-server"));
            cmd.arg("--database-url").arg(url).arg("--listen").arg(format!("127.0.0.1:{port}")).args(args);
            for var in ["API_KEY", "KIP_API_KEYS_FILE", "KIP_LISTEN", "DATABASE_URL"] {
                cmd.env_remove(var);
            }
            cmd.envs(envs.iter().copied()).stdout(Stdio::null()).stderr(log);
            let child = cmd.spawn().expect("start kip-server");
            let mut server = Server { child: Some(child), base: format!("http://127.0.0.1:{port}"), log_path };
            match server.wait_ready().await {
                Ok(()) => return server,
                Err(log) if attempt < ATTEMPTS && log.contains("Address already in use") => continue,
                Err(log) => panic!("kip-server did not start; log:\n{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Wait until the server answers; its log if it exits or does not
    /// answer in time.
    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(r) = client().get(&self.base).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if let Some(child) = self.child.as_mut() {
                if child.try_wait().ok().flatten().is_some() {
                    self.child = None;
                    return Err(self.log());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(self.log())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill").arg(format!("-{sig}")).arg(self.pid().to_string()).status().unwrap().success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Wait for the process to exit; returns its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let child = self.child.as_mut().unwrap();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// POST /kip with a `{method, params}` body; returns status and JSON body.
    pub async fn kip(&self, method: &str, params: Value) -> (u16, Value) {
        self.kip_as(None, None, method, params).await
    }

    pub async fn kip_as(&self, key: Option<&str>, space: Option<&str>, method: &str, params: Value) -> (u16, Value) {
        let mut req = client().post(format!("{}/kip", self.base)).json(&json!({ "method": method, "params": params }));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(s) = space {
            req = req.header("X-KIP-Space", s);
        }
        send(req).await
    }

    /// POST /kip with a raw body.
    pub async fn post_raw(&self, path: &str, key: Option<&str>, body: Vec<u8>) -> (u16, Value) {
        let mut req = client().post(format!("{}{path}", self.base)).header("content-type", "application/json").body(body);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        send(req).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        send(client().get(format!("{}{path}", self.base))).await
    }

    pub fn addr(&self) -> SocketAddr {
        self.base.trim_start_matches("http://").parse().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

/// Status and JSON body; a body that is not JSON fails the test.
pub async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("status {status}: body is not JSON: {text:?}"));
    (status, body)
}

/// `{"command": text}` as params.
pub fn cmd(text: &str) -> Value {
    json!({ "command": text })
}

/// Assert an error envelope with this status and KIP code.
pub fn assert_error(got: &(u16, Value), status: u16, code: &str) {
    assert_eq!(got.0, status, "status: {}", got.1);
    assert_eq!(got.1["error"]["code"], code, "{}", got.1);
    assert!(got.1["error"]["message"].is_string(), "{}", got.1);
}

/// A direct connection to the test database (for locks and checks).
pub async fn pg(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect to the test database");
    tokio::spawn(conn);
    client
}

/// A database of its own with kip, made afresh (dropped first if a failed
/// run left it): for a test that locks kip's tables, which would hold up
/// the calls of the tests running beside it in the shared database.
/// Returns its URL; `drop_database` removes it.
pub async fn own_database(shared: &str, name: &str) -> String {
    let (base, _) = shared.rsplit_once('/').expect("a database URL ends with /<database>");
    let admin = pg(shared).await;
    // Names come from the tests themselves.
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let url = format!("{base}/{name}");
    pg(&url).await.batch_execute("SET client_min_messages = warning; CREATE EXTENSION kip CASCADE").await.unwrap();
    url
}

pub async fn drop_database(shared: &str, name: &str) {
    pg(shared).await.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
}

/// The same URL with another host:port (to go through the proxy).
pub fn url_via(url: &str, addr: SocketAddr) -> String {
    let cfg: tokio_postgres::Config = url.parse().unwrap();
    let user = cfg.get_user().unwrap_or("postgres");
    let db = cfg.get_dbname().unwrap_or(user);
    format!("postgres://{user}@{addr}/{db}")
}

/// The host:port of a postgres URL.
pub fn pg_addr(url: &str) -> SocketAddr {
    let cfg: tokio_postgres::Config = url.parse().unwrap();
    let host = match cfg.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    let host = if host == "localhost" { "127.0.0.1".to_string() } else { host };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}").parse().unwrap()
}

/// A TCP proxy to Postgres that can be cut (every connection closed, new
/// ones refused), as a Postgres restart or a network outage looks to the
/// gateway, and restored on the same port; or stalled (see [`Proxy::stall`]).
pub struct Proxy {
    pub addr: SocketAddr,
    target: SocketAddr,
    /// Each proxied connection's task and its "stalled" flag.
    state: Arc<Mutex<Vec<(JoinHandle<()>, Arc<AtomicBool>)>>>,
    acceptor: Option<JoinHandle<()>>,
}

/// Copy `from` to `to`, holding the bytes back while `stalled` is set.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, stalled: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while stalled.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut p = Proxy { addr, target, state: Arc::new(Mutex::new(Vec::new())), acceptor: None };
        p.accept_on(listener);
        p
    }

    fn accept_on(&mut self, listener: TcpListener) {
        let target = self.target;
        let state = self.state.clone();
        self.acceptor = Some(tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let stalled = Arc::new(AtomicBool::new(false));
                let flag = stalled.clone();
                let handle = tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(target).await {
                        let ((in_rd, in_wr), (out_rd, out_wr)) = (inbound.into_split(), outbound.into_split());
                        tokio::join!(pipe(in_rd, out_wr, flag.clone()), pipe(out_rd, in_wr, flag));
                    }
                });
                state.lock().unwrap().push((handle, stalled));
            }
        }));
    }

    /// Close every proxied connection and stop listening.
    pub fn cut(&mut self) {
        if let Some(a) = self.acceptor.take() {
            a.abort();
        }
        for (h, _) in self.state.lock().unwrap().drain(..) {
            h.abort();
        }
    }

    /// Stop forwarding on every connection open now, which stays open with
    /// its bytes held back, as a stalled network path or a hung proxy
    /// looks to the gateway; connections opened later are forwarded.
    pub fn stall(&self) {
        for (_, stalled) in self.state.lock().unwrap().iter() {
            stalled.store(true, Ordering::Relaxed);
        }
    }

    pub async fn restore(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => return self.accept_on(l),
                Err(e) if Instant::now() > deadline => panic!("cannot rebind the proxy port: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// A line-delimited JSON-RPC peer over a child's stdin/stdout (MCP stdio).
pub struct StdioPeer {
    pub child: Child,
    reader: BufReader<std::process::ChildStdout>,
}

impl StdioPeer {
    pub fn spawn(url: &str, args: &[&str]) -> StdioPeer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kip-server"))
            .arg("--database-url")
            .arg(url)
            .arg("mcp")
            .args(args)
            .env_remove("API_KEY")
            .env_remove("KIP_API_KEYS_FILE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let reader = BufReader::new(child.stdout.take().unwrap());
        StdioPeer { child, reader }
    }

    pub fn send(&mut self, msg: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message that has this id (notifications are skipped).
    pub fn response(&mut self, id: i64) -> Value {
        self.response_matching(|v| v["id"] == id)
    }

    /// The next message for which `matches` holds.
    pub fn response_matching(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).unwrap();
            assert!(n > 0, "kip-server mcp closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is not JSON-RPC: {line:?}"));
            if matches(&v) {
                return v;
            }
        }
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A space name no earlier run has used (the request log keeps old entries).
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// POST /mcp with a raw body; status and JSON answer.
pub async fn post_mcp(s: &Server, body: String) -> (u16, Value) {
    let req = client()
        .post(format!("{}/mcp", s.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body);
    send(req).await
}
