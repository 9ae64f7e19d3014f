//! What editor and agent sessions need of a `Peer`: `"params": null` taken where the table says
//! so, answers read while a notification handler awaits a call to the other side, no message
//! dropped without a report, and answers that write `"error": null` beside their result.

use std::sync::{Arc, Mutex};

use jrpc_runtime::{
    Caller as _, ClientError, Context, ErrorCode, Framing, Methods, NullParams, Outcome,
    PeerConfig, RpcError,
};
use jrpc_tests::fixtures::add;
use serde_json::{Value, json};

use crate::duplex::{bounded, lines_peer, lsp_peer, pair, spawn_call};

/// `shutdown` answered `null`, and `exit` that reports `"exit"` to `log`.
fn lifecycle(log: &Arc<Mutex<Vec<String>>>) -> Methods {
    let mut methods = Methods::new();
    methods
        .register("shutdown", &[], |(): (), _ctx| async {
            Ok::<_, RpcError>(())
        })
        .unwrap();
    let exits = Arc::clone(log);
    methods
        .register_notification("exit", &[], move |(): (), _ctx| {
            exits.lock().unwrap().push("exit".to_owned());
            async {}
        })
        .unwrap();
    add(&mut methods);
    methods
}

#[tokio::test]
async fn null_params_are_an_invalid_request_by_default() {
    bounded(async {
        let log = Arc::default();
        let (_a, mut raw) = lsp_peer(lifecycle(&log), PeerConfig::default());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "shutdown", "params": null, "id": 1}))
            .await;
        let answer = raw.recv().await;
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["error"]["code"], -32600);
    })
    .await;
}

#[tokio::test]
async fn a_table_that_takes_null_params_runs_them_as_absent() {
    bounded(async {
        let log = Arc::default();
        let mut methods = lifecycle(&log);
        methods.null_params(NullParams::Absent);
        let (_a, mut raw) = lsp_peer(methods, PeerConfig::default());
        raw.send_json(json!({"jsonrpc": "2.0", "method": "shutdown", "params": null, "id": 1}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": null, "id": 1})
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "exit", "params": null}))
            .await;
        // The notification ran and was not answered: the next message is the next call's answer.
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
        assert_eq!(*log.lock().unwrap(), ["exit"]);
        // Params that are neither null nor structured are still refused.
        raw.send_json(json!({"jsonrpc": "2.0", "method": "shutdown", "params": 7, "id": 3}))
            .await;
        assert_eq!(raw.recv().await["error"]["code"], -32600);
    })
    .await;
}

#[tokio::test]
async fn null_params_on_a_table_handled_in_process_follow_its_setting() {
    let log = Arc::default();
    let mut methods = lifecycle(&log);
    let call = r#"{"jsonrpc":"2.0","method":"shutdown","params":null,"id":1}"#;
    let refused: Value = serde_json::from_str(&methods.handle(call).await.unwrap()).unwrap();
    assert_eq!(refused["error"]["code"], -32600);
    methods.null_params(NullParams::Absent);
    let batch = format!(r#"[{call},{{"jsonrpc":"2.0","method":"exit","params":null}}]"#);
    let answers: Value = serde_json::from_str(&methods.handle(&batch).await.unwrap()).unwrap();
    assert_eq!(
        answers,
        json!([{"jsonrpc": "2.0", "result": null, "id": 1}])
    );
    assert_eq!(*log.lock().unwrap(), ["exit"]);
}

/// The LSP shape: `initialized` asks the client for its configuration and awaits the answer. On
/// the paused clock a stall would run the call to its timeout at once, and the log would say so.
#[tokio::test(start_paused = true)]
async fn a_notification_handler_may_await_a_call_to_the_other_side() {
    bounded(async {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut server = Methods::new();
        let asked = Arc::clone(&log);
        server
            .register_notification("initialized", &[], move |(): (), ctx: Context| {
                let log = Arc::clone(&asked);
                async move {
                    let peer = ctx.peer().expect("a peer connection");
                    let answer = peer
                        .call::<Value>("workspace/configuration", json!({"items": []}))
                        .await;
                    log.lock().unwrap().push(format!("initialized: {answer:?}"));
                }
            })
            .unwrap();
        let hovered = Arc::clone(&log);
        server
            .register("hover", &[], move |(): (), _ctx| {
                hovered.lock().unwrap().push("hover".to_owned());
                async { Ok::<_, RpcError>("contents") }
            })
            .unwrap();
        let mut client = Methods::new();
        client
            .register(
                "workspace/configuration",
                &["items"],
                |(_,): (Value,), _ctx| async { Ok::<_, RpcError>(json!([{"tabs": true}])) },
            )
            .unwrap();
        let (a, _b) = pair(
            Framing::ContentLength,
            (client, PeerConfig::default()),
            (server, PeerConfig::default()),
        );
        a.peer.notify("initialized", ()).await.unwrap();
        let hover: String = a.peer.call("hover", ()).await.unwrap();
        assert_eq!(hover, "contents");
        // The hover, read after the notification, still ran after its handler ended.
        assert_eq!(
            *log.lock().unwrap(),
            [
                r#"initialized: Ok(Array [Object {"tabs": Bool(true)}])"#,
                "hover"
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn every_failed_notification_is_reported() {
    bounded(async {
        let reports = Arc::new(Mutex::new(Vec::<(String, bool, String)>::new()));
        let outcomes = Arc::new(Mutex::new(Vec::<(String, Outcome)>::new()));
        let mut methods = Methods::new();
        add(&mut methods);
        methods
            .register_notification("didChange", &["version"], |(_,): (u32,), _ctx| async {})
            .unwrap();
        methods
            .register("didSave", &[], |(): (), _ctx| async {
                Err::<(), _>(RpcError::new(7, "disk full"))
            })
            .unwrap();
        let sink = Arc::clone(&reports);
        methods.on_error(move |report| {
            sink.lock().unwrap().push((
                report.method.to_owned(),
                report.id.is_some(),
                report.reason.to_owned(),
            ));
        });
        let sink = Arc::clone(&outcomes);
        methods.observe(move |o| sink.lock().unwrap().push((o.method.to_owned(), o.outcome)));
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        for notification in [
            json!({"jsonrpc": "2.0", "method": "didChange", "params": {"version": "x"}}),
            json!({"jsonrpc": "2.0", "method": "didClose", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "didSave"}),
        ] {
            raw.send_json(notification).await;
        }
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1}))
            .await;
        // None of the three was answered.
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 1})
        );
        let reports = reports.lock().unwrap().clone();
        assert_eq!(reports.len(), 3, "{reports:?}");
        assert!(
            reports[0].2.contains(r#"parameter "version""#),
            "{reports:?}"
        );
        assert_eq!(
            reports[1],
            (
                "didClose".to_owned(),
                false,
                "error -32601: Method not found".to_owned()
            )
        );
        assert_eq!(
            reports[2],
            ("didSave".to_owned(), false, "error 7: disk full".to_owned())
        );
        assert_eq!(
            outcomes.lock().unwrap()[..3],
            [
                (
                    "didChange".to_owned(),
                    Outcome::Error(ErrorCode::INVALID_PARAMS)
                ),
                (
                    "didClose".to_owned(),
                    Outcome::Error(ErrorCode::METHOD_NOT_FOUND)
                ),
                ("didSave".to_owned(), Outcome::Error(ErrorCode::new(7))),
            ]
        );
    })
    .await;
}

/// On the paused clock, an answer left to its timeout would fail as `TimedOut` at once.
#[tokio::test(start_paused = true)]
async fn answers_with_a_null_member_are_taken_and_malformed_ones_fail_at_once() {
    bounded(async {
        let (a, mut raw) = lines_peer(Methods::new(), PeerConfig::default());
        let cases = [
            (json!({"result": 5, "error": null}), Ok(json!(5))),
            (
                json!({"result": null, "error": {"code": 1, "message": "no"}}),
                Err("error 1: no"),
            ),
            (
                json!({"result": 1, "error": {"code": 1, "message": "both"}}),
                Err("malformed answer"),
            ),
            (json!({"error": "not an object"}), Err("malformed answer")),
        ];
        for (members, expected) in cases {
            let call = spawn_call::<Value>(&a.peer, "ask");
            let request = raw.recv().await;
            let mut answer = json!({"jsonrpc": "2.0", "id": request["id"]});
            answer
                .as_object_mut()
                .unwrap()
                .extend(members.as_object().unwrap().clone());
            raw.send_json(answer).await;
            let got = call.await.unwrap();
            match (got, expected) {
                (Ok(value), Ok(expected)) => assert_eq!(value, expected),
                (Err(err), Err(start)) => {
                    assert!(!matches!(err, ClientError::TimedOut { .. }), "{err:?}");
                    assert!(err.to_string().starts_with(start), "{err}");
                }
                (got, expected) => panic!("got {got:?}, expected {expected:?}"),
            }
        }
    })
    .await;
}

/// Refuses the notification `didRename`, and lets every other call through.
#[derive(Clone)]
struct NoRename;

impl jrpc_runtime::layers::Check for NoRename {
    fn check(&mut self, call: &jrpc_runtime::Call) -> Result<(), RpcError> {
        if call.method() == "didRename" {
            return Err(RpcError::new(-32003, "Forbidden"));
        }
        Ok(())
    }
}

/// A table with a call layer (every LSP and ACP table has one) reports each failed notification
/// once: the table's own failures below the layer, and the layer's refusal.
#[tokio::test]
async fn a_failed_notification_under_a_layer_is_reported_once() {
    bounded(async {
        let reports = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
        let mut methods = Methods::new();
        add(&mut methods);
        methods
            .register_notification("didChange", &["version"], |(_,): (u32,), _ctx| async {})
            .unwrap();
        let sink = Arc::clone(&reports);
        methods.on_error(move |report| {
            let seen = (report.method.to_owned(), report.reason.to_owned());
            sink.lock().unwrap().push(seen);
        });
        methods.layer(tower::layer::layer_fn(|inner| {
            jrpc_runtime::layers::Checked::new(inner, NoRename)
        }));
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        for notification in [
            json!({"jsonrpc": "2.0", "method": "didChange", "params": {"version": "x"}}),
            json!({"jsonrpc": "2.0", "method": "didClose", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "didRename", "params": {}}),
        ] {
            raw.send_json(notification).await;
        }
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1}))
            .await;
        assert_eq!(raw.recv().await["result"], 3);
        let reports = reports.lock().unwrap().clone();
        let methods: Vec<&str> = reports.iter().map(|(method, _)| method.as_str()).collect();
        assert_eq!(
            methods,
            ["didChange", "didClose", "didRename"],
            "{reports:?}"
        );
        assert_eq!(reports[2].1, "error -32003: Forbidden");
    })
    .await;
}
