//! The HTTP server, driven over raw TCP so that every status, header and connection detail is
//! seen as a client sees it: statuses and envelopes, body caps (declared and chunked), content
//! types, keep-alive, `x-request-id`, the context handlers get, load, limits, graceful shutdown,
//! and curl.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jrpc_runtime::http::{HttpClient, HttpServer, HttpServerBuilder};
use jrpc_runtime::server::{Drained, ShutdownHandle};
use jrpc_runtime::{Batches, Caller, Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{add, count_pings, request_header};
use jrpc_tests::raw_http::{Conn, post, post_json, request};
use jrpc_tests::servers::{connect_in_memory, serve_http};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What handlers share with the test.
#[derive(Default)]
struct State {
    pings: Arc<AtomicUsize>,
    /// Notified by `gate` once it has started.
    entered: Notify,
    /// Lets a waiting `gate` finish.
    release: Notify,
}

fn methods(state: &Arc<State>) -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            let header = request_header(&ctx, "x-custom");
            Ok::<_, RpcError>(serde_json::json!({
                "transport": ctx.transport().as_str(),
                "peer": ctx.peer_addr().map(|a| a.to_string()),
                "tag": ctx.request_tag(),
                "custom": header,
            }))
        })
        .unwrap();
    count_pings(&mut methods, &state.pings);
    let s = Arc::clone(state);
    methods
        .register("gate", &[], move |(): (), _| {
            let s = Arc::clone(&s);
            async move {
                s.entered.notify_one();
                s.release.notified().await;
                Ok::<_, RpcError>("done")
            }
        })
        .unwrap();
    methods
        .register("sleep", &["ms"], |(ms,): (u64,), _| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>("slept")
        })
        .unwrap();
    methods
}

struct Running {
    addr: SocketAddr,
    server: HttpServer,
    shutdown: ShutdownHandle,
    serving: JoinHandle<()>,
    state: Arc<State>,
}

impl Running {
    /// A connection over an in-memory pipe, for a test on a paused clock: over loopback TCP, a
    /// delivery the kernel defers under load lets tokio move the clock on to the server's next
    /// timeout while every task waits for the bytes.
    fn conn_in_memory(&self) -> Conn {
        Conn::over(connect_in_memory(&self.server, 64 * 1024))
    }
}

async fn start(configure: impl FnOnce(HttpServerBuilder) -> HttpServerBuilder) -> Running {
    let state = Arc::new(State::default());
    let server = configure(HttpServer::builder(methods(&state)))
        .build()
        .expect("valid settings");
    let shutdown = server.shutdown_handle();
    let (addr, serving) = serve_http(server.clone()).await;
    Running {
        addr,
        server,
        shutdown,
        serving,
        state,
    }
}

async fn start_default() -> Running {
    start(|b| b).await
}

const ADD: &str = r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_200_with_the_answer() {
    bounded(async {
        let server = start_default().await;
        let reply = request(server.addr, &post_json(ADD)).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.body, r#"{"jsonrpc":"2.0","result":5,"id":1}"#);

        // JSON-RPC errors are answers too: 200.
        let unknown = request(
            server.addr,
            &post_json(r#"{"jsonrpc":"2.0","method":"nope","id":"x"}"#),
        )
        .await;
        assert_eq!(unknown.status, 200);
        assert_eq!(unknown.json()["error"]["code"], -32601);
        assert_eq!(unknown.json()["id"], "x");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_notification_batches_are_204() {
    bounded(async {
        let server = start_default().await;
        let one = request(
            server.addr,
            &post_json(r#"{"jsonrpc":"2.0","method":"ping"}"#),
        )
        .await;
        assert_eq!(one.status, 204);
        assert!(one.body.is_empty());
        assert_eq!(one.header("content-type"), None);
        let batch = request(
            server.addr,
            &post_json(r#"[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"ping"}]"#),
        )
        .await;
        assert_eq!(batch.status, 204);
        assert!(batch.body.is_empty());
        // Handlers have run by the time the 204 is sent.
        assert_eq!(server.state.pings.load(Ordering::SeqCst), 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_calls_is_200_in_request_order() {
    bounded(async {
        let server = start_default().await;
        let reply = request(
            server.addr,
            &post_json(
                r#"[{"jsonrpc":"2.0","method":"add","params":[1,1],"id":1},
                    {"jsonrpc":"2.0","method":"ping"},
                    {"jsonrpc":"2.0","method":"add","params":[2,2],"id":2}]"#,
            ),
        )
        .await;
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.body,
            r#"[{"jsonrpc":"2.0","result":2,"id":1},{"jsonrpc":"2.0","result":4,"id":2}]"#
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_is_200_with_a_parse_error() {
    bounded(async {
        let server = start_default().await;
        for body in ["{oops", "", "\u{feff}{}"] {
            let reply = request(server.addr, &post_json(body)).await;
            assert_eq!(reply.status, 200, "{body:?}");
            assert_eq!(reply.json()["error"]["code"], -32700, "{body:?}");
        }
        // Bytes that are not UTF-8 cannot be JSON either.
        let mut raw = post("/rpc", Some("application/json"), "", "");
        let cut = raw.len() - "content-length: 0\r\n\r\n".len();
        raw.truncate(cut);
        raw.extend_from_slice(b"content-length: 2\r\n\r\n\xff\xfe");
        let reply = request(server.addr, &raw).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["error"]["code"], -32700);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_methods_are_405_with_allow_post() {
    bounded(async {
        let server = start_default().await;
        let get = request(server.addr, b"GET /rpc HTTP/1.1\r\nhost: localhost\r\n\r\n").await;
        let body = get.assert_envelope(405, -32600);
        assert_eq!(get.header("allow"), Some("POST"));
        assert!(
            body["error"]["data"]
                .as_str()
                .unwrap()
                .contains("with `POST`"),
            "the refusal says which method to use: {body}"
        );

        // A refused request whose body is left unread closes the connection.
        let mut conn = Conn::open(server.addr).await;
        let put = conn
            .send(b"PUT /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\n\r\n{}")
            .await;
        put.assert_envelope(405, -32600);
        assert_eq!(put.header("allow"), Some("POST"));
        assert_eq!(put.header("connection"), Some("close"));
        assert!(conn.is_closed().await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_paths_are_404() {
    bounded(async {
        let server = start_default().await;
        let reply = request(
            server.addr,
            &post("/nope", Some("application/json"), "", ADD),
        )
        .await;
        let body = reply.assert_envelope(404, -32600);
        assert!(body["error"]["data"].as_str().unwrap().contains("/nope"));
        let get = request(server.addr, b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n").await;
        get.assert_envelope(404, -32600);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_oversize_body_is_413_before_it_is_read() {
    bounded(async {
        let server = start(|b| b.max_message_size(1024)).await;
        let mut conn = Conn::open(server.addr).await;
        // Only the head is sent: the server must answer from `Content-Length` alone.
        let reply = conn
            .send(b"POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000000000\r\n\r\n")
            .await;
        let body = reply.assert_envelope(413, -32600);
        assert!(
            body["error"]["data"]
                .as_str()
                .unwrap()
                .contains("limit of 1024 bytes")
        );
        assert_eq!(reply.header("connection"), Some("close"));
        assert!(conn.is_closed().await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_oversize_body_is_413_while_it_arrives() {
    bounded(async {
        let server = start(|b| b.max_message_size(1024)).await;
        let mut conn = Conn::open(server.addr).await;
        conn.write(b"POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n").await;
        // 3 chunks of 500 bytes pass the cap; the body is never finished.
        for _ in 0..3 {
            let mut chunk = b"1f4\r\n".to_vec();
            chunk.extend_from_slice(&[b' '; 500]);
            chunk.extend_from_slice(b"\r\n");
            conn.write(&chunk).await;
        }
        let reply = conn.read_reply().await;
        reply.assert_envelope(413, -32600);
        assert_eq!(reply.header("connection"), Some("close"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_up_to_the_cap_are_taken_declared_or_chunked() {
    bounded(async {
        let server = start(|b| b.max_message_size(1024)).await;
        let padded = format!("{ADD:<1024}");
        assert_eq!(padded.len(), 1024);
        let reply = request(server.addr, &post_json(&padded)).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["result"], 5);

        let mut conn = Conn::open(server.addr).await;
        let (a, b) = ADD.split_at(20);
        let chunked = format!(
            "POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        );
        let reply = conn.send(chunked.as_bytes()).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["result"], 5);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_cannot_be_read_is_400() {
    bounded(async {
        let server = start_default().await;
        let mut conn = Conn::open(server.addr).await;
        // `zz` is not a chunk size: the body breaks off.
        let reply = conn
            .send(b"POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n")
            .await;
        reply.assert_envelope(400, -32600);
        assert_eq!(reply.header("connection"), Some("close"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_types_that_are_not_json_are_415() {
    bounded(async {
        let server = start_default().await;
        for refused in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/jsonp",
        ] {
            let reply = request(server.addr, &post("/rpc", Some(refused), "", ADD)).await;
            let body = reply.assert_envelope(415, -32600);
            let data = body["error"]["data"].as_str().unwrap();
            assert!(data.contains(refused), "{body}");
            assert!(
                data.contains("content-type: application/json"),
                "the refusal says what to send: {body}"
            );
        }
        for taken in [
            Some("application/json"),
            Some("application/json; charset=utf-8"),
            Some("Application/JSON;charset=UTF-8"),
            Some("application/vnd.example+json"),
            None,
        ] {
            let reply = request(server.addr, &post("/rpc", taken, "", ADD)).await;
            assert_eq!(reply.status, 200, "{taken:?}");
            assert_eq!(reply.json()["result"], 5, "{taken:?}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_serves_several_requests_on_one_connection() {
    bounded(async {
        let server = start_default().await;
        let mut conn = Conn::open(server.addr).await;
        let port = conn.local_port();
        for n in 0..5 {
            let reply = conn
                .send(&post_json(&format!(
                    r#"{{"jsonrpc":"2.0","method":"whoami","id":{n}}}"#
                )))
                .await;
            assert_eq!(reply.status, 200);
            assert_eq!(reply.header("connection"), None);
            let peer = reply.json()["result"]["peer"].as_str().unwrap().to_owned();
            assert_eq!(peer, format!("127.0.0.1:{port}"), "request {n}");
        }
        // A notification's 204 leaves the connection open as well.
        let reply = conn
            .send(&post_json(r#"{"jsonrpc":"2.0","method":"ping"}"#))
            .await;
        assert_eq!(reply.status, 204);
        assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_are_all_answered() {
    bounded(async {
        let server = start_default().await;
        let client = HttpClient::new(&format!("http://{}/rpc", server.addr)).unwrap();
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..1000i64 {
            let client = client.clone();
            calls.spawn(async move {
                let params = serde_json::value::to_raw_value(&[n, 1]).ok();
                let sum = client.call_raw("add", params).await.unwrap();
                (n, sum.get().parse::<i64>().unwrap())
            });
        }
        let mut seen = 0;
        while let Some(done) = calls.join_next().await {
            let (n, sum) = done.unwrap();
            assert_eq!(sum, n + 1);
            seen += 1;
        }
        assert_eq!(seen, 1000);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_request_id_is_taken_or_made_up_and_echoed() {
    bounded(async {
        let server = start(|b| b.always_send_request_id(true)).await;
        let given = whoami(server.addr, "x-request-id: req-42.a\r\n").await;
        assert_eq!(given.header("x-request-id"), Some("req-42.a"));
        assert_eq!(given.json()["result"]["tag"], "req-42.a");

        let mut made = Vec::new();
        for extra in ["", "x-request-id: has spaces in it\r\n"] {
            let reply = whoami(server.addr, extra).await;
            let tag = reply.header("x-request-id").unwrap().to_owned();
            assert_eq!(tag.len(), 16, "{tag}");
            assert!(tag.bytes().all(|b| b.is_ascii_hexdigit()), "{tag}");
            assert_eq!(reply.json()["result"]["tag"], tag.as_str());
            made.push(tag);
        }
        assert_ne!(made[0], made[1]);

        // Replies the HTTP layer makes itself carry it too.
        for raw in [
            &b"GET /rpc HTTP/1.1\r\nhost: localhost\r\nx-request-id: r405\r\n\r\n"[..],
            b"GET /elsewhere HTTP/1.1\r\nhost: localhost\r\nx-request-id: r404\r\n\r\n",
        ] {
            let reply = request(server.addr, raw).await;
            let expected = if reply.status == 405 { "r405" } else { "r404" };
            assert_eq!(reply.header("x-request-id"), Some(expected));
        }
        let reply = request(
            server.addr,
            &post("/rpc", Some("text/plain"), "x-request-id: r415\r\n", ADD),
        )
        .await;
        assert_eq!(reply.status, 415);
        assert_eq!(reply.header("x-request-id"), Some("r415"));
    })
    .await;
}

/// The answer to a `whoami` call posted with `extra` header lines.
async fn whoami(addr: SocketAddr, extra: &str) -> jrpc_tests::raw_http::Reply {
    let call = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;
    request(addr, &post("/rpc", Some("application/json"), extra, call)).await
}

/// By default a reply carries a client's own tag back, and not one made up: the handler and the
/// logs still have the made-up one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_made_up_request_id_stays_in_the_server_by_default() {
    bounded(async {
        let server = start_default().await;
        let given = whoami(server.addr, "x-request-id: r-1\r\n").await;
        assert_eq!(given.header("x-request-id"), Some("r-1"));
        let made = whoami(server.addr, "").await;
        assert_eq!(made.header("x-request-id"), None);
        let tag = made.json()["result"]["tag"].as_str().unwrap().to_owned();
        assert_eq!(tag.len(), 16, "{tag}");
        let refused = request(
            server.addr,
            b"GET /elsewhere HTTP/1.1\r\nhost: localhost\r\n\r\n",
        )
        .await;
        assert_eq!(refused.status, 404);
        assert_eq!(refused.header("x-request-id"), None);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_see_the_http_transport_peer_and_headers() {
    bounded(async {
        let server = start_default().await;
        let mut conn = Conn::open(server.addr).await;
        let port = conn.local_port();
        let reply = conn
            .send(&post(
                "/rpc",
                Some("application/json"),
                "x-custom: hello\r\n",
                r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#,
            ))
            .await;
        let result = &reply.json()["result"];
        assert_eq!(result["transport"], "http");
        assert_eq!(result["peer"], format!("127.0.0.1:{port}"));
        assert_eq!(result["custom"], "hello");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_context_adds_to_each_request_context() {
    #[derive(Clone)]
    struct User(String);

    bounded(async {
        let mut methods = Methods::new();
        methods
            .register("user", &[], |(): (), ctx: Context| async move {
                let user = ctx.extension::<User>().map(|u| u.0.clone());
                let headers = ctx.headers().map(|h| h.len());
                Ok::<_, RpcError>((user, headers.is_some_and(|n| n > 0)))
            })
            .unwrap();
        let server = HttpServer::builder(methods)
            .map_context(
                |req, ctx| match req.headers.get("x-user").and_then(|v| v.to_str().ok()) {
                    Some(name) => ctx.with_extension(User(name.to_owned())),
                    None => ctx,
                },
            )
            .build()
            .unwrap();
        let (addr, _) = serve_http(server).await;
        let call = r#"{"jsonrpc":"2.0","method":"user","id":1}"#;
        let with = request(addr, &post("/rpc", None, "x-user: ada\r\n", call)).await;
        assert_eq!(with.json()["result"], serde_json::json!(["ada", true]));
        let without = request(addr, &post("/rpc", None, "", call)).await;
        assert_eq!(without.json()["result"], serde_json::json!([null, true]));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_slow_call_finish_and_answers_new_requests_503() {
    bounded(async {
        let server = start_default().await;
        // A keep-alive connection opened (and used) before the shutdown.
        let mut idle = Conn::open(server.addr).await;
        assert_eq!(idle.send(&post_json(ADD)).await.status, 200);

        // A call in flight when the shutdown begins.
        let mut busy = Conn::open(server.addr).await;
        busy.write(&post_json(r#"{"jsonrpc":"2.0","method":"gate","id":7}"#))
            .await;
        server.state.entered.notified().await;

        let handle = server.shutdown.clone();
        let drained = tokio::spawn(async move { handle.shutdown().await });
        server.shutdown.shutting_down().await;
        assert!(server.shutdown.is_shutting_down());
        assert_eq!(server.shutdown.in_flight(), 1);

        // A new request on the open connection: 503 with the envelope, and the connection closes.
        let refused = idle.send(&post_json(ADD)).await;
        let body = refused.assert_envelope(503, -32000);
        assert!(
            body["error"]["data"]
                .as_str()
                .unwrap()
                .contains("shutting down")
        );
        assert_eq!(refused.header("connection"), Some("close"));
        assert!(idle.is_closed().await);

        // The accept loop has stopped.
        server.serving.await.unwrap();

        // The call in flight completes normally, and then the shutdown returns.
        assert!(!drained.is_finished());
        server.state.release.notify_one();
        let answer = busy.read_reply().await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, r#"{"jsonrpc":"2.0","result":"done","id":7}"#);
        assert_eq!(drained.await.unwrap(), Drained::Complete);
        assert!(busy.is_closed().await);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_up_on_a_stuck_call_when_the_budget_is_spent() {
    bounded(async {
        let server = start(|b| b.drain_timeout(Duration::from_millis(200))).await;
        let mut stuck = server.conn_in_memory();
        stuck
            .write(&post_json(r#"{"jsonrpc":"2.0","method":"gate","id":1}"#))
            .await;
        server.state.entered.notified().await;
        let outcome = server.shutdown.shutdown().await;
        assert_eq!(
            outcome,
            Drained::BudgetSpent {
                calls: 1,
                connections: 1
            }
        );
        // The connection was dropped with its call: no answer comes.
        assert!(stuck.is_closed().await);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn builder_settings_reach_the_method_table() {
    bounded(async {
        let server = start(|b| {
            b.handler_timeout(Some(Duration::from_millis(50)))
                .batches(Batches::UpTo(2))
        })
        .await;
        let mut conn = server.conn_in_memory();
        let slow = conn
            .send(&post_json(
                r#"{"jsonrpc":"2.0","method":"sleep","params":[30000],"id":1}"#,
            ))
            .await;
        assert_eq!(slow.status, 200);
        assert_eq!(slow.json()["error"]["code"], -32603);

        let three = format!("[{ADD},{ADD},{ADD}]");
        let reply = conn.send(&post_json(&three)).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["error"]["code"], -32600);
        let two = format!("[{ADD},{ADD}]");
        let reply = conn.send(&post_json(&two)).await;
        assert_eq!(reply.json().as_array().map(Vec::len), Some(2));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_are_configurable() {
    bounded(async {
        let server = start(|b| b.rpc_path("/api/v1")).await;
        let moved = request(server.addr, &post("/api/v1", None, "", ADD)).await;
        assert_eq!(moved.json()["result"], 5);
        let old = request(server.addr, &post_json(ADD)).await;
        assert_eq!(old.status, 404);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn past_max_connections_new_clients_wait_for_a_free_slot() {
    bounded(async {
        let server = start(|b| b.max_connections(1)).await;
        let mut first = Conn::open(server.addr).await;
        assert_eq!(first.send(&post_json(ADD)).await.status, 200);

        // The second client connects (the kernel queues it) but is not served yet.
        let mut second = Conn::open(server.addr).await;
        second.write(&post_json(ADD)).await;
        let waiting = tokio::time::timeout(Duration::from_millis(300), second.read_reply()).await;
        assert!(waiting.is_err(), "served past max_connections");

        // Once the first leaves, the second is served.
        drop(first);
        let reply = second.read_reply().await;
        assert_eq!(reply.json()["result"], 5);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_client_slow_to_send_its_headers_is_cut_off() {
    bounded(async {
        let server = start(|b| b.header_read_timeout(Duration::from_millis(200))).await;
        let mut conn = server.conn_in_memory();
        conn.write(b"POST /rpc HTTP/1.1\r\nhost: te").await;
        assert!(conn.is_closed().await);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_header_read_timeout_runs_from_each_request_of_a_kept_connection() {
    bounded(async {
        let server = start(|b| b.header_read_timeout(Duration::from_millis(600))).await;
        let mut conn = server.conn_in_memory();
        // Each head comes well within the timeout of the answer before it, though the three
        // together take longer than one timeout.
        for _ in 0..3 {
            let reply = conn.send(&post_json(ADD)).await;
            assert_eq!(reply.json()["result"], 5);
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        // Then nothing comes: the connection is closed.
        assert!(conn.is_closed().await);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_body_slower_than_the_body_read_timeout_is_408() {
    bounded(async {
        let server = start(|b| b.body_read_timeout(Duration::from_millis(200))).await;
        let mut conn = server.conn_in_memory();
        // The headers announce 60 bytes; only the first few ever come.
        conn.write(b"POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 60\r\n\r\n{\"jsonrpc\"").await;
        let reply = conn.read_reply().await;
        reply.assert_envelope(408, -32600);
        assert!(conn.is_closed().await);
    })
    .await;
}

#[tokio::test]
async fn bad_settings_are_refused_by_name() {
    let key = |b: HttpServerBuilder| b.build().err().map(|e| e.key());
    let b = || HttpServer::builder(Methods::new());
    assert_eq!(key(b().max_message_size(0)), Some("max_message_size"));
    assert_eq!(key(b().max_connections(0)), Some("max_connections"));
    assert_eq!(
        key(b().header_read_timeout(Duration::ZERO)),
        Some("header_read_timeout")
    );
    assert_eq!(
        key(b().body_read_timeout(Duration::ZERO)),
        Some("body_read_timeout")
    );
    assert_eq!(
        key(b().handler_timeout(Some(Duration::ZERO))),
        Some("handler_timeout")
    );
    assert_eq!(key(b().batches(Batches::UpTo(0))), Some("batches"));
    assert_eq!(key(b().rpc_path("rpc")), Some("rpc_path"));
    assert_eq!(key(b().ws_path("/ws path")), Some("ws_path"));
    assert_eq!(key(b()), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_gets_the_answer() {
    let found = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        eprintln!("SKIPPED curl_gets_the_answer: `curl` is not on PATH");
        return;
    }
    bounded(async {
        let server = start_default().await;
        let out = tokio::process::Command::new("curl")
            .args([
                "--silent",
                "--show-error",
                "--include",
                "--header",
                "content-type: application/json",
                "--header",
                "x-request-id: from-curl",
                "--data",
                ADD,
            ])
            .arg(format!("http://{}/rpc", server.addr))
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("x-request-id: from-curl"),
            "{head}"
        );
        assert_eq!(body, r#"{"jsonrpc":"2.0","result":5,"id":1}"#);
    })
    .await;
}
