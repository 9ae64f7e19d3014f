//! Call layers over WebSocket (each batch element, and a request answered where it is read),
//! and bearer authentication of the upgrade on an `HttpServer`'s `/ws`.

use jrpc_runtime::Methods;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::WsServer;
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{self, GUARDED_ANSWER, GUARDED_BATCH, guarded, guarded_batch_seen};
use jrpc_tests::raw_http::Conn;
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::{serve_http, serve_ws};
use serde_json::json;

#[tokio::test]
async fn a_websocket_runs_the_layers_for_each_element_and_for_a_request_alone() {
    let mut methods = Methods::new();
    let seen = guarded(&mut methods);
    let (addr, _) = serve_ws(WsServer::builder(methods).build().unwrap()).await;
    bounded(async {
        let mut ws = RawWs::connect(addr, "/", &[]).await;
        ws.send_text(GUARDED_BATCH).await;
        assert_eq!(ws.next_message().await.unwrap().text(), GUARDED_ANSWER);
        // A request alone, which the reader answers where it reads it when it can.
        ws.send_text(r#"{"jsonrpc":"2.0","method":"secret","id":3}"#).await;
        assert_eq!(
            ws.next_json().await,
            json!({"jsonrpc": "2.0", "error": {"code": -32003, "message": "Forbidden", "data": {"method": "secret"}}, "id": 3})
        );
        ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[2,2],"id":4}"#).await;
        assert_eq!(ws.next_json().await["result"], 4);
    })
    .await;
    let mut expected = guarded_batch_seen();
    expected.push(("secret".to_owned(), Some("3".to_owned())));
    expected.push(("add".to_owned(), Some("4".to_owned())));
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[tokio::test]
async fn the_upgrade_asks_for_a_token_and_its_identity_is_the_connections() {
    let mut methods = Methods::new();
    let auth = fixtures::access(&mut methods);
    let server = HttpServer::builder(methods)
        .bearer_auth(auth)
        .build()
        .unwrap();
    let (addr, _) = serve_http(server).await;
    bounded(async {
        for token in [None, Some("wrong")] {
            let authorization = token
                .map(|token| format!("authorization: Bearer {token}\r\n"))
                .unwrap_or_default();
            let upgrade = format!(
                "GET /ws HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
                 sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n{authorization}\r\n"
            );
            let reply = Conn::open(addr).await.send(upgrade.as_bytes()).await;
            reply.assert_envelope(401, -32600);
            let challenge = reply.header("www-authenticate").unwrap();
            assert!(challenge.starts_with("Bearer"), "{challenge}");
        }

        let mut ws = RawWs::connect(addr, "/ws", &[("authorization", "Bearer read")]).await;
        ws.send_text(r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#).await;
        assert_eq!(ws.next_json().await["result"], "Some(Read)");
        ws.send_text(r#"[{"jsonrpc":"2.0","method":"write","id":2}]"#).await;
        assert_eq!(ws.next_json().await[0]["error"]["code"], -32003);

        let mut ws = RawWs::connect(addr, "/ws", &[("authorization", "Bearer full")]).await;
        ws.send_text(r#"{"jsonrpc":"2.0","method":"write","id":3}"#).await;
        assert_eq!(ws.next_json().await["result"], "written");
    })
    .await;
}
