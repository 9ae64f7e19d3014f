//! Subscriptions fed from a topic (`Topics::items`), several on one connection: they read the
//! feed together, yet each gets every item published after its handler asked for the feed, once,
//! under its own id, and leaves on its own.

use futures_util::StreamExt as _;
use jrpc_runtime::server::Topics;
use jrpc_runtime::ws::{WsClient, WsServer};
use jrpc_runtime::{Caller as _, Methods, RpcError, Subscriber as _, Subscription, WhenFull};
use jrpc_tests::servers::serve_ws;
use jrpc_tests::{bounded, eventually};

/// `subscribe_news(first, wait)`: the items of the topic `news`; with `first`, the handler
/// publishes it right after asking for the feed, before the call is answered; with `wait`, the
/// subscription waits for room rather than dropping its oldest.
fn methods(topics: &Topics) -> Methods {
    let feed = topics.clone();
    let mut methods = Methods::new();
    methods
        .register_subscription(
            "subscribe_news",
            &["first", "wait"],
            "news",
            "unsubscribe_news",
            move |(first, wait): (Option<String>, Option<bool>), _ctx| {
                let items = feed.items::<String>("news");
                if let Some(first) = first {
                    feed.publish("news", "news", first).unwrap();
                }
                let when_full = if wait == Some(true) {
                    WhenFull::Wait
                } else {
                    WhenFull::DropOldest
                };
                async move { Ok::<_, RpcError>(items.when_full(when_full)) }
            },
        )
        .unwrap();
    methods
}

/// Serves the methods fed from `topics` on a WebSocket; returns its address.
async fn serve(topics: &Topics) -> std::net::SocketAddr {
    let server = WsServer::builder(methods(topics))
        .topics(topics.clone())
        .build()
        .unwrap();
    serve_ws(server).await.0
}

async fn client(addr: std::net::SocketAddr) -> WsClient {
    bounded(WsClient::connect(&format!("ws://{addr}/"), Methods::new()))
        .await
        .unwrap()
}

async fn subscribe(client: &WsClient, first: Option<&str>, wait: bool) -> Subscription<String> {
    bounded(client.subscribe::<String>("subscribe_news", (first, wait), "news", "unsubscribe_news"))
        .await
        .unwrap()
}

async fn next(subscription: &mut Subscription<String>) -> String {
    bounded(subscription.next()).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_of_one_connection_read_a_topic_together_each_its_own() {
    let topics = Topics::new();
    let addr = serve(&topics).await;
    let (a, b) = (client(addr).await, client(addr).await);

    let mut one = subscribe(&a, Some("first"), false).await;
    assert_eq!(next(&mut one).await, "first");
    // The second joins the first's reading: what its handler published before its answer is its
    // first item, and the first subscription's next.
    let mut two = subscribe(&a, Some("second"), false).await;
    assert_eq!(next(&mut two).await, "second");
    assert_eq!(next(&mut one).await, "second");
    let mut three = subscribe(&b, None, false).await;
    // One that waits for room reads the feed alone, beside them.
    let mut four = subscribe(&a, None, true).await;
    assert_ne!(one.id(), two.id());

    assert_eq!(topics.subscribers("news"), 4);
    assert_eq!(topics.publish("news", "news", "third").unwrap(), 4);
    for subscription in [&mut one, &mut two, &mut three, &mut four] {
        assert_eq!(next(subscription).await, "third");
    }

    // One leaves; the others of its connection read on.
    assert!(bounded(one.unsubscribe()).await.unwrap());
    assert_eq!(topics.subscribers("news"), 3);
    assert_eq!(topics.publish("news", "news", "fourth").unwrap(), 3);
    for subscription in [&mut two, &mut three, &mut four] {
        assert_eq!(next(subscription).await, "fourth");
    }

    // A connection that goes takes its subscriptions, and the feed's receivers, with it.
    drop((two, four));
    drop(a);
    eventually(|| topics.subscribers("news") == 1).await;
    assert_eq!(topics.publish("news", "news", "fifth").unwrap(), 1);
    assert_eq!(next(&mut three).await, "fifth");
    drop(three);
    drop(b);
    eventually(|| topics.subscribers("news") == 0).await;
}

/// Checks that a connection's only subscription, visited at each poll of its task (its feed's
/// reading holding the task's own waker), gets every item published while the connection's calls
/// come and go, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_subscription_gets_every_item_while_its_connection_makes_calls() {
    let topics = Topics::new();
    let addr = serve(&topics).await;
    let a = client(addr).await;
    let mut one = subscribe(&a, None, false).await;
    for n in 0..200 {
        let call = a.call::<bool>("unsubscribe_news", ["0x0"]);
        topics.publish("news", "news", n.to_string()).unwrap();
        assert!(!bounded(call).await.unwrap());
        assert_eq!(next(&mut one).await, n.to_string());
    }
}

/// Past the 16 subscriptions whose wakes a connection rings by slot, the others are queued as they
/// wake; a slot freed by one that left goes to one that comes. Each gets every item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_with_more_subscriptions_than_slots_feeds_them_all() {
    let topics = Topics::new();
    let addr = serve(&topics).await;
    let a = client(addr).await;
    // Each waits for room, so each reads the feed alone: a lane and a producer each.
    let mut subscriptions = Vec::new();
    for _ in 0..70 {
        subscriptions.push(subscribe(&a, None, true).await);
    }
    assert_eq!(topics.publish("news", "news", "one").unwrap(), 70);
    for subscription in &mut subscriptions {
        assert_eq!(next(subscription).await, "one");
    }
    // Ten of the first leave (slots among them), and ten come.
    for subscription in subscriptions.drain(..10) {
        assert!(bounded(subscription.unsubscribe()).await.unwrap());
    }
    for _ in 0..10 {
        subscriptions.push(subscribe(&a, None, true).await);
    }
    for item in ["two", "three"] {
        assert_eq!(topics.publish("news", "news", item).unwrap(), 70);
        for subscription in &mut subscriptions {
            assert_eq!(next(subscription).await, item);
        }
    }
}
