//! WebSocket on an `HttpServer`'s `/ws`: its `WsSettings` reach the connections, topics work
//! through the server, `map_context` shapes the connections' contexts, an upgraded connection
//! holds its `max_connections` slot until it closes, and one `max_message_size` covers both
//! paths.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use jrpc_runtime::http::{HttpClient, HttpServer, HttpServerBuilder};
use jrpc_runtime::server::Topics;
use jrpc_runtime::ws::{WsClient, WsSettings};
use jrpc_runtime::{Caller as _, ClientError, Context, ErrorCode, Methods, RpcError, Transport};
use jrpc_tests::fixtures::big;
use jrpc_tests::raw_http::post;
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::serve_http;
use jrpc_tests::{bounded, eventually};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};

/// The user an authentication step found, as `map_context` records it.
#[derive(Clone)]
struct User(String);

/// `hold` runs until `gate` gives a permit (and says it started on `started`); `echo` answers its
/// argument; `watch` subscribes; `whoami` tells what the context holds.
fn methods(gate: &Arc<Semaphore>, started: mpsc::UnboundedSender<()>) -> Methods {
    let mut methods = Methods::new();
    let gate = Arc::clone(gate);
    methods
        .register("hold", &[], move |(): (), _| {
            let (gate, started) = (Arc::clone(&gate), started.clone());
            async move {
                let _ = started.send(());
                let _permit = gate.acquire().await;
                Ok::<_, RpcError>("released")
            }
        })
        .unwrap();
    methods
        .register("echo", &["text"], |(text,): (String,), _| async move {
            Ok::<_, RpcError>(text)
        })
        .unwrap();
    methods
        .register("watch", &["topic"], |(topic,): (String,), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.subscribe(&topic)?)
        })
        .unwrap();
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(json!({
                "user": ctx.extension::<User>().map(|user| user.0.clone()),
                "websocket": ctx.transport() == Transport::WebSocket,
                "tag": ctx.request_tag(),
                "has_headers": ctx.headers().is_some(),
            }))
        })
        .unwrap();
    methods
}

fn plain_methods() -> Methods {
    let (started, _) = mpsc::unbounded_channel();
    methods(&Arc::new(Semaphore::new(0)), started)
}

/// Serves `builder` on a fresh port; returns its address and the server.
async fn serve(builder: HttpServerBuilder) -> (SocketAddr, HttpServer) {
    let server = builder.build().expect("valid settings");
    let (addr, _) = serve_http(server.clone()).await;
    (addr, server)
}

#[tokio::test]
async fn websocket_settings_reach_the_connections() {
    bounded(async {
        let gate = Arc::new(Semaphore::new(0));
        let (started_tx, mut started) = mpsc::unbounded_channel();
        let settings = WsSettings::new().max_in_flight(1).max_message_size(200);
        let (addr, _server) =
            serve(HttpServer::builder(methods(&gate, started_tx)).websocket(settings)).await;
        let mut ws = RawWs::connect(addr, "/ws", &[]).await;

        // One call running fills the in-flight cap of 1: the next is refused at once, while the
        // first still runs.
        ws.send_text(r#"{"jsonrpc":"2.0","method":"hold","id":1}"#)
            .await;
        started.recv().await.expect("hold started");
        ws.send_text(r#"{"jsonrpc":"2.0","method":"echo","params":["x"],"id":2}"#)
            .await;
        let refused = ws.next_json().await;
        assert_eq!(refused["id"], 2, "{refused}");
        assert_eq!(refused["error"]["code"], -32000, "{refused}");
        gate.add_permits(1);
        assert_eq!(
            ws.next_json().await,
            json!({"jsonrpc": "2.0", "result": "released", "id": 1})
        );

        // A message over the 200-byte cap closes the connection with 1009.
        let long = format!(
            r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":3}}"#,
            "x".repeat(300)
        );
        ws.send_text(&long).await;
        assert_eq!(ws.close_code().await, 1009);

        // The same message passes on a server left at the defaults (4 MiB).
        let (addr, _server) = serve(HttpServer::builder(plain_methods())).await;
        let mut ws = RawWs::connect(addr, "/ws", &[]).await;
        ws.send_text(&long).await;
        assert_eq!(ws.next_json().await["id"], 3);
    })
    .await;
}

/// A client may send its first frames right behind the upgrade request: hyper reads them with
/// the request, and they are the socket's first bytes, read before the stream's (the socket runs
/// on the TCP stream itself, not on hyper's upgraded connection).
#[tokio::test]
async fn frames_sent_with_the_upgrade_request_are_read_first() {
    bounded(async {
        let (addr, _server) = serve(HttpServer::builder(plain_methods())).await;
        let mut ws = RawWs::connect_sending(
            addr,
            "/ws",
            &[],
            &[
                r#"{"jsonrpc":"2.0","method":"echo","params":["first"],"id":1}"#,
                r#"{"jsonrpc":"2.0","method":"echo","params":["second"],"id":2}"#,
            ],
        )
        .await;
        assert_eq!(
            ws.next_json().await,
            json!({"jsonrpc": "2.0", "result": "first", "id": 1})
        );
        assert_eq!(
            ws.next_json().await,
            json!({"jsonrpc": "2.0", "result": "second", "id": 2})
        );
        // And what comes after, from the stream.
        ws.send_text(r#"{"jsonrpc":"2.0","method":"echo","params":["third"],"id":3}"#)
            .await;
        assert_eq!(ws.next_json().await["result"], "third");
    })
    .await;
}

#[tokio::test]
async fn a_bad_websocket_setting_is_named_at_build() {
    // Not longer than the default ping interval (30 s).
    let err = HttpServer::builder(Methods::new())
        .websocket(WsSettings::new().idle_timeout(Some(Duration::from_secs(10))))
        .build()
        .map(drop)
        .unwrap_err();
    assert_eq!(err.key(), "idle_timeout", "{err}");
    let err = HttpServer::builder(Methods::new())
        .websocket(WsSettings::new().queue(0))
        .build()
        .map(drop)
        .unwrap_err();
    assert_eq!(err.key(), "queue");
}

/// A connection to `/ws` subscribed to `news`.
async fn subscriber(addr: SocketAddr) -> RawWs {
    let mut ws = RawWs::connect(addr, "/ws", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"watch","params":["news"],"id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], true);
    ws
}

fn news(headline: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "news", "params": [headline]})
}

#[tokio::test]
async fn publishing_through_the_http_server_reaches_the_subscribers_left() {
    bounded(async {
        let topics = Topics::new();
        let (addr, server) =
            serve(HttpServer::builder(plain_methods()).topics(topics.clone())).await;

        let mut a = subscriber(addr).await;
        let b = subscriber(addr).await;
        let mut c = subscriber(addr).await;
        assert_eq!(server.topics().subscribers("news"), 3);
        assert_eq!(
            topics.subscribers("news"),
            3,
            "the registry given is the one used"
        );
        assert_eq!(
            server.topics().publish("news", "news", ["first"]).unwrap(),
            3
        );
        assert_eq!(a.next_json().await, news("first"));
        assert_eq!(c.next_json().await, news("first"));

        // `b` closes its connection: it leaves the topic without a word.
        drop(b);
        eventually(|| server.topics().subscribers("news") == 2).await;
        assert_eq!(
            server.topics().publish("news", "news", ["second"]).unwrap(),
            2
        );
        assert_eq!(a.next_json().await, news("second"));
        assert_eq!(c.next_json().await, news("second"));

        // Over `POST /rpc` there is no connection to subscribe.
        let http = HttpClient::new(&format!("http://{addr}/rpc")).unwrap();
        let params = serde_json::value::to_raw_value(&["news"]).ok();
        match http.call_raw("watch", params).await {
            Err(ClientError::Failed(err)) => assert_eq!(err.code(), ErrorCode::SERVER_ERROR),
            other => panic!("expected -32000, got {other:?}"),
        }
        assert_eq!(server.topics().subscribers("news"), 2);
    })
    .await;
}

#[tokio::test]
async fn map_context_shapes_websocket_contexts() {
    bounded(async {
        let builder = HttpServer::builder(plain_methods()).map_context(|req, ctx| {
            match req.headers.get("x-user").and_then(|v| v.to_str().ok()) {
                Some(name) => ctx.with_extension(User(name.to_owned())),
                None => ctx,
            }
        });
        let (addr, _server) = serve(builder).await;
        let whoami = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;

        let mut ada =
            RawWs::connect(addr, "/ws", &[("x-user", "ada"), ("x-request-id", "t-1")]).await;
        ada.send_text(whoami).await;
        let seen = ada.next_json().await;
        assert_eq!(
            seen["result"],
            json!({"user": "ada", "websocket": true, "tag": "t-1", "has_headers": true}),
            "{seen}"
        );
        // The context is the connection's: every call on it sees the same user.
        ada.send_text(whoami).await;
        assert_eq!(ada.next_json().await["result"]["user"], "ada");

        let mut anonymous = RawWs::connect(addr, "/ws", &[]).await;
        anonymous.send_text(whoami).await;
        assert_eq!(anonymous.next_json().await["result"]["user"], json!(null));
    })
    .await;
}

#[tokio::test]
async fn an_upgraded_connection_holds_its_max_connections_slot() {
    bounded(async {
        let (addr, _server) = serve(HttpServer::builder(plain_methods()).max_connections(1)).await;
        let mut ws = RawWs::connect(addr, "/ws", &[]).await;
        ws.send_text(r#"{"jsonrpc":"2.0","method":"echo","params":["up"],"id":1}"#)
            .await;
        assert_eq!(ws.next_json().await["result"], "up");

        // The kernel takes the second connection, but the server does not while the WebSocket
        // holds the only slot: the request waits unanswered.
        let mut second = TcpStream::connect(addr).await.unwrap();
        let request = post(
            "/rpc",
            Some("application/json"),
            "connection: close\r\n",
            r#"{"jsonrpc":"2.0","method":"echo","params":["later"],"id":2}"#,
        );
        second.write_all(&request).await.unwrap();
        let mut byte = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(300), second.read(&mut byte)).await;
        assert!(early.is_err(), "answered while the WebSocket was open");

        // Once the WebSocket closes, its slot goes to the waiting connection.
        drop(ws);
        let mut answer = Vec::new();
        second.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8(answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.ends_with(r#"{"jsonrpc":"2.0","result":"later","id":2}"#),
            "{answer}"
        );
    })
    .await;
}

/// One `max_message_size`, set on the HTTP server, covers its `/ws` too: an answer over it is
/// [`ClientError::AnswerTooLarge`] to its call on both paths, and the WebSocket connection goes
/// on serving.
#[tokio::test]
async fn one_message_cap_covers_http_and_its_websocket_path() {
    bounded(async {
        let mut methods = plain_methods();
        big(&mut methods);
        let (addr, _server) = serve(HttpServer::builder(methods).max_message_size(1000)).await;
        let http = HttpClient::new(&format!("http://{addr}/rpc")).unwrap();
        let ws = WsClient::connect(&format!("ws://{addr}/ws"), Methods::new())
            .await
            .unwrap();
        let over_http = http.call::<String>("big", [5000]).await;
        let over_ws = ws.call::<String>("big", [5000]).await;
        for answer in [over_http, over_ws] {
            match answer {
                Err(ClientError::AnswerTooLarge(err)) => {
                    assert_eq!(err.code(), ErrorCode::RESPONSE_TOO_LARGE);
                }
                other => panic!("expected AnswerTooLarge, got {other:?}"),
            }
        }
        let fits: String = ws.call("big", [900]).await.unwrap();
        assert_eq!(fits.len(), 900);
    })
    .await;
}
