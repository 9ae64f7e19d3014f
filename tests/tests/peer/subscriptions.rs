//! Subscriptions on a `Peer`: the answer before the first item, unsubscribe scoped to the
//! connection, each policy of a full bound, the cap, and the producers dropped with the
//! connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::stream;
use jrpc_runtime::server::Topics;
use jrpc_runtime::{Items, Methods, PeerConfig, RpcError, WhenFull};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;

use jrpc_tests::fixtures::Alive;

use crate::duplex::{bounded, lines_peer, narrow_lines_peer};

/// `count(to)`: items 0 .. to; `forever`: an item each time the stream is polled, counting in
/// `alive` while its producer lives.
fn counting(alive: &Arc<AtomicUsize>) -> Methods {
    let mut methods = Methods::new();
    methods
        .register_subscription(
            "subscribe_count",
            &["to"],
            "count",
            "unsubscribe_count",
            |(to,): (u64,), _ctx| async move { Ok::<_, RpcError>(Items::new(stream::iter(0..to))) },
        )
        .unwrap();
    let alive = Arc::clone(alive);
    methods
        .register_subscription(
            "subscribe_forever",
            &[],
            "tick",
            "unsubscribe_count",
            move |(): (), _ctx| {
                let guard = Alive::new(&alive);
                async move {
                    Ok::<_, RpcError>(Items::new(stream::unfold(
                        (0u64, guard),
                        |(n, guard)| async move {
                            tokio::task::yield_now().await;
                            Some((n, (n + 1, guard)))
                        },
                    )))
                }
            },
        )
        .unwrap();
    methods
}

#[tokio::test]
async fn the_answer_precedes_the_items_and_unsubscribe_is_scoped() {
    bounded(async {
        let alive = Arc::default();
        let (_a, mut raw) = lines_peer(counting(&alive), PeerConfig::default());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "subscribe_count", "params": [3], "id": 1}))
            .await;
        let answer = raw.recv().await;
        assert_eq!(answer["id"], 1);
        let sub = answer["result"].clone();
        assert!(sub.as_str().is_some_and(|id| id.starts_with("0x")), "{answer}");
        for n in 0..3 {
            assert_eq!(
                raw.recv().await,
                json!({"jsonrpc": "2.0", "method": "count", "params": {"subscription": sub, "result": n}})
            );
        }
        // It ended with its last item: unsubscribing it now answers false.
        raw.send_json(json!({"jsonrpc": "2.0", "method": "unsubscribe_count", "params": [sub], "id": 2}))
            .await;
        assert_eq!(raw.recv().await["result"], false);
    })
    .await;
}

#[tokio::test]
async fn unsubscribe_ends_a_live_subscription_and_drops_its_producer() {
    bounded(async {
        let alive = Arc::new(AtomicUsize::new(0));
        let (_a, mut raw) = lines_peer(counting(&alive), PeerConfig::default());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "subscribe_forever", "id": 1}))
            .await;
        let sub = raw.recv().await["result"].clone();
        assert_eq!(raw.recv().await["params"]["result"], 0);
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "unsubscribe_count", "params": [sub], "id": 2}),
        )
        .await;
        loop {
            let message = raw.recv().await;
            if message.get("id").is_some() {
                assert_eq!(message, json!({"jsonrpc": "2.0", "result": true, "id": 2}));
                break;
            }
            assert_eq!(message["method"], "tick");
        }
        assert_eq!(alive.load(Ordering::SeqCst), 0);
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "unsubscribe_count", "params": [sub], "id": 3}),
        )
        .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": false, "id": 3})
        );
    })
    .await;
}

/// `flood(to)`: items 0 .. to, as fast as the lane takes them, under `when_full` and a bound of
/// four items; `produced` counts the items made.
fn flooding(when_full: WhenFull, produced: &Arc<AtomicUsize>, alive: &Arc<AtomicUsize>) -> Methods {
    let mut methods = Methods::new();
    jrpc_tests::fixtures::add(&mut methods);
    let (produced, alive) = (Arc::clone(produced), Arc::clone(alive));
    methods
        .register_subscription(
            "flood",
            &["to"],
            "item",
            "unflood",
            move |(to,): (usize,), _ctx| {
                let produced = Arc::clone(&produced);
                let guard = Alive::new(&alive);
                async move {
                    let items = stream::unfold((0, guard), move |(n, guard)| {
                        let produced = Arc::clone(&produced);
                        async move {
                            (n < to).then(|| {
                                produced.fetch_add(1, Ordering::SeqCst);
                                (n, (n + 1, guard))
                            })
                        }
                    });
                    Ok::<_, RpcError>(Items::new(items).bound(4, 64 * 1024).when_full(when_full))
                }
            },
        )
        .unwrap();
    methods
}

/// A small watermark, so that a client that does not read fills it soon; no write timeout, so
/// that the paused clock does not close the connection while the test does not read.
fn small() -> PeerConfig {
    PeerConfig::builder()
        .max_buffered(4096)
        .write_timeout(None)
        .build()
        .unwrap()
}

/// Reads the flood's notifications up to the answer of call `id` (or the end of input): the items,
/// and the error notification if one came.
async fn drain(raw: &mut crate::duplex::RawLines, id: u64) -> (Vec<u64>, Option<Value>) {
    let (mut items, mut error) = (Vec::new(), None);
    while let Some(message) = raw.next().await {
        if message["id"] == id {
            break;
        }
        match message["params"].get("result") {
            Some(item) => items.push(item.as_u64().unwrap()),
            None => error = Some(message["params"]["error"].clone()),
        }
    }
    (items, error)
}

#[tokio::test(start_paused = true)]
async fn a_subscription_that_falls_behind_lags_and_the_connection_goes_on() {
    bounded(async {
        let (produced, alive) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
        let methods = flooding(WhenFull::Lag, &produced, &alive);
        let (_a, mut raw) = lines_peer(methods, small());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "flood", "params": [1_000_000], "id": 1}))
            .await;
        assert!(raw.recv().await["result"].is_string());
        // Not read: the pipe, the watermark and the lane fill, and the subscription lags.
        jrpc_tests::eventually(|| alive.load(Ordering::SeqCst) == 0).await;
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        let (items, error) = drain(&mut raw, 2).await;
        assert_eq!(
            items,
            (0..items.len() as u64).collect::<Vec<_>>(),
            "in order, no gap"
        );
        let error = error.expect("an error notification");
        assert_eq!(error["code"], -32005);
        assert_eq!(error["message"], "Subscription lagged");
        assert_eq!(error["data"], json!({"items": 4, "bytes": 65536}));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_waiting_subscription_pauses_its_producer_and_loses_nothing() {
    bounded(async {
        let (produced, alive) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let methods = flooding(WhenFull::Wait, &produced, &alive);
        let (_a, mut raw) = lines_peer(methods, small());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "flood", "params": [5000], "id": 1}))
            .await;
        assert!(raw.recv().await["result"].is_string());
        // On the paused clock this returns once nothing else can run: the producer waits.
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        assert!(produced.load(Ordering::SeqCst) < 5000);
        assert_eq!(alive.load(Ordering::SeqCst), 1);
        let mut seen = Vec::new();
        while seen.len() < 5000 {
            seen.push(raw.recv().await["params"]["result"].as_u64().unwrap());
        }
        assert_eq!(seen, (0..5000).collect::<Vec<_>>());
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn dropping_the_oldest_keeps_the_newest_in_order() {
    bounded(async {
        let (produced, alive) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let methods = flooding(WhenFull::DropOldest, &produced, &alive);
        let (_a, mut raw) = lines_peer(methods, small());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "flood", "params": [20_000], "id": 1}))
            .await;
        assert!(raw.recv().await["result"].is_string());
        // The producer never waits: it makes every item while nothing is read.
        jrpc_tests::eventually(|| alive.load(Ordering::SeqCst) == 0).await;
        assert_eq!(produced.load(Ordering::SeqCst), 20_000);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        let (items, error) = drain(&mut raw, 2).await;
        assert!(error.is_none());
        assert!(items.windows(2).all(|pair| pair[0] < pair[1]), "in order");
        assert!(items.len() < 20_000, "some dropped");
        assert_eq!(items.last(), Some(&19_999), "the newest kept");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_subscription_may_close_its_connection_when_it_falls_behind() {
    bounded(async {
        let (produced, alive) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let methods = flooding(WhenFull::CloseConnection, &produced, &alive);
        let (a, mut raw) = lines_peer(methods, small());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "flood", "params": [1_000_000], "id": 1}))
            .await;
        assert!(raw.recv().await["result"].is_string());
        let ended = a.driver.await.unwrap();
        assert_eq!(ended.unwrap_err().kind(), std::io::ErrorKind::QuotaExceeded);
        assert_eq!(alive.load(Ordering::SeqCst), 0);
        // Closed while its pipe was full: the last line may be cut short. No error notification.
        let mut rest = String::new();
        raw.reader.read_to_string(&mut rest).await.unwrap();
        let mut lines: Vec<&str> = rest.split_inclusive('\n').collect();
        lines.pop_if(|last| !last.ends_with('\n'));
        for line in lines {
            let message: Value = serde_json::from_str(line).unwrap();
            assert!(message["params"].get("result").is_some(), "{message}");
        }
    })
    .await;
}

#[tokio::test]
async fn the_cap_refuses_a_subscription_past_it_with_the_limit_named() {
    bounded(async {
        let alive = Arc::default();
        let config = PeerConfig::builder().max_subscriptions(2).build().unwrap();
        let (_a, mut raw) = lines_peer(counting(&alive), config);
        for id in 1..=3 {
            raw.send_json(json!({"jsonrpc": "2.0", "method": "subscribe_forever", "id": id}))
                .await;
        }
        let mut answers = Vec::new();
        while answers.len() < 3 {
            let message = raw.recv().await;
            if message.get("id").is_some() {
                answers.push(message);
            }
        }
        let refused = answers.iter().find(|a| a["id"] == 3).unwrap();
        assert_eq!(refused["error"]["code"], -32005);
        assert_eq!(refused["error"]["data"], json!({"max_subscriptions": 2}));
        assert!(answers.iter().filter(|a| a["result"].is_string()).count() == 2);
    })
    .await;
}

#[tokio::test]
async fn producers_are_dropped_when_the_connection_closes() {
    bounded(async {
        let alive = Arc::new(AtomicUsize::new(0));
        let (a, mut raw) = lines_peer(counting(&alive), PeerConfig::default());
        for id in 1..=3 {
            raw.send_json(json!({"jsonrpc": "2.0", "method": "subscribe_forever", "id": id}))
                .await;
        }
        while alive.load(Ordering::SeqCst) < 3 {
            raw.recv().await;
        }
        drop(raw);
        a.driver.await.unwrap().unwrap();
        assert_eq!(alive.load(Ordering::SeqCst), 0);
    })
    .await;
}

#[tokio::test]
async fn a_subscription_needs_a_connection() {
    let alive = Arc::default();
    let methods = counting(&alive);
    let answer = methods
        .handle(r#"{"jsonrpc":"2.0","method":"subscribe_count","params":[1],"id":1}"#)
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32000);
    assert_eq!(
        answer["error"]["message"],
        "Subscriptions need a connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reads_typed_items_and_unsubscribes_when_it_drops_the_stream() {
    use futures_util::StreamExt as _;
    use jrpc_runtime::{Framing, Subscriber as _};
    bounded(async {
        let alive = Arc::new(AtomicUsize::new(0));
        let (a, _b) = crate::duplex::pair(
            Framing::Lines,
            (Methods::new(), PeerConfig::default()),
            (counting(&alive), PeerConfig::default()),
        );
        let mut count = a
            .peer
            .subscribe::<u64>("subscribe_count", [3], "count", "unsubscribe_count")
            .await
            .unwrap();
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(count.next().await.unwrap().unwrap());
        }
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(count.ended(), None);
        assert!(
            !count.unsubscribe().await.unwrap(),
            "it had ended with its last item"
        );

        let ticks = a
            .peer
            .subscribe::<u64>("subscribe_forever", (), "tick", "unsubscribe_count")
            .await
            .unwrap();
        let mut ticks = ticks;
        let mut firsts: Vec<u64> = Vec::new();
        while firsts.len() < 5 {
            match ticks.next().await {
                Some(item) => firsts.push(item.unwrap()),
                None => panic!("ended: {:?}", ticks.ended()),
            }
        }
        drop(ticks);
        assert_eq!(firsts, [0, 1, 2, 3, 4]);
        // Dropped: unsubscribed, and the server drops its producer.
        jrpc_tests::eventually(|| alive.load(Ordering::SeqCst) == 0).await;

        let ticks = a
            .peer
            .subscribe::<u64>("subscribe_forever", (), "tick", "unsubscribe_count")
            .await
            .unwrap();
        assert!(ticks.unsubscribe().await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn a_client_is_told_why_its_subscription_ended() {
    use futures_util::StreamExt as _;
    use jrpc_runtime::subscription::Ended;
    use jrpc_runtime::{Framing, Subscriber as _};
    bounded(async {
        let mut methods = Methods::new();
        methods
            .register_subscription(
                "failing",
                &[],
                "item",
                "unsubscribe",
                |(): (), _ctx| async {
                    let items =
                        stream::iter([Ok(1u8), Err(RpcError::new(7, "the source went away"))]);
                    Ok::<_, RpcError>(Items::fallible(items))
                },
            )
            .unwrap();
        let (a, b) = crate::duplex::pair(
            Framing::Lines,
            (Methods::new(), PeerConfig::default()),
            (methods, PeerConfig::default()),
        );
        let mut failing = a
            .peer
            .subscribe::<u8>("failing", (), "item", "unsubscribe")
            .await
            .unwrap();
        assert_eq!(failing.next().await.unwrap().unwrap(), 1);
        assert!(failing.next().await.is_none());
        assert_eq!(
            failing.ended(),
            Some(Ended::Server(RpcError::new(7, "the source went away")))
        );
        let mut other = a
            .peer
            .subscribe::<u8>("failing", (), "item", "unsubscribe")
            .await
            .unwrap();
        assert_eq!(other.next().await.unwrap().unwrap(), 1);
        b.driver.abort();
        drop(b.peer);
        while other.next().await.is_some() {}
        assert!(matches!(
            other.ended(),
            Some(Ended::Server(_) | Ended::Closed)
        ));
    })
    .await;
}

/// Subscriptions fed from a topic go straight out while nothing waits in their lanes; once the
/// client stops reading, items wait (the oldest dropped), and none of those published after
/// overtakes them: read again, each subscription's items come in order, up to the newest.
#[tokio::test(start_paused = true)]
async fn a_topic_subscription_that_falls_behind_keeps_its_order() {
    bounded(async {
        let topics = Topics::new();
        let mut methods = Methods::new();
        jrpc_tests::fixtures::add(&mut methods);
        let feed = topics.clone();
        methods
            .register_subscription("watch", &[], "item", "unwatch", move |(): (), _ctx| {
                let items = feed
                    .items::<u64>("numbers")
                    .bound(4, 64 * 1024)
                    .when_full(WhenFull::DropOldest);
                async move { Ok::<_, RpcError>(items) }
            })
            .unwrap();
        let (_a, mut raw) = narrow_lines_peer(methods, small(), 512);
        for id in [1, 2] {
            raw.send_json(json!({"jsonrpc": "2.0", "method": "watch", "id": id}))
                .await;
            assert!(raw.recv().await["result"].is_string());
        }
        // Read as they come first, then not at all: the pipe, the watermark and the lanes fill.
        for n in 0..3 {
            assert_eq!(topics.publish("numbers", "item", n).unwrap(), 2);
            for _ in 0..2 {
                assert_eq!(raw.recv().await["params"]["result"], n);
            }
        }
        const LAST: u64 = 2_000;
        for n in 3..=LAST {
            topics.publish("numbers", "item", n).unwrap();
            tokio::task::yield_now().await;
        }
        // Read again: each subscription's items up to the last published.
        let mut each: std::collections::HashMap<String, Vec<u64>> = Default::default();
        while each.len() < 2 || each.values().any(|items| items.last() != Some(&LAST)) {
            let message = raw.recv().await;
            let params = &message["params"];
            each.entry(params["subscription"].to_string())
                .or_default()
                .push(params["result"].as_u64().unwrap());
        }
        assert_eq!(each.len(), 2);
        for items in each.values() {
            assert!(
                items.windows(2).all(|pair| pair[0] < pair[1]),
                "in order: {items:?}"
            );
            assert!(items.len() < (LAST - 2) as usize, "some dropped");
        }
    })
    .await;
}
