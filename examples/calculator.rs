//! The calculator service, over HTTP and WebSocket (the default), HTTPS and WSS, a Unix socket,
//! or stdio.
//!
//! ```text
//! cargo run --example calculator                                  # http://127.0.0.1:8080/rpc and ws://127.0.0.1:8080/ws
//! cargo run --example calculator -- --listen 127.0.0.1:0          # any free port; the real one is printed
//! cargo run --example calculator -- --listen 127.0.0.1:8443 --tls-cert cert.pem --tls-key key.pem
//!                                                                 # https://.../rpc and wss://.../ws
//! cargo run --example calculator -- --unix /tmp/calc.sock         # newline-delimited, one peer per connection
//! cargo run --example calculator -- --stdio                       # one JSON message a line
//! cargo run --example calculator -- --stdio --content-length      # LSP-style framing
//! cargo run --example calculator -- --drain-timeout 5             # seconds calls may finish in at the end
//! cargo run --example calculator -- --token s3cret --read-token r3ad  # HTTP and WebSocket ask for a bearer token
//! cargo run --example calculator -- --allow-origin http://localhost:5173  # pages of that origin may call (CORS)
//! cargo run --example calculator -- --listen 127.0.0.1:0 --redis redis://127.0.0.1:6379   # topics shared by every replica
//! cargo run --example calculator -- --openrpc                     # print the OpenRPC document
//! ```
//!
//! Over stdio it keeps serving after any bad line and exits 0 at the end of input. Over the
//! network it prints `listening on http://ADDR` (`https://ADDR` with TLS, `unix:PATH` on a Unix
//! socket) once it accepts, and Ctrl-C drains in-flight calls before it exits. Either way, when
//! the drain time (default 10 s over stdio, 30 s over the network) runs out with calls still in
//! flight, it says so and exits 1. HTTP is HTTP/1.1 or HTTP/2 (h2c with prior knowledge in
//! plain, by ALPN over TLS). Every transport answers `rpc.discover` with the OpenRPC document
//! that `--openrpc` prints.
//!
//! `watch(topic)` and `announce(topic, text)` reach the connections of this process; with
//! `--redis URL` (over the network, a Unix socket or stdio) those of every calculator on that
//! Redis too. If Redis cannot be reached at start-up it prints the URL and exits 1.
//!
//! With `--token TOKEN` (over the network), every HTTP request and WebSocket upgrade must carry
//! `Authorization: Bearer TOKEN`, else it is answered `401` with `WWW-Authenticate: Bearer`;
//! `--read-token TOKEN` is a second token, which may call every method but `announce` and
//! `watch`: those are answered `-32003` (`data` `{"method": ...}`), each element of a batch on its
//! own.
//!
//! A page a browser shows from another origin may call the calculator only when
//! `--allow-origin ORIGIN` (repeatable, e.g. `http://localhost:5173`) names its origin: a CORS
//! preflight (`OPTIONS /rpc`) from it is answered with `Access-Control-Allow-Origin` (methods
//! `POST`, headers `content-type` and `authorization`), and its `POST`s and WebSocket upgrades
//! are let through; from any other origin they are answered `403`. Clients that are not browsers
//! send no `Origin` and are not concerned. With `--token` too, a preflight is answered without
//! credentials (browsers send none on it), and the `POST` after it must carry the token; a
//! page's WebSocket, which cannot send `Authorization`, gives it as `access_token` in the URL's
//! query (`ws://127.0.0.1:8080/ws?access_token=TOKEN`).
//!
//! A call can be cancelled. Over WebSocket and stdio, LSP's `$/cancelRequest {"id": ID}` drops
//! that call's handler and the call is answered `-32800` at once; over HTTP, a client that closes
//! its connection (or resets its HTTP/2 stream) cancels its calls. `sleep(ms)` is the method to
//! try it on. With `RUST_LOG=debug`, each request's line on stderr carries the `trace_id` of the
//! `traceparent` it came with (an HTTP request's or the WebSocket upgrade's header).

use std::io::Write as _;
use std::time::Duration;

use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method};
use jrpc_examples::{Access, Args, Calc, calculator_info, calculator_methods, read_only};
use jrpc_runtime::http::{BearerAuth, HttpServer};
use jrpc_runtime::server::{
    Drained, OriginPolicy, ServerTls, ShutdownHandle, SocketServer, Topics,
};
use jrpc_runtime::ws::WsSettings;
use jrpc_runtime::{Cancellation, Framing, PeerConfig};
use tower_http::cors::{AllowOrigin, CorsLayer};

const USAGE: &str = "calculator [--redis URL] [--drain-timeout SECONDS] ([--listen ADDR] [--tls-cert CERT.pem --tls-key KEY.pem] [--token TOKEN] [--read-token TOKEN] [--allow-origin ORIGIN]... | --unix PATH | --stdio [--content-length]) | --openrpc";

#[tokio::main]
async fn main() {
    jrpc_examples::log_to_stderr();
    let mut args = Args::from_env("calculator", USAGE);
    let openrpc = args.flag("--openrpc");
    let stdio = args.flag("--stdio");
    let content_length = args.flag("--content-length");
    let unix = args.value("--unix");
    let listen = args.value("--listen");
    let cert = args.value("--tls-cert");
    let key = args.value("--tls-key");
    let redis = args.value("--redis");
    let drain_timeout = args.value("--drain-timeout");
    let token = args.value("--token");
    let read_token = args.value("--read-token");
    let mut origins = Vec::new();
    while let Some(origin) = args.value("--allow-origin") {
        origins.push(origin);
    }
    args.finish();
    if openrpc {
        let document = calculator_methods(Calc::default()).openrpc(&calculator_info());
        if let Err(err) = writeln!(std::io::stdout().lock(), "{document:#}") {
            eprintln!("calculator: {err}");
            std::process::exit(1);
        }
        return;
    }
    let tls = match (cert, key) {
        (Some(cert), Some(key)) => Some(ServerTls::pem_files(cert, key)),
        (None, None) => None,
        _ => usage_error("`--tls-cert` and `--tls-key` go together"),
    };
    let tokens: Vec<(String, Access)> = [(token, Access::Full), (read_token, Access::Read)]
        .into_iter()
        .filter_map(|(token, access)| Some((token?, access)))
        .collect();
    if !tokens.is_empty() && (stdio || unix.is_some()) {
        usage_error("`--token` and `--read-token` are asked over HTTP and WebSocket (`--listen`)");
    }
    if !origins.is_empty() && (stdio || unix.is_some()) {
        usage_error("`--allow-origin` concerns browsers, over HTTP and WebSocket (`--listen`)");
    }
    let cors = match cors(&origins) {
        Ok(cors) => cors,
        Err(bad) => usage_error(&format!("`--allow-origin {bad}` is not an origin")),
    };
    let drain = match drain_timeout.map(|secs| secs.parse::<f64>()) {
        None => None,
        Some(Ok(secs)) if secs.is_finite() && secs >= 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(_) => usage_error("`--drain-timeout` takes a number of seconds"),
    };
    let topics = match redis {
        Some(url) => match Topics::redis(url.as_str())
            .channel_prefix("calculator:")
            .connect()
            .await
        {
            Ok(topics) => topics,
            Err(err) => {
                eprintln!("calculator: {err}");
                std::process::exit(1);
            }
        },
        None => Topics::new(),
    };
    let calc = Calc::with_topics(topics.clone());
    let result = if stdio {
        let framing = if content_length {
            Framing::ContentLength
        } else {
            Framing::Lines
        };
        let mut config = PeerConfig::builder()
            .framing(framing)
            .cancellation(Cancellation::Lsp);
        if let Some(drain) = drain {
            config = config.drain_timeout(drain);
        }
        match config.build() {
            Ok(config) => jrpc_runtime::stdio::serve(calculator_methods(calc), config)
                .await
                .map_err(|err| err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    } else if let Some(path) = unix {
        serve_unix(&path, calc, drain).await
    } else {
        let listen = listen.as_deref().unwrap_or("127.0.0.1:8080");
        let web = Web { origins, cors };
        serve_network(listen, tls, calc, topics, drain, tokens, web).await
    };
    if let Err(err) = result {
        eprintln!("calculator: {err}");
        std::process::exit(1);
    }
}

fn usage_error(problem: &str) -> ! {
    eprintln!("calculator: {problem}\nusage: {USAGE}");
    std::process::exit(2);
}

/// What browsers' pages may do: the origins allowed, and the CORS layer that answers their
/// preflights.
struct Web {
    origins: Vec<String>,
    cors: Option<CorsLayer>,
}

/// The CORS layer for `origins` (none without any): `POST` with `content-type` and
/// `authorization`, no credentials (a bearer token is a header the page sets, not a cookie); or
/// the origin that is not one.
fn cors(origins: &[String]) -> Result<Option<CorsLayer>, String> {
    if origins.is_empty() {
        return Ok(None);
    }
    let values = origins
        .iter()
        .map(|origin| HeaderValue::from_str(origin).map_err(|_| origin.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(bad) = origins.iter().find(|origin| !origin.contains("://")) {
        return Err(bad.clone());
    }
    Ok(Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(values))
            .allow_methods([Method::POST])
            .allow_headers([CONTENT_TYPE, AUTHORIZATION]),
    ))
}

async fn serve_network(
    listen: &str,
    tls: Option<ServerTls>,
    calc: Calc,
    topics: Topics,
    drain: Option<Duration>,
    tokens: Vec<(String, Access)>,
    web: Web,
) -> Result<(), String> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut methods = calculator_methods(calc);
    if tokens.iter().any(|(_, access)| *access == Access::Read) {
        read_only(&mut methods);
    }
    let mut builder = HttpServer::builder(methods)
        .topics(topics)
        .websocket(WsSettings::new().cancellation(Cancellation::Lsp))
        // The same list lets the pages' POSTs and WebSocket upgrades through.
        .origin_policy(OriginPolicy::new().allow_origins(web.origins));
    if let Some(cors) = web.cors {
        builder = builder.layer(cors);
    }
    if !tokens.is_empty() {
        builder = builder.bearer_auth(BearerAuth::tokens(tokens));
    }
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    if let Some(drain) = drain {
        builder = builder.drain_timeout(drain);
    }
    let server = builder.build().map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|err| format!("cannot listen on {listen}: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;
    println!("listening on {scheme}://{addr}");
    let _ = std::io::stdout().flush();
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let drained = drain_on_ctrl_c(&shutdown).await;
    let _ = serving.await;
    match drained {
        Drained::BudgetSpent { calls, connections } => Err(format!(
            "the drain time ran out with {calls} HTTP calls in flight and {connections} connections open; they were dropped"
        )),
        _ => Ok(()),
    }
}

#[cfg(unix)]
async fn serve_unix(path: &str, calc: Calc, drain: Option<Duration>) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt as _;

    let mut builder = SocketServer::builder(calculator_methods(calc));
    if let Some(drain) = drain {
        builder = builder.drain_timeout(drain);
    }
    let server = builder.build().map_err(|err| err.to_string())?;
    // A socket file left by an earlier run that did not stop cleanly would refuse the bind.
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|err| format!("cannot listen on unix:{path}: {err}"))?;
    println!("listening on unix:{path}");
    let _ = std::io::stdout().flush();
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve_unix(listener).await });
    let drained = drain_on_ctrl_c(&shutdown).await;
    let _ = serving.await;
    let _ = std::fs::remove_file(path);
    match drained {
        Drained::BudgetSpent { calls, connections } => Err(format!(
            "the drain time ran out with {calls} calls in flight and {connections} connections open; they were dropped"
        )),
        _ => Ok(()),
    }
}

#[cfg(not(unix))]
async fn serve_unix(path: &str, calc: Calc, drain: Option<Duration>) -> Result<(), String> {
    let _ = (SocketServer::builder, calc, drain);
    Err(format!("unix:{path}: Unix sockets need a Unix platform"))
}

/// Waits for Ctrl-C, then drains the server and says how it went.
async fn drain_on_ctrl_c(shutdown: &ShutdownHandle) -> Drained {
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("calculator: shutting down");
    let drained = shutdown.shutdown().await;
    eprintln!("calculator: {drained:?}");
    drained
}
