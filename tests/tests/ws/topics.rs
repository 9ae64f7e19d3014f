//! Topics: three connections subscribe, one leaves (by closing, or by unsubscribing), and
//! publishing reaches exactly the ones still in.

use jrpc_runtime::server::{SubscribeError, Topics};
use jrpc_runtime::ws::{WsClient, WsServer};
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::serve_ws;
use jrpc_tests::{bounded, eventually, fixtures};
use serde_json::json;
use tokio::sync::mpsc;

fn methods() -> Methods {
    let mut methods = Methods::new();
    fixtures::watch(&mut methods);
    methods
        .register(
            "unwatch",
            &["topic"],
            |(topic,): (String,), ctx: Context| async move {
                Ok::<_, RpcError>(ctx.unsubscribe(&topic))
            },
        )
        .unwrap();
    methods
}

/// A client whose `news` notifications land in a channel.
async fn subscriber(url: &str) -> (WsClient, mpsc::UnboundedReceiver<String>) {
    let mut handlers = Methods::new();
    let rx = fixtures::news(&mut handlers);
    let client = bounded(WsClient::connect(url, handlers)).await.unwrap();
    let added: bool = bounded(client.call("watch", ["news"])).await.unwrap();
    assert!(added);
    let again: bool = bounded(client.call("watch", ["news"])).await.unwrap();
    assert!(!again, "a second subscription to one topic is a no-op");
    (client, rx)
}

#[tokio::test]
async fn publishing_reaches_the_subscribers_still_connected() {
    let topics = Topics::new();
    let server = WsServer::builder(methods())
        .topics(topics.clone())
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let url = format!("ws://{addr}/");

    let (a, mut a_news) = subscriber(&url).await;
    let (b, mut b_news) = subscriber(&url).await;
    let (c, mut c_news) = subscriber(&url).await;
    assert_eq!(topics.subscribers("news"), 3);
    assert_eq!(
        server.topics().publish("news", "news", ["first"]).unwrap(),
        3
    );
    for news in [&mut a_news, &mut b_news, &mut c_news] {
        assert_eq!(bounded(news.recv()).await.as_deref(), Some("first"));
    }

    // `b` closes its connection: it leaves the topic without a word.
    drop(b);
    eventually(|| topics.subscribers("news") == 2).await;
    assert_eq!(topics.publish("news", "news", ["second"]).unwrap(), 2);
    assert_eq!(bounded(a_news.recv()).await.as_deref(), Some("second"));
    assert_eq!(bounded(c_news.recv()).await.as_deref(), Some("second"));
    // `b`'s handlers are gone with its connection: its channel is closed and holds nothing more.
    assert_eq!(bounded(b_news.recv()).await, None);

    // `c` unsubscribes and stays connected.
    let removed: bool = bounded(c.call("unwatch", ["news"])).await.unwrap();
    assert!(removed);
    assert_eq!(
        server.topics().publish("news", "news", ["third"]).unwrap(),
        1
    );
    assert_eq!(bounded(a_news.recv()).await.as_deref(), Some("third"));
    let _: bool = bounded(c.call("unwatch", ["news"])).await.unwrap();
    assert!(c_news.try_recv().is_err(), "c got nothing after leaving");

    // Nobody left: the topic is gone.
    drop(a);
    eventually(|| topics.subscribers("news") == 0).await;
    assert!(topics.names().is_empty());
    assert_eq!(
        server.topics().publish("news", "news", ["fourth"]).unwrap(),
        0
    );
}

#[tokio::test]
async fn a_raw_client_sees_the_published_notification() {
    let server = WsServer::builder(methods()).build().unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"watch","params":["t"],"id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], true);
    assert_eq!(server.topics().subscribers("t"), 1);
    assert_eq!(
        server
            .topics()
            .publish("t", "tick", json!({"n": 1}))
            .unwrap(),
        1
    );
    assert_eq!(
        ws.next_json().await,
        json!({"jsonrpc": "2.0", "method": "tick", "params": {"n": 1}})
    );
}

#[tokio::test]
async fn subscribing_needs_a_connection_that_stays_open() {
    let topics = Topics::new();
    let ctx = Context::new(jrpc_runtime::Transport::Http).with_extension(topics.clone());
    assert_eq!(ctx.subscribe("x"), Err(SubscribeError::NoConnection));
    assert_eq!(
        topics.subscribe(&ctx, "x"),
        Err(SubscribeError::NoConnection)
    );
    assert!(!ctx.unsubscribe("x"));
    // Over HTTP the handler's error becomes a JSON-RPC error.
    let answer = methods()
        .handle(r#"{"jsonrpc":"2.0","method":"watch","params":["x"],"id":1}"#)
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32000);
}
