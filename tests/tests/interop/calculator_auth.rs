//! The calculator's tokens, as its contract states them: with `--token TOKEN`, HTTP requests and
//! the WebSocket upgrade need `Authorization: Bearer TOKEN`, else `401` with
//! `WWW-Authenticate: Bearer`; `--read-token TOKEN` may call everything but `announce` and
//! `watch`, which are answered `-32003` for each element of a batch on its own.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use super::calculator_topics::calculator_exe;
use jrpc_tests::bounded;
use jrpc_tests::examples::Calculator;
use jrpc_tests::process::run_bounded;
use jrpc_tests::raw_http::{Reply, post, request};
use jrpc_tests::raw_ws::RawWs;
use serde_json::{Value, json};

const FULL: &str = "full-token";
const READ: &str = "read-token";

fn calculator() -> Calculator {
    Calculator::start_with(&calculator_exe(), &["--token", FULL, "--read-token", READ])
}

fn bearer(token: &str) -> String {
    format!("authorization: Bearer {token}\r\n")
}

async fn post_as(addr: SocketAddr, headers: &str, body: &str) -> Reply {
    bounded(request(
        addr,
        &post("/rpc", Some("application/json"), headers, body),
    ))
    .await
}

fn call(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id})
}

fn forbidden(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": -32003, "message": "Forbidden", "data": {"method": method}}, "id": id})
}

#[tokio::test]
async fn http_needs_a_token_and_the_read_token_cannot_announce() {
    let mut server = calculator();
    let addr: SocketAddr = server.addr.parse().unwrap();
    let add = call(1, "add", json!([2, 3])).to_string();
    let reply = post_as(addr, "", &add).await;
    assert_eq!(
        (reply.status, reply.header("www-authenticate")),
        (401, Some("Bearer"))
    );
    let reply = post_as(addr, &bearer("guess"), &add).await;
    assert_eq!(reply.status, 401);

    let batch = json!([
        call(1, "add", json!([2, 3])),
        call(2, "announce", json!(["news", "hello"])),
        call(3, "watch", json!(["news"])),
        call(4, "subtract", json!([5, 3])),
    ])
    .to_string();
    let reply = post_as(addr, &bearer(READ), &batch).await;
    assert_eq!(
        reply.json(),
        json!([
            {"jsonrpc": "2.0", "result": 5, "id": 1},
            forbidden(2, "announce"),
            forbidden(3, "watch"),
            {"jsonrpc": "2.0", "result": 2, "id": 4},
        ])
    );
    let reply = post_as(addr, &bearer(FULL), &batch).await;
    let answers = reply.json();
    assert_eq!(
        answers[1],
        json!({"jsonrpc": "2.0", "result": null, "id": 2})
    );
    // `watch` over HTTP is the calculator's own error: it needs a connection that stays open.
    assert_eq!(answers[2]["error"]["code"], -32000);
    server.assert_alive();
}

#[tokio::test]
async fn the_websocket_upgrade_needs_a_token_and_the_read_token_cannot_watch() {
    let mut server = calculator();
    let addr: SocketAddr = server.addr.parse().unwrap();
    bounded(async {
        let upgrade = "GET /ws HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
                       sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n";
        let reply = request(addr, upgrade.as_bytes()).await;
        assert_eq!((reply.status, reply.header("www-authenticate")), (401, Some("Bearer")));

        let authorization = format!("Bearer {READ}");
        let mut ws = RawWs::connect(addr, "/ws", &[("authorization", &authorization)]).await;
        ws.send_text(&call(1, "watch", json!(["news"])).to_string()).await;
        assert_eq!(ws.next_json().await, forbidden(1, "watch"));
        let batch = json!([call(2, "add", json!([1, 1])), call(3, "announce", json!(["news", "x"]))]);
        ws.send_text(&batch.to_string()).await;
        assert_eq!(
            ws.next_json().await,
            json!([{"jsonrpc": "2.0", "result": 2, "id": 2}, forbidden(3, "announce")])
        );

        let authorization = format!("Bearer {FULL}");
        let mut ws = RawWs::connect(addr, "/ws", &[("authorization", &authorization)]).await;
        ws.send_text(&call(4, "watch", json!(["news"])).to_string()).await;
        assert_eq!(ws.next_json().await, json!({"jsonrpc": "2.0", "result": null, "id": 4}));
    })
    .await;
    server.assert_alive();
}

#[test]
fn tokens_are_refused_where_nothing_asks_for_them() {
    let output = run_bounded(
        Command::new(calculator_exe()).args(["--stdio", "--token", FULL]),
        Duration::from_secs(30),
    )
    .unwrap_or_else(|why| panic!("{why}"));
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("usage: calculator"));
}
