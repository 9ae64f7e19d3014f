//! Cooperative cancellation on a `Peer`: a handler that asked to be told, by its id
//! (`Context::told_when_cancelled`) or by a key (`Context::cancellable_by_key`), sees
//! `cancelled()` resolve and answers, where another is dropped.

use jrpc_runtime::{Cancellation, Context, Methods, PeerConfig, RpcError};
use serde_json::json;
use tokio::sync::mpsc;

use crate::duplex::{bounded, lines_peer};

/// `turn`: reports `"started"`, then answers `"cancelled"` once told, asking to be told by its id
/// or, when its params name a session, by that key. `cancel_session` tells a session's turns;
/// `cancel_turn` cancels a request by id, as another handler would.
fn turns() -> (Methods, mpsc::UnboundedReceiver<&'static str>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut methods = Methods::new();
    methods
        .register(
            "turn",
            &["session"],
            move |(session,): (Option<String>,), ctx: Context| {
                let tx = tx.clone();
                async move {
                    let _told = match session {
                        Some(session) => ctx.cancellable_by_key(session),
                        None => ctx.told_when_cancelled(),
                    };
                    let _ = tx.send("started");
                    ctx.cancelled().await;
                    Ok::<_, RpcError>("cancelled")
                }
            },
        )
        .unwrap();
    methods
        .register_notification(
            "cancel_session",
            &["session"],
            |(session,): (String,), ctx: Context| {
                let told = ctx.peer().map_or(0, |peer| peer.cancel_key(&session));
                async move { assert_eq!(told, 1, "one turn runs in the session") }
            },
        )
        .unwrap();
    methods
        .register_notification(
            "cancel_turn",
            &["id"],
            |(id,): (jrpc_runtime::Id,), ctx: Context| async move {
                if let Some(peer) = ctx.peer() {
                    peer.cancel_request(&id).await;
                }
            },
        )
        .unwrap();
    (methods, rx)
}

fn acp() -> PeerConfig {
    PeerConfig::builder()
        .cancellation(Cancellation::Acp)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_request_that_asked_to_be_told_answers_a_cancel_notice() {
    bounded(async {
        let (methods, mut started) = turns();
        let (_a, mut raw) = lines_peer(methods, acp());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "turn", "params": {}, "id": 1}))
            .await;
        assert_eq!(started.recv().await, Some("started"));
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}),
        )
        .await;
        // Its own answer, and no -32800 beside it.
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "cancelled", "id": 1})
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "turn", "params": {}, "id": 2}))
            .await;
        assert_eq!(started.recv().await, Some("started"));
        raw.send_json(json!({"jsonrpc": "2.0", "method": "cancel_turn", "params": {"id": 2}}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "cancelled", "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_session_key_tells_its_turn_and_its_id_still_drops_it() {
    bounded(async {
        let (methods, mut started) = turns();
        let (_a, mut raw) = lines_peer(methods, acp());
        let turn = |id: u32| {
            json!({"jsonrpc": "2.0", "method": "turn", "params": {"session": "s1"}, "id": id})
        };
        raw.send_json(turn(1)).await;
        assert_eq!(started.recv().await, Some("started"));
        raw.send_json(json!({"jsonrpc": "2.0", "method": "cancel_session", "params": {"session": "s1"}}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "cancelled", "id": 1})
        );
        // Registered by its key alone, a turn is dropped by a notice naming its id, as ACP says.
        raw.send_json(turn(2)).await;
        assert_eq!(started.recv().await, Some("started"));
        raw.send_json(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}))
            .await;
        let answer = raw.recv().await;
        assert_eq!(answer["id"], 2);
        assert_eq!(answer["error"]["code"], -32800);
    })
    .await;
}

#[tokio::test]
async fn a_guard_dropped_makes_the_request_droppable_again() {
    bounded(async {
        let (tx, mut started) = mpsc::unbounded_channel();
        let mut methods = Methods::new();
        methods
            .register("brief", &[], move |(): (), ctx: Context| {
                let tx = tx.clone();
                async move {
                    drop(ctx.told_when_cancelled());
                    let _ = tx.send("started");
                    std::future::pending::<()>().await;
                    Ok::<_, RpcError>(())
                }
            })
            .unwrap();
        let (_a, mut raw) = lines_peer(methods, acp());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "brief", "id": 1}))
            .await;
        assert_eq!(started.recv().await, Some("started"));
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}),
        )
        .await;
        assert_eq!(raw.recv().await["error"]["code"], -32800);
    })
    .await;
}

#[tokio::test]
async fn only_a_request_on_a_connection_can_ask() {
    let mut methods = Methods::new();
    methods
        .register("ask", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>((
                ctx.told_when_cancelled().is_some(),
                ctx.cancellable_by_key("k").is_some(),
            ))
        })
        .unwrap();
    let answer = methods
        .handle(r#"{"jsonrpc":"2.0","method":"ask","id":1}"#)
        .await
        .unwrap();
    assert_eq!(answer, r#"{"jsonrpc":"2.0","result":[false,false],"id":1}"#);
}
