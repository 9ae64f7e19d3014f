//! jrpc's HTTP server for `bench/gate/run`, in a binary of its own as the floor's is
//! (`floor.rs` says why).
//!
//! `jrpc serve jrpc|observed|jrpc-layered|jrpc-auth`: jrpc's `HttpServer` with its defaults, on
//! the dispatch bench's table (`jrpc-runtime/benches/cases/`); `observed` puts an observer hook
//! on it, reading each call's `elapsed` (what the hook costs a network call); `jrpc-layered`
//! adds one no-op call layer, `jrpc-auth` bearer authentication and an `Authorize` layer (the
//! `layered` and `authorized` cases' tables): what each costs a call.
//!
//! `jrpc serve fanout`: the fan-out benchmark's `newHeads` service (`bench/src/fanout/jrpc.rs`)
//! on `HttpServer`'s WebSocket, a header published to its topic for each byte on the control
//! connection; pings off, so that no timer fires by the wall clock, which valgrind slows.

#[path = "../../../../jrpc-runtime/benches/cases/mod.rs"]
#[allow(dead_code, reason = "the in-process cases are `jrpc-gate`'s")]
mod cases;
#[path = "../../../src/fanout/jrpc.rs"]
mod fanout_jrpc;
#[path = "../../../src/fanout/header.rs"]
#[allow(
    dead_code,
    reason = "the header's fields are the benchmark's client's to read"
)]
mod header;
#[path = "../serving.rs"]
mod serving;

fn main() -> serving::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (table, auth) = match args[..] {
        ["serve", "jrpc"] => ("", false),
        ["serve", "observed"] => ("observed", false),
        ["serve", "jrpc-layered"] => ("layered", false),
        ["serve", "jrpc-auth"] => ("authorized", true),
        ["serve", "fanout"] => return fanout(),
        _ => return Err("usage: jrpc serve jrpc|observed|jrpc-layered|jrpc-auth|fanout".into()),
    };
    serving::serve_until_stdin_closes(|listener| {
        let mut builder = jrpc_runtime::http::HttpServer::builder(cases::table(table));
        if auth {
            let tokens = [(serving::TOKEN, "gate")];
            builder = builder.bearer_auth(jrpc_runtime::http::BearerAuth::tokens(tokens));
        }
        let server = builder.build()?;
        tokio::spawn(async move { server.serve(listener).await });
        Ok(())
    })
}

/// Serves the fan-out service, publishing a header for each byte on the control connection.
fn fanout() -> serving::Result<()> {
    serving::serve_publishing_until_stdin_closes(|listener| {
        let topics = jrpc_runtime::server::Topics::new();
        let settings = jrpc_runtime::ws::WsSettings::new()
            .ping_interval(None)
            .idle_timeout(None);
        let server = jrpc_runtime::http::HttpServer::builder(fanout_jrpc::methods(&topics))
            .websocket(settings)
            .build()?;
        tokio::spawn(async move { server.serve(listener).await });
        let mut number = 0;
        Ok(Some(Box::new(move || {
            number += 1;
            fanout_jrpc::publish(&topics, &header::Header::new(number, 0));
        })))
    })
}
