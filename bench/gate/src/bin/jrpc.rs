//! jrpc's HTTP server for `bench/gate/run`, in a binary of its own as the floor's is
//! (`floor.rs` says why).
//!
//! `jrpc serve jrpc|observed|jrpc-layered|jrpc-auth`: jrpc's `HttpServer` with its defaults, on
//! the dispatch bench's table (`jrpc-runtime/benches/cases/`); `observed` puts an observer hook
//! on it, reading each call's `elapsed` (what the hook costs a network call); `jrpc-layered`
//! adds one no-op call layer, `jrpc-auth` bearer authentication and an `Authorize` layer (the
//! `layered` and `authorized` cases' tables): what each costs a call.

#[path = "../../../../jrpc-runtime/benches/cases/mod.rs"]
#[allow(dead_code, reason = "the in-process cases are `jrpc-gate`'s")]
mod cases;
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
        _ => return Err("usage: jrpc serve jrpc|observed|jrpc-layered|jrpc-auth".into()),
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
