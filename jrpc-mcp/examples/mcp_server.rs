//! A Model Context Protocol server with two tools, `add` and `count`, over stdio (one JSON
//! message a line) or Streamable HTTP, for clients of either protocol era: 2025-11-25 and
//! earlier (`initialize`, sessions) and 2026-07-28 (stateless, `server/discover`).
//!
//! ```text
//! cargo run --example mcp_server                            # stdio
//! cargo run --example mcp_server -- --http 127.0.0.1:8000   # http://127.0.0.1:8000/mcp
//! ```
//!
//! With `--http ADDR` (port 0 takes any free port) it prints `listening on http://ADDR` with the
//! real address once it accepts, serves MCP at `/mcp`, and Ctrl-C drains it. Logs go to stderr
//! only: stdout carries the protocol.
//!
//! The tools are the methods of [`Tools`], declared with `#[rpc_service(schema)]`: a method's doc
//! comment is the tool's description, its parameters (by name) the tool's `inputSchema`. `count
//! {n}` sends `n` `notifications/progress` when the call asks for progress, then answers `"<n>"`;
//! a tool's error is a result with `"isError": true` the model can read.

use jrpc_mcp::{Mcp, McpContext as _, McpServer};
use jrpc_runtime::{Context, RpcError, rpc_service};

/// The tools: each method is one.
struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Adds two numbers and answers their sum as text.
    fn add(&self, a: f64, b: f64) -> Result<String, RpcError> {
        let sum = a + b;
        if !sum.is_finite() {
            return Err(RpcError::new(
                1,
                format!("{a} + {b} is too large to be a number"),
            ));
        }
        Ok(sum.to_string())
    }

    /// Counts to `n`, reporting each step as progress if asked, and answers `n` as text.
    async fn count(&self, ctx: &Context, n: u64) -> Result<String, RpcError> {
        for i in 1..=n {
            ctx.progress(i as f64, Some(n as f64), None).await?;
        }
        Ok(n.to_string())
    }
}

#[tokio::main]
async fn main() {
    jrpc_examples::log_to_stderr();
    let mut args = jrpc_examples::Args::from_env(
        "mcp_server",
        "mcp_server [--http ADDR] (MCP on stdin and stdout, or Streamable HTTP at http://ADDR/mcp)",
    );
    let http = args.value("--http");
    args.finish();
    let served = match Mcp::builder("jrpc-mcp-example", env!("CARGO_PKG_VERSION"))
        .tools(Tools.into_methods())
        .build()
    {
        Ok(mcp) => match http {
            Some(addr) => serve_http(mcp, &addr).await,
            None => mcp.serve_stdio().await.map_err(|err| err.to_string()),
        },
        Err(err) => Err(err.to_string()),
    };
    if let Err(err) = served {
        eprintln!("mcp_server: {err}");
        std::process::exit(1);
    }
}

/// Serves MCP's Streamable HTTP at `http://ADDR/mcp` until Ctrl-C.
async fn serve_http(mcp: Mcp, addr: &str) -> Result<(), String> {
    use std::io::Write as _;

    let server = McpServer::builder(mcp)
        .build()
        .map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let local = listener.local_addr().map_err(|err| err.to_string())?;
    println!("listening on http://{local}");
    let _ = std::io::stdout().flush();
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("mcp_server: shutting down");
    let drained = shutdown.shutdown().await;
    let _ = serving.await;
    match drained {
        jrpc_runtime::server::Drained::BudgetSpent { calls, .. } => Err(format!(
            "the drain time ran out with {calls} calls in flight; they were dropped"
        )),
        _ => Ok(()),
    }
}
