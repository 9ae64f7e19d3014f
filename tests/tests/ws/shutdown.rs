//! Graceful shutdown over WebSocket: calls running when it begins are answered, then the
//! connection closes with 1001; both for `WsServer` and for `HttpServer`'s WebSocket path.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jrpc_runtime::Methods;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::Drained;
use jrpc_runtime::ws::WsServer;
use jrpc_tests::fixtures::{Gate, gate};
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::{serve_http, serve_ws};
use jrpc_tests::{bounded, eventually};
use serde_json::json;

/// Only `gate`, held by `g`.
fn methods(g: &Arc<Gate>) -> Methods {
    let mut methods = Methods::new();
    gate(&mut methods, g);
    methods
}

/// Starts a call that waits at the gate, and an idle second connection.
async fn busy_and_idle(addr: SocketAddr, path: &str, gate: &Gate) -> (RawWs, RawWs) {
    let mut busy = RawWs::connect(addr, path, &[]).await;
    let idle = RawWs::connect(addr, path, &[]).await;
    busy.send_text(r#"{"jsonrpc":"2.0","method":"gate","id":1}"#)
        .await;
    eventually(|| gate.entered.load(Ordering::SeqCst) == 1).await;
    (busy, idle)
}

#[tokio::test(start_paused = true)]
async fn ws_server_shutdown_answers_running_calls_then_closes_with_1001() {
    let gate = Gate::shared();
    let server = WsServer::builder(methods(&gate)).build().unwrap();
    let (addr, serving) = serve_ws(server.clone()).await;
    let (mut busy, mut idle) = busy_and_idle(addr, "/", &gate).await;

    let shutdown = {
        let server = server.clone();
        tokio::spawn(async move { server.shutdown_handle().shutdown().await })
    };
    // The idle connection goes at once; the accept loop ends.
    assert_eq!(idle.close_code().await, 1001);
    bounded(serving).await.unwrap();
    // The busy one waits for its call.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!shutdown.is_finished());
    gate.release.add_permits(1);
    assert_eq!(
        busy.next_json().await,
        json!({"jsonrpc": "2.0", "result": "through", "id": 1})
    );
    assert_eq!(busy.close_code().await, 1001);
    assert_eq!(bounded(shutdown).await.unwrap(), Drained::Complete);
    assert_eq!(server.shutdown_handle().connections(), 0);
}

#[tokio::test(start_paused = true)]
async fn ws_server_drops_what_is_left_when_the_budget_is_spent() {
    let gate = Gate::shared();
    let server = WsServer::builder(methods(&gate))
        .drain_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let mut busy = RawWs::connect(addr, "/", &[]).await;
    busy.send_text(r#"{"jsonrpc":"2.0","method":"gate","id":1}"#)
        .await;
    eventually(|| gate.entered.load(Ordering::SeqCst) == 1).await;
    let outcome = bounded(server.shutdown_handle().shutdown()).await;
    assert_eq!(
        outcome,
        Drained::BudgetSpent {
            calls: 0,
            connections: 1
        }
    );
    // Dropped without a close frame.
    assert_eq!(busy.until_end().await, None);
}

#[tokio::test]
async fn http_server_shutdown_closes_websockets_with_1001() {
    let gate = Gate::shared();
    let server = HttpServer::builder(methods(&gate)).build().unwrap();
    let shutdown = server.shutdown_handle();
    let (addr, _) = serve_http(server).await;
    let (mut busy, mut idle) = busy_and_idle(addr, "/ws", &gate).await;

    let draining = tokio::spawn(async move { shutdown.shutdown().await });
    assert_eq!(idle.close_code().await, 1001);
    gate.release.add_permits(1);
    assert_eq!(busy.next_json().await["result"], "through");
    assert_eq!(busy.close_code().await, 1001);
    assert_eq!(bounded(draining).await.unwrap(), Drained::Complete);
}
