//! Subscriptions on a `Peer`: the answer before the first item, unsubscribe scoped to the
//! connection, each policy of a full bound, the cap, and the producers dropped with the
//! connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::stream;
use jrpc_runtime::{Items, Methods, PeerConfig, RpcError, WhenFull};
use serde_json::{Value, json};

use crate::duplex::{bounded, lines_peer};

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

/// Counts a live producer while it is held.
struct Alive(Arc<AtomicUsize>);

impl Alive {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(count))
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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
