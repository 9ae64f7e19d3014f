//! Network benchmark of jrpc against the floor (hyper 1, tokio-tungstenite and serde_json with no
//! framework, in `floor.rs`) and jsonrpsee 0.26, over loopback.
//!
//! `cargo run --release -- --seconds 3` runs, for each scenario (HTTP with 1 keep-alive
//! connection, HTTP with 64, HTTP with 64 and batches of 10, WebSocket with 16 connections x 32
//! calls in flight), rounds against each server in turn, then measures the server's RSS growth
//! for idle WebSocket and HTTP connections. Each server runs in its own child process: this
//! binary re-executed with `--serve jrpc|floor|jsonrpsee --listen 127.0.0.1:0`, which prints
//! `listening ADDR` and serves until its standard input closes (or `--max-seconds` pass). The
//! load generator is the same code for every server; all serve the same method, `add(a, b)`
//! with positional params.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStdin, Command};
use tokio_tungstenite::tungstenite::Message;

use jrpc_bench::{BoxError, Ws, cpu_seconds, raise_nofile};

mod floor;

type Result<T, E = BoxError> = std::result::Result<T, E>;

/// How long a load-generator round warms up before it starts counting.
const WARMUP: Duration = Duration::from_millis(300);
/// How long a single call may take before the round fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// The servers.

mod jrpc_side {
    use jrpc_runtime::rpc_service;

    /// The benchmark's service for jrpc.
    #[rpc_service]
    pub trait Bench {
        /// Adds two integers.
        async fn add(&self, a: i64, b: i64) -> i64;
    }

    /// Its implementation.
    pub struct Impl;

    impl Bench for Impl {
        async fn add(&self, a: i64, b: i64) -> i64 {
            a.wrapping_add(b)
        }
    }
}

mod jsonrpsee_side {
    use jsonrpsee::core::{RpcResult, async_trait};
    use jsonrpsee::proc_macros::rpc;

    /// The benchmark's service for jsonrpsee.
    #[rpc(server)]
    pub trait Bench {
        /// Adds two integers.
        #[method(name = "add")]
        async fn add(&self, a: i64, b: i64) -> RpcResult<i64>;
    }

    /// Its implementation.
    pub struct Impl;

    #[async_trait]
    impl BenchServer for Impl {
        async fn add(&self, a: i64, b: i64) -> RpcResult<i64> {
            Ok(a.wrapping_add(b))
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Server {
    Jrpc,
    Floor,
    Jsonrpsee,
}

impl Server {
    /// Every server, in the order of the first round (and of the report's columns).
    const ALL: [Server; 3] = [Server::Jrpc, Server::Floor, Server::Jsonrpsee];

    fn name(self) -> &'static str {
        match self {
            Server::Jrpc => "jrpc",
            Server::Floor => "floor",
            Server::Jsonrpsee => "jsonrpsee",
        }
    }

    fn parse(name: &str) -> Result<Self> {
        match name {
            "jrpc" => Ok(Server::Jrpc),
            "floor" => Ok(Server::Floor),
            "jsonrpsee" => Ok(Server::Jsonrpsee),
            other => Err(format!("unknown server {other:?} (jrpc, floor or jsonrpsee)").into()),
        }
    }

    /// The path of JSON-RPC `POST`s.
    fn http_path(self) -> &'static str {
        match self {
            Server::Jrpc | Server::Floor => "/rpc",
            Server::Jsonrpsee => "/",
        }
    }

    /// The path of WebSocket upgrades.
    fn ws_path(self) -> &'static str {
        match self {
            Server::Jrpc | Server::Floor => "/ws",
            Server::Jsonrpsee => "/",
        }
    }
}

/// The child process: serves `server` on `listen` until standard input closes or `max` passes.
fn serve(server: Server, listen: &str, max: Duration) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let addr = match server {
            Server::Jrpc => {
                use jrpc_side::Bench as _;
                let http = jrpc_runtime::http::HttpServer::builder(jrpc_side::Impl.into_methods())
                    .max_connections(20_000)
                    .build()?;
                let listener = tokio::net::TcpListener::bind(listen).await?;
                let addr = listener.local_addr()?;
                tokio::spawn(async move { http.serve(listener).await });
                addr
            }
            Server::Floor => {
                let listener = tokio::net::TcpListener::bind(listen).await?;
                let addr = listener.local_addr()?;
                tokio::spawn(floor::serve(listener));
                addr
            }
            Server::Jsonrpsee => {
                use jsonrpsee_side::BenchServer as _;
                let config = jsonrpsee::server::ServerConfig::builder()
                    .max_connections(20_000)
                    .build();
                let server = jsonrpsee::server::Server::builder()
                    .set_config(config)
                    .build(listen)
                    .await?;
                let addr = server.local_addr()?;
                let handle = server.start(jsonrpsee_side::Impl.into_rpc());
                // Serves until the process exits.
                std::mem::forget(handle);
                addr
            }
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening {addr}")?;
        out.flush()?;
        drop(out);
        jrpc_bench::until_stdin_closes(max, server.name()).await;
        Ok::<_, BoxError>(())
    })?;
    // The runtime's blocking stdin reader would keep a graceful shutdown waiting.
    std::process::exit(0)
}

/// A server child process.
struct ServerProcess {
    server: Server,
    addr: SocketAddr,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl ServerProcess {
    async fn start(server: Server, max: Duration) -> Result<Self> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .args(["--serve", server.name(), "--listen", "127.0.0.1:0"])
            .args(["--max-seconds", &max.as_secs().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        tokio::time::timeout(
            Duration::from_secs(10),
            BufReader::new(stdout).read_line(&mut line),
        )
        .await
        .map_err(|_| format!("{} did not start in 10 s", server.name()))??;
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .ok_or_else(|| format!("{}: unexpected first line {line:?}", server.name()))?
            .parse()?;
        Ok(Self {
            server,
            addr,
            child,
            stdin,
        })
    }

    fn pid(&self) -> Result<u32> {
        Ok(self.child.id().ok_or("child gone")?)
    }

    /// Its resident set, in KiB.
    fn rss_kib(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?))?;
        let line = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .ok_or("no VmRSS")?;
        Ok(line
            .trim_start_matches("VmRSS:")
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()?)
    }

    /// CPU time the server and this process use within `window`, in seconds (returns when the
    /// window closes).
    async fn cpu_during(&self, window: Window) -> Result<(f64, f64)> {
        let pid = self.pid()?.to_string();
        tokio::time::sleep_until(window.from.into()).await;
        let (server, client) = (cpu_seconds(&pid)?, cpu_seconds("self")?);
        tokio::time::sleep_until(window.to.into()).await;
        Ok((cpu_seconds(&pid)? - server, cpu_seconds("self")? - client))
    }

    async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(3), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The load generator.

#[derive(Deserialize)]
struct Reply {
    id: u64,
    result: i64,
}

fn request_body(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"add","params":[{id},1]}}"#)
}

/// A body of `calls` calls: one request, or a batch of `calls` requests with ids `first..`.
fn body_of(first: u64, calls: u64) -> String {
    if calls == 1 {
        return request_body(first);
    }
    let elements: Vec<String> = (first..first + calls).map(request_body).collect();
    format!("[{}]", elements.join(","))
}

/// Checks an answer to `body_of(first, calls)`.
fn check_body(body: &[u8], first: u64, calls: u64) -> Result<()> {
    if calls == 1 {
        return match check_reply(body)? {
            id if id == first => Ok(()),
            _ => Err("answer to another id".into()),
        };
    }
    let replies: Vec<&serde_json::value::RawValue> = serde_json::from_slice(body)
        .map_err(|e| format!("bad batch answer {:?}: {e}", String::from_utf8_lossy(body)))?;
    if replies.len() as u64 != calls {
        return Err(format!("{} answers to a batch of {calls}", replies.len()).into());
    }
    for (reply, id) in replies.iter().zip(first..) {
        if check_reply(reply.get().as_bytes())? != id {
            return Err("batch answers out of order".into());
        }
    }
    Ok(())
}

/// Checks an answer to `request_body(id)`; returns its id.
fn check_reply(body: &[u8]) -> Result<u64> {
    let reply: Reply = serde_json::from_slice(body)
        .map_err(|e| format!("bad answer {:?}: {e}", String::from_utf8_lossy(body)))?;
    if reply.result != (reply.id as i64).wrapping_add(1) {
        return Err(format!("wrong result {} for id {}", reply.result, reply.id).into());
    }
    Ok(reply.id)
}

/// What one round measured.
#[derive(Default)]
struct Stats {
    calls: u64,
    seconds: f64,
    /// Latencies of the counted calls, in nanoseconds.
    latencies: Vec<u64>,
    /// CPU time the server process used during the measuring window, in seconds.
    server_cpu: f64,
    /// CPU time the load generator (this process) used during the window, in seconds.
    client_cpu: f64,
    /// The server's RSS when the measuring window closed (connections still open), in KiB.
    server_rss: u64,
}

impl Stats {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.seconds
    }

    fn merge(&mut self, other: Stats) {
        self.calls += other.calls;
        self.seconds += other.seconds;
        self.latencies.extend(other.latencies);
        self.server_cpu += other.server_cpu;
        self.client_cpu += other.client_cpu;
        self.server_rss = self.server_rss.max(other.server_rss);
    }

    /// Server CPU time per counted call, in microseconds.
    fn cpu_us_per_call(&self) -> f64 {
        self.server_cpu * 1e6 / self.calls as f64
    }

    /// Load-generator CPU time per counted call, in microseconds.
    fn client_us_per_call(&self) -> f64 {
        self.client_cpu * 1e6 / self.calls as f64
    }

    /// The `q`-quantile of latencies, in microseconds (the latencies must be sorted).
    fn quantile_us(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies.len() as f64 * q) as usize).min(self.latencies.len() - 1);
        self.latencies[i] as f64 / 1000.0
    }
}

/// The measuring window of a round: calls answered in `[from, to)` count.
#[derive(Clone, Copy)]
struct Window {
    from: Instant,
    to: Instant,
}

impl Window {
    fn after_warmup(seconds: f64) -> Self {
        let from = Instant::now() + WARMUP;
        Self {
            from,
            to: from + Duration::from_secs_f64(seconds),
        }
    }

    fn counts(&self, at: Instant) -> bool {
        at >= self.from && at < self.to
    }
}

type HttpSender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn http_connect(addr: SocketAddr) -> Result<HttpSender> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await??;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// One keep-alive connection calling `add` one body after another (each of `batch` calls) until
/// the window closes.
async fn http_worker(
    mut sender: HttpSender,
    addr: SocketAddr,
    path: &'static str,
    window: Window,
    first_id: u64,
    batch: u64,
) -> Result<(u64, Vec<u64>)> {
    let host = addr.to_string();
    let mut latencies = Vec::with_capacity(1 << 16);
    let mut calls = 0;
    let mut id = first_id;
    loop {
        let start = Instant::now();
        if start >= window.to {
            break;
        }
        id += batch;
        let request = Request::post(path)
            .header(hyper::header::HOST, host.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body_of(id, batch))))?;
        let body = tokio::time::timeout(CALL_TIMEOUT, async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            if response.status() != hyper::StatusCode::OK {
                return Err::<Bytes, BoxError>(format!("status {}", response.status()).into());
            }
            Ok(response.into_body().collect().await?.to_bytes())
        })
        .await
        .map_err(|_| "HTTP call timed out")??;
        let end = Instant::now();
        check_body(&body, id, batch)?;
        if window.counts(end) {
            calls += batch;
            latencies.push((end - start).as_nanos() as u64);
        }
    }
    Ok((calls, latencies))
}

async fn http_round(
    server: &ServerProcess,
    connections: usize,
    batch: u64,
    seconds: f64,
) -> Result<Stats> {
    let mut senders = Vec::with_capacity(connections);
    for _ in 0..connections {
        senders.push(http_connect(server.addr).await?);
    }
    let window = Window::after_warmup(seconds);
    let path = server.server.http_path();
    let tasks: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(i, sender)| {
            tokio::spawn(http_worker(
                sender,
                server.addr,
                path,
                window,
                (i as u64) << 40,
                batch,
            ))
        })
        .collect();
    let (server_cpu, client_cpu) = server.cpu_during(window).await?;
    let server_rss = server.rss_kib()?;
    let mut stats = Stats {
        seconds,
        server_cpu,
        client_cpu,
        server_rss,
        ..Stats::default()
    };
    for task in tasks {
        let (calls, latencies) = task.await??;
        stats.calls += calls;
        stats.latencies.extend(latencies);
    }
    Ok(stats)
}

async fn ws_connect(server: &ServerProcess) -> Result<Ws> {
    let url = format!("ws://{}{}", server.addr, server.server.ws_path());
    jrpc_bench::ws_connect(&url, CONNECT_TIMEOUT).await
}

/// One WebSocket connection keeping `in_flight` calls outstanding until the window closes,
/// matching answers to calls by id; then it waits for the outstanding answers and closes.
async fn ws_worker(
    mut ws: Ws,
    in_flight: usize,
    window: Window,
    first_id: u64,
) -> Result<(u64, Vec<u64>)> {
    let mut latencies = Vec::with_capacity(1 << 16);
    let mut calls = 0;
    let mut pending: HashMap<u64, Instant> = HashMap::with_capacity(in_flight * 2);
    let mut next_id = first_id;
    for _ in 0..in_flight {
        next_id += 1;
        pending.insert(next_id, Instant::now());
        ws.feed(Message::text(request_body(next_id))).await?;
    }
    ws.flush().await?;
    let drain_deadline = window.to + CALL_TIMEOUT;
    while !pending.is_empty() {
        // Write what was queued only when no answer is ready: many calls per write.
        let message = match ws.next().now_or_never() {
            Some(message) => message,
            None => {
                ws.flush().await?;
                let deadline = (Instant::now() + CALL_TIMEOUT).min(drain_deadline);
                tokio::time::timeout_at(deadline.into(), ws.next())
                    .await
                    .map_err(|_| "WebSocket call timed out")?
            }
        };
        let message = message.ok_or("WebSocket closed by the server")??;
        let text = match message {
            Message::Text(text) => text,
            Message::Ping(_) | Message::Pong(_) => continue,
            other => return Err(format!("unexpected message {other:?}").into()),
        };
        let end = Instant::now();
        let id = check_reply(text.as_bytes())?;
        let sent = pending.remove(&id).ok_or("answer to an unknown id")?;
        if window.counts(end) {
            calls += 1;
            latencies.push((end - sent).as_nanos() as u64);
        }
        if end < window.to {
            next_id += 1;
            pending.insert(next_id, Instant::now());
            ws.feed(Message::text(request_body(next_id))).await?;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
    Ok((calls, latencies))
}

async fn ws_round(
    server: &ServerProcess,
    connections: usize,
    in_flight: usize,
    seconds: f64,
) -> Result<Stats> {
    let mut streams = Vec::with_capacity(connections);
    for _ in 0..connections {
        streams.push(ws_connect(server).await?);
    }
    let window = Window::after_warmup(seconds);
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(i, ws)| tokio::spawn(ws_worker(ws, in_flight, window, (i as u64) << 40)))
        .collect();
    let (server_cpu, client_cpu) = server.cpu_during(window).await?;
    let server_rss = server.rss_kib()?;
    let mut stats = Stats {
        seconds,
        server_cpu,
        client_cpu,
        server_rss,
        ..Stats::default()
    };
    for task in tasks {
        let (calls, latencies) = task.await??;
        stats.calls += calls;
        stats.latencies.extend(latencies);
    }
    Ok(stats)
}

// ---------------------------------------------------------------------------------------------
// Scenarios and report.

#[derive(Clone, Copy)]
enum Scenario {
    Http1,
    Http64,
    HttpBatch,
    Ws,
}

impl Scenario {
    const ALL: [Scenario; 4] = [
        Scenario::Http1,
        Scenario::Http64,
        Scenario::HttpBatch,
        Scenario::Ws,
    ];

    fn label(self) -> &'static str {
        match self {
            Scenario::Http1 => "HTTP, 1 keep-alive connection",
            Scenario::Http64 => "HTTP, 64 keep-alive connections",
            Scenario::HttpBatch => "HTTP, 64 connections, batches of 10",
            Scenario::Ws => "WebSocket, 16 connections x 32 in flight",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Scenario::Http1 => "http1",
            Scenario::Http64 => "http64",
            Scenario::HttpBatch => "batch",
            Scenario::Ws => "ws",
        }
    }

    async fn round(self, server: &ServerProcess, seconds: f64) -> Result<Stats> {
        match self {
            Scenario::Http1 => http_round(server, 1, 1, seconds).await,
            Scenario::Http64 => http_round(server, 64, 1, seconds).await,
            Scenario::HttpBatch => http_round(server, 64, 10, seconds).await,
            Scenario::Ws => ws_round(server, 16, 32, seconds).await,
        }
    }
}

/// The kind of idle connection the memory figure holds.
#[derive(Clone, Copy)]
enum Idle {
    WebSocket,
    /// A keep-alive HTTP connection that made one call.
    Http,
}

impl Idle {
    fn label(self) -> &'static str {
        match self {
            Idle::WebSocket => "idle WebSockets",
            Idle::Http => "idle keep-alive HTTP connections (one call each)",
        }
    }
}

/// RSS growth of a fresh server process for `count` idle connections of `kind`, in KiB per
/// connection; also the RSS before and after, in KiB.
async fn memory(
    server: Server,
    kind: Idle,
    count: usize,
    max: Duration,
) -> Result<(f64, u64, u64)> {
    let process = ServerProcess::start(server, max).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = process.rss_kib()?;
    let mut sockets = Vec::new();
    let mut senders = Vec::new();
    for i in 0..count as u64 {
        match kind {
            Idle::WebSocket => sockets.push(ws_connect(&process).await?),
            Idle::Http => {
                let mut sender = http_connect(process.addr).await?;
                http_call(&mut sender, &process, i + 1).await?;
                senders.push(sender);
            }
        }
    }
    // Let the server finish setting up every connection.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = process.rss_kib()?;
    // Every connection is still open and answering.
    if let Some(ws) = sockets.last_mut() {
        ws.send(Message::text(request_body(1))).await?;
        let answer = tokio::time::timeout(CALL_TIMEOUT, ws.next())
            .await
            .map_err(|_| "no answer on the last idle connection")?
            .ok_or("closed")??;
        check_reply(answer.into_text()?.as_bytes())?;
    }
    if let Some(sender) = senders.last_mut() {
        http_call(sender, &process, 1).await?;
    }
    drop((sockets, senders));
    process.stop().await;
    Ok((
        after.saturating_sub(before) as f64 / count as f64,
        before,
        after,
    ))
}

/// One checked call on an HTTP connection.
async fn http_call(sender: &mut HttpSender, server: &ServerProcess, id: u64) -> Result<()> {
    let request = Request::post(server.server.http_path())
        .header(hyper::header::HOST, server.addr.to_string())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(request_body(id))))?;
    let body = tokio::time::timeout(CALL_TIMEOUT, async {
        sender.ready().await?;
        let response = sender.send_request(request).await?;
        Ok::<_, BoxError>(response.into_body().collect().await?.to_bytes())
    })
    .await
    .map_err(|_| "HTTP call timed out")??;
    check_body(&body, id, 1)
}

struct Options {
    seconds: f64,
    rounds: usize,
    idle: usize,
    scenarios: Vec<Scenario>,
    memory: bool,
    max: Duration,
}

const USAGE: &str = "usage: jrpc-bench [--seconds S] [--rounds R] [--idle N] [--only http1,http64,batch,ws,mem] [--max-seconds M]
       jrpc-bench --serve jrpc|floor|jsonrpsee --listen 127.0.0.1:0 [--max-seconds M]

  --seconds S   measured seconds of each round (default 3); each round also warms up 0.3 s
  --rounds R    rounds per server and scenario, the servers in turn (default 3)
  --idle N      idle connections of each kind for the memory figures (default 1000)
  --only LIST   run only these parts (default all)
  --max-seconds M  a server child exits after M seconds whatever happens (default 600)";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut serve_as = None;
    let mut listen = "127.0.0.1:0".to_owned();
    let mut options = Options {
        seconds: 3.0,
        rounds: 3,
        idle: 1000,
        scenarios: Scenario::ALL.to_vec(),
        memory: true,
        max: Duration::from_secs(600),
    };
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--serve" => serve_as = Some(Server::parse(&value()?)?),
            "--listen" => listen = value()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--rounds" => options.rounds = value()?.parse()?,
            "--idle" => options.idle = value()?.parse()?,
            "--max-seconds" => options.max = Duration::from_secs(value()?.parse()?),
            "--only" => {
                let list = value()?;
                let parts: Vec<&str> = list.split(',').map(str::trim).collect();
                for part in &parts {
                    if !["http1", "http64", "batch", "ws", "mem"].contains(part) {
                        return Err(format!("unknown part {part:?}\n{USAGE}").into());
                    }
                }
                options.scenarios = Scenario::ALL
                    .into_iter()
                    .filter(|s| parts.contains(&s.key()))
                    .collect();
                options.memory = parts.contains(&"mem");
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    let seconds_ok = options.seconds > 0.0 && options.seconds <= 60.0;
    if !seconds_ok || !(1..=20).contains(&options.rounds) {
        return Err("--seconds must be in (0, 60] and --rounds in 1..=20".into());
    }
    if !(1..=10_000).contains(&options.idle) {
        return Err("--idle must be in 1..=10000".into());
    }
    if let Some(server) = serve_as {
        return serve(server, &listen, options.max);
    }
    raise_nofile(options.idle as u64 * 2 + 1024);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}

async fn run(options: Options) -> Result<()> {
    let started = Instant::now();
    println!(
        "jrpc vs the floor and jsonrpsee 0.26 over 127.0.0.1: {} round(s) of {} s (+{} ms warm-up) per server and scenario, the servers in turn; {} CPU(s)",
        options.rounds,
        options.seconds,
        WARMUP.as_millis(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let mut results: Vec<(Scenario, [Stats; 3])> = Vec::new();
    if !options.scenarios.is_empty() {
        let mut processes = Vec::new();
        for server in Server::ALL {
            processes.push(ServerProcess::start(server, options.max).await?);
        }
        for &scenario in &options.scenarios {
            println!("\n{}", scenario.label());
            let mut totals = [Stats::default(), Stats::default(), Stats::default()];
            for round in 0..options.rounds {
                // Each round starts with the next server: none is always first or last.
                for k in 0..processes.len() {
                    let i = (round + k) % processes.len();
                    let stats = scenario.round(&processes[i], options.seconds).await?;
                    println!(
                        "  round {} {:>9}: {:>9.0} calls/s, CPU µs/call server {:.2}, load generator {:.2}; server RSS {} KiB",
                        round + 1,
                        processes[i].server.name(),
                        stats.rate(),
                        stats.cpu_us_per_call(),
                        stats.client_us_per_call(),
                        stats.server_rss,
                    );
                    totals[i].merge(stats);
                }
            }
            for total in &mut totals {
                total.latencies.sort_unstable();
            }
            results.push((scenario, totals));
        }
        for process in processes {
            process.stop().await;
        }
    }

    let mut memory_rows = Vec::new();
    if options.memory {
        for kind in [Idle::WebSocket, Idle::Http] {
            println!("\nRSS growth for {} {}", options.idle, kind.label());
            for server in Server::ALL {
                let (per, before, after) = memory(server, kind, options.idle, options.max).await?;
                println!(
                    "  {:>9}: {before} KiB -> {after} KiB, {per:.1} KiB per connection",
                    server.name()
                );
                memory_rows.push((kind, server, per, before, after));
            }
        }
    }

    println!("\n## Results\n");
    if !results.is_empty() {
        println!(
            "| scenario | server CPU µs/call: jrpc / floor / jsonrpsee | jrpc ÷ floor | jrpc ÷ jsonrpsee | calls/s: jrpc / floor / jsonrpsee | jrpc ÷ floor | jrpc ÷ jsonrpsee |"
        );
        println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        for (scenario, [jrpc, floor, other]) in &results {
            println!(
                "| {} | {:.2} / {:.2} / {:.2} | {:.2}x | {:.2}x | {:.0} / {:.0} / {:.0} | {:.2}x | {:.2}x |",
                scenario.label(),
                jrpc.cpu_us_per_call(),
                floor.cpu_us_per_call(),
                other.cpu_us_per_call(),
                jrpc.cpu_us_per_call() / floor.cpu_us_per_call(),
                jrpc.cpu_us_per_call() / other.cpu_us_per_call(),
                jrpc.rate(),
                floor.rate(),
                other.rate(),
                jrpc.rate() / floor.rate(),
                jrpc.rate() / other.rate(),
            );
        }
        println!();
        println!(
            "| scenario | p50 / p99 µs: jrpc | floor | jsonrpsee | load-generator CPU µs/call: jrpc / floor / jsonrpsee | server RSS under load (MiB): jrpc / floor / jsonrpsee |"
        );
        println!("| --- | ---: | ---: | ---: | ---: | ---: |");
        for (scenario, all) in &results {
            let [jrpc, floor, other] = all;
            println!(
                "| {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {:.2} / {:.2} / {:.2} | {:.1} / {:.1} / {:.1} |",
                scenario.label(),
                jrpc.quantile_us(0.50),
                jrpc.quantile_us(0.99),
                floor.quantile_us(0.50),
                floor.quantile_us(0.99),
                other.quantile_us(0.50),
                other.quantile_us(0.99),
                jrpc.client_us_per_call(),
                floor.client_us_per_call(),
                other.client_us_per_call(),
                jrpc.server_rss as f64 / 1024.0,
                floor.server_rss as f64 / 1024.0,
                other.server_rss as f64 / 1024.0,
            );
        }
    }
    if !memory_rows.is_empty() {
        println!();
        println!(
            "| {} idle connections | server | RSS before (KiB) | RSS after (KiB) | growth per connection (KiB) |",
            options.idle
        );
        println!("| --- | --- | ---: | ---: | ---: |");
        for (kind, server, per, before, after) in &memory_rows {
            println!(
                "| {} | {} | {before} | {after} | {per:.1} |",
                kind.label(),
                server.name()
            );
        }
    }
    println!("\n(total {:.1} s)", started.elapsed().as_secs_f64());
    Ok(())
}
