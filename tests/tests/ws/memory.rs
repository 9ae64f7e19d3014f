//! What an idle WebSocket connection costs the server: at most 64 KiB of resident memory each,
//! measured over a few hundred connections (Linux only: it reads `/proc/self/statm`).

use std::net::SocketAddr;

use jrpc_runtime::Methods;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::WsServer;
use jrpc_tests::bounded;
use jrpc_tests::fixtures::add;
use jrpc_tests::process::{alone, rss};
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::{serve_http, serve_ws};

const CONNECTIONS: usize = 300;
const BUDGET: u64 = 64 * 1024;

fn methods() -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    methods
}

/// A connection to `path` that has answered one call.
async fn answered(addr: SocketAddr, path: &str) -> RawWs {
    let mut ws = RawWs::connect(addr, path, &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], 3);
    ws
}

/// Opens `CONNECTIONS` sockets, each answering one call, and returns the growth per connection
/// with the sockets (kept open, so that what they hold is not reused by the next measure). The
/// raw clients cost little (a socket each), so the growth is the server's.
async fn per_connection(addr: SocketAddr, path: &str) -> (Option<u64>, Vec<RawWs>) {
    // Warm up: the first connection allocates what every later one shares.
    let mut warm = Vec::new();
    for _ in 0..20 {
        warm.push(answered(addr, path).await);
    }
    let before = rss();
    let mut open = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        open.push(answered(addr, path).await);
    }
    open.extend(warm);
    let each = before
        .zip(rss())
        .map(|(before, after)| after.saturating_sub(before) / CONNECTIONS as u64);
    (each, open)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_stays_under_64_kib() {
    // It measures this process's memory, which other tests would add to.
    if !alone(module_path!(), "an_idle_connection_stays_under_64_kib") {
        return;
    }
    let http = HttpServer::builder(methods()).build().unwrap();
    let (addr, _) = serve_http(http).await;
    let (each, _http_sockets) = bounded(per_connection(addr, "/ws")).await;
    if let Some(each) = each {
        eprintln!("HttpServer /ws: {each} bytes per idle connection");
        assert!(each <= BUDGET, "{each} bytes per idle connection");
    }

    let ws = WsServer::builder(methods()).build().unwrap();
    let (addr, _) = serve_ws(ws).await;
    let (each, _ws_sockets) = bounded(per_connection(addr, "/")).await;
    if let Some(each) = each {
        eprintln!("WsServer: {each} bytes per idle connection");
        assert!(each <= BUDGET, "{each} bytes per idle connection");
    }
}
