//! The two-way `Peer` over `tokio::io::duplex`: calls both ways at once, answers out of order,
//! timeouts, closing, the in-flight cap, cancellation notices (LSP and MCP, sent and honoured),
//! oversize and broken frames, the ordering rules, calls from inside handlers, generated stubs.
//!
//! One side is a `Peer`; the other is a second `Peer`, or a hand-driven end ([`RawLines`],
//! [`RawLsp`]) where the exact bytes on the wire matter. Every test runs under [`bounded`], which
//! fails it rather than let it hang, and none asserts how fast anything is: where a test needs
//! a handler to still be running, a gate holds it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jrpc_runtime::{
    Caller as _, Cancellation, ClientError, Context, ErrorCode, Framing, Methods, Params, Peer,
    PeerConfig, RpcError, rpc_service,
};
use jrpc_tests::fixtures::add;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, ReadHalf,
    WriteHalf,
};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

/// Longer than any test needs; reaching it means the test hung.
const LIMIT: Duration = Duration::from_secs(20);
/// A call timeout or drain budget that passes quickly.
const SHORT: Duration = Duration::from_millis(50);

/// Runs a test body, failing it if it does not finish within [`LIMIT`].
async fn bounded<T>(test: impl Future<Output = T>) -> T {
    jrpc_tests::bounded_by(LIMIT, test).await
}

/// One end of a connection: the handle and its spawned loop.
struct Side {
    peer: Peer,
    driver: JoinHandle<std::io::Result<()>>,
}

fn side(io: DuplexStream, framing: Framing, methods: Methods, config: PeerConfig) -> Side {
    let (peer, driver) = Peer::connect(io, methods, config.with_framing(framing));
    Side {
        peer,
        driver: tokio::spawn(driver),
    }
}

/// Two peers on the two ends of one in-memory stream.
fn pair(framing: Framing, a: (Methods, PeerConfig), b: (Methods, PeerConfig)) -> (Side, Side) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    (side(x, framing, a.0, a.1), side(y, framing, b.0, b.1))
}

/// A [`pair`], one message a line, with default settings: `a` only calls, `b` serves `methods`.
fn calling(methods: Methods) -> (Side, Side) {
    pair(
        Framing::Lines,
        (Methods::new(), PeerConfig::default()),
        (methods, PeerConfig::default()),
    )
}

/// `peer.call(method, ())` on a task of its own, for a call that is to be held or dropped.
fn spawn_call<T: DeserializeOwned + Send + 'static>(
    peer: &Peer,
    method: &'static str,
) -> JoinHandle<Result<T, ClientError>> {
    let peer = peer.clone();
    tokio::spawn(async move { peer.call::<T>(method, ()).await })
}

/// The end of a connection driven by hand, one JSON message a line.
struct RawLines {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

impl RawLines {
    async fn send(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn send_json(&mut self, message: Value) {
        self.send(&message.to_string()).await;
    }

    /// The next message; `None` at the end of the stream.
    async fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).await.unwrap();
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    async fn recv(&mut self) -> Value {
        self.next().await.expect("the connection ended")
    }
}

/// The end of a connection driven by hand, with `Content-Length` framing.
struct RawLsp {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

impl RawLsp {
    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    async fn send_json(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.send_bytes(frame.as_bytes()).await;
    }

    /// The next message; `None` at the end of the stream.
    async fn next(&mut self) -> Option<Value> {
        let mut len = None;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.unwrap() == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            if name.eq_ignore_ascii_case("content-length") {
                len = Some(value.trim().parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; len.expect("a Content-Length header")];
        self.reader.read_exact(&mut body).await.unwrap();
        Some(serde_json::from_slice(&body).unwrap())
    }

    async fn recv(&mut self) -> Value {
        self.next().await.expect("the connection ended")
    }
}

/// A peer serving `methods`, and the raw lines end that talks to it.
fn lines_peer(methods: Methods, config: PeerConfig) -> (Side, RawLines) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (read, writer) = tokio::io::split(y);
    let raw = RawLines {
        reader: BufReader::new(read),
        writer,
    };
    (side(x, Framing::Lines, methods, config), raw)
}

/// A peer serving `methods` with `Content-Length` framing, and the raw end that talks to it.
fn lsp_peer(methods: Methods, config: PeerConfig) -> (Side, RawLsp) {
    let (x, y) = tokio::io::duplex(64 * 1024);
    let (read, writer) = tokio::io::split(y);
    let raw = RawLsp {
        reader: BufReader::new(read),
        writer,
    };
    (side(x, Framing::ContentLength, methods, config), raw)
}

/// What handlers report, in order: `"started"`, `"dropped"`, log lines.
type Events = mpsc::UnboundedSender<String>;

fn events() -> (Events, mpsc::UnboundedReceiver<String>) {
    mpsc::unbounded_channel()
}

/// Held by a handler: reports `"dropped"` when the handler's future is dropped (cancelled, or
/// finished).
struct DropGuard(Events);

impl Drop for DropGuard {
    fn drop(&mut self) {
        let _ = self.0.send("dropped".to_owned());
    }
}

/// `hold`: reports `"started"`, holds a [`DropGuard`], and answers `"released"` once `gate` gives
/// it a permit.
fn hold(methods: &mut Methods, events: &Events, gate: &Arc<Semaphore>) {
    let (events, gate) = (events.clone(), Arc::clone(gate));
    methods
        .register("hold", &[], move |(): (), _ctx| {
            let (events, gate) = (events.clone(), Arc::clone(&gate));
            async move {
                let _guard = DropGuard(events.clone());
                let _ = events.send("started".to_owned());
                gate.acquire().await.unwrap().forget();
                Ok::<_, RpcError>("released")
            }
        })
        .unwrap();
}

/// Methods with only [`hold`], the gate that lets it answer, and the events it reports.
fn holding() -> (Methods, Arc<Semaphore>, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = events();
    let gate = Arc::new(Semaphore::new(0));
    let mut methods = Methods::new();
    hold(&mut methods, &tx, &gate);
    (methods, gate, rx)
}

/// `hang`: never answers.
fn hang(methods: &mut Methods) {
    methods
        .register("hang", &[], |(): (), _ctx| async {
            std::future::pending::<()>().await;
            Ok::<_, RpcError>(())
        })
        .unwrap();
}

fn code_of(err: &ClientError) -> i32 {
    match err {
        ClientError::Failed(err) => err.code().code(),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Calls both ways, answers out of order
// ---------------------------------------------------------------------------------------------

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
// Timeouts
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Closing
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The in-flight cap
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Cancellation notices
// ---------------------------------------------------------------------------------------------

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
    for dialect in [LSP, MCP] {
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
    for dialect in [LSP, MCP] {
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

#[tokio::test]
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

// ---------------------------------------------------------------------------------------------
// Oversize, garbled and cut-off input
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_oversize_line_is_answered_with_an_error_and_the_next_is_served() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lines_peer(
            methods,
            PeerConfig::builder().max_message_size(64).build().unwrap(),
        );
        let padding = "x".repeat(200);
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1, "pad": padding}),
        )
        .await;
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], Value::Null);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_line_that_is_not_json_is_answered_and_the_next_is_served() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        raw.send("this is not json").await;
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(answer["id"], Value::Null);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn an_invalid_object_without_an_id_is_still_answered() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        // Each has a `method` and no `id`, so it looks like a notification, but none is a valid
        // request: each is answered -32600 with a null id, as `Methods::handle` answers it.
        for invalid in [
            json!({"jsonrpc": "1.0", "method": "add", "params": [1, 2]}),
            json!({"method": "add", "params": [1, 2]}),
            json!({"jsonrpc": "2.0", "method": "add", "params": 3}),
            json!({"jsonrpc": "2.0", "method": 5}),
        ] {
            raw.send_json(invalid.clone()).await;
            let answer = raw.recv().await;
            assert_eq!(answer["error"]["code"], -32600, "{invalid} got {answer}");
            assert_eq!(answer["id"], Value::Null);
        }
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_request_with_a_repeated_member_never_holds_up_the_loop() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        hang(&mut methods);
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        // A member written twice: the loop cannot read this as it reads other messages. It must
        // not run `hang` in the loop's own task, which would stop the connection for good.
        raw.send(r#"{"jsonrpc":"2.0","method":"hang","id":1,"result":1,"result":2}"#)
            .await;
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], 1);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_result_written_over_several_lines_goes_out_as_one() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        methods
            .register("pretty", &[], |(): (), _| async {
                serde_json::value::RawValue::from_string("{\n  \"a\": [1,\r\n 2]\n}".into())
                    .map_err(|_| RpcError::internal())
            })
            .unwrap();
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        // A raw newline in JSON text can only be white space: the line framing must not split
        // the message there, nor give up the connection over it.
        raw.send_json(json!({"jsonrpc": "2.0", "method": "pretty", "id": 1}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": {"a": [1, 2]}, "id": 1})
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn an_oversize_content_length_body_is_skipped() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lsp_peer(
            methods,
            PeerConfig::builder().max_message_size(64).build().unwrap(),
        );
        let padding = "x".repeat(200);
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1, "pad": padding}),
        )
        .await;
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        let skipped = raw.recv().await;
        assert_eq!(skipped["error"]["code"], -32600, "{skipped}");
        assert_eq!(skipped["id"], Value::Null);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_garbage_header_closes_the_connection() {
    bounded(async {
        let (a, mut raw) = lsp_peer(Methods::new(), PeerConfig::default());
        let pending = spawn_call::<Value>(&a.peer, "initialize");
        assert_eq!(raw.recv().await["method"], "initialize");
        raw.send_bytes(b"Content-Lenght 12\r\n\r\n{}").await;
        let err = a.driver.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("header"), "{err}");
        let err = pending.await.unwrap().unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "initialize"),
            "{err:?}"
        );
        assert_eq!(raw.next().await, None, "the stream is closed");
    })
    .await;
}

#[tokio::test]
async fn a_peer_gone_mid_frame_breaks_the_connection() {
    bounded(async {
        let (a, mut raw) = lsp_peer(Methods::new(), PeerConfig::default());
        let pending = spawn_call::<Value>(&a.peer, "shutdown");
        assert_eq!(raw.recv().await["method"], "shutdown");
        raw.send_bytes(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":")
            .await;
        drop(raw);
        let err = a.driver.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("ended"), "{err}");
        let err = pending.await.unwrap().unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "shutdown"),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_line_cut_off_by_the_end_of_input_is_still_read() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (a, mut raw) = lines_peer(methods, PeerConfig::default());
        raw.writer
            .write_all(br#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
            .await
            .unwrap();
        raw.writer.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
        raw.writer.shutdown().await.unwrap();
        // The whole is one unterminated line: not JSON.
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(raw.next().await, None);
        a.driver.await.unwrap().unwrap();
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Ordering
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_notification_handler_finishes_before_the_next_message_is_read() {
    bounded(async {
        let log = Arc::new(Mutex::new(Vec::<&'static str>::new()));
        let mut methods = Methods::new();
        let note_log = Arc::clone(&log);
        methods
            .register_notification("note", &[], move |(): (), _ctx| {
                let log = Arc::clone(&note_log);
                async move {
                    log.lock().unwrap().push("note started");
                    // On the paused clock this ends only once nothing else can run: the call
                    // below, had it been read, would have run first.
                    tokio::time::sleep(SHORT).await;
                    log.lock().unwrap().push("note finished");
                }
            })
            .unwrap();
        let mark_log = Arc::clone(&log);
        methods
            .register("mark", &[], move |(): (), _ctx| {
                let log = Arc::clone(&mark_log);
                async move {
                    log.lock().unwrap().push("mark");
                    Ok::<_, RpcError>(())
                }
            })
            .unwrap();
        let (a, _b) = calling(methods);
        a.peer.notify("note", ()).await.unwrap();
        a.peer.call::<()>("mark", ()).await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["note started", "note finished", "mark"]
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_does_not_hold_up_reading() {
    bounded(async {
        let (mut methods, gate, mut rx) = holding();
        let open = Arc::clone(&gate);
        methods
            .register_notification("open", &[], move |(): (), _ctx| {
                let gate = Arc::clone(&open);
                async move { gate.add_permits(1) }
            })
            .unwrap();
        let (a, _b) = calling(methods);
        let held = spawn_call::<String>(&a.peer, "hold");
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        // Only a message read after the call started can release it.
        a.peer.notify("open", ()).await.unwrap();
        assert_eq!(held.await.unwrap().unwrap(), "released");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_pushes_arrive_before_its_answer() {
    bounded(async {
        let mut server = Methods::new();
        server
            .register(
                "work",
                &["steps"],
                |(steps,): (u32,), ctx: Context| async move {
                    let peer = ctx.peer().expect("a peer connection");
                    for step in 1..=steps {
                        peer.notify("progress", [step])
                            .await
                            .map_err(|err| RpcError::new(1, err.to_string()))?;
                    }
                    Ok::<_, RpcError>("done")
                },
            )
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut client = Methods::new();
        let log = Arc::clone(&seen);
        client
            .register_notification("progress", &["step"], move |(step,): (u32,), _ctx| {
                let log = Arc::clone(&log);
                async move { log.lock().unwrap().push(step) }
            })
            .unwrap();
        let (a, _b) = pair(
            Framing::Lines,
            (client, PeerConfig::default()),
            (server, PeerConfig::default()),
        );
        for round in 0..10 {
            seen.lock().unwrap().clear();
            let done: String = a.peer.call("work", [round + 1]).await.unwrap();
            assert_eq!(done, "done");
            let expected: Vec<u32> = (1..=round + 1).collect();
            assert_eq!(*seen.lock().unwrap(), expected, "round {round}");
        }
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

// ---------------------------------------------------------------------------------------------
// Heavy traffic, overflow, a dropped loop
// ---------------------------------------------------------------------------------------------

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
