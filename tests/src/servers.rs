//! Servers under test on a free port of 127.0.0.1, each served from a task of its own.

use std::net::SocketAddr;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::WsServer;
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
