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
//! cargo run --example calculator -- --listen 127.0.0.1:0 --redis redis://127.0.0.1:6379   # topics shared by every replica
//! cargo run --example calculator -- --openrpc                     # print the OpenRPC document
//! ```
//!
//! Over stdio it keeps serving after any bad line and exits 0 at the end of input. Over the
//! network it prints `listening on http://ADDR` (`https://ADDR` with TLS, `unix:PATH` on a Unix
//! socket) once it accepts, and Ctrl-C drains in-flight calls before it exits. HTTP is HTTP/1.1
//! or HTTP/2 (h2c with prior knowledge in plain, by ALPN over TLS). Every transport answers
//! `rpc.discover` with the OpenRPC document that `--openrpc` prints.
//!
//! `watch(topic)` and `announce(topic, text)` reach the connections of this process; with
//! `--redis URL` (over the network, a Unix socket or stdio) those of every calculator on that
//! Redis too. If Redis cannot be reached at start-up it prints the URL and exits 1.

use std::io::Write as _;

use jrpc_examples::{Args, Calc, calculator_info, calculator_methods};
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::{ServerTls, ShutdownHandle, SocketServer, Topics};
use jrpc_runtime::{Framing, PeerConfig};

const USAGE: &str = "calculator [--redis URL] ([--listen ADDR] [--tls-cert CERT.pem --tls-key KEY.pem] | --unix PATH | --stdio [--content-length]) | --openrpc";

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
        match PeerConfig::builder().framing(framing).build() {
            Ok(config) => jrpc_runtime::stdio::serve(calculator_methods(calc), config)
                .await
                .map_err(|err| err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    } else if let Some(path) = unix {
        serve_unix(&path, calc).await
    } else {
        let listen = listen.as_deref().unwrap_or("127.0.0.1:8080");
        serve_network(listen, tls, calc, topics).await
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

async fn serve_network(
    listen: &str,
    tls: Option<ServerTls>,
    calc: Calc,
    topics: Topics,
) -> Result<(), String> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut builder = HttpServer::builder(calculator_methods(calc)).topics(topics);
    if let Some(tls) = tls {
        builder = builder.tls(tls);
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
    drain_on_ctrl_c(&shutdown).await;
    let _ = serving.await;
    Ok(())
}

#[cfg(unix)]
async fn serve_unix(path: &str, calc: Calc) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt as _;

    let server = SocketServer::builder(calculator_methods(calc))
        .build()
        .map_err(|err| err.to_string())?;
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
    drain_on_ctrl_c(&shutdown).await;
    let _ = serving.await;
    let _ = std::fs::remove_file(path);
    Ok(())
}

#[cfg(not(unix))]
async fn serve_unix(path: &str, calc: Calc) -> Result<(), String> {
    let _ = (SocketServer::builder, calc);
    Err(format!("unix:{path}: Unix sockets need a Unix platform"))
}

async fn drain_on_ctrl_c(shutdown: &ShutdownHandle) {
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("calculator: shutting down");
    let drained = shutdown.shutdown().await;
    eprintln!("calculator: {drained:?}");
}
