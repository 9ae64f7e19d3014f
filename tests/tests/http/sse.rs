//! SSE answers on `POST /rpc`: a handler's pushes and calls go out as events while it runs, then
//! its answer; without `Accept: text/event-stream`, nothing changes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use jrpc_tests::raw_http::{Conn, Reply, post, post_json, request};
use jrpc_tests::servers::serve_http;
use jrpc_tests::{bounded, eventually, fixtures};
use serde_json::{Value, json};

const SSE: &str = "accept: application/json, text/event-stream\r\n";

/// The fixtures `ticks`, `ask` and `add`, and `flood [n]` (`n` pushes of 1 000 bytes,
/// counting the ones that went out in `sent`, yielding after each), `burst [n]` (the same
/// without yielding).
fn methods(sent: &Arc<AtomicUsize>) -> Methods {
    let mut methods = Methods::new();
    fixtures::add(&mut methods);
    fixtures::ticks(&mut methods);
    fixtures::ask(&mut methods);
    let sent = Arc::clone(sent);
    methods
        .register("flood", &["n"], move |(n,): (usize,), ctx: Context| {
            let sent = Arc::clone(&sent);
            async move {
                let peer = ctx.peer().ok_or_else(|| RpcError::new(2, "no peer"))?;
                let filler = "x".repeat(1000);
                for _ in 0..n {
                    peer.notify("filler", [&filler])
                        .await
                        .map_err(|err| RpcError::new(3, err.to_string()))?;
                    sent.fetch_add(1, Ordering::SeqCst);
                    // A producer that lets the connection write as it goes.
                    tokio::task::yield_now().await;
                }
                Ok::<_, RpcError>(n)
            }
        })
        .unwrap();
    methods
        .register("burst", &["n"], |(n,): (usize,), ctx: Context| async move {
            let peer = ctx.peer().ok_or_else(|| RpcError::new(2, "no peer"))?;
            let filler = "x".repeat(1000);
            for _ in 0..n {
                peer.notify("filler", [&filler])
                    .await
                    .map_err(|err| RpcError::new(3, err.to_string()))?;
            }
            Ok::<_, RpcError>(n)
        })
        .unwrap();
    methods
}

async fn server(builder: impl FnOnce(Methods) -> HttpServer) -> (SocketAddr, HttpServer) {
    let server = builder(methods(&Arc::new(AtomicUsize::new(0))));
    let (addr, _) = serve_http(server.clone()).await;
    (addr, server)
}

/// POSTs `body` to `/rpc` with `extra` header lines, on a fresh connection.
async fn post_with(addr: SocketAddr, extra: &str, body: &str) -> Reply {
    bounded(request(
        addr,
        &post("/rpc", Some("application/json"), extra, body),
    ))
    .await
}

fn data(event: &str) -> Value {
    let data = event
        .strip_prefix("data: ")
        .unwrap_or_else(|| panic!("not a data line: {event:?}"));
    serde_json::from_str(data).unwrap()
}

#[tokio::test]
async fn pushes_go_out_as_events_in_order_then_the_answer() {
    let (addr, _) = server(|m| HttpServer::builder(m).build().unwrap()).await;
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"ticks","params":[3]}"#;
    let reply = post_with(addr, SSE, call).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("cache-control"), Some("no-cache"));
    let events: Vec<Value> = reply.body.split_terminator("\n\n").map(data).collect();
    assert_eq!(
        events,
        [
            json!({ "jsonrpc": "2.0", "method": "tick", "params": { "n": 1 } }),
            json!({ "jsonrpc": "2.0", "method": "tick", "params": { "n": 2 } }),
            json!({ "jsonrpc": "2.0", "method": "tick", "params": { "n": 3 } }),
            json!({ "jsonrpc": "2.0", "result": 3, "id": 7 }),
        ]
    );
}

#[tokio::test]
async fn a_call_that_sends_nothing_is_answered_as_json() {
    let (addr, _) = server(|m| HttpServer::builder(m).build().unwrap()).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[2,3]}"#;
    let reply = post_with(addr, SSE, call).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(
        reply.json(),
        json!({ "jsonrpc": "2.0", "result": 5, "id": 1 })
    );
    let notification = r#"{"jsonrpc":"2.0","method":"add","params":[2,3]}"#;
    let reply = post_with(addr, SSE, notification).await;
    assert_eq!((reply.status, reply.body.as_str()), (204, ""));
}

/// A handler's answer is queued on its stream's connection just as the request's input ends
/// there; it goes out, whichever of the two that connection sees first. Thousands of calls on
/// one connection, on a runtime of two threads, meet every interleaving of the two: before
/// the connection took what was queued when its input ended, one in a few thousand answers
/// was lost (a `500`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_queued_as_input_ends_goes_out() {
    let (addr, _) = server(|m| HttpServer::builder(m).build().unwrap()).await;
    let mut conn = Conn::open(addr).await;
    for id in 0..5000 {
        let call = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"add","params":[{id},1]}}"#);
        let reply = bounded(conn.send(&post("/rpc", Some("application/json"), SSE, &call))).await;
        assert_eq!(reply.status, 200, "call {id}: {reply:?}");
        assert_eq!(reply.json()["result"], id + 1);
    }
}

/// Pushes made faster than anything is written (a handler that never yields) overflow the
/// budget before the first event goes out: the answer is lost, and said so.
#[tokio::test]
async fn an_answer_lost_to_the_budget_is_a_500() {
    let (addr, _) = server(|m| {
        HttpServer::builder(m)
            .max_message_size(16 * 1024)
            .max_buffered(32 * 1024)
            .build()
            .unwrap()
    })
    .await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"burst","params":[100]}"#;
    let reply = post_with(addr, SSE, call).await;
    let envelope = reply.assert_envelope(500, -32603);
    assert!(
        envelope["error"]["data"]
            .as_str()
            .is_some_and(|data| data.contains("max_buffered")),
        "{envelope}"
    );
}

/// Without an `Accept` naming event streams (none, `*/*`, JSON only), a handler has no peer, as
/// before.
#[tokio::test]
async fn without_the_accept_nothing_changes() {
    let (addr, _) = server(|m| HttpServer::builder(m).build().unwrap()).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"ticks","params":[3]}"#;
    for extra in ["", "accept: */*\r\n", "accept: application/json\r\n"] {
        let reply = post_with(addr, extra, call).await;
        assert_eq!(reply.status, 200, "{extra}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.json()["error"]["message"], "no peer", "{extra}");
    }
}

/// A handler's call reaches the client as an event; the client posts its answer back (another
/// connection, `204`), and the handler's answer uses it.
#[tokio::test]
async fn a_handlers_call_is_answered_by_a_post_back() {
    let (addr, _) = server(|m| HttpServer::builder(m).build().unwrap()).await;
    let mut conn = Conn::open(addr).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"ask","params":["why?"]}"#;
    conn.write(&post("/rpc", Some("application/json"), SSE, call))
        .await;
    let head = bounded(conn.read_head()).await;
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let mut pending = String::new();
    let asked = data(&bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(asked["method"], "answer");
    assert_eq!(asked["params"], json!(["why?"]));
    let answer = json!({ "jsonrpc": "2.0", "result": "because", "id": asked["id"] });
    let posted = bounded(request(addr, &post_json(&answer.to_string()))).await;
    assert_eq!((posted.status, posted.body.as_str()), (204, ""));
    let last = data(&bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(
        last,
        json!({ "jsonrpc": "2.0", "result": "because", "id": 1 })
    );
    assert_eq!(bounded(conn.read_event(&mut pending)).await, None);
    // The answer was taken: the same answer again is no one's, so it is refused as before.
    let again = bounded(request(addr, &post_json(&answer.to_string()))).await;
    assert_eq!(again.json()["error"]["code"], -32600);
}

/// A client that never reads its event stream: the handler's pushes fail once the connection's
/// byte budget is taken (the stream's connection closes), and the connection is dropped by the
/// write deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_nobody_reads_keeps_the_budget_and_the_write_deadline() {
    let sent = Arc::new(AtomicUsize::new(0));
    let server = HttpServer::builder(methods(&sent))
        .max_message_size(16 * 1024)
        .max_buffered(64 * 1024)
        .write_timeout(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let (addr, _) = serve_http(server.clone()).await;
    let mut conn = Conn::open(addr).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"flood","params":[100000]}"#;
    conn.write(&post("/rpc", Some("application/json"), SSE, call))
        .await;
    eventually(|| server.shutdown_handle().connections() == 0).await;
    let pushed = sent.load(Ordering::SeqCst);
    // What the socket buffers took, plus the budget: far from 100 000 pushes of 1 000 bytes.
    assert!(
        pushed < 20_000,
        "{pushed} pushes went out to a client that never read"
    );
    drop(conn);
}

/// A table with `subscribe_ticks(n)`: `n` items, or items forever for `n` zero, counting its live
/// producers in `alive`.
fn subscribing(alive: &Arc<AtomicUsize>) -> Methods {
    let mut methods = Methods::new();
    let alive = Arc::clone(alive);
    methods
        .register_subscription(
            "subscribe_ticks",
            &["n"],
            "tick",
            "unsubscribe_ticks",
            move |(n,): (u64,), _ctx| {
                let guard = fixtures::Alive::new(&alive);
                async move {
                    let items =
                        futures_util::stream::unfold((0, guard), move |(i, guard)| async move {
                            tokio::task::yield_now().await;
                            (n == 0 || i < n).then_some((i, (i + 1, guard)))
                        });
                    Ok::<_, RpcError>(jrpc_runtime::Items::new(items))
                }
            },
        )
        .unwrap();
    methods
}

#[tokio::test]
async fn a_subscription_over_an_event_stream_lives_as_long_as_the_stream() {
    let alive = Arc::new(AtomicUsize::new(0));
    let server = HttpServer::builder(subscribing(&alive)).build().unwrap();
    let (addr, _) = serve_http(server).await;
    let mut conn = Conn::open(addr).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"subscribe_ticks","params":[0]}"#;
    conn.write(&post("/rpc", Some("application/json"), SSE, call))
        .await;
    let head = bounded(conn.read_head()).await;
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let mut pending = String::new();
    let answer = data(&bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(answer["id"], 1);
    let id = answer["result"].clone();
    for i in 0..3 {
        let item = data(&bounded(conn.read_event(&mut pending)).await.unwrap());
        assert_eq!(
            item,
            json!({"jsonrpc": "2.0", "method": "tick", "params": {"subscription": id, "result": i}})
        );
    }
    assert_eq!(alive.load(Ordering::SeqCst), 1);
    drop(conn);
    eventually(|| alive.load(Ordering::SeqCst) == 0).await;

    // Over a plain POST, a subscribe call is told what it needs.
    let reply = post_with(addr, "", call).await;
    let error = &reply.json()["error"];
    assert_eq!(error["code"], -32000);
    assert_eq!(error["message"], "Subscriptions need a connection");
}

#[tokio::test]
async fn a_finite_subscription_over_an_event_stream_ends_the_stream() {
    let alive = Arc::new(AtomicUsize::new(0));
    let server = HttpServer::builder(subscribing(&alive)).build().unwrap();
    let (addr, _) = serve_http(server).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"subscribe_ticks","params":[2]}"#;
    let reply = post_with(addr, SSE, call).await;
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events: Vec<Value> = reply.body.split_terminator("\n\n").map(data).collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["id"], 1);
    assert_eq!(events[1]["params"]["result"], 0);
    assert_eq!(events[2]["params"]["result"], 1);
    assert_eq!(alive.load(Ordering::SeqCst), 0);
}
