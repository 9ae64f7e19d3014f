//! Cancellation over WebSocket: a client that drops its call (with LSP's notices on, it tells the
//! server), a client's `$/cancelRequest` (answered `-32800` at once), a connection gone and a
//! shutdown's drain budget spent each drop the handler, resolve its context's `cancelled()` and
//! are observed `cancelled`.

use std::time::Duration;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::{WsClient, WsServer, WsSettings};
use jrpc_runtime::{Caller as _, Cancellation, Methods};
use jrpc_tests::cancel::hang;
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::{serve_http, serve_ws};
use serde_json::json;

/// An HTTP server whose `/ws` speaks LSP's cancellation notices.
fn lsp_server(methods: Methods) -> HttpServer {
    HttpServer::builder(methods)
        .websocket(WsSettings::new().cancellation(Cancellation::Lsp))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_client_dropping_its_call_tells_the_server_which_cancels_it() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (addr, _) = serve_http(lsp_server(methods)).await;
    let client = WsClient::builder(format!("ws://{addr}/ws"))
        .cancellation(Cancellation::Lsp)
        .connect()
        .await
        .unwrap();
    let mut call = Box::pin(client.call::<()>("hang", ()));
    hang.started_while(&mut call).await;
    drop(call);
    hang.cancelled().await;
    // The connection goes on.
    assert!(!client.is_closed());
}

#[tokio::test]
async fn a_cancel_request_drops_the_handler_and_is_answered_at_once() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (addr, _) = serve_http(lsp_server(methods)).await;
    let mut ws = RawWs::connect(addr, "/ws", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"hang","id":"h-1"}"#)
        .await;
    hang.started().await;
    ws.send_text(
        &json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "h-1"}})
            .to_string(),
    )
    .await;
    let answer = ws.next_json().await;
    assert_eq!(answer["id"], "h-1", "{answer}");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    hang.cancelled().await;
}

#[tokio::test]
async fn a_connection_gone_cancels_its_calls() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (addr, _) = serve_http(HttpServer::builder(methods).build().unwrap()).await;
    let mut ws = RawWs::connect(addr, "/ws", &[]).await;
    for id in 1..=2 {
        ws.send_text(&format!(r#"{{"jsonrpc":"2.0","method":"hang","id":{id}}}"#))
            .await;
        hang.started().await;
    }
    // Gone without a close frame: the socket is dropped.
    drop(ws);
    hang.cancelled().await;
    hang.cancelled().await;
    assert_eq!(hang.cancelled_count(), 2);
}

#[tokio::test]
async fn the_drain_budget_spent_cancels_websocket_calls() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let server = WsServer::builder(methods)
        .drain_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let shutdown = server.shutdown_handle();
    let (addr, _) = serve_ws(server).await;
    let client = WsClient::connect(&format!("ws://{addr}"), Methods::new())
        .await
        .unwrap();
    let call = tokio::spawn(async move { client.call::<()>("hang", ()).await });
    hang.started().await;
    let drained = tokio::spawn(async move { shutdown.shutdown().await });
    hang.cancelled().await;
    drained.await.unwrap();
    assert!(
        call.await.unwrap().is_err(),
        "a cancelled call is not answered"
    );
}
