//! Deadlines on a `Peer`: an outgoing call given up at its timeout (set per handle or in the
//! config) while the connection goes on, even when the other side reads nothing; and
//! `Duration::MAX` meaning no limit for every deadline.

use std::time::Duration;

use jrpc_runtime::{Caller as _, ClientError, Methods, PeerConfig};
use jrpc_tests::fixtures::add;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::duplex::{SHORT, bounded, calling, hang, lines_peer, spawn_call};

#[tokio::test(start_paused = true)]
async fn a_call_times_out_and_the_connection_goes_on() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        hang(&mut methods);
        let (a, _b) = calling(methods);
        let err = a
            .peer
            .with_timeout(Some(SHORT))
            .call::<Value>("hang", ())
            .await
            .unwrap_err();
        match err {
            ClientError::TimedOut { method, limit } => {
                assert_eq!(method, "hang");
                assert_eq!(limit, SHORT);
            }
            other => panic!("expected TimedOut, got {other:?}"),
        }
        let sum: i64 = a.peer.call("add", [2, 2]).await.unwrap();
        assert_eq!(sum, 4);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_configured_timeout_applies_and_a_late_answer_is_dropped() {
    bounded(async {
        let config = PeerConfig::builder().call_timeout(Some(SHORT)).build().unwrap();
        let (a, mut raw) = lines_peer(Methods::new(), config);
        let err = a.peer.call::<Value>("slow", ()).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::TimedOut { method, limit } if method == "slow" && *limit == SHORT),
            "{err:?}"
        );
        let late = raw.recv().await;
        assert_eq!(late["method"], "slow");
        // The answer comes after the caller gave up: it must not wake the next call.
        raw.send_json(json!({"jsonrpc": "2.0", "result": "late", "id": late["id"]}))
            .await;
        let next = spawn_call::<String>(&a.peer.with_timeout(None), "next");
        let request = raw.recv().await;
        assert_eq!(request["method"], "next");
        assert_ne!(request["id"], late["id"]);
        raw.send_json(json!({"jsonrpc": "2.0", "result": "on time", "id": request["id"]}))
            .await;
        assert_eq!(next.await.unwrap().unwrap(), "on time");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_call_times_out_even_while_the_other_side_does_not_read() {
    bounded(async {
        let config = PeerConfig::builder().queue(1).call_timeout(Some(SHORT)).build().unwrap();
        // The raw side reads nothing: soon every byte buffer and queue on the way is full.
        let (a, _raw) = lines_peer(Methods::new(), config);
        let big = "x".repeat(16 * 1024);
        for _ in 0..16 {
            let err = a.peer.call::<Value>("upload", [&big]).await.unwrap_err();
            assert!(
                matches!(&err, ClientError::TimedOut { method, limit } if method == "upload" && *limit == SHORT),
                "{err:?}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn limits_of_duration_max_mean_no_limit() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        methods.handler_timeout(Some(Duration::MAX));
        let config = PeerConfig::builder()
            .call_timeout(Some(Duration::MAX))
            .drain_timeout(Duration::MAX)
            .build()
            .unwrap();
        let (a, mut raw) = lines_peer(methods, config.clone());
        // The handler's deadline, from `Methods::handler_timeout`.
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 1})
        );
        // An outgoing call's deadline, from the config and from `with_timeout`.
        for peer in [a.peer.clone(), a.peer.with_timeout(Some(Duration::MAX))] {
            let call = tokio::spawn(async move { peer.call::<i64>("double", [2]).await });
            let request = raw.recv().await;
            assert_eq!(request["method"], "double");
            raw.send_json(json!({"jsonrpc": "2.0", "result": 4, "id": request["id"]}))
                .await;
            assert_eq!(call.await.unwrap().unwrap(), 4);
        }
        // The drain deadline, at end of input.
        raw.writer.shutdown().await.unwrap();
        assert_eq!(raw.next().await, None);
        a.driver.await.unwrap().unwrap();
    })
    .await;
}
