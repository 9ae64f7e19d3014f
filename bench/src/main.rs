//! Network benchmark of jrpc against the floor (hyper 1, tokio-tungstenite and serde_json with no
//! framework, in `floor/`) and jsonrpsee 0.26, over loopback.
//!
//! `cargo run --release -- --seconds 3` runs, for each scenario (HTTP/1.1 with 1 keep-alive
//! connection and with 64, and with 64 sending batches of 10; HTTP/2 h2c with one call at a
//! time and with 64 streams on one connection; HTTPS over HTTP/1.1 with 1 and 64 connections,
//! and over HTTP/2 with 64 streams, without jsonrpsee; WebSocket with 16 connections x 32 calls
//! in flight), rounds against each server in turn, then measures the server's RSS growth for
//! idle WebSocket and keep-alive HTTP connections. Each server runs in its own child process:
//! this binary re-executed with `--serve jrpc|floor|jsonrpsee --listen 127.0.0.1:0`, which
//! prints `listening ADDR` and serves until its standard input closes (or `--max-seconds`
//! pass). The load generator is the same code for every server; all serve the same method,
//! `add(a, b)` with positional params.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use jrpc_bench::{BoxError, ServerChild, Ws, cpu_seconds, raise_nofile};

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

    /// Whether it serves HTTPS: jsonrpsee's server does not terminate TLS.
    fn serves_tls(self) -> bool {
        self != Server::Jsonrpsee
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
/// With `tls` (a certificate and key in PEM), jrpc and the floor also serve HTTPS on a second
/// port of the same host, and print it after the first: `listening ADDR tls ADDR`.
fn serve(
    server: Server,
    listen: &str,
    tls: Option<(String, String)>,
    max: Duration,
    jrpc: &JrpcOptions,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let addr = match server {
            Server::Jrpc => {
                let http = jrpc.builder().build()?;
                let listener = tokio::net::TcpListener::bind(listen).await?;
                let addr = listener.local_addr()?;
                tokio::spawn(async move { http.serve(listener).await });
                let mut line = addr.to_string();
                if let Some((cert, key)) = tls {
                    let https = jrpc
                        .builder()
                        .tls(jrpc_runtime::server::ServerTls::pem_files(cert, key))
                        .build()?;
                    let listener = tokio::net::TcpListener::bind(listen).await?;
                    line = format!("{line} tls {}", listener.local_addr()?);
                    tokio::spawn(async move { https.serve(listener).await });
                }
                line
            }
            Server::Floor => {
                let listener = tokio::net::TcpListener::bind(listen).await?;
                let mut line = listener.local_addr()?.to_string();
                tokio::spawn(floor::serve(listener, None));
                if let Some((cert, key)) = tls {
                    let acceptor = floor::tls_acceptor(cert.as_ref(), key.as_ref())?;
                    let listener = tokio::net::TcpListener::bind(listen).await?;
                    line = format!("{line} tls {}", listener.local_addr()?);
                    tokio::spawn(floor::serve(listener, Some(acceptor)));
                }
                line
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
                let addr = server.local_addr()?.to_string();
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

/// What jrpc's server children change from the defaults: `--free-idle-after MS|off` and
/// `--observe` (an observer hook that reads each call's `elapsed`).
#[derive(Clone, Debug, Default)]
struct JrpcOptions {
    free_idle_after: Option<Option<Duration>>,
    observe: bool,
}

impl JrpcOptions {
    /// The server's builder: the bench's table, `max_connections` raised to 20 000, and these.
    fn builder(&self) -> jrpc_runtime::http::HttpServerBuilder {
        use jrpc_side::Bench as _;
        let mut methods = jrpc_side::Impl.into_methods();
        if self.observe {
            methods.observe(|observation| {
                std::hint::black_box(observation.elapsed);
            });
        }
        let mut builder = jrpc_runtime::http::HttpServer::builder(methods).max_connections(20_000);
        if let Some(idle) = self.free_idle_after {
            builder = builder.free_idle_after(idle);
        }
        builder
    }

    /// The arguments that pass these on to a child.
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(idle) = self.free_idle_after {
            let value = idle.map_or("off".to_owned(), |idle| idle.as_millis().to_string());
            args.extend(["--free-idle-after".to_owned(), value]);
        }
        if self.observe {
            args.push("--observe".to_owned());
        }
        args
    }
}

/// A server child process.
struct ServerProcess {
    server: Server,
    addr: SocketAddr,
    /// Where it serves HTTPS (not jsonrpsee: its server does not terminate TLS).
    tls_addr: Option<SocketAddr>,
    child: ServerChild,
}

impl ServerProcess {
    async fn start(
        server: Server,
        max: Duration,
        tls: Option<&Certs>,
        jrpc: &JrpcOptions,
    ) -> Result<Self> {
        let mut args: Vec<OsString> = ["--serve", server.name(), "--listen", "127.0.0.1:0"]
            .into_iter()
            .map(OsString::from)
            .collect();
        args.extend(["--max-seconds".into(), max.as_secs().to_string().into()]);
        if server == Server::Jrpc {
            args.extend(jrpc.args().into_iter().map(OsString::from));
        }
        if let Some(certs) = tls.filter(|_| server.serves_tls()) {
            args.extend([
                "--tls-cert".into(),
                certs.cert_file.clone().into_os_string(),
            ]);
            args.extend(["--tls-key".into(), certs.key_file.clone().into_os_string()]);
        }
        let (child, addrs) = ServerChild::start(args, Duration::from_secs(10))
            .await
            .map_err(|err| format!("{}: {err}", server.name()))?;
        let (addr, tls_addr) = match addrs.split_once(" tls ") {
            Some((plain, tls)) => (plain.parse()?, Some(tls.parse()?)),
            None => (addrs.parse()?, None),
        };
        Ok(Self {
            server,
            addr,
            tls_addr,
            child,
        })
    }

    /// Its resident set, in KiB.
    fn rss_kib(&self) -> Result<u64> {
        self.child.rss_kib()
    }

    /// CPU time the server and this process use within `window`, in seconds (returns when the
    /// window closes).
    async fn cpu_during(&self, window: Window) -> Result<(f64, f64)> {
        let pid = self.child.pid()?;
        tokio::time::sleep_until(window.from.into()).await;
        let (server, client) = (cpu_seconds(&pid)?, cpu_seconds("self")?);
        tokio::time::sleep_until(window.to.into()).await;
        Ok((cpu_seconds(&pid)? - server, cpu_seconds("self")? - client))
    }

    async fn stop(self) {
        self.child.stop().await;
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

/// A self-signed certificate for 127.0.0.1 (rcgen), in PEM files for the jrpc child, and the
/// client configurations that trust it.
struct Certs {
    cert_file: std::path::PathBuf,
    key_file: std::path::PathBuf,
    h1: tokio_rustls::TlsConnector,
    h2: tokio_rustls::TlsConnector,
}

impl Certs {
    fn new() -> Result<Self> {
        let key = rcgen::KeyPair::generate()?;
        let cert =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.self_signed(&key)?;
        let dir = std::env::temp_dir();
        let cert_file = dir.join(format!("jrpc-bench-{}-cert.pem", std::process::id()));
        let key_file = dir.join(format!("jrpc-bench-{}-key.pem", std::process::id()));
        std::fs::write(&cert_file, cert.pem())?;
        std::fs::write(&key_file, key.serialize_pem())?;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone())?;
        let connector = |alpn: &[u8]| -> Result<tokio_rustls::TlsConnector> {
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            config.alpn_protocols = vec![alpn.to_vec()];
            Ok(tokio_rustls::TlsConnector::from(std::sync::Arc::new(
                config,
            )))
        };
        Ok(Self {
            cert_file,
            key_file,
            h1: connector(b"http/1.1")?,
            h2: connector(b"h2")?,
        })
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.cert_file);
        let _ = std::fs::remove_file(&self.key_file);
    }
}

/// The HTTP version a scenario speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    /// HTTP/1.1, one call at a time per connection.
    H1,
    /// HTTP/2 (h2c with prior knowledge on the plain port, `h2` by ALPN over TLS), calls
    /// multiplexed as streams of one connection.
    H2,
}

/// One connection's request sender.
enum HttpSender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl HttpSender {
    /// The callers of one connection: itself for HTTP/1.1, `streams` of it for HTTP/2.
    fn callers(self, streams: usize) -> Vec<HttpSender> {
        match self {
            HttpSender::H1(sender) => vec![HttpSender::H1(sender)],
            HttpSender::H2(sender) => (0..streams)
                .map(|_| HttpSender::H2(sender.clone()))
                .collect(),
        }
    }

    async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<hyper::Response<hyper::body::Incoming>> {
        Ok(match self {
            HttpSender::H1(sender) => {
                sender.ready().await?;
                sender.send_request(request).await?
            }
            HttpSender::H2(sender) => {
                sender.ready().await?;
                sender.send_request(request).await?
            }
        })
    }
}

async fn http_connect(
    addr: SocketAddr,
    version: Version,
    tls: Option<&Certs>,
) -> Result<HttpSender> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await??;
    stream.set_nodelay(true)?;
    match tls {
        None => handshake(TokioIo::new(stream), version).await,
        Some(certs) => {
            let connector = match version {
                Version::H1 => &certs.h1,
                Version::H2 => &certs.h2,
            };
            let name = rustls::pki_types::ServerName::from(addr.ip());
            let stream =
                tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, stream)).await??;
            let negotiated = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
            let wanted: &[u8] = match version {
                Version::H1 => b"http/1.1",
                Version::H2 => b"h2",
            };
            if negotiated.as_deref() != Some(wanted) {
                return Err(format!("ALPN chose {negotiated:?}").into());
            }
            handshake(TokioIo::new(stream), version).await
        }
    }
}

async fn handshake<T>(io: TokioIo<T>, version: Version) -> Result<HttpSender>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    Ok(match version {
        Version::H1 => {
            let (sender, connection) = hyper::client::conn::http1::handshake(io).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            HttpSender::H1(sender)
        }
        Version::H2 => {
            let (sender, connection) =
                hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                    .await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            HttpSender::H2(sender)
        }
    })
}

/// One caller (a keep-alive HTTP/1.1 connection, or one stream at a time of an HTTP/2
/// connection) calling `add` one body after another (each of `batch` calls) until the window
/// closes.
async fn http_worker(
    mut sender: HttpSender,
    uri: hyper::Uri,
    window: Window,
    first_id: u64,
    batch: u64,
) -> Result<(u64, Vec<u64>)> {
    let host = uri.authority().map(ToString::to_string).unwrap_or_default();
    let h2 = matches!(sender, HttpSender::H2(_));
    let mut latencies = Vec::with_capacity(1 << 16);
    let mut calls = 0;
    let mut id = first_id;
    loop {
        let start = Instant::now();
        if start >= window.to {
            break;
        }
        id += batch;
        // HTTP/2 takes the scheme and authority from the URI; HTTP/1.1 the path and `Host`.
        let mut request = if h2 {
            Request::post(uri.clone())
        } else {
            Request::post(uri.path()).header(hyper::header::HOST, host.as_str())
        };
        request = request.header(hyper::header::CONTENT_TYPE, "application/json");
        let request = request.body(Full::new(Bytes::from(body_of(id, batch))))?;
        let body = tokio::time::timeout(CALL_TIMEOUT, async {
            let response = sender.send(request).await?;
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

/// `connections` connections, each with `streams` callers (HTTP/1.1: one), each body `batch`
/// calls (one: a request; more: a batch).
async fn http_round(
    server: &ServerProcess,
    version: Version,
    tls: Option<&Certs>,
    connections: usize,
    streams: usize,
    batch: u64,
    seconds: f64,
) -> Result<Stats> {
    let addr = match tls {
        None => server.addr,
        Some(_) => server.tls_addr.ok_or("the server serves no TLS")?,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let uri: hyper::Uri = format!("{scheme}://{addr}{}", server.server.http_path()).parse()?;
    let mut senders = Vec::with_capacity(connections * streams);
    for _ in 0..connections {
        senders.extend(http_connect(addr, version, tls).await?.callers(streams));
    }
    let window = Window::after_warmup(seconds);
    let tasks: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(i, sender)| {
            let first_id = (i as u64) << 40;
            tokio::spawn(http_worker(sender, uri.clone(), window, first_id, batch))
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Http1,
    Http64,
    HttpBatch,
    H2c1,
    H2c64,
    Tls1,
    Tls64,
    TlsH2x64,
    Ws,
}

impl Scenario {
    const ALL: [Scenario; 9] = [
        Scenario::Http1,
        Scenario::Http64,
        Scenario::HttpBatch,
        Scenario::H2c1,
        Scenario::H2c64,
        Scenario::Tls1,
        Scenario::Tls64,
        Scenario::TlsH2x64,
        Scenario::Ws,
    ];

    fn label(self) -> &'static str {
        match self {
            Scenario::Http1 => "HTTP, 1 keep-alive connection",
            Scenario::Http64 => "HTTP, 64 keep-alive connections",
            Scenario::HttpBatch => "HTTP, 64 keep-alive connections, batches of 10 calls",
            Scenario::H2c1 => "HTTP/2 h2c, 1 connection, 1 call at a time",
            Scenario::H2c64 => "HTTP/2 h2c, 1 connection x 64 streams",
            Scenario::Tls1 => "HTTPS (HTTP/1.1), 1 keep-alive connection",
            Scenario::Tls64 => "HTTPS (HTTP/1.1), 64 keep-alive connections",
            Scenario::TlsH2x64 => "HTTPS (HTTP/2 by ALPN), 1 connection x 64 streams",
            Scenario::Ws => "WebSocket, 16 connections x 32 in flight",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Scenario::Http1 => "http1",
            Scenario::Http64 => "http64",
            Scenario::HttpBatch => "batch",
            Scenario::H2c1 => "h2c1",
            Scenario::H2c64 => "h2c64",
            Scenario::Tls1 => "tls1",
            Scenario::Tls64 => "tls64",
            Scenario::TlsH2x64 => "tlsh2",
            Scenario::Ws => "ws",
        }
    }

    /// Whether `server` takes part: jsonrpsee's server does not terminate TLS.
    fn for_server(self, server: Server) -> bool {
        server.serves_tls()
            || !matches!(self, Scenario::Tls1 | Scenario::Tls64 | Scenario::TlsH2x64)
    }

    async fn round(self, server: &ServerProcess, certs: &Certs, seconds: f64) -> Result<Stats> {
        let tls = Some(certs);
        match self {
            Scenario::Http1 => http_round(server, Version::H1, None, 1, 1, 1, seconds).await,
            Scenario::Http64 => http_round(server, Version::H1, None, 64, 1, 1, seconds).await,
            Scenario::HttpBatch => http_round(server, Version::H1, None, 64, 1, 10, seconds).await,
            Scenario::H2c1 => http_round(server, Version::H2, None, 1, 1, 1, seconds).await,
            Scenario::H2c64 => http_round(server, Version::H2, None, 1, 64, 1, seconds).await,
            Scenario::Tls1 => http_round(server, Version::H1, tls, 1, 1, 1, seconds).await,
            Scenario::Tls64 => http_round(server, Version::H1, tls, 64, 1, 1, seconds).await,
            Scenario::TlsH2x64 => http_round(server, Version::H2, tls, 1, 64, 1, seconds).await,
            Scenario::Ws => ws_round(server, 16, 32, seconds).await,
        }
    }
}

/// The kind of idle connection a memory figure holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Idle {
    WebSocket,
    /// A keep-alive HTTP/1.1 connection that made one call.
    Http,
}

impl Idle {
    const ALL: [Idle; 2] = [Idle::WebSocket, Idle::Http];

    fn label(self) -> &'static str {
        match self {
            Idle::WebSocket => "idle WebSockets",
            Idle::Http => "idle keep-alive HTTP connections (one call each)",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Idle::WebSocket => "mem",
            Idle::Http => "httpmem",
        }
    }
}

/// What a memory figure measured: a fresh server's RSS before and with the idle connections,
/// in KiB.
struct Memory {
    before: u64,
    after: u64,
    count: usize,
}

impl Memory {
    fn growth(&self) -> u64 {
        self.after.saturating_sub(self.before)
    }

    fn per_connection(&self) -> f64 {
        self.growth() as f64 / self.count as f64
    }
}

/// RSS growth of a fresh server process for `count` idle connections of `kind`.
async fn memory(
    server: Server,
    kind: Idle,
    count: usize,
    max: Duration,
    jrpc: &JrpcOptions,
) -> Result<Memory> {
    let process = ServerProcess::start(server, max, None, jrpc).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = process.rss_kib()?;
    let mut sockets = Vec::new();
    let mut senders = Vec::new();
    for id in 1..=count as u64 {
        match kind {
            Idle::WebSocket => sockets.push(ws_connect(&process).await?),
            Idle::Http => {
                let mut sender = http_connect(process.addr, Version::H1, None).await?;
                http_call(&mut sender, &process, id).await?;
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
    Ok(Memory {
        before,
        after,
        count,
    })
}

/// One checked call on an HTTP/1.1 connection.
async fn http_call(sender: &mut HttpSender, server: &ServerProcess, id: u64) -> Result<()> {
    let request = Request::post(server.server.http_path())
        .header(hyper::header::HOST, server.addr.to_string())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(request_body(id))))?;
    let body = tokio::time::timeout(CALL_TIMEOUT, async {
        let response = sender.send(request).await?;
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
    memory: Vec<Idle>,
    max: Duration,
    jrpc: JrpcOptions,
}

const USAGE: &str = "usage: jrpc-bench [--seconds S] [--rounds R] [--idle N] [--only http1,http64,batch,h2c1,h2c64,tls1,tls64,tlsh2,ws,mem,httpmem] [--max-seconds M]
       jrpc-bench --serve jrpc|floor|jsonrpsee --listen 127.0.0.1:0 [--tls-cert PEM --tls-key PEM] [--max-seconds M]
       (both also take, for jrpc's server: [--free-idle-after MS|off] [--observe])

  --seconds S   measured seconds of each round (default 3); each round also warms up 0.3 s
  --rounds R    rounds per server and scenario, the servers in turn (default 3)
  --idle N      idle connections of each kind for the memory figures (default 1000)
  --only LIST   run only these parts (default all)
  --max-seconds M  a server child exits after M seconds whatever happens (default 600)
  --free-idle-after MS|off  jrpc's `HttpServerBuilder::free_idle_after` (default: its default)
  --observe     jrpc's table has an observer hook that reads each call's `elapsed`";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut serve_as = None;
    let mut listen = "127.0.0.1:0".to_owned();
    let (mut tls_cert, mut tls_key) = (None, None);
    let mut options = Options {
        seconds: 3.0,
        rounds: 3,
        idle: 1000,
        scenarios: Scenario::ALL.to_vec(),
        memory: Idle::ALL.to_vec(),
        max: Duration::from_secs(600),
        jrpc: JrpcOptions::default(),
    };
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--serve" => serve_as = Some(Server::parse(&value()?)?),
            "--listen" => listen = value()?,
            "--tls-cert" => tls_cert = Some(value()?),
            "--tls-key" => tls_key = Some(value()?),
            "--seconds" => options.seconds = value()?.parse()?,
            "--rounds" => options.rounds = value()?.parse()?,
            "--idle" => options.idle = value()?.parse()?,
            "--max-seconds" => options.max = Duration::from_secs(value()?.parse()?),
            "--free-idle-after" => {
                let value = value()?;
                options.jrpc.free_idle_after = Some(match value.as_str() {
                    "off" => None,
                    ms => Some(Duration::from_millis(ms.parse()?)),
                });
            }
            "--observe" => options.jrpc.observe = true,
            "--only" => {
                let list = value()?;
                let parts: Vec<&str> = list.split(',').map(str::trim).collect();
                for part in &parts {
                    let known = Scenario::ALL.iter().any(|s| s.key() == *part)
                        || Idle::ALL.iter().any(|i| i.key() == *part);
                    if !known {
                        return Err(format!("unknown part {part:?}\n{USAGE}").into());
                    }
                }
                options.scenarios = Scenario::ALL
                    .into_iter()
                    .filter(|s| parts.contains(&s.key()))
                    .collect();
                options.memory = Idle::ALL
                    .into_iter()
                    .filter(|i| parts.contains(&i.key()))
                    .collect();
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
        let tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => return Err(format!("--tls-cert and --tls-key go together\n{USAGE}").into()),
        };
        return serve(server, &listen, tls, options.max, &options.jrpc);
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
        let certs = Certs::new()?;
        let mut processes = Vec::with_capacity(Server::ALL.len());
        for server in Server::ALL {
            processes.push(
                ServerProcess::start(server, options.max, Some(&certs), &options.jrpc).await?,
            );
        }
        for &scenario in &options.scenarios {
            println!("\n{}", scenario.label());
            let mut totals = Server::ALL.map(|_| Stats::default());
            for round in 0..options.rounds {
                // Each round starts with the next server: over three rounds each server is
                // first, second and third once.
                for k in 0..processes.len() {
                    let i = (round + k) % processes.len();
                    if !scenario.for_server(processes[i].server) {
                        continue;
                    }
                    let stats = scenario
                        .round(&processes[i], &certs, options.seconds)
                        .await?;
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
    for &kind in &options.memory {
        println!("\nRSS growth for {} {}", options.idle, kind.label());
        for server in Server::ALL {
            let memory = memory(server, kind, options.idle, options.max, &options.jrpc).await?;
            println!(
                "  {:>9}: {} KiB -> {} KiB, {:.1} KiB per connection",
                server.name(),
                memory.before,
                memory.after,
                memory.per_connection(),
            );
            memory_rows.push((kind, server, memory));
        }
    }

    println!("\n## Results\n");
    if !results.is_empty() {
        report_throughput(&results);
    }
    if !memory_rows.is_empty() {
        println!();
        println!(
            "| {} idle connections | server | RSS before (KiB) | RSS after (KiB) | growth (KiB) | per connection (KiB) |",
            options.idle
        );
        println!("| --- | --- | ---: | ---: | ---: | ---: |");
        for (kind, server, memory) in &memory_rows {
            println!(
                "| {} | {} | {} | {} | {} | {:.1} |",
                kind.label(),
                server.name(),
                memory.before,
                memory.after,
                memory.growth(),
                memory.per_connection(),
            );
        }
    }
    println!("\n(total {:.1} s)", started.elapsed().as_secs_f64());
    Ok(())
}

/// The throughput tables: server CPU per call and calls/s with jrpc's ratios to the floor and
/// to jsonrpsee; latency (p50 and p99, with jrpc's p99 over the others'); the load generator's
/// CPU and the servers' RSS. A server that does not take part in a scenario (jsonrpsee over TLS)
/// has `n/a` in its cells.
fn report_throughput(results: &[(Scenario, [Stats; 3])]) {
    let cell = |stats: &Stats, value: f64, precision: usize| {
        if stats.calls > 0 {
            format!("{value:.precision$}")
        } else {
            "n/a".to_owned()
        }
    };
    let ratio = |jrpc: f64, other: &Stats, value: f64| {
        if other.calls > 0 {
            format!("{:.2}x", jrpc / value)
        } else {
            "n/a".to_owned()
        }
    };
    println!(
        "| scenario | server CPU µs/call: jrpc / floor / jsonrpsee | jrpc ÷ floor | jrpc ÷ jsonrpsee | calls/s: jrpc / floor / jsonrpsee | jrpc ÷ floor | jrpc ÷ jsonrpsee |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (scenario, [jrpc, floor, other]) in results {
        let cpu = Stats::cpu_us_per_call;
        println!(
            "| {} | {} / {} / {} | {} | {} | {} / {} / {} | {} | {} |",
            scenario.label(),
            cell(jrpc, cpu(jrpc), 2),
            cell(floor, cpu(floor), 2),
            cell(other, cpu(other), 2),
            ratio(cpu(jrpc), floor, cpu(floor)),
            ratio(cpu(jrpc), other, cpu(other)),
            cell(jrpc, jrpc.rate(), 0),
            cell(floor, floor.rate(), 0),
            cell(other, other.rate(), 0),
            ratio(jrpc.rate(), floor, floor.rate()),
            ratio(jrpc.rate(), other, other.rate()),
        );
    }
    println!();
    println!(
        "| scenario | p50 µs: jrpc / floor / jsonrpsee | p99 µs: jrpc / floor / jsonrpsee | p99 jrpc ÷ floor | p99 jrpc ÷ jsonrpsee |"
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (scenario, [jrpc, floor, other]) in results {
        let (p50, p99) = (
            |s: &Stats| s.quantile_us(0.50),
            |s: &Stats| s.quantile_us(0.99),
        );
        println!(
            "| {} | {} / {} / {} | {} / {} / {} | {} | {} |",
            scenario.label(),
            cell(jrpc, p50(jrpc), 0),
            cell(floor, p50(floor), 0),
            cell(other, p50(other), 0),
            cell(jrpc, p99(jrpc), 0),
            cell(floor, p99(floor), 0),
            cell(other, p99(other), 0),
            ratio(p99(jrpc), floor, p99(floor)),
            ratio(p99(jrpc), other, p99(other)),
        );
    }
    println!();
    println!(
        "| scenario | load-generator CPU µs/call: jrpc / floor / jsonrpsee | server RSS under load (MiB): jrpc / floor / jsonrpsee |"
    );
    println!("| --- | ---: | ---: |");
    for (scenario, all) in results {
        let client: Vec<String> = all
            .iter()
            .map(|s| cell(s, s.client_us_per_call(), 2))
            .collect();
        let rss: Vec<String> = all
            .iter()
            .map(|s| cell(s, s.server_rss as f64 / 1024.0, 1))
            .collect();
        println!(
            "| {} | {} | {} |",
            scenario.label(),
            client.join(" / "),
            rss.join(" / "),
        );
    }
}
