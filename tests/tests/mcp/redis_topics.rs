//! Topics across replicas, against a real `redis-server`: two servers on one Redis (delivery,
//! no duplicates, unsubscribe on disconnect), Redis killed and started again, Redis cut off from
//! one replica (publishes held, the oldest dropped), and the errors of `connect`.
//!
//! No test waits a fixed time or checks one: each waits for the event it expects, within
//! [`jrpc_tests::LIMIT`]. A duplicate shows up as the wrong next message: every connection's
//! notifications are read in order, and each test ends with a "fence" published from the other
//! replica, which Redis delivers after any echo of what came before it.

use std::net::SocketAddr;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::{RedisConnectError, Topics};
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller as _, ClientError, Context, Methods, RpcError};
use jrpc_tests::redis::{Proxy, RedisServer, free_port};
use jrpc_tests::servers::serve_http;
use jrpc_tests::{bounded, eventually, fixtures};
use tokio::sync::mpsc;

fn methods() -> Methods {
    let mut methods = Methods::new();
    fixtures::watch(&mut methods);
    fixtures::add(&mut methods);
    methods
        .register(
            "announce",
            &["topic", "text"],
            |(topic, text): (String, String), ctx: Context| async move {
                let topics = ctx.topics().ok_or_else(|| RpcError::new(1, "no topics"))?;
                topics
                    .publish(&topic, "news", [text])
                    .map_err(|err| RpcError::new(2, err.to_string()))
            },
        )
        .unwrap();
    methods
        .register_subscription(
            "subscribe_news",
            &[],
            "news_item",
            "unsubscribe_news",
            |(): (), ctx: Context| {
                let items = ctx.topics().map(|topics| topics.items::<String>("news"));
                async move { items.ok_or_else(|| RpcError::new(1, "no topics")) }
            },
        )
        .unwrap();
    methods
}

/// A replica: an HTTP and WebSocket server whose topics are shared through Redis at `url`.
async fn replica(topics: Topics) -> SocketAddr {
    let server = HttpServer::builder(methods())
        .topics(topics)
        .build()
        .unwrap();
    serve_http(server).await.0
}

async fn connect(url: &str, prefix: &str) -> Topics {
    bounded(Topics::redis(url).channel_prefix(prefix).connect())
        .await
        .unwrap()
}

/// A WebSocket client of `addr` watching `news` (twice: the second changes nothing), its `news`
/// notifications in a channel.
async fn watcher(addr: SocketAddr) -> (WsClient, mpsc::UnboundedReceiver<String>) {
    let mut handlers = Methods::new();
    let rx = fixtures::news(&mut handlers);
    let client = bounded(WsClient::connect(&format!("ws://{addr}/ws"), handlers))
        .await
        .unwrap();
    let added: bool = bounded(client.call("watch", ["news"])).await.unwrap();
    assert!(added);
    let again: bool = bounded(client.call("watch", ["news"])).await.unwrap();
    assert!(!again, "a second watch of one topic changes nothing");
    (client, rx)
}

async fn announce(client: &WsClient, text: &str) -> usize {
    bounded(client.call("announce", ["news", text]))
        .await
        .unwrap()
}

/// The next notification, which must be `expected`.
async fn next_is(news: &mut mpsc::UnboundedReceiver<String>, expected: &str) {
    assert_eq!(bounded(news.recv()).await.as_deref(), Some(expected));
}

fn status(topics: &Topics) -> jrpc_runtime::server::RedisStatus {
    topics.redis_status().expect("a registry on Redis")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_redis() {
    let Some(redis) = RedisServer::start("two_replicas_share_one_redis") else {
        return;
    };
    let a_topics = connect(&redis.url(), "share:").await;
    let b_topics = connect(&redis.url(), "share:").await;
    assert!(Topics::new().redis_status().is_none());
    let a = replica(a_topics.clone()).await;
    let b = replica(b_topics.clone()).await;
    let (a1, mut a1_news) = watcher(a).await;
    let (b1, mut b1_news) = watcher(b).await;
    let (b2, mut b2_news) = watcher(b).await;
    assert_eq!(b_topics.subscribers("news"), 2);
    // One Redis subscription per replica, however many connections watch.
    assert_eq!(redis.subscribers("share:news"), Some(2));
    assert_eq!(status(&b_topics).channels, 1);

    // Published on A: A's watcher gets it locally, B's through Redis; each once.
    assert_eq!(announce(&a1, "first").await, 1, "A has one watcher");
    for news in [&mut a1_news, &mut b1_news, &mut b2_news] {
        next_is(news, "first").await;
    }
    // Fences from B then A: an echo of "first" at A, or of "fence" at B, would come before them.
    // (Each is awaited everywhere before the next: a replica's own watchers get its publishes
    // at once, so two publishes from two replicas may arrive in either order.)
    assert_eq!(announce(&b1, "fence").await, 2);
    for news in [&mut a1_news, &mut b1_news, &mut b2_news] {
        next_is(news, "fence").await;
    }
    assert_eq!(announce(&a1, "fence 2").await, 1);
    for news in [&mut a1_news, &mut b1_news, &mut b2_news] {
        next_is(news, "fence 2").await;
    }

    // B's watchers disconnect: B leaves the topic, and its Redis channel.
    drop(b1);
    drop(b2);
    eventually(|| b_topics.subscribers("news") == 0).await;
    eventually(|| status(&b_topics).channels == 0).await;
    eventually(|| redis.subscribers("share:news") == Some(1)).await;
    assert_eq!(bounded(b1_news.recv()).await, None);
    // A goes on.
    assert_eq!(announce(&a1, "after").await, 1);
    next_is(&mut a1_news, "after").await;
    assert_eq!(status(&a_topics).dropped, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_resumes_after_redis_restarts() {
    let Some(mut redis) = RedisServer::start("delivery_resumes_after_redis_restarts") else {
        return;
    };
    let a_topics = connect(&redis.url(), "restart:").await;
    let b_topics = connect(&redis.url(), "restart:").await;
    let a = replica(a_topics.clone()).await;
    let b = replica(b_topics.clone()).await;
    let (a1, mut a1_news) = watcher(a).await;
    let (b1, mut b1_news) = watcher(b).await;
    announce(&a1, "before").await;
    next_is(&mut a1_news, "before").await;
    next_is(&mut b1_news, "before").await;

    redis.kill();
    eventually(|| !status(&a_topics).connected && !status(&b_topics).connected).await;
    // Calls and A's own topics go on without Redis; a new watcher joins locally.
    let five: i64 = bounded(a1.call("add", [2, 3])).await.unwrap();
    assert_eq!(five, 5);
    let (_a2, mut a2_news) = watcher(a).await;
    assert_eq!(announce(&a1, "during").await, 2);
    next_is(&mut a1_news, "during").await;
    next_is(&mut a2_news, "during").await;

    redis.restart();
    let linked = |topics: &Topics| {
        let status = status(topics);
        status.connected && status.channels == 1
    };
    eventually(|| linked(&a_topics) && linked(&b_topics)).await;
    eventually(|| status(&a_topics).queued == 0).await;
    // Both replicas are subscribed again: deliveries resume, once each.
    assert_eq!(announce(&a1, "after").await, 2);
    next_is(&mut a1_news, "after").await;
    next_is(&mut a2_news, "after").await;
    // "during" was held by A and sent on its reconnection: B got it only if it had subscribed
    // again by then, which the docs allow either way.
    let mut got = bounded(b1_news.recv()).await;
    if got.as_deref() == Some("during") {
        got = bounded(b1_news.recv()).await;
    }
    assert_eq!(got.as_deref(), Some("after"));
    // A fence from B: no echo of A's own held publish reached A's watchers.
    announce(&b1, "fence").await;
    next_is(&mut a1_news, "fence").await;
    next_is(&mut a2_news, "fence").await;
    next_is(&mut b1_news, "fence").await;
    assert_eq!(status(&a_topics).dropped, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_are_held_while_redis_is_cut_off_and_the_oldest_dropped() {
    let Some(redis) = RedisServer::start("publishes_are_held") else {
        return;
    };
    let proxy = Proxy::start(redis.port).await;
    let a_topics = bounded(
        Topics::redis(proxy.url())
            .channel_prefix("held:")
            .queue(3)
            .connect(),
    )
    .await
    .unwrap();
    let b_topics = connect(&redis.url(), "held:").await;
    let a = replica(a_topics.clone()).await;
    let b = replica(b_topics.clone()).await;
    let (_a1, mut a1_news) = watcher(a).await;
    let (b1, mut b1_news) = watcher(b).await;

    proxy.cut();
    eventually(|| !status(&a_topics).connected).await;
    for n in 1..=5 {
        let reached = a_topics
            .publish("news", "news", [format!("held {n}")])
            .unwrap();
        assert_eq!(reached, 1, "A's own watcher gets it at once");
        next_is(&mut a1_news, &format!("held {n}")).await;
    }
    let held = status(&a_topics);
    assert_eq!((held.queued, held.dropped), (3, 2));

    // B stayed subscribed all along: it gets exactly what A still held, in order.
    proxy.restore();
    eventually(|| status(&a_topics).queued == 0).await;
    for n in 3..=5 {
        next_is(&mut b1_news, &format!("held {n}")).await;
    }
    a_topics.publish("news", "news", ["fence"]).unwrap();
    next_is(&mut b1_news, "fence").await;
    next_is(&mut a1_news, "fence").await;
    announce(&b1, "fence 2").await;
    next_is(&mut a1_news, "fence 2").await;
    assert_eq!(status(&a_topics).dropped, 2);
}

#[tokio::test]
async fn connect_names_the_url_and_the_bad_setting() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let err = bounded(Topics::redis(url.as_str()).connect())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RedisConnectError::Unreachable { url: named, .. } if *named == url),
        "{err:?}"
    );
    assert!(err.to_string().contains(&url), "{err}");

    let err = bounded(Topics::redis("http://127.0.0.1:1").connect())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RedisConnectError::InvalidUrl { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("http://127.0.0.1:1"), "{err}");

    let err = bounded(Topics::redis("redis://ada:secret@127.0.0.1:1").connect())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("redis://ada:***@127.0.0.1:1"),
        "{err}"
    );
    assert!(!err.to_string().contains("secret"), "{err}");

    let key = |builder: jrpc_runtime::server::RedisTopicsBuilder| async move {
        match builder.connect().await {
            Err(RedisConnectError::Config(err)) => err.key(),
            other => panic!("{other:?}"),
        }
    };
    let b = || Topics::redis(url.as_str());
    let zero = std::time::Duration::ZERO;
    assert_eq!(key(b().queue(0)).await, "queue");
    assert_eq!(key(b().max_message_size(0)).await, "max_message_size");
    assert_eq!(key(b().connect_timeout(zero)).await, "connect_timeout");
    assert_eq!(key(b().call_timeout(zero)).await, "call_timeout");
    assert_eq!(key(b().ping_interval(Some(zero))).await, "ping_interval");
    assert_eq!(
        key(b().max_reconnect_delay(zero)).await,
        "max_reconnect_delay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_cap_reaches_no_one() {
    let Some(redis) = RedisServer::start("a_message_over_the_cap_reaches_no_one") else {
        return;
    };
    let topics = bounded(
        Topics::redis(redis.url())
            .channel_prefix("cap:")
            .max_message_size(100)
            .connect(),
    )
    .await
    .unwrap();
    let addr = replica(topics.clone()).await;
    let (_a1, mut news) = watcher(addr).await;
    let err = topics
        .publish("news", "news", ["x".repeat(100)])
        .unwrap_err();
    assert!(
        matches!(err, ClientError::TooLong { limit: 100, got } if got > 100),
        "{err:?}"
    );
    assert_eq!(status(&topics).queued, 0);
    topics.publish("news", "news", ["small"]).unwrap();
    next_is(&mut news, "small").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_fed_from_topics_gets_what_any_replica_publishes() {
    use futures_util::StreamExt as _;
    use jrpc_runtime::Subscriber as _;
    let Some(redis) = RedisServer::start("a_subscription_fed_from_topics") else {
        return;
    };
    let a_topics = connect(&redis.url(), "feed:").await;
    let b_topics = connect(&redis.url(), "feed:").await;
    let a = replica(a_topics.clone()).await;
    let b = replica(b_topics.clone()).await;
    let client = |addr: SocketAddr| async move {
        bounded(WsClient::connect(
            &format!("ws://{addr}/ws"),
            Methods::new(),
        ))
        .await
        .unwrap()
    };
    let (a1, b1) = (client(a).await, client(b).await);
    let (method, notification, unsubscribe) = ("subscribe_news", "news_item", "unsubscribe_news");
    let mut on_a = bounded(a1.subscribe::<[String; 1]>(method, (), notification, unsubscribe))
        .await
        .unwrap();
    let mut on_b = bounded(b1.subscribe::<[String; 1]>(method, (), notification, unsubscribe))
        .await
        .unwrap();
    let mut on_b2 = bounded(b1.subscribe::<[String; 1]>(method, (), notification, unsubscribe))
        .await
        .unwrap();
    assert_ne!(on_b.id(), on_b2.id(), "each subscription has its own id");
    bounded(b_topics.ready("news")).await;
    bounded(a_topics.ready("news")).await;
    // Published on A (`announce` publishes `[text]`): each subscription gets it once, A's
    // locally, B's through Redis.
    assert_eq!(announce(&a1, "first").await, 1);
    for sub in [&mut on_a, &mut on_b, &mut on_b2] {
        assert_eq!(bounded(sub.next()).await.unwrap().unwrap(), ["first"]);
    }
    assert_eq!(announce(&b1, "second").await, 2);
    for sub in [&mut on_a, &mut on_b, &mut on_b2] {
        assert_eq!(bounded(sub.next()).await.unwrap().unwrap(), ["second"]);
    }
    // Unsubscribed: B's registry forgets one of its two.
    assert!(bounded(on_b2.unsubscribe()).await.unwrap());
    eventually(|| b_topics.subscribers("news") == 1).await;
}
