//! MCP over Streamable HTTP: jrpc's data layer against rmcp 3.11, each serving one tool,
//! `add {a, b}`, to clients of both protocol eras (see "MCP against rmcp" in bench/README.md).
//!
//! ```text
//! cd bench && CARGO_TARGET_DIR=$PWD/target cargo run --release --bin mcp -- --seconds 3 --rounds 3
//! ```
//!
//! Each server runs in a child (`mcp --serve jrpc|rmcp --listen 127.0.0.1:0`, which prints
//! `listening ADDR` and serves until its stdin closes). The load generator holds keep-alive
//! HTTP/1.1 connections, one call after another on each: in the 2026-07-28 era every call a
//! stateless POST with `_meta` and the request headers; in the legacy era each connection first
//! opens a session (`initialize`, `notifications/initialized`), then calls in it. Every answer is
//! read whole (JSON or an event stream) and its text checked.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use jrpc_bench::{BoxError, ServerChild, cpu_seconds, until_stdin_closes};
use tokio::net::{TcpListener, TcpStream};

type Result<T> = std::result::Result<T, BoxError>;

const WARMUP: Duration = Duration::from_millis(300);
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// The servers.

mod jrpc_server {
    use jrpc_mcp::{Mcp, McpServer};
    use jrpc_runtime::{RpcError, rpc_service};

    pub struct Adder;

    #[rpc_service(schema)]
    impl Adder {
        /// Adds two numbers and answers their sum as text.
        fn add(&self, a: f64, b: f64) -> Result<String, RpcError> {
            Ok((a + b).to_string())
        }
    }

    /// Serves `/mcp` on `listener`: the data layer with its defaults (sessions for the legacy
    /// era), more connections allowed.
    pub async fn serve(listener: tokio::net::TcpListener) -> Result<(), jrpc_runtime::ConfigError> {
        let mcp = Mcp::builder("jrpc-bench", "1")
            .tools(Adder.into_methods())
            .build()?;
        let server = McpServer::builder(mcp)
            .http(|http| http.max_connections(20_000))
            .build()?;
        server.serve(listener).await;
        Ok(())
    }
}

mod rmcp_server {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{ServerCapabilities, ServerConfig};
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    pub struct AddArgs {
        a: f64,
        b: f64,
    }

    #[derive(Debug, Clone)]
    pub struct Adder {
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl Adder {
        fn new() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }

        #[tool(description = "Adds two numbers and answers their sum as text.")]
        fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
            (a + b).to_string()
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Adder {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    /// Serves any path on `listener`: rmcp's defaults (2026-07-28 stateless, sessions for the
    /// legacy era), no keep-alive pings, on plain hyper; with `json`, no sessions and JSON
    /// answers (`with_json_response` takes effect only without sessions).
    pub async fn serve(listener: tokio::net::TcpListener, json: bool) -> std::io::Result<()> {
        let mut config = StreamableHttpServerConfig::default().with_sse_keep_alive(None);
        if json {
            config = config
                .with_legacy_session_mode(false)
                .with_json_response(true);
        }
        let service: StreamableHttpService<Adder, LocalSessionManager> =
            StreamableHttpService::new(|| Ok(Adder::new()), Default::default(), config);
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            let service = hyper_util::service::TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Server {
    Jrpc,
    Rmcp,
    /// rmcp answering JSON, without sessions: the modern era only.
    RmcpJson,
}

impl Server {
    const ALL: [Server; 3] = [Self::Jrpc, Self::Rmcp, Self::RmcpJson];

    fn name(self) -> &'static str {
        match self {
            Self::Jrpc => "jrpc",
            Self::Rmcp => "rmcp",
            Self::RmcpJson => "rmcp-json",
        }
    }

    fn serves(self, era: Era) -> bool {
        self != Self::RmcpJson || era == Era::Modern
    }
}

/// The child's part: serve until stdin closes.
async fn serve(name: &str, listen: &str) -> Result<()> {
    use std::io::Write as _;

    let listener = TcpListener::bind(listen).await?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let serving: tokio::task::JoinHandle<Result<()>> = match name {
        "jrpc" => tokio::spawn(async move { Ok(jrpc_server::serve(listener).await?) }),
        "rmcp" => tokio::spawn(async move { Ok(rmcp_server::serve(listener, false).await?) }),
        "rmcp-json" => tokio::spawn(async move { Ok(rmcp_server::serve(listener, true).await?) }),
        other => return Err(format!("no server `{other}`").into()),
    };
    until_stdin_closes(Duration::from_secs(600), name).await;
    serving.abort();
    Ok(())
}

/// A server child.
struct ServerProcess {
    addr: SocketAddr,
    child: ServerChild,
}

impl ServerProcess {
    async fn start(server: Server) -> Result<Self> {
        let (child, addr) = ServerChild::start(
            ["--serve", server.name(), "--listen", "127.0.0.1:0"],
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
// The load generator.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    Modern,
    Legacy,
}

impl Era {
    fn label(self) -> &'static str {
        match self {
            Self::Modern => "2026-07-28 (stateless)",
            Self::Legacy => "2025-11-25 (a session per connection)",
        }
    }
}

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A connection, and the session it opened (legacy).
struct Caller {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    session: Option<String>,
}

impl Caller {
    async fn connect(addr: SocketAddr, era: Era) -> Result<Self> {
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
        if era == Era::Legacy {
            let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
            let (_, session) = caller.post(era, None, init.to_owned()).await?;
            caller.session = Some(session.ok_or("no session id")?);
            let ready = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            caller.post(era, None, ready.to_owned()).await?;
        }
        Ok(caller)
    }

    /// POSTs `body` (of `method`, for the modern headers); the answer's body and session id.
    async fn post(
        &mut self,
        era: Era,
        method: Option<&str>,
        body: String,
    ) -> Result<(Bytes, Option<String>)> {
        let (body, session, _) = self.post_typed(era, method, body).await?;
        Ok((body, session))
    }

    /// [`post`](Self::post), with the answer's content type.
    async fn post_typed(
        &mut self,
        era: Era,
        method: Option<&str>,
        body: String,
    ) -> Result<(Bytes, Option<String>, String)> {
        let mut request = Request::post("/mcp")
            .header(hyper::header::HOST, self.host.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        match (era, &self.session) {
            (Era::Modern, _) => {
                request = request
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", method.unwrap_or("tools/call"))
                    .header("mcp-name", "add");
            }
            (Era::Legacy, Some(session)) => {
                request = request
                    .header("mcp-session-id", session.as_str())
                    .header("mcp-protocol-version", "2025-11-25");
            }
            (Era::Legacy, None) => {}
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        self.sender.ready().await?;
        let response = tokio::time::timeout(CALL_TIMEOUT, self.sender.send_request(request))
            .await
            .map_err(|_| "call timed out")??;
        if !response.status().is_success() {
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            return Err(format!("status {status}: {}", String::from_utf8_lossy(&body)).into());
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let session = header("mcp-session-id");
        let content_type = header("content-type").unwrap_or_default();
        let body = tokio::time::timeout(CALL_TIMEOUT, response.into_body().collect())
            .await
            .map_err(|_| "answer timed out")??
            .to_bytes();
        Ok((body, session, content_type))
    }

    /// Calls `add(id, 1)` and checks the answer; the answer's content type.
    async fn add(&mut self, era: Era, id: u64) -> Result<String> {
        let meta = match era {
            Era::Modern => format!(",{MODERN_META}"),
            Era::Legacy => String::new(),
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{id},"b":1}}{meta}}}}}"#
        );
        let (answer, _, content_type) = self.post_typed(era, Some("tools/call"), body).await?;
        let expected = format!(r#""text":"{}""#, id + 1);
        if memchr_find(&answer, expected.as_bytes()) {
            Ok(content_type)
        } else {
            Err(format!("wrong answer: {}", String::from_utf8_lossy(&answer)).into())
        }
    }
}

fn memchr_find(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What one round measured.
#[derive(Default)]
struct Stats {
    calls: u64,
    seconds: f64,
    server_cpu: f64,
    /// How the server answered a call (its content type).
    answered_as: String,
}

/// One round: `connections` callers calling `add` one after another, counted in a window of
/// `seconds` after a warm-up.
async fn round(
    server: &ServerProcess,
    era: Era,
    connections: usize,
    seconds: f64,
) -> Result<Stats> {
    let mut callers = Vec::with_capacity(connections);
    for _ in 0..connections {
        callers.push(Caller::connect(server.addr, era).await?);
    }
    let answered_as = match callers.first_mut() {
        Some(caller) => caller.add(era, 0).await?,
        None => String::new(),
    };
    let from = Instant::now() + WARMUP;
    let to = from + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = callers
        .into_iter()
        .enumerate()
        .map(|(i, mut caller)| {
            tokio::spawn(async move {
                let mut counted = 0u64;
                let mut id = (i as u64) << 32;
                loop {
                    if Instant::now() >= to {
                        return Ok::<u64, BoxError>(counted);
                    }
                    id += 1;
                    caller.add(era, id).await?;
                    let now = Instant::now();
                    if now >= from && now < to {
                        counted += 1;
                    }
                }
            })
        })
        .collect();
    let pid = server.child.pid()?;
    tokio::time::sleep_until(from.into()).await;
    let before = cpu_seconds(&pid)?;
    tokio::time::sleep_until(to.into()).await;
    let server_cpu = cpu_seconds(&pid)? - before;
    let mut calls = 0;
    for task in tasks {
        calls += task.await??;
    }
    Ok(Stats {
        calls,
        seconds,
        server_cpu,
        answered_as,
    })
}

// ---------------------------------------------------------------------------------------------
// The run.

struct Options {
    seconds: f64,
    rounds: usize,
    connections: Vec<usize>,
}

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
    if let Some(name) = value("--serve") {
        let listen = value("--listen").unwrap_or_else(|| "127.0.0.1:0".into());
        return runtime.block_on(serve(&name, &listen));
    }
    let options = Options {
        seconds: value("--seconds").map_or(Ok(3.0), |s| s.parse())?,
        rounds: value("--rounds").map_or(Ok(3), |s| s.parse())?,
        connections: value("--connections")
            .unwrap_or_else(|| "1,16".into())
            .split(',')
            .map(str::parse)
            .collect::<std::result::Result<_, _>>()?,
    };
    runtime.block_on(run(options))
}

async fn run(options: Options) -> Result<()> {
    println!(
        "| era | connections | server CPU µs/call: jrpc / rmcp / rmcp JSON | jrpc ÷ rmcp | jrpc ÷ rmcp JSON | calls/s: jrpc / rmcp / rmcp JSON | jrpc ÷ rmcp | jrpc ÷ rmcp JSON |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut answers = Vec::new();
    for era in [Era::Modern, Era::Legacy] {
        for &connections in &options.connections {
            let mut totals: [Stats; 3] = Default::default();
            for r in 0..options.rounds {
                // Each round starts with the next server.
                for k in 0..Server::ALL.len() {
                    let server = Server::ALL[(r + k) % Server::ALL.len()];
                    if !server.serves(era) {
                        continue;
                    }
                    let process = ServerProcess::start(server).await?;
                    let stats = round(&process, era, connections, options.seconds).await;
                    process.stop().await;
                    let stats = stats.map_err(|err| format!("{}: {err}", server.name()))?;
                    let total = &mut totals[server as usize];
                    total.calls += stats.calls;
                    total.seconds += stats.seconds;
                    total.server_cpu += stats.server_cpu;
                    total.answered_as = stats.answered_as;
                }
            }
            let cpu = |s: &Stats| s.server_cpu * 1e6 / s.calls as f64;
            let rate = |s: &Stats| s.calls as f64 / s.seconds;
            let shown = |x: f64, digits: usize| {
                if x.is_finite() {
                    format!("{x:.digits$}")
                } else {
                    "n/a".to_owned()
                }
            };
            let ratio = |x: f64| {
                if x.is_finite() {
                    format!("{x:.2}x")
                } else {
                    "n/a".to_owned()
                }
            };
            let [jrpc, rmcp, json] = &totals;
            println!(
                "| {} | {connections} | {} / {} / {} | {} | {} | {} / {} / {} | {} | {} |",
                era.label(),
                shown(cpu(jrpc), 1),
                shown(cpu(rmcp), 1),
                shown(cpu(json), 1),
                ratio(cpu(jrpc) / cpu(rmcp)),
                ratio(cpu(jrpc) / cpu(json)),
                shown(rate(jrpc), 0),
                shown(rate(rmcp), 0),
                shown(rate(json), 0),
                ratio(rate(jrpc) / rate(rmcp)),
                ratio(rate(jrpc) / rate(json)),
            );
            for (server, stats) in Server::ALL.iter().zip(&totals) {
                let line = format!("{} {}: {}", server.name(), era.label(), stats.answered_as);
                if !stats.answered_as.is_empty() && !answers.contains(&line) {
                    answers.push(line);
                }
            }
        }
    }
    println!();
    for line in answers {
        println!("- {line}");
    }
    Ok(())
}
