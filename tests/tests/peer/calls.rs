//! Calls on a `Peer` over `tokio::io::duplex`: both ways at once, answers out of order, calls
//! from inside handlers (the LSP shape: a request answered only after asking the caller), and
//! generated stubs both ways.

use jrpc_runtime::{Caller as _, Context, Framing, Methods, PeerConfig, RpcError, rpc_service};
use jrpc_tests::fixtures::add;
use serde_json::{Value, json};

use crate::duplex::{
    Events, bounded, calling, code_of, events, holding, lines_peer, pair, spawn_call,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_call_each_other_at_once() {
    bounded(async {
        let named = |name: &'static str| {
            let mut methods = Methods::new();
            add(&mut methods);
            methods
                .register("name", &[], move |(): (), _ctx| async move {
                    Ok::<_, RpcError>(name)
                })
                .unwrap();
            (methods, PeerConfig::default())
        };
        let (a, b) = pair(Framing::Lines, named("a"), named("b"));
        let from_a = futures_util::future::join_all((0..50).map(|i| {
            let peer = a.peer.clone();
            async move {
                let sum: i64 = peer.call("add", [i, 1000]).await.unwrap();
                let name: String = peer.call("name", ()).await.unwrap();
                (sum, name)
            }
        }));
        let from_b = futures_util::future::join_all((0..50).map(|i| {
            let peer = b.peer.clone();
            async move {
                let sum: i64 = peer.call("add", [i, 2000]).await.unwrap();
                let name: String = peer.call("name", ()).await.unwrap();
                (sum, name)
            }
        }));
        let (from_a, from_b) = tokio::join!(from_a, from_b);
        for (i, (sum, name)) in (0..).zip(from_a) {
            assert_eq!((sum, name.as_str()), (i + 1000, "b"));
        }
        for (i, (sum, name)) in (0..).zip(from_b) {
            assert_eq!((sum, name.as_str()), (i + 2000, "a"));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_call_is_answered_before_a_slow_one() {
    bounded(async {
        let (mut methods, gate, mut rx) = holding();
        add(&mut methods);
        let (a, _b) = calling(methods);
        let slow = spawn_call::<String>(&a.peer, "hold");
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        let fast: i64 = a.peer.call("add", [1, 2]).await.unwrap();
        assert_eq!(fast, 3);
        assert!(!slow.is_finished(), "the slow call is held by its gate");
        gate.add_permits(1);
        assert_eq!(slow.await.unwrap().unwrap(), "released");
    })
    .await;
}

#[tokio::test]
async fn answers_in_reverse_order_wake_the_right_callers() {
    bounded(async {
        let (a, mut raw) = lines_peer(Methods::new(), PeerConfig::default());
        let calls = futures_util::future::join_all(
            ["first", "second", "third"].map(|method| a.peer.call::<String>(method, ())),
        );
        let answer = async {
            let mut ids = Vec::new();
            for _ in 0..3 {
                let request = raw.recv().await;
                ids.push((request["id"].clone(), request["method"].clone()));
            }
            for (id, method) in ids.into_iter().rev() {
                raw.send_json(json!({"jsonrpc": "2.0", "result": method, "id": id}))
                    .await;
            }
        };
        let (results, ()) = tokio::join!(calls, answer);
        let results: Vec<String> = results.into_iter().map(Result::unwrap).collect();
        assert_eq!(results, ["first", "second", "third"]);
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Calls from inside handlers, generated stubs
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_handler_calls_the_other_side_and_waits_for_it() {
    bounded(async {
        // The LSP shape: the client's `initialize` makes the server ask the client for its
        // `workspace/configuration` before it answers.
        let mut server = Methods::new();
        server
            .register("initialize", &[], |(): (), ctx: Context| async move {
                let peer = ctx.peer().expect("a peer connection");
                let config: Vec<Value> = peer
                    .call(
                        "workspace/configuration",
                        json!({"items": [{"section": "editor"}]}),
                    )
                    .await
                    .map_err(|err| RpcError::new(1, err.to_string()))?;
                Ok::<_, RpcError>(json!({"capabilities": {}, "seen": config}))
            })
            .unwrap();
        let mut client = Methods::new();
        client
            .register(
                "workspace/configuration",
                &["items"],
                |(items,): (Vec<Value>,), _ctx| async move {
                    Ok::<_, RpcError>(
                        items
                            .iter()
                            .map(|item| json!({"section": item["section"], "tabSize": 4}))
                            .collect::<Vec<_>>(),
                    )
                },
            )
            .unwrap();
        let (a, _b) = pair(
            Framing::ContentLength,
            (client, PeerConfig::default()),
            (server, PeerConfig::default()),
        );
        let result: Value = a.peer.call("initialize", json!({})).await.unwrap();
        assert_eq!(
            result,
            json!({"capabilities": {}, "seen": [{"section": "editor", "tabSize": 4}]})
        );
    })
    .await;
}

/// A small editor service, to drive generated stubs over a `Peer`.
#[rpc_service]
pub trait Editor {
    /// Adds two integers.
    async fn add(&self, a: i64, b: i64) -> i64;
    /// Divides; a zero divisor is application error 1.
    async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError>;
    /// Records a line; never answered.
    #[notification]
    async fn log(&self, line: String);
    /// The transport the call came over.
    async fn whoami(&self, ctx: &Context) -> String;
    /// Asks the caller's own `Editor` to add, through a stub over the context's peer.
    async fn add_back(&self, ctx: &Context, a: i64, b: i64) -> Result<i64, RpcError>;
}

struct Ed(Events);

impl Editor for Ed {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError> {
        if divisor == 0.0 {
            return Err(RpcError::new(1, "division by zero"));
        }
        Ok(dividend / divisor)
    }

    async fn log(&self, line: String) {
        let _ = self.0.send(line);
    }

    async fn whoami(&self, ctx: &Context) -> String {
        ctx.transport().as_str().to_owned()
    }

    async fn add_back(&self, ctx: &Context, a: i64, b: i64) -> Result<i64, RpcError> {
        let peer = ctx.peer().ok_or_else(|| RpcError::new(2, "no peer"))?;
        EditorClient::new(peer)
            .add(a, b)
            .await
            .map_err(|err| RpcError::new(3, err.to_string()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_stubs_work_over_a_peer_both_ways() {
    bounded(async {
        let (tx, mut rx) = events();
        let (a, b) = pair(
            Framing::Lines,
            (Ed(tx.clone()).into_methods(), PeerConfig::default()),
            (Ed(tx).into_methods(), PeerConfig::default()),
        );
        let to_b = EditorClient::new(a.peer.clone());
        let to_a = EditorClient::new(&b.peer);
        assert_eq!(to_b.add(2, 3).await.unwrap(), 5);
        assert_eq!(to_a.add(4, 5).await.unwrap(), 9);
        assert_eq!(to_b.divide(1.0, 4.0).await.unwrap(), 0.25);
        let err = to_b.divide(1.0, 0.0).await.unwrap_err();
        assert_eq!(code_of(&err), 1);
        assert_eq!(to_b.whoami().await.unwrap(), "stream");
        to_b.log("hello".to_owned()).await.unwrap();
        assert_eq!(rx.recv().await.as_deref(), Some("hello"));
        // B's handler calls back into A through a stub over its context's peer.
        assert_eq!(to_b.add_back(20, 22).await.unwrap(), 42);
    })
    .await;
}
