//! A `Peer`'s limits and backpressure: the queue's size, the in-flight cap (a call or a batch
//! past it refused at once, nothing of it run), large messages both ways through a small pipe,
//! and `Overflow::Close` for a side that stopped reading.

use std::sync::Arc;
use std::time::Duration;

use jrpc_runtime::{Caller as _, Context, ErrorCode, Framing, Methods, Peer, PeerConfig, RpcError};
use jrpc_tests::fixtures::add;
use serde_json::{Value, json};

use crate::duplex::{bounded, code_of, holding, lines_peer, pair, side, spawn_call};

#[tokio::test]
async fn a_queue_past_what_a_channel_holds_is_refused_and_the_largest_works() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let refused = PeerConfig::builder().queue(usize::MAX).build().unwrap_err();
        assert_eq!(refused.key(), "queue");
        let config = PeerConfig::builder()
            .queue(tokio::sync::Semaphore::MAX_PERMITS)
            .build()
            .unwrap();
        let (a, _b) = pair(
            Framing::Lines,
            (Methods::new(), config.clone()),
            (methods, config),
        );
        let sum: i64 = a.peer.call("add", [1, 2]).await.unwrap();
        assert_eq!(sum, 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_in_flight_cap_a_call_is_refused_at_once() {
    bounded(async {
        let (mut methods, gate, mut rx) = holding();
        add(&mut methods);
        let (a, _b) = pair(
            Framing::Lines,
            (Methods::new(), PeerConfig::default()),
            (
                methods,
                PeerConfig::builder().max_in_flight(2).build().unwrap(),
            ),
        );
        let held: Vec<_> = (0..2)
            .map(|_| spawn_call::<String>(&a.peer, "hold"))
            .collect();
        for _ in 0..2 {
            assert_eq!(rx.recv().await.as_deref(), Some("started"));
        }
        // Both slots are taken and held: the third call is refused while they still run.
        let err = a.peer.call::<i64>("add", [1, 2]).await.unwrap_err();
        assert_eq!(code_of(&err), ErrorCode::SERVER_ERROR.code());
        assert!(held.iter().all(|call| !call.is_finished()));
        gate.add_permits(2);
        for call in held {
            assert_eq!(call.await.unwrap().unwrap(), "released");
        }
        // The slots are free again.
        let sum: i64 = a.peer.call("add", [1, 2]).await.unwrap();
        assert_eq!(sum, 3);
    })
    .await;
}

/// Past the cap a batch is refused whole, and nothing of a call runs: its params are not read,
/// its handler is not started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_in_flight_cap_a_batch_is_refused_at_once() {
    bounded(async {
        let (mut methods, gate, mut rx) = holding();
        add(&mut methods);
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = Arc::clone(&started);
        methods
            .register("probe", &["n"], move |(n,): (i64,), _ctx| {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { Ok::<_, RpcError>(n) }
            })
            .unwrap();
        let (_a, mut raw) = lines_peer(
            methods,
            PeerConfig::builder().max_in_flight(1).build().unwrap(),
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "hold", "id": 1}))
            .await;
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        raw.send_json(json!({"jsonrpc": "2.0", "method": "probe", "params": [5], "id": 9}))
            .await;
        let answer = raw.recv().await;
        assert_eq!(
            answer["error"]["code"],
            ErrorCode::SERVER_ERROR.code(),
            "{answer}"
        );
        assert_eq!(answer["id"], 9);
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 0);
        // The one slot is taken: a batch is refused too, or batches would run without a bound.
        raw.send(r#"[{"jsonrpc":"2.0","method":"hold","id":2}]"#)
            .await;
        let answer = raw.recv().await;
        assert_eq!(
            answer["error"]["code"],
            ErrorCode::SERVER_ERROR.code(),
            "{answer}"
        );
        assert_eq!(answer["id"], Value::Null);
        gate.add_permits(1);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "released", "id": 1})
        );
        raw.send(r#"[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":3}]"#)
            .await;
        assert_eq!(
            raw.recv().await,
            json!([{"jsonrpc": "2.0", "result": 3, "id": 3}])
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_messages_both_ways_at_once_do_not_deadlock() {
    bounded(async {
        let echo = || {
            let mut methods = Methods::new();
            methods
                .register("echo", &["text"], |(text,): (String,), _ctx| async move {
                    Ok::<_, RpcError>(text)
                })
                .unwrap();
            (methods, PeerConfig::default())
        };
        // Far more bytes in flight each way than the stream buffers: both loops must keep
        // reading while their writes wait.
        let (x, y) = tokio::io::duplex(4 * 1024);
        let (a_methods, a_config) = echo();
        let (b_methods, b_config) = echo();
        let a = side(x, Framing::Lines, a_methods, a_config);
        let b = side(y, Framing::Lines, b_methods, b_config);
        let big = "x".repeat(16 * 1024);
        let calls = |peer: Peer| {
            let big = big.clone();
            futures_util::future::join_all((0..64).map(move |_| {
                let (peer, big) = (peer.clone(), big.clone());
                async move { peer.call::<String>("echo", [big]).await.unwrap().len() }
            }))
        };
        let (from_a, from_b) = tokio::join!(calls(a.peer.clone()), calls(b.peer.clone()));
        assert!(from_a.iter().chain(&from_b).all(|len| *len == big.len()));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn overflow_close_closes_a_connection_whose_other_side_stopped_reading() {
    bounded(async {
        let mut methods = Methods::new();
        methods
            .register("flood", &[], |(): (), ctx: Context| async move {
                let peer = ctx.peer().expect("a peer connection");
                let chunk = "x".repeat(1024);
                for _ in 0..1000 {
                    if let Err(err) = peer.notify("chunk", [&chunk]).await {
                        return Ok::<_, RpcError>(err.to_string());
                    }
                    // Slow enough that the queue fills only once the writer is stuck.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Ok("never refused".to_owned())
            })
            .unwrap();
        let config = PeerConfig::builder()
            .queue(4)
            .overflow(jrpc_runtime::Overflow::Close)
            .build()
            .unwrap();
        // The raw side sends one call and never reads again.
        let (a, mut raw) = lines_peer(methods, config);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "flood", "id": 1}))
            .await;
        let err = a.driver.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
        assert!(a.peer.is_closed());
    })
    .await;
}
