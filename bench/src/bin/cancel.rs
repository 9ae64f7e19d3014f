//! Cancellation latency: the time from each trigger to the handler's drop, per transport, over
//! loopback, p50 and p99.
//!
//! `cargo run --release --bin cancel -- --calls 500` serves a `hang` method (it reports that it
//! started, then waits forever, holding a guard that stamps the instant it is dropped) over each
//! transport in this process, and for each case, `--calls` times: starts a call, waits until the
//! handler started, stamps the instant, pulls the trigger, and waits for the drop's stamp. Both
//! stamps are taken in this process, on one clock. The cases:
//!
//! | case | trigger |
//! | --- | --- |
//! | `in-process` | the caller drops `Methods::call`'s future |
//! | `peer-drop` | a `Peer` caller drops its call (LSP notices on: `$/cancelRequest` goes out) |
//! | `peer-notice` | `$/cancelRequest` written on a stream peer (one message a line, as stdio) |
//! | `http1-close` | an HTTP/1.1 client closes its connection |
//! | `h2-reset` | an HTTP/2 client (prior knowledge) drops its response future: `RST_STREAM` |
//! | `sse-gone` | an SSE answer's client closes its connection |
//! | `ws-drop` | a `WsClient` drops its call (LSP notices on) |
//! | `ws-notice` | `$/cancelRequest` written on a WebSocket |
//! | `ws-gone` | a WebSocket's socket closed, without a close frame |
//! | `mcp-notice` | MCP's `notifications/cancelled` POSTed in the session |
//! | `proxy-hop` | the edge's HTTP/1.1 client closes; the handler dropped is the downstream one, which the edge's handler called with `HttpClient` |
//! | `drain` | a shutdown with a drain budget of zero (the budget spent at once) |

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use http_body_util::Full;
use hyper::body::Bytes;
use jrpc_mcp::McpServer;
use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::ws::{WsClient, WsSettings};
use jrpc_runtime::{Caller as _, Cancellation, Context, Methods, Peer, PeerConfig, RpcError};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use jrpc_bench::{BoxError, ws_connect};

type Result<T, E = BoxError> = std::result::Result<T, E>;

const USAGE: &str = "usage: cancel [--calls N] [--only CASE,...]

  --calls N     cancellations measured per case (default 500)
  --only LIST   cases to run (default all): in-process, peer-drop, peer-notice, http1-close,
                h2-reset, sse-gone, ws-drop, ws-notice, ws-gone, mcp-notice, proxy-hop, drain";

/// How long a start or a drop may take before the case fails.
const STEP: Duration = Duration::from_secs(10);

/// What the `hang` handlers of one table report: each start, and each drop's instant.
struct Probe {
    started: mpsc::UnboundedReceiver<()>,
    dropped: mpsc::UnboundedReceiver<Instant>,
}

/// Stamps the instant it is dropped.
struct Stamp(mpsc::UnboundedSender<Instant>);

impl Drop for Stamp {
    fn drop(&mut self) {
        let _ = self.0.send(Instant::now());
    }
}

/// Adds `hang` (anything for params; `{"push": true}` sends `tick` first, which starts an SSE
/// answer) to `methods`.
fn hang(methods: &mut Methods) -> Probe {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    methods
        .register_raw("hang", move |params: jrpc_runtime::Params, ctx: Context| {
            let (started_tx, dropped_tx) = (started_tx.clone(), dropped_tx.clone());
            async move {
                let _stamp = Stamp(dropped_tx);
                if params.get().is_some_and(|p| p.contains("push"))
                    && let Some(peer) = ctx.peer()
                {
                    let _ = peer.notify("tick", ()).await;
                }
                let _ = started_tx.send(());
                std::future::pending::<()>().await;
                Ok::<(), RpcError>(())
            }
        })
        .expect("hang registers");
    Probe { started, dropped }
}

impl Probe {
    async fn started(&mut self) -> Result<()> {
        tokio::time::timeout(STEP, self.started.recv())
            .await?
            .ok_or_else(|| "the table is gone".into())
    }

    /// The time from `trigger` to the drop's stamp.
    async fn since(&mut self, trigger: Instant) -> Result<Duration> {
        let dropped = tokio::time::timeout(STEP, self.dropped.recv())
            .await?
            .ok_or("the table is gone")?;
        Ok(dropped.saturating_duration_since(trigger))
    }
}

async fn serve(server: HttpServer) -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { server.serve(listener).await });
    Ok(addr)
}

fn post(body: &str, extra: &str) -> Vec<u8> {
    post_to("/rpc", body, extra)
}

/// A POST of `body` to `path`, with `extra` header lines.
fn post_to(path: &str, body: &str, extra: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const HANG: &str = r#"{"jsonrpc":"2.0","method":"hang","id":1}"#;

// ---------------------------------------------------------------------------------------------
// The cases: each measures `calls` cancellations.

/// Starts a call with `start`, waits until its handler runs, then drops the call: the time from
/// the drop to the handler's, `calls` times.
async fn dropped<F, Fut>(probe: &mut Probe, calls: usize, mut start: F) -> Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: Future,
{
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let mut call = Box::pin(start());
        tokio::select! {
            _ = &mut call => return Err("hang answered".into()),
            started = probe.started() => started?,
        }
        let trigger = Instant::now();
        drop(call);
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

async fn in_process(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    dropped(&mut probe, calls, || methods.call::<()>("hang", ())).await
}

async fn peer_drop(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    let config = || {
        PeerConfig::builder()
            .cancellation(Cancellation::Lsp)
            .build()
            .expect("valid")
    };
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (_server, server_loop) = Peer::connect(x, methods, config());
    tokio::spawn(server_loop);
    let (client, client_loop) = Peer::connect(y, Methods::new(), config());
    tokio::spawn(client_loop);
    dropped(&mut probe, calls, || client.call::<()>("hang", ())).await
}

async fn peer_notice(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let config = PeerConfig::builder()
        .cancellation(Cancellation::Lsp)
        .build()?;
    let (_peer, driver) = Peer::connect(theirs, methods, config);
    tokio::spawn(driver);
    let (read, mut write) = tokio::io::split(ours);
    // Answers (the `-32800`s) are read and dropped.
    tokio::spawn(async move {
        let mut read = tokio::io::BufReader::new(read);
        let _ = tokio::io::copy(&mut read, &mut tokio::io::sink()).await;
    });
    let mut samples = Vec::with_capacity(calls);
    for id in 0..calls {
        let call = format!(r#"{{"jsonrpc":"2.0","method":"hang","id":{id}}}"#);
        write.write_all(format!("{call}\n").as_bytes()).await?;
        probe.started().await?;
        let notice =
            format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{id}}}}}"#);
        let trigger = Instant::now();
        write.write_all(format!("{notice}\n").as_bytes()).await?;
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

async fn http1_close(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    let addr = serve(HttpServer::builder(methods).build()?).await?;
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream.write_all(&post(HANG, "")).await?;
        probe.started().await?;
        let trigger = Instant::now();
        drop(stream);
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

async fn h2_reset(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    let addr = serve(HttpServer::builder(methods).build()?).await?;
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await?;
    tokio::spawn(conn);
    let request = hyper::Request::post(format!("http://{addr}/rpc"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(HANG.as_bytes())))?;
    dropped(&mut probe, calls, || sender.send_request(request.clone())).await
}

async fn sse_gone(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    let addr = serve(HttpServer::builder(methods).build()?).await?;
    let body = r#"{"jsonrpc":"2.0","method":"hang","params":{"push":true},"id":1}"#;
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream
            .write_all(&post(body, "accept: text/event-stream\r\n"))
            .await?;
        probe.started().await?;
        let trigger = Instant::now();
        drop(stream);
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

/// An HTTP server whose `/ws` speaks LSP's notices, serving `hang`.
async fn ws_server() -> Result<(SocketAddr, Probe)> {
    let mut methods = Methods::new();
    let probe = hang(&mut methods);
    let server = HttpServer::builder(methods)
        .websocket(WsSettings::new().cancellation(Cancellation::Lsp))
        .build()?;
    Ok((serve(server).await?, probe))
}

async fn ws_drop(calls: usize) -> Result<Vec<Duration>> {
    let (addr, mut probe) = ws_server().await?;
    let client = WsClient::builder(format!("ws://{addr}/ws"))
        .cancellation(Cancellation::Lsp)
        .connect()
        .await?;
    dropped(&mut probe, calls, || client.call::<()>("hang", ())).await
}

async fn ws_notice(calls: usize) -> Result<Vec<Duration>> {
    let (addr, mut probe) = ws_server().await?;
    let ws = ws_connect(&format!("ws://{addr}/ws"), STEP).await?;
    let (mut tx, mut rx) = ws.split();
    tokio::spawn(async move { while rx.next().await.is_some() {} });
    let mut samples = Vec::with_capacity(calls);
    for id in 0..calls {
        let call = format!(r#"{{"jsonrpc":"2.0","method":"hang","id":{id}}}"#);
        tx.send(Message::text(call)).await?;
        probe.started().await?;
        let notice =
            format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{id}}}}}"#);
        let trigger = Instant::now();
        tx.send(Message::text(notice)).await?;
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

async fn ws_gone(calls: usize) -> Result<Vec<Duration>> {
    let (addr, mut probe) = ws_server().await?;
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let mut ws = ws_connect(&format!("ws://{addr}/ws"), STEP).await?;
        ws.send(Message::text(HANG)).await?;
        probe.started().await?;
        let trigger = Instant::now();
        // Gone without a close frame.
        drop(ws);
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

async fn mcp_notice(calls: usize) -> Result<Vec<Duration>> {
    let mut methods = Methods::new();
    let mut probe = hang(&mut methods);
    methods.register("initialize", &[], |(): (), _| async move {
        Ok::<_, RpcError>(
            serde_json::json!({ "protocolVersion": "2025-11-25", "capabilities": {} }),
        )
    })?;
    let server = McpServer::builder(methods).build()?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { server.serve(listener).await });
    // The session id comes in a header, which `HttpClient` does not show: a raw POST.
    let mut stream = TcpStream::connect(addr).await?;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#;
    stream
        .write_all(&post_to("/mcp", init, "accept: application/json\r\n"))
        .await?;
    let session = read_session(&mut stream).await?;
    let headed = HttpClient::builder(format!("http://{addr}/mcp"))
        .header("mcp-session-id", &session)
        .build()?;
    let mut samples = Vec::with_capacity(calls);
    for id in 1..=calls {
        let mut call = Box::pin(headed.call_raw("hang", None));
        // The call's id is the client's own: 1, 2... in order.
        tokio::select! {
            _ = &mut call => return Err("hang answered".into()),
            started = probe.started() => started?,
        }
        let params = serde_json::value::to_raw_value(&serde_json::json!({ "requestId": id }))?;
        let trigger = Instant::now();
        headed
            .notify_raw("notifications/cancelled", Some(params))
            .await?;
        samples.push(probe.since(trigger).await?);
        // The cancelled call is answered `202`, no body: its client says so.
        let _ = call.await;
    }
    Ok(samples)
}

/// The `mcp-session-id` of an initialize's answer.
async fn read_session(stream: &mut TcpStream) -> Result<String> {
    use tokio::io::AsyncReadExt as _;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await?);
    }
    let head = String::from_utf8(head)?;
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .ok_or_else(|| format!("no session id in {head:?}").into())
}

async fn proxy_hop(calls: usize) -> Result<Vec<Duration>> {
    let mut downstream = Methods::new();
    let mut probe = hang(&mut downstream);
    let down = serve(HttpServer::builder(downstream).build()?).await?;
    let client = HttpClient::new(&format!("http://{down}/rpc"))?;
    let mut edge = Methods::new();
    edge.register("proxy", &[], move |(): (), _ctx: Context| {
        let client = client.clone();
        async move {
            client
                .call::<()>("hang", ())
                .await
                .map_err(|err| RpcError::new(1, err.to_string()))
        }
    })?;
    let addr = serve(HttpServer::builder(edge).build()?).await?;
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream
            .write_all(&post(r#"{"jsonrpc":"2.0","method":"proxy","id":1}"#, ""))
            .await?;
        probe.started().await?;
        let trigger = Instant::now();
        drop(stream);
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

async fn drain(calls: usize) -> Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let mut methods = Methods::new();
        let mut probe = hang(&mut methods);
        let server = HttpServer::builder(methods)
            .drain_timeout(Duration::ZERO)
            .build()?;
        let shutdown = server.shutdown_handle();
        let addr = serve(server).await?;
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(&post(HANG, "")).await?;
        probe.started().await?;
        let trigger = Instant::now();
        tokio::spawn(async move { shutdown.shutdown().await });
        samples.push(probe.since(trigger).await?);
    }
    Ok(samples)
}

// ---------------------------------------------------------------------------------------------

/// The `q` quantile of sorted `samples`.
fn quantile(samples: &[Duration], q: f64) -> Duration {
    let at = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples[at.min(samples.len() - 1)]
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut calls, mut only) = (500usize, None::<Vec<String>>);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--calls" => calls = args.next().ok_or(USAGE)?.parse()?,
            "--only" => {
                only = Some(
                    args.next()
                        .ok_or(USAGE)?
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            _ => return Err(USAGE.into()),
        }
    }
    let wanted = |name: &str| {
        only.as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name))
    };
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>9}",
        "case", "calls", "p50 µs", "p99 µs", "max µs"
    );
    macro_rules! case {
        ($name:literal, $run:ident) => {
            if wanted($name) {
                let mut samples = $run(calls)
                    .await
                    .map_err(|err| format!("{}: {err}", $name))?;
                samples.sort_unstable();
                println!(
                    "{:<12} {:>6} {:>9} {:>9} {:>9}",
                    $name,
                    samples.len(),
                    micros(quantile(&samples, 0.5)),
                    micros(quantile(&samples, 0.99)),
                    micros(samples[samples.len() - 1]),
                );
            }
        };
    }
    case!("in-process", in_process);
    case!("peer-drop", peer_drop);
    case!("peer-notice", peer_notice);
    case!("http1-close", http1_close);
    case!("h2-reset", h2_reset);
    case!("sse-gone", sse_gone);
    case!("ws-drop", ws_drop);
    case!("ws-notice", ws_notice);
    case!("ws-gone", ws_gone);
    case!("mcp-notice", mcp_notice);
    case!("proxy-hop", proxy_hop);
    case!("drain", drain);
    Ok(())
}
