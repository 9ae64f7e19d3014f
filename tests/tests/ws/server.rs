//! The WebSocket server, driven by a raw client that sees every frame: push order, the context
//! handlers get, the same listener as HTTP, binary frames, notifications, the in-flight cap, the
//! size cap, pings and the idle timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::ws::{BinaryFrames, WsServer, WsSettings};
use jrpc_runtime::{Caller, Context, Methods, RpcError};
use jrpc_tests::fixtures::{Gate, add, big, count_pings, gate, request_header};
use jrpc_tests::raw_http::exchange;
use jrpc_tests::raw_ws::{BINARY, CLOSE, PING, PONG, RawWs, TEXT};
use jrpc_tests::servers::{serve_http, serve_ws};
use jrpc_tests::{bounded, eventually};
use serde_json::{Value, json};

/// What handlers share with the test.
struct State {
    pings: Arc<AtomicUsize>,
    /// Holds `gate` calls.
    gate: Arc<Gate>,
}

fn methods(state: &Arc<State>) -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    methods
        .register("chatty", &["n"], |(n,): (u32,), ctx: Context| async move {
            let peer = ctx.peer().expect("a WebSocket connection has a peer");
            for i in 0..n {
                peer.notify("progress", [i])
                    .await
                    .map_err(|err| RpcError::internal().with_data(&err.to_string()))?;
            }
            Ok::<_, RpcError>("done")
        })
        .unwrap();
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            let custom = request_header(&ctx, "x-custom");
            Ok::<_, RpcError>(json!({
                "transport": ctx.transport().as_str(),
                "peer": ctx.peer_addr().map(|a| a.to_string()),
                "custom": custom,
                "tag": ctx.request_tag(),
            }))
        })
        .unwrap();
    count_pings(&mut methods, &state.pings);
    gate(&mut methods, &state.gate);
    let g = Arc::clone(&state.gate);
    methods
        .register("passed", &[], move |(): (), _| {
            let passed = g.passed.load(Ordering::SeqCst);
            async move { Ok::<_, RpcError>(passed) }
        })
        .unwrap();
    methods
}

fn state() -> Arc<State> {
    Arc::new(State {
        pings: Arc::default(),
        gate: Gate::shared(),
    })
}

/// A `WsServer` on its own listener.
async fn start(
    state: &Arc<State>,
    configure: impl FnOnce(WsSettings) -> WsSettings,
) -> (SocketAddr, WsServer) {
    let server = WsServer::builder(methods(state))
        .settings(configure(WsSettings::new()))
        .build()
        .expect("valid settings");
    let (addr, _) = serve_ws(server.clone()).await;
    (addr, server)
}

/// An `HttpServer` (JSON-RPC on `/rpc`, WebSocket on `/ws`).
async fn start_http(state: &Arc<State>) -> SocketAddr {
    let server = HttpServer::builder(methods(state)).build().unwrap();
    serve_http(server).await.0
}

async fn call_chatty(ws: &mut RawWs) {
    ws.send_text(r#"{"jsonrpc":"2.0","method":"chatty","params":[3],"id":7}"#)
        .await;
    for i in 0..3 {
        assert_eq!(
            ws.next_json().await,
            json!({"jsonrpc": "2.0", "method": "progress", "params": [i]})
        );
    }
    assert_eq!(
        ws.next_json().await,
        json!({"jsonrpc": "2.0", "result": "done", "id": 7})
    );
}

/// Calls `whoami`; returns the answer and the connection's local address.
async fn whoami(ws: &mut RawWs) -> (Value, String) {
    ws.send_text(r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#)
        .await;
    let me = ws.next_json().await;
    let local = ws.stream.local_addr().unwrap().to_string();
    (me, local)
}

#[tokio::test]
async fn a_handlers_notifications_arrive_before_its_answer() {
    let state = state();
    let (addr, _server) = start(&state, |b| b).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    call_chatty(&mut ws).await;
    // And again on the same connection.
    call_chatty(&mut ws).await;
    // And before the answer of a call read with it, which the server would answer at once.
    ws.send_texts(&[
        r#"{"jsonrpc":"2.0","method":"chatty","params":[3],"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":8}"#,
    ])
    .await;
    let mut frames = Vec::new();
    for _ in 0..5 {
        frames.push(ws.next_json().await);
    }
    let progress = |i: u32| json!({"jsonrpc": "2.0", "method": "progress", "params": [i]});
    assert_eq!(
        frames,
        [
            progress(0),
            progress(1),
            progress(2),
            json!({"jsonrpc": "2.0", "result": "done", "id": 7}),
            json!({"jsonrpc": "2.0", "result": 5, "id": 8}),
        ]
    );
}

/// A notification whose handler waits holds up what follows it, though the server answers most
/// calls where it reads them: `passed`, which finishes at once, runs only after the `gate`
/// handler before it, whether they came in one write or the call came while the handler waited.
#[tokio::test]
async fn a_waiting_notification_handler_holds_up_the_calls_behind_it() {
    let state = state();
    let (addr, _server) = start(&state, |b| b).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    let gate = r#"{"jsonrpc":"2.0","method":"gate"}"#;
    ws.send_texts(&[gate, r#"{"jsonrpc":"2.0","method":"passed","id":1}"#])
        .await;
    eventually(|| state.gate.entered.load(Ordering::SeqCst) == 1).await;
    state.gate.release.add_permits(1);
    assert_eq!(
        ws.next_json().await,
        json!({"jsonrpc": "2.0", "result": 1, "id": 1})
    );

    ws.send_text(gate).await;
    eventually(|| state.gate.entered.load(Ordering::SeqCst) == 2).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"passed","id":2}"#)
        .await;
    // The pong shows that the server has read the call before the gate opens.
    ws.send_frame(PING, b"read").await;
    let pong = ws.next_frame().await.expect("a pong");
    assert_eq!((pong.opcode, &pong.payload[..]), (PONG, &b"read"[..]));
    state.gate.release.add_permits(1);
    assert_eq!(
        ws.next_json().await,
        json!({"jsonrpc": "2.0", "result": 2, "id": 2})
    );
}

#[tokio::test]
async fn websocket_shares_the_http_listener() {
    let state = state();
    let addr = start_http(&state).await;

    let http = HttpClient::new(&format!("http://{addr}/rpc")).unwrap();
    let sum = http
        .call_raw("add", serde_json::value::to_raw_value(&[2, 3]).ok())
        .await
        .unwrap();
    assert_eq!(sum.get(), "5");

    let mut ws = RawWs::connect(
        addr,
        "/ws",
        &[("x-custom", "hello"), ("x-request-id", "conn-1")],
    )
    .await;
    call_chatty(&mut ws).await;
    let (me, local) = whoami(&mut ws).await;
    assert_eq!(
        me["result"],
        json!({"transport": "ws", "peer": local, "custom": "hello", "tag": "conn-1"})
    );
}

#[tokio::test]
async fn the_standalone_server_sets_the_context_too() {
    let state = state();
    let (addr, _server) = start(&state, |b| b).await;
    let mut ws = RawWs::connect(addr, "/anything", &[("x-custom", "there")]).await;
    let (me, local) = whoami(&mut ws).await;
    assert_eq!(
        me["result"],
        json!({"transport": "ws", "peer": local, "custom": "there", "tag": null})
    );
}

#[tokio::test]
async fn a_binary_frame_of_json_is_a_message_answered_in_text() {
    let state = state();
    let (addr, _server) = start(&state, |b| b).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_frame(
        BINARY,
        br#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#,
    )
    .await;
    let answer = bounded(ws.next_frame()).await.expect("an answer");
    assert_eq!(answer.opcode, TEXT);
    assert_eq!(
        serde_json::from_slice::<Value>(&answer.payload).unwrap(),
        json!({"jsonrpc": "2.0", "result": 3, "id": 1})
    );
    // A binary frame that is not UTF-8 is what a text frame that is not would be: 1007.
    ws.send_frame(BINARY, b"\xff\xfe").await;
    assert_eq!(ws.close_code().await, 1007);

    // Over the HTTP listener too.
    let addr = start_http(&state).await;
    let mut ws = RawWs::connect(addr, "/ws", &[]).await;
    ws.send_frame(
        BINARY,
        br#"{"jsonrpc":"2.0","method":"add","params":[2,2],"id":2}"#,
    )
    .await;
    assert_eq!(ws.next_json().await["result"], 4);
}

#[tokio::test]
async fn binary_frames_refused_close_with_1003() {
    let state = state();
    let (addr, server) = start(&state, |b| b.binary_frames(BinaryFrames::Refuse)).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_frame(
        BINARY,
        br#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#,
    )
    .await;
    assert_eq!(ws.close_code().await, 1003);
    assert_eq!(bounded(ws.next_frame()).await.map(|f| f.opcode), None);
    eventually(|| server.shutdown_handle().connections() == 0).await;
}

#[tokio::test]
async fn a_close_from_the_client_is_answered_with_its_code() {
    let state = state();
    let (addr, _server) = start(&state, |b| b).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], 3);
    ws.send_frame(CLOSE, &1000_u16.to_be_bytes()).await;
    // The closing handshake: the server's own close frame, then the end of the socket.
    assert_eq!(ws.until_end().await, Some(1000));
}

#[tokio::test]
async fn notifications_get_no_frame() {
    let state = state();
    let (addr, _server) = start(&state, |b| b).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"ping"}"#).await;
    ws.send_text(r#"[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"ping"}]"#)
        .await;
    // A notification of an unknown method, and one with bad params: still no frame.
    ws.send_text(r#"{"jsonrpc":"2.0","method":"nope"}"#).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":["x"]}"#)
        .await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":"last"}"#)
        .await;
    // The first frame back is the call's answer.
    assert_eq!(
        ws.next_json().await,
        json!({"jsonrpc": "2.0", "result": 3, "id": "last"})
    );
    assert_eq!(state.pings.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn calls_past_the_in_flight_cap_are_refused_at_once() {
    let state = state();
    let (addr, _server) = start(&state, |b| b.max_in_flight(2)).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"gate","id":1}"#)
        .await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"gate","id":2}"#)
        .await;
    eventually(|| state.gate.entered.load(Ordering::SeqCst) == 2).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,1],"id":3}"#)
        .await;
    let refused = ws.next_json().await;
    assert_eq!(refused["id"], 3);
    assert_eq!(refused["error"]["code"], -32000);
    assert_eq!(state.gate.entered.load(Ordering::SeqCst), 2);

    state.gate.release.add_permits(2);
    let mut ids = vec![
        ws.next_json().await["id"].clone(),
        ws.next_json().await["id"].clone(),
    ];
    ids.sort_by_key(|id| id.as_i64());
    assert_eq!(ids, [json!(1), json!(2)]);
    // Room again.
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,1],"id":4}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], 2);
}

#[tokio::test]
async fn a_message_over_the_cap_closes_with_1009() {
    let state = state();
    let (addr, _server) = start(&state, |b| b.max_message_size(1024)).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    // Just under the cap is fine.
    let padding = " ".repeat(900);
    ws.send_text(&format!(
        r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}}{padding}"#
    ))
    .await;
    assert_eq!(ws.next_json().await["result"], 3);
    let padding = " ".repeat(2000);
    ws.send_text(&format!(
        r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2}}{padding}"#
    ))
    .await;
    assert_eq!(ws.close_code().await, 1009);
}

#[tokio::test(start_paused = true)]
async fn pings_go_out_and_a_silent_client_is_closed() {
    let state = state();
    let (addr, _server) = start(&state, |b| {
        b.ping_interval(Some(Duration::from_millis(100)))
            .idle_timeout(Some(Duration::from_millis(800)))
    })
    .await;

    // A client that answers pings stays, well past the idle timeout.
    let mut live = RawWs::connect(addr, "/", &[]).await;
    let until = tokio::time::Instant::now() + Duration::from_millis(2000);
    let mut pings = 0;
    while let Ok(frame) = tokio::time::timeout_at(until, live.next_frame()).await {
        let frame = frame.expect("the connection stays open");
        assert_eq!(frame.opcode, PING);
        pings += 1;
        live.send_frame(PONG, &frame.payload).await;
    }
    assert!(pings >= 2, "{pings} pings");
    live.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[2,2],"id":1}"#)
        .await;
    assert_eq!(live.next_json().await["result"], 4);

    // One that never answers is closed with 1000 after the idle timeout.
    let mut silent = RawWs::connect(addr, "/", &[]).await;
    let mut saw_ping = false;
    loop {
        let frame = bounded(silent.next_frame())
            .await
            .expect("a close frame first");
        match frame.opcode {
            PING => saw_ping = true,
            CLOSE => {
                assert_eq!(frame.close_code(), 1000);
                break;
            }
            other => panic!("unexpected opcode {other}"),
        }
    }
    assert!(saw_ping);
}

#[tokio::test]
async fn a_get_without_upgrade_headers_is_refused() {
    let state = state();
    let addr = start_http(&state).await;
    let reply = bounded(exchange(
        addr,
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    ))
    .await;
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    let body = reply.split("\r\n\r\n").nth(1).unwrap();
    let envelope: Value = serde_json::from_str(body).unwrap();
    assert_eq!(envelope["error"]["code"], -32600);
    assert_eq!(envelope["id"], Value::Null);
}

/// An answer over the cap is not sent: the call is answered `-32008` with its id, and the
/// connection goes on.
#[tokio::test]
async fn an_answer_over_the_cap_is_an_error_answer_to_its_call() {
    let mut methods = Methods::new();
    big(&mut methods);
    let server = WsServer::builder(methods)
        .settings(WsSettings::new().max_message_size(1024))
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"big","params":[10],"id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], "xxxxxxxxxx");
    ws.send_text(r#"{"jsonrpc":"2.0","method":"big","params":[100000],"id":2}"#)
        .await;
    let refused = ws.next_json().await;
    assert_eq!(refused["error"]["code"], -32008, "{refused}");
    assert_eq!(refused["id"], 2, "{refused}");
    ws.send_text(r#"{"jsonrpc":"2.0","method":"big","params":[3],"id":3}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], "xxx");
}

#[tokio::test(start_paused = true)]
async fn at_max_connections_the_next_client_waits_until_one_closes() {
    let state = state();
    let server = WsServer::builder(methods(&state))
        .max_connections(1)
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let mut first = RawWs::connect(addr, "/", &[]).await;
    let second = tokio::spawn(async move { RawWs::connect(addr, "/", &[]).await });
    // The second client waits in the backlog: its handshake is not even read.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!second.is_finished());
    assert_eq!(server.shutdown_handle().connections(), 1);
    first.send_frame(CLOSE, &1000_u16.to_be_bytes()).await;
    let mut second = bounded(second).await.unwrap();
    second
        .send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
        .await;
    assert_eq!(second.next_json().await["result"], 3);
}

#[tokio::test]
async fn a_server_built_with_another_s_shutdown_drains_with_it() {
    let state = state();
    let first = WsServer::builder(methods(&state)).build().unwrap();
    let second = WsServer::builder(methods(&state))
        .shutdown_with(&first.shutdown_handle())
        .build()
        .unwrap();
    let (a, serving_a) = serve_ws(first.clone()).await;
    let (b, serving_b) = serve_ws(second.clone()).await;
    let mut on_a = RawWs::connect(a, "/", &[]).await;
    let mut on_b = RawWs::connect(b, "/", &[]).await;
    eventually(|| first.shutdown_handle().connections() == 2).await;
    let drained = bounded(second.shutdown_handle().shutdown()).await;
    assert_eq!(drained, jrpc_runtime::server::Drained::Complete);
    assert_eq!(on_a.close_code().await, 1001);
    assert_eq!(on_b.close_code().await, 1001);
    bounded(serving_a).await.unwrap();
    bounded(serving_b).await.unwrap();
}
