//! How a `Peer`'s connection ends: the other side gone, the end of input (running calls finish
//! and are answered, or are cancelled once the drain budget is spent), and the loop dropped.

use std::sync::Arc;

use jrpc_runtime::{Caller as _, ClientError, Framing, Methods, PeerConfig};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::Semaphore;

use crate::duplex::{
    DropGuard, SHORT, bounded, events, hold, holding, lines_peer, narrow_lines_peer, pair,
    spawn_call,
};

#[tokio::test(start_paused = true)]
async fn the_other_side_gone_fails_pending_calls_and_cancels_running_handlers() {
    bounded(async {
        let (a_methods, _, mut a_events) = holding();
        let (b_methods, _, mut b_events) = holding();
        let (a, b) = pair(
            Framing::Lines,
            (
                a_methods,
                PeerConfig::builder().drain_timeout(SHORT).build().unwrap(),
            ),
            (b_methods, PeerConfig::default()),
        );
        // B calls A's `hold` (a handler running on A), A calls B's `hold` (a call pending on A).
        let incoming = spawn_call::<String>(&b.peer, "hold");
        assert_eq!(a_events.recv().await.as_deref(), Some("started"));
        let pending = spawn_call::<String>(&a.peer, "hold");
        assert_eq!(b_events.recv().await.as_deref(), Some("started"));
        // B goes away: its loop and the stream's end with it.
        b.driver.abort();
        assert_eq!(b_events.recv().await.as_deref(), Some("dropped"));
        let err = pending.await.unwrap().unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "hold"),
            "{err:?}"
        );
        // A's handler is cancelled once the drain budget has passed, and A's loop says so.
        assert_eq!(a_events.recv().await.as_deref(), Some("dropped"));
        let err = a.driver.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
        assert!(a.peer.is_closed());
        let err = a.peer.call::<Value>("hold", ()).await.unwrap_err();
        assert!(matches!(&err, ClientError::Closed { method } if method == "hold"));
        let err = a.peer.notify("anything", ()).await.unwrap_err();
        assert!(matches!(&err, ClientError::Closed { .. }));
        // B's own call died with its loop.
        let err = incoming.await.unwrap().unwrap_err();
        assert!(matches!(&err, ClientError::Closed { .. }), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn at_end_of_input_running_calls_finish_and_are_answered() {
    bounded(async {
        let (methods, gate, mut rx) = holding();
        let (a, mut raw) = lines_peer(methods, PeerConfig::default());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "hold", "id": 1}))
            .await;
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        raw.writer.shutdown().await.unwrap();
        gate.add_permits(1);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "released", "id": 1})
        );
        assert_eq!(raw.next().await, None);
        a.driver.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn past_the_drain_budget_running_calls_are_cancelled() {
    bounded(async {
        let (methods, _, mut rx) = holding();
        let (a, mut raw) = lines_peer(
            methods,
            PeerConfig::builder().drain_timeout(SHORT).build().unwrap(),
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "hold", "id": 1}))
            .await;
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        raw.writer.shutdown().await.unwrap();
        assert_eq!(rx.recv().await.as_deref(), Some("dropped"));
        assert_eq!(raw.next().await, None, "a cancelled call is not answered");
        // The loop ends with an error: a server exits non-zero when it dropped calls.
        let err = a.driver.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("1 calls unanswered"), "{err}");
    })
    .await;
}

/// Sends an answer made before the input ended that is still on its way (the other side not
/// reading yet) when no drain time is left, and ends the loop well: the drain time is for calls
/// running. The sleep is in paused time: it passes once the loop has nothing left to do.
#[tokio::test(start_paused = true)]
async fn an_answer_on_its_way_when_the_drain_time_runs_out_still_goes() {
    bounded(async {
        let mut methods = Methods::new();
        methods
            .register("name", &[], |(): (), _ctx| async {
                Ok::<_, jrpc_runtime::RpcError>("calculator")
            })
            .unwrap();
        let config = PeerConfig::builder()
            .drain_timeout(std::time::Duration::ZERO)
            .build()
            .unwrap();
        // A pipe of 8 bytes: the answer waits for the other side to read.
        let (a, mut raw) = narrow_lines_peer(methods, config, 8);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "name", "id": 1}))
            .await;
        raw.writer.shutdown().await.unwrap();
        // The end of input, and the drain time's end, pass before anything is read.
        tokio::time::sleep(SHORT).await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "calculator", "id": 1})
        );
        assert_eq!(raw.next().await, None);
        a.driver.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_loop_cancels_every_handler() {
    bounded(async {
        let (tx, mut rx) = events();
        let gate = Arc::new(Semaphore::new(0));
        let mut methods = Methods::new();
        hold(&mut methods, &tx, &gate);
        let waiting = tx.clone();
        methods
            .register_notification("wait", &[], move |(): (), _ctx| {
                let events = waiting.clone();
                async move {
                    let _guard = DropGuard(events.clone());
                    let _ = events.send("started".to_owned());
                    std::future::pending::<()>().await;
                }
            })
            .unwrap();
        let (a, mut raw) = lines_peer(methods, PeerConfig::default());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "hold", "id": 1}))
            .await;
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        raw.send_json(json!({"jsonrpc": "2.0", "method": "wait"}))
            .await;
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        a.driver.abort();
        // Both the call's handler and the notification's handler are dropped with the loop.
        assert_eq!(rx.recv().await.as_deref(), Some("dropped"));
        assert_eq!(rx.recv().await.as_deref(), Some("dropped"));
        assert_eq!(raw.next().await, None);
    })
    .await;
}
