//! What MCP's stores cost per call: jrpc's `McpServer` keeping its legacy sessions and tasks in
//! process (`MemorySessions`, `MemoryTasks`) against in Redis (`RedisStore`, with
//! `Topics::redis` as replicas run it), on one replica (see "MCP stores" in bench/README.md).
//!
//! ```text
//! cd bench && CARGO_TARGET_DIR=$PWD/target cargo run --release --bin mcp_stores -- --seconds 3 --rounds 3
//! ```
//!
//! It starts a `redis-server` on a free port, then for each workload and round a server child
//! of each store (`mcp_stores --serve memory|redis [--redis URL] --listen 127.0.0.1:0`, which
//! prints `listening ADDR` and serves until its stdin closes). `--connections N` keep-alive
//! HTTP/1.1 connections call one after another:
//!
//! - *legacy session call*: each connection opens a session (`initialize`,
//!   `notifications/initialized`), then calls `add` in it (the session's record read from the
//!   store at each call);
//! - *task*: each connection calls `add_task` as a modern client that takes tasks (answered
//!   with a task, made in the store), then `tasks/get` until it is completed, its result
//!   checked: one task is the call and its reads.
//!
//! It reports the rate, the server's CPU per call (or task), and Redis's CPU and commands per
//! call (or task).

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use jrpc_bench::{BoxError, ServerChild, cpu_seconds, until_stdin_closes};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

type Result<T> = std::result::Result<T, BoxError>;

const WARMUP: Duration = Duration::from_millis(300);
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// The server.

mod server {
    use jrpc_mcp::{Mcp, McpServer, MemoryTasks, RedisStore, TaskSupport};
    use jrpc_runtime::server::Topics;
    use jrpc_runtime::{RpcError, rpc_service};

    pub struct Adder;

    #[rpc_service(schema)]
    impl Adder {
        /// Adds two numbers and answers their sum as text.
        fn add(&self, a: f64, b: f64) -> Result<String, RpcError> {
            Ok((a + b).to_string())
        }

        /// Adds two numbers as a task.
        fn add_task(&self, a: f64, b: f64) -> Result<String, RpcError> {
            Ok((a + b).to_string())
        }
    }

    /// Serves `/mcp` on `listener`, its sessions and tasks in process, or in the Redis at
    /// `redis`.
    pub async fn serve(
        listener: tokio::net::TcpListener,
        redis: Option<String>,
    ) -> Result<(), jrpc_bench::BoxError> {
        // Tasks kept 2 s after they finish, in stores of 100 000: room for a run's thousands a
        // second.
        let mut mcp = Mcp::builder("jrpc-bench", "1")
            .tools(Adder.into_methods())
            .tool_task("add_task", TaskSupport::Optional)
            .task_ttl(std::time::Duration::from_secs(2))
            .task_store(MemoryTasks::new(100_000));
        let store = match redis {
            Some(url) => {
                let topics = Topics::redis(url.clone()).connect().await?;
                let store = RedisStore::builder(url).connect().await?;
                mcp = mcp.topics(topics).task_store(store.clone());
                Some(store)
            }
            None => None,
        };
        let server = McpServer::builder(mcp.build()?).http(|http| http.max_connections(20_000));
        let server = match store {
            Some(store) => server.session_store(store),
            None => server,
        };
        server.build()?.serve(listener).await;
        Ok(())
    }
}

/// Says where the server keeps its sessions and tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Store {
    Memory,
    Redis,
}

impl Store {
    const ALL: [Store; 2] = [Self::Memory, Self::Redis];

    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redis => "redis",
        }
    }
}

/// The child's part: serve until stdin closes.
async fn serve(store: &str, redis: Option<String>, listen: &str) -> Result<()> {
    let listener = TcpListener::bind(listen).await?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let redis = (store == "redis").then_some(redis).flatten();
    let serving = tokio::spawn(server::serve(listener, redis));
    until_stdin_closes(Duration::from_secs(600), store).await;
    serving.abort();
    Ok(())
}

/// A server child.
struct ServerProcess {
    addr: SocketAddr,
    child: ServerChild,
}

impl ServerProcess {
    async fn start(store: Store, redis: &str) -> Result<Self> {
        let (child, addr) = ServerChild::start(
            [
                "--serve",
                store.name(),
                "--redis",
                redis,
                "--listen",
                "127.0.0.1:0",
            ],
            Duration::from_secs(10),
        )
        .await?;
        Ok(Self {
            addr: addr.parse()?,
            child,
        })
    }

    async fn stop(self) {
        self.child.stop().await;
    }
}

// ---------------------------------------------------------------------------------------------
// Redis.

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Sends `command` (inline) to the Redis on `port`; its answer.
fn redis_command(port: u16, command: &str) -> Result<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(format!("{command}\r\n").as_bytes())?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk)?;
        answer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&answer);
        // A status line, or a bulk string read whole.
        let whole = match text.split_once("\r\n") {
            Some((first, rest)) if first.starts_with('$') => {
                let len: usize = first[1..].parse().unwrap_or(0);
                rest.len() >= len
            }
            Some(_) => true,
            None => false,
        };
        if n == 0 || whole {
            return Ok(text.into_owned());
        }
    }
}

/// How many commands the Redis on `port` has processed.
fn redis_commands(port: u16) -> Result<u64> {
    let info = redis_command(port, "INFO stats")?;
    info.lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .ok_or("no total_commands_processed")?
        .trim()
        .parse()
        .map_err(Into::into)
}

async fn start_redis() -> Result<(Child, u16)> {
    let port = free_port()?;
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| {
            format!("cannot start redis-server (apt-get install redis-server): {err}")
        })?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis_command(port, "PING").map_or(true, |pong| !pong.starts_with("+PONG")) {
        if Instant::now() > deadline {
            return Err("redis-server did not answer PING".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((child, port))
}

// ---------------------------------------------------------------------------------------------
// The load generator.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    Session,
    Task,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Self::Session => "legacy session call",
            Self::Task => "task (`tools/call`, then `tasks/get` until completed)",
        }
    }
}

const TASK_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#;

/// A connection, and the session it opened (legacy).
struct Caller {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    session: Option<String>,
}

impl Caller {
    async fn connect(addr: SocketAddr, workload: Workload) -> Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut caller = Self {
            sender,
            host: addr.to_string(),
            session: None,
        };
        if workload == Workload::Session {
            let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
            let (_, session) = caller.post(None, init.to_owned()).await?;
            caller.session = Some(session.ok_or("no session id")?);
            let ready = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            caller.post(None, ready.to_owned()).await?;
        }
        Ok(caller)
    }

    /// POSTs `body`, a modern request of `(method, name)` or one of the session; the answer's
    /// body and session id.
    async fn post(
        &mut self,
        modern: Option<(&str, &str)>,
        body: String,
    ) -> Result<(Bytes, Option<String>)> {
        let mut request = Request::post("/mcp")
            .header(hyper::header::HOST, self.host.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        if let Some((method, name)) = modern {
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method)
                .header("mcp-name", name);
        } else if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session.as_str())
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        self.sender.ready().await?;
        let response = tokio::time::timeout(CALL_TIMEOUT, self.sender.send_request(request))
            .await
            .map_err(|_| "call timed out")??;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = tokio::time::timeout(CALL_TIMEOUT, response.into_body().collect())
            .await
            .map_err(|_| "answer timed out")??
            .to_bytes();
        if !status.is_success() {
            return Err(format!("status {status}: {}", String::from_utf8_lossy(&body)).into());
        }
        Ok((body, session))
    }

    /// Makes one call (a session's), or one task and its reads; how many requests it took.
    async fn once(&mut self, workload: Workload, id: u64) -> Result<u64> {
        let expected = (id + 1).to_string();
        match workload {
            Workload::Session => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{id},"b":1}}}}}}"#
                );
                let (answer, _) = self.post(None, body).await?;
                let answer: Value = serde_json::from_slice(&answer)?;
                check(&answer["result"]["content"][0]["text"], &expected)?;
                Ok(1)
            }
            Workload::Task => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add_task","arguments":{{"a":{id},"b":1}},{TASK_META}}}}}"#
                );
                let (answer, _) = self.post(Some(("tools/call", "add_task")), body).await?;
                let answer: Value = serde_json::from_slice(&answer)?;
                let task = answer["result"]["taskId"]
                    .as_str()
                    .ok_or_else(|| format!("no task: {answer}"))?
                    .to_owned();
                let mut requests = 1;
                loop {
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"tasks/get","params":{{"taskId":"{task}",{TASK_META}}}}}"#
                    );
                    let (read, _) = self.post(Some(("tasks/get", &task)), body).await?;
                    requests += 1;
                    let read: Value = serde_json::from_slice(&read)?;
                    match read["result"]["status"].as_str() {
                        Some("completed") => {
                            check(&read["result"]["result"]["content"][0]["text"], &expected)?;
                            return Ok(requests);
                        }
                        Some("working") => tokio::task::yield_now().await,
                        _ => return Err(format!("task {task}: {read}").into()),
                    }
                }
            }
        }
    }
}

fn check(text: &Value, expected: &str) -> Result<()> {
    if text.as_str() == Some(expected) {
        Ok(())
    } else {
        Err(format!("wrong answer {text}, expected {expected}").into())
    }
}

/// What one round measured.
#[derive(Default)]
struct Stats {
    /// Calls (or tasks) done in the window.
    done: u64,
    /// The requests they took.
    requests: u64,
    seconds: f64,
    server_cpu: f64,
    redis_cpu: f64,
    redis_commands: u64,
}

/// One round: `connections` callers, one call (or task) after another, counted in a window of
/// `seconds` after a warm-up.
async fn round(
    server: &ServerProcess,
    redis: (&Child, u16),
    workload: Workload,
    connections: usize,
    seconds: f64,
) -> Result<Stats> {
    let mut callers = Vec::with_capacity(connections);
    for _ in 0..connections {
        callers.push(Caller::connect(server.addr, workload).await?);
    }
    let from = Instant::now() + WARMUP;
    let to = from + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = callers
        .into_iter()
        .enumerate()
        .map(|(i, mut caller)| {
            tokio::spawn(async move {
                let (mut done, mut requests) = (0u64, 0u64);
                let mut id = (i as u64) << 32;
                loop {
                    if Instant::now() >= to {
                        return Ok::<(u64, u64), BoxError>((done, requests));
                    }
                    id += 1;
                    let took = caller.once(workload, id).await?;
                    let now = Instant::now();
                    if now >= from && now < to {
                        done += 1;
                        requests += took;
                    }
                }
            })
        })
        .collect();
    let pid = server.child.pid()?;
    let redis_pid = redis.0.id().ok_or("redis gone")?.to_string();
    tokio::time::sleep_until(from.into()).await;
    let before = (
        cpu_seconds(&pid)?,
        cpu_seconds(&redis_pid)?,
        redis_commands(redis.1)?,
    );
    tokio::time::sleep_until(to.into()).await;
    let after = (
        cpu_seconds(&pid)?,
        cpu_seconds(&redis_pid)?,
        redis_commands(redis.1)?,
    );
    let mut stats = Stats {
        seconds,
        server_cpu: after.0 - before.0,
        redis_cpu: after.1 - before.1,
        // The two INFO commands of the measure itself are not the server's.
        redis_commands: (after.2 - before.2).saturating_sub(1),
        ..Stats::default()
    };
    for task in tasks {
        let (done, requests) = task.await??;
        stats.done += done;
        stats.requests += requests;
    }
    Ok(stats)
}

// ---------------------------------------------------------------------------------------------
// The run.

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(store) = value("--serve") {
        let listen = value("--listen").unwrap_or_else(|| "127.0.0.1:0".into());
        return runtime.block_on(serve(&store, value("--redis"), &listen));
    }
    let seconds: f64 = value("--seconds").map_or(Ok(3.0), |s| s.parse())?;
    let rounds: usize = value("--rounds").map_or(Ok(3), |s| s.parse())?;
    let connections: usize = value("--connections").map_or(Ok(8), |s| s.parse())?;
    runtime.block_on(run(seconds, rounds, connections))
}

async fn run(seconds: f64, rounds: usize, connections: usize) -> Result<()> {
    let (redis, port) = start_redis().await?;
    let url = format!("redis://127.0.0.1:{port}");
    println!(
        "| workload | store | per second | server CPU µs each | Redis CPU µs each | Redis commands each | requests each |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for workload in [Workload::Session, Workload::Task] {
        let mut totals: [Stats; 2] = Default::default();
        for r in 0..rounds {
            // Each round starts with the other store.
            for k in 0..Store::ALL.len() {
                let store = Store::ALL[(r + k) % Store::ALL.len()];
                let process = ServerProcess::start(store, &url).await?;
                let stats = round(&process, (&redis, port), workload, connections, seconds).await;
                process.stop().await;
                let stats = stats.map_err(|err| format!("{}: {err}", store.name()))?;
                let total = &mut totals[store as usize];
                total.done += stats.done;
                total.requests += stats.requests;
                total.seconds += stats.seconds;
                total.server_cpu += stats.server_cpu;
                total.redis_cpu += stats.redis_cpu;
                total.redis_commands += stats.redis_commands;
            }
        }
        for (store, stats) in Store::ALL.iter().zip(&totals) {
            let each = |x: f64| x / stats.done as f64;
            println!(
                "| {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.2} |",
                workload.label(),
                store.name(),
                stats.done as f64 / stats.seconds,
                each(stats.server_cpu * 1e6),
                each(stats.redis_cpu * 1e6),
                each(stats.redis_commands as f64),
                each(stats.requests as f64),
            );
        }
    }
    Ok(())
}
