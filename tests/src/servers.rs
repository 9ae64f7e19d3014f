//! Servers under test on a free port of 127.0.0.1, or on an in-memory pipe, each served from a
//! task of its own.

use std::net::SocketAddr;

use jrpc_mcp::McpServer;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::WsServer;
use tokio::io::DuplexStream;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A listener on a free port of 127.0.0.1, with its address.
async fn local_listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// Serves `server` on a free local port; returns the address and the serving task, which ends
/// with the accept loop. Pass a clone to keep a handle on the server.
pub async fn serve_http(server: HttpServer) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = local_listener().await;
    (
        addr,
        tokio::spawn(async move { server.serve(listener).await }),
    )
}

/// Serves `server` on a free local port; returns the address and the serving task, which ends
/// with the accept loop. Pass a clone to keep a handle on the server.
pub async fn serve_ws(server: WsServer) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = local_listener().await;
    (
        addr,
        tokio::spawn(async move { server.serve(listener).await }),
    )
}

/// Serves `server` on a free local port; returns the address and the serving task, which ends
/// with the accept loop. Pass a clone to keep a handle on the server.
pub async fn serve_mcp(server: McpServer) -> (SocketAddr, JoinHandle<()>) {
    let (listener, addr) = local_listener().await;
    (
        addr,
        tokio::spawn(async move { server.serve(listener).await }),
    )
}

/// One connection to `server` over an in-memory pipe holding at most `buffer` bytes each way,
/// served from a task of its own: the client's end.
///
/// Nothing of it waits on the kernel, so a test on a paused clock stays exact. Over loopback TCP
/// it would not: delivery is deferred under load, and while every task waits for it tokio moves
/// the clock on to the next timer, a server's timeout included.
pub fn connect_in_memory(server: &HttpServer, buffer: usize) -> DuplexStream {
    let (client, served) = tokio::io::duplex(buffer);
    tokio::spawn(server.serve_connection(served, None));
    client
}
