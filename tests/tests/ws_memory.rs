//! What an idle WebSocket connection costs the server: at most 64 KiB of resident memory each,
//! measured over a few hundred connections (Linux only: it reads `/proc/self/statm`).

mod ws_support;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::WsServer;
use jrpc_runtime::{Methods, RpcError};
use tokio::net::TcpListener;
use ws_support::{RawWs, bounded};

const CONNECTIONS: usize = 300;
const BUDGET: u64 = 64 * 1024;

fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn methods() -> Methods {
    let mut methods = Methods::new();
    methods
        .typed("add", &["a", "b"], |(a, b): (i64, i64), _| async move {
            Ok::<_, RpcError>(a + b)
        })
        .unwrap();
    methods
}

/// Opens `CONNECTIONS` sockets, each answering one call, and returns the growth per connection
/// with the sockets (kept open, so that what they hold is not reused by the next measure). The
/// raw clients cost little (a socket each), so the growth is the server's.
async fn per_connection(addr: std::net::SocketAddr, path: &str) -> (Option<u64>, Vec<RawWs>) {
    // Warm up: the first connection allocates what every later one shares.
    let mut warm = Vec::new();
    for _ in 0..20 {
        let mut ws = RawWs::connect(addr, path, &[]).await;
        ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
            .await;
        assert_eq!(ws.next_json().await["result"], 3);
        warm.push(ws);
    }
    let before = rss();
    let mut open = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let mut ws = RawWs::connect(addr, path, &[]).await;
        ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
            .await;
        assert_eq!(ws.next_json().await["result"], 3);
        open.push(ws);
    }
    open.extend(warm);
    let each = before
        .zip(rss())
        .map(|(before, after)| after.saturating_sub(before) / CONNECTIONS as u64);
    (each, open)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_stays_under_64_kib() {
    let http = HttpServer::builder(methods()).build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { http.serve(listener).await });
    let (each, _http_sockets) = bounded(per_connection(addr, "/ws")).await;
    if let Some(each) = each {
        eprintln!("HttpServer /ws: {each} bytes per idle connection");
        assert!(each <= BUDGET, "{each} bytes per idle connection");
    }

    let ws = WsServer::builder(methods()).build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { ws.serve(listener).await });
    let (each, _ws_sockets) = bounded(per_connection(addr, "/")).await;
    if let Some(each) = each {
        eprintln!("WsServer: {each} bytes per idle connection");
        assert!(each <= BUDGET, "{each} bytes per idle connection");
    }
}
