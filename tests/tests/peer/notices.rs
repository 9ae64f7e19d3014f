//! Cancellation notices on the wire: LSP's `$/cancelRequest` and MCP's `notifications/cancelled`,
//! sent for a call given up (dropped, or timed out) and honoured when received; with cancellation
//! off, an ordinary notification. (`cancel` covers what the handler and the observer see.)

use std::sync::Arc;

use jrpc_runtime::{Caller as _, Cancellation, ClientError, Framing, Methods, Params, PeerConfig};
use jrpc_tests::fixtures::add;
use serde_json::{Value, json};

use crate::duplex::{
    RawLines, RawLsp, SHORT, Side, bounded, holding, lines_peer, lsp_peer, pair, spawn_call,
};

#[tokio::test]
async fn lsp_a_dropped_call_sends_cancel_request() {
    bounded(async {
        let config = PeerConfig::builder()
            .cancellation(Cancellation::Lsp)
            .call_timeout(None)
            .build()
            .unwrap();
        let (a, mut raw) = lsp_peer(Methods::new(), config);
        let call = spawn_call::<Value>(&a.peer, "slow");
        let request = raw.recv().await;
        assert_eq!(request["method"], "slow");
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": request["id"]}})
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn lsp_cancellation_between_two_peers() {
    bounded(async {
        let (mut methods, _, mut rx) = holding();
        add(&mut methods);
        let config = PeerConfig::builder().cancellation(Cancellation::Lsp);
        let (a, _b) = pair(
            Framing::ContentLength,
            (
                Methods::new(),
                config.clone().call_timeout(Some(SHORT)).build().unwrap(),
            ),
            (methods, config.build().unwrap()),
        );
        let err = a.peer.call::<String>("hold", ()).await.unwrap_err();
        assert!(matches!(err, ClientError::TimedOut { .. }), "{err:?}");
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        assert_eq!(rx.recv().await.as_deref(), Some("dropped"));
        // B's -32800 answer to the given-up call wakes nobody; the connection goes on.
        let sum: i64 = a.peer.call("add", [20, 22]).await.unwrap();
        assert_eq!(sum, 42);
    })
    .await;
}

/// A cancellation dialect as the cases below drive it: its framing, and what its notices are.
struct Dialect {
    cancellation: Cancellation,
    framing: Framing,
    /// The call given up in the first case.
    method: &'static str,
    /// Asserts `notice` is the dialect's notice that the call `id` was given up.
    assert_notice: fn(notice: &Value, id: &Value),
    /// The notice that cancels the call `id`.
    notice: fn(id: &Value) -> Value,
    /// The id the second case's held call has.
    held_id: fn() -> Value,
    /// The error code answered to a call cancelled by a notice; `None` when nothing is answered.
    cancelled_code: Option<i64>,
}

/// LSP's `$/cancelRequest`, in `Content-Length` frames; a cancelled call is answered `-32800`.
const LSP: Dialect = Dialect {
    cancellation: Cancellation::Lsp,
    framing: Framing::ContentLength,
    method: "slow",
    assert_notice: |notice, id| {
        assert_eq!(
            *notice,
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})
        );
    },
    notice: |id| json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}),
    held_id: || json!(7),
    cancelled_code: Some(-32800),
};

/// MCP's `notifications/cancelled`, one message a line; a cancelled call is not answered.
const MCP: Dialect = Dialect {
    cancellation: Cancellation::Mcp,
    framing: Framing::Lines,
    method: "tools/call",
    assert_notice: |notice, id| {
        assert_eq!(notice["method"], "notifications/cancelled");
        assert_eq!(notice["params"]["requestId"], *id);
        assert!(notice["params"]["reason"].is_string(), "{notice}");
        assert!(notice.get("id").is_none(), "a notice is a notification");
    },
    notice: |id| {
        json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the user pressed stop"},
        })
    },
    held_id: || json!("call-7"),
    cancelled_code: None,
};

/// ACP's `$/cancel_request`, one message a line; a cancelled call is answered `-32800`.
const ACP: Dialect = Dialect {
    cancellation: Cancellation::Acp,
    framing: Framing::Lines,
    method: "session/prompt",
    assert_notice: |notice, id| {
        assert_eq!(
            *notice,
            json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}})
        );
    },
    notice: |id| json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}}),
    held_id: || json!(9),
    cancelled_code: Some(-32800),
};

/// The end of a connection driven by hand, in either framing.
enum Raw {
    Lines(RawLines),
    Lsp(RawLsp),
}

impl Raw {
    async fn send_json(&mut self, message: Value) {
        match self {
            Raw::Lines(raw) => raw.send_json(message).await,
            Raw::Lsp(raw) => raw.send_json(message).await,
        }
    }

    async fn recv(&mut self) -> Value {
        match self {
            Raw::Lines(raw) => raw.recv().await,
            Raw::Lsp(raw) => raw.recv().await,
        }
    }
}

/// A peer serving `methods` in `dialect`'s framing, and the raw end that talks to it.
fn dialect_peer(dialect: &Dialect, methods: Methods, config: PeerConfig) -> (Side, Raw) {
    match dialect.framing {
        Framing::ContentLength => {
            let (side, raw) = lsp_peer(methods, config);
            (side, Raw::Lsp(raw))
        }
        _ => {
            let (side, raw) = lines_peer(methods, config);
            (side, Raw::Lines(raw))
        }
    }
}

/// A call given up at its timeout sends the dialect's notice, naming the call.
#[tokio::test(start_paused = true)]
async fn a_timed_out_call_sends_the_dialects_notice() {
    for dialect in [LSP, MCP, ACP] {
        bounded(async {
            let config = PeerConfig::builder()
                .cancellation(dialect.cancellation)
                .call_timeout(Some(SHORT))
                .build()
                .unwrap();
            let (a, mut raw) = dialect_peer(&dialect, Methods::new(), config);
            let err = a.peer.call::<Value>(dialect.method, ()).await.unwrap_err();
            assert!(matches!(err, ClientError::TimedOut { .. }), "{err:?}");
            let request = raw.recv().await;
            assert_eq!(request["method"], dialect.method);
            (dialect.assert_notice)(&raw.recv().await, &request["id"]);
        })
        .await;
    }
}

/// A received notice aborts its call, which is answered as the dialect says (or not at all);
/// the peer honours the notice, and a handler registered under its name never starts.
#[tokio::test]
async fn a_received_notice_aborts_the_handler() {
    for dialect in [LSP, MCP, ACP] {
        bounded(async {
            let (mut methods, _, mut rx) = holding();
            add(&mut methods);
            let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let count = Arc::clone(&started);
            let name = (dialect.notice)(&Value::Null)["method"]
                .as_str()
                .unwrap()
                .to_owned();
            methods
                .register_notification(&name, &[], move |_: Params, _ctx| {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async {}
                })
                .unwrap();
            let config = PeerConfig::builder()
                .cancellation(dialect.cancellation)
                .build()
                .unwrap();
            let (_a, mut raw) = dialect_peer(&dialect, methods, config);
            let id = (dialect.held_id)();
            raw.send_json(json!({"jsonrpc": "2.0", "method": "hold", "id": id}))
                .await;
            assert_eq!(rx.recv().await.as_deref(), Some("started"));
            raw.send_json((dialect.notice)(&id)).await;
            assert_eq!(rx.recv().await.as_deref(), Some("dropped"));
            if let Some(code) = dialect.cancelled_code {
                let answer = raw.recv().await;
                assert_eq!(answer["id"], id);
                assert_eq!(answer["error"]["code"], code);
            }
            // Exactly one answer for the held call, or none: the next message is the answer to
            // the next call.
            raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 1], "id": 8}))
                .await;
            assert_eq!(
                raw.recv().await,
                json!({"jsonrpc": "2.0", "result": 2, "id": 8})
            );
            assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 0);
        })
        .await;
    }
}

#[tokio::test(start_paused = true)]
async fn with_cancellation_off_notices_are_ordinary_notifications() {
    bounded(async {
        let (mut methods, gate, mut rx) = holding();
        add(&mut methods);
        let (a, mut raw) = lines_peer(
            methods,
            PeerConfig::builder()
                .call_timeout(Some(SHORT))
                .build()
                .unwrap(),
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "hold", "id": 7}))
            .await;
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        raw.send_json(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}}))
            .await;
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 1], "id": 8}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 2, "id": 8})
        );
        gate.add_permits(1);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": "released", "id": 7})
        );
        // And a given-up call sends no notice: the next message is the next request.
        let err = a.peer.call::<Value>("first", ()).await.unwrap_err();
        assert!(matches!(err, ClientError::TimedOut { .. }), "{err:?}");
        assert_eq!(raw.recv().await["method"], "first");
        let _ = a.peer.call::<Value>("second", ()).await;
        assert_eq!(raw.recv().await["method"], "second");
        assert_eq!(rx.recv().await.as_deref(), Some("dropped"));
    })
    .await;
}
