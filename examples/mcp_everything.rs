//! The MCP server the official conformance suite (`@modelcontextprotocol/conformance`) measures:
//! the tools, resources and prompts of the suite's reference server, under the names its
//! scenarios call, over Streamable HTTP.
//!
//! ```text
//! cargo run --example mcp_everything -- --http 127.0.0.1:3001   # http://127.0.0.1:3001/mcp
//! ```
//!
//! It prints `listening on http://ADDR` with the real address once it accepts (port 0 takes any
//! free port), serves MCP at `/mcp`, and Ctrl-C drains it. For now it answers `initialize` and
//! `ping` alone.

use jrpc_runtime::mcp::McpServer;
use jrpc_runtime::{Methods, RpcError};
use serde_json::json;

#[tokio::main]
async fn main() {
    let mut args = jrpc_examples::Args::from_env(
        "mcp_everything",
        "mcp_everything [--http ADDR] (Streamable HTTP at http://ADDR/mcp; default 127.0.0.1:3001)",
    );
    let addr = args
        .value("--http")
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    args.finish();
    if let Err(err) = serve(&addr).await {
        eprintln!("mcp_everything: {err}");
        std::process::exit(1);
    }
}

/// The protocol's methods, answered by hand.
fn methods() -> Result<Methods, jrpc_runtime::RegisterError> {
    let mut methods = Methods::new();
    methods.register("initialize", &[], |(): (), _| async move {
        Ok::<_, RpcError>(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": { "name": "jrpc-mcp-everything", "version": env!("CARGO_PKG_VERSION") },
        }))
    })?;
    methods.register("ping", &[], |(): (), _| async move {
        Ok::<_, RpcError>(json!({}))
    })?;
    Ok(methods)
}

/// Serves MCP's Streamable HTTP at `http://ADDR/mcp` until Ctrl-C.
async fn serve(addr: &str) -> Result<(), String> {
    use std::io::Write as _;

    let methods = methods().map_err(|err| err.to_string())?;
    let server = McpServer::builder(methods)
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
    let _ = shutdown.shutdown().await;
    let _ = serving.await;
    Ok(())
}
