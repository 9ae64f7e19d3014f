//! The calculator service, over HTTP and WebSocket (the default) or stdio.
//!
//! ```text
//! cargo run --example calculator                                  # http://127.0.0.1:8080/rpc and ws://127.0.0.1:8080/ws
//! cargo run --example calculator -- --listen 127.0.0.1:0          # any free port; the real one is printed
//! cargo run --example calculator -- --stdio                       # one JSON message a line
//! cargo run --example calculator -- --stdio --content-length      # LSP-style framing
//! cargo run --example calculator -- --drain-timeout 5             # seconds calls may finish in at the end
//! cargo run --example calculator -- --listen 127.0.0.1:0 --redis redis://127.0.0.1:6379   # topics shared by every replica
//! cargo run --example calculator -- --openrpc                     # print the OpenRPC document
//! ```
//!
//! Over stdio it keeps serving after any bad line and exits 0 at the end of input. Over the
//! network it prints `listening on http://ADDR` once it accepts, and Ctrl-C drains in-flight
//! calls before it exits. Either way, when the drain time (default 10 s over stdio, 30 s over
//! the network) runs out with calls still in flight, it says so and exits 1.
//! Every transport answers `rpc.discover` with the OpenRPC document that `--openrpc` prints.
//!
//! `watch(topic)` and `announce(topic, text)` reach the connections of this process; with
//! `--redis URL` (over the network or stdio) those of every calculator on that Redis too. If
//! Redis cannot be reached at start-up it prints the URL and exits 1.

use std::io::Write as _;
use std::time::Duration;

use jrpc_examples::{Calc, calculator_info, calculator_methods};
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::{Drained, Topics};
use jrpc_runtime::{Framing, PeerConfig};

#[tokio::main]
async fn main() {
    jrpc_examples::log_to_stderr();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|arg| arg == flag);
    if has("--openrpc") {
        let document = calculator_methods(Calc::default()).openrpc(&calculator_info());
        if let Err(err) = writeln!(std::io::stdout().lock(), "{document:#}") {
            eprintln!("calculator: {err}");
            std::process::exit(1);
        }
        return;
    }
    let value = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|at| args.get(at + 1))
    };
    let drain = match value("--drain-timeout").map(|secs| secs.parse::<f64>()) {
        None => None,
        Some(Ok(secs)) if secs.is_finite() && secs >= 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(_) => {
            eprintln!("calculator: --drain-timeout takes a number of seconds");
            std::process::exit(2);
        }
    };
    let topics = match value("--redis") {
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
    let result = if has("--stdio") {
        let framing = if has("--content-length") {
            Framing::ContentLength
        } else {
            Framing::Lines
        };
        let mut config = PeerConfig::builder().framing(framing);
        if let Some(drain) = drain {
            config = config.drain_timeout(drain);
        }
        match config.build() {
            Ok(config) => jrpc_runtime::stdio::serve(calculator_methods(calc), config)
                .await
                .map_err(|err| err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    } else {
        let listen = value("--listen").map_or("127.0.0.1:8080", String::as_str);
        serve_network(listen, calc, topics, drain).await
    };
    if let Err(err) = result {
        eprintln!("calculator: {err}");
        std::process::exit(1);
    }
}

async fn serve_network(
    listen: &str,
    calc: Calc,
    topics: Topics,
    drain: Option<Duration>,
) -> Result<(), String> {
    let mut server = HttpServer::builder(calculator_methods(calc)).topics(topics);
    if let Some(drain) = drain {
        server = server.drain_timeout(drain);
    }
    let server = server.build().map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|err| format!("cannot listen on {listen}: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;
    println!("listening on http://{addr}");
    let _ = std::io::stdout().flush();
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("calculator: shutting down");
    let drained = shutdown.shutdown().await;
    eprintln!("calculator: {drained:?}");
    let _ = serving.await;
    match drained {
        Drained::BudgetSpent { calls, connections } => Err(format!(
            "the drain time ran out with {calls} HTTP calls in flight and {connections} connections open; they were dropped"
        )),
        _ => Ok(()),
    }
}
