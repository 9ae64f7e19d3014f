//! `HttpClient` against the jrpc server (calls, notifications, batches, timeouts, errors, the
//! connection pool) and against small hand-written servers that answer as other servers do.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jrpc_runtime::http::{BatchCall, HttpClient, HttpServer, StatusError};
use jrpc_runtime::server::ShutdownHandle;
use jrpc_runtime::{Batches, Caller, ClientError, Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{add, big, count_pings, request_header};
use jrpc_tests::servers::serve_http;
use serde_json::Value;
use serde_json::value::{RawValue, to_raw_value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::Notify;

fn params<T: serde::Serialize>(value: T) -> Option<Box<RawValue>> {
    Some(to_raw_value(&value).unwrap())
}

#[derive(Default)]
struct State {
    pings: Arc<AtomicUsize>,
    release: Notify,
}

fn methods(state: &Arc<State>) -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    methods
        .register("divide", &["a", "b"], |(a, b): (f64, f64), _| async move {
            if b == 0.0 {
                Err(RpcError::new(1, "division by zero").with_data(&[a, b]))
            } else {
                Ok(a / b)
            }
        })
        .unwrap();
    methods
        .register("port", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.peer_addr().map(|addr| addr.port()))
        })
        .unwrap();
    methods
        .register("auth", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(request_header(&ctx, "authorization"))
        })
        .unwrap();
    big(&mut methods);
    methods
        .register("panics", &[], |(): (), _| async move {
            if true {
                panic!("boom");
            }
            Ok::<_, RpcError>(())
        })
        .unwrap();
    count_pings(&mut methods, &state.pings);
    let s = Arc::clone(state);
    methods
        .register("gate", &[], move |(): (), _| {
            let s = Arc::clone(&s);
            async move {
                s.release.notified().await;
                Ok::<_, RpcError>("done")
            }
        })
        .unwrap();
    methods
}

struct Running {
    url: String,
    state: Arc<State>,
    shutdown: ShutdownHandle,
}

async fn start_with(configure: impl FnOnce(Methods) -> HttpServer) -> Running {
    let state = Arc::new(State::default());
    let server = configure(methods(&state));
    let shutdown = server.shutdown_handle();
    let (addr, _) = serve_http(server).await;
    Running {
        url: format!("http://{addr}/rpc"),
        state,
        shutdown,
    }
}

async fn start() -> Running {
    start_with(|m| HttpServer::builder(m).build().unwrap()).await
}

/// A hand-written HTTP/1.1 server: `answer` gets each request body and returns the whole raw
/// response, or `None` to close the connection without answering.
async fn fake_server(
    answer: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answer = Arc::clone(&answer);
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.trim_end().to_ascii_lowercase();
                        if lower.is_empty() {
                            break;
                        }
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    match answer(std::str::from_utf8(&body).unwrap()) {
                        Some(response) => {
                            if stream.write_all(response.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        None => return,
                    }
                }
            });
        }
    });
    addr
}

fn response(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn client_of(addr: SocketAddr) -> HttpClient {
    HttpClient::new(&format!("http://{addr}/")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_return_results_and_errors() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::new(&server.url).unwrap();
        assert_eq!(
            client.call_raw("add", params([2, 3])).await.unwrap().get(),
            "5"
        );
        assert_eq!(
            client
                .call_raw("add", params(serde_json::json!({"a": 1, "b": 2})))
                .await
                .unwrap()
                .get(),
            "3"
        );

        let err = client.call_raw("divide", params([1, 0])).await.unwrap_err();
        let rpc = err.rpc_error().expect("a JSON-RPC error");
        assert_eq!(rpc.code().code(), 1);
        assert_eq!(rpc.message(), "division by zero");
        assert_eq!(rpc.data().map(RawValue::get), Some("[1.0,0.0]"));

        let unknown = client.call_raw("nope", None).await.unwrap_err();
        assert_eq!(unknown.rpc_error().map(|e| e.code().code()), Some(-32601));
        let bad = client
            .call_raw("add", params(serde_json::json!(["x", 1])))
            .await
            .unwrap_err();
        assert_eq!(bad.rpc_error().map(|e| e.code().code()), Some(-32602));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_failure_is_an_internal_error() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::new(&server.url).unwrap();
        let err = client.call_raw("panics", None).await.unwrap_err();
        let rpc = err.rpc_error().expect("a JSON-RPC error");
        assert_eq!(rpc.code().code(), -32603);
        assert_eq!(rpc.message(), "Internal error");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_reach_the_server() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::new(&server.url).unwrap();
        client.notify_raw("ping", None).await.unwrap();
        client.notify_raw("ping", None).await.unwrap();
        // The server answers 204 once the handler is done.
        assert_eq!(server.state.pings.load(Ordering::SeqCst), 2);
        // A notification of an unknown method is still not answered.
        client.notify_raw("nope", None).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_returns_one_result_per_call_in_order() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::new(&server.url).unwrap();
        let results = client
            .batch(vec![
                BatchCall::call("add", params([1, 2])),
                BatchCall::notification("ping", None),
                BatchCall::call("divide", params([1, 0])),
                BatchCall::call("add", params([10, 20])),
            ])
            .await
            .unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0].as_ref().unwrap().get(), "3");
        assert_eq!(
            results[1]
                .as_ref()
                .unwrap_err()
                .rpc_error()
                .map(|e| e.code().code()),
            Some(1)
        );
        assert_eq!(results[2].as_ref().unwrap().get(), "30");
        assert_eq!(server.state.pings.load(Ordering::SeqCst), 1);

        let none = client
            .batch(vec![
                BatchCall::notification("ping", None),
                BatchCall::notification("ping", None),
            ])
            .await
            .unwrap();
        assert!(none.is_empty());
        assert_eq!(server.state.pings.load(Ordering::SeqCst), 3);
        assert!(client.batch(Vec::new()).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_fails_whole() {
    bounded(async {
        let server = start_with(|m| {
            HttpServer::builder(m)
                .batches(Batches::Refused)
                .build()
                .unwrap()
        })
        .await;
        let client = HttpClient::new(&server.url).unwrap();
        let err = client
            .batch(vec![BatchCall::call("add", params([1, 2]))])
            .await
            .unwrap_err();
        assert_eq!(err.rpc_error().map(|e| e.code().code()), Some(-32600));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_answers_in_any_order_are_matched_by_id() {
    bounded(async {
        // Answers each call with its own id as the result, in reverse order.
        let addr = fake_server(|body| {
            let calls: Vec<Value> = serde_json::from_str(body).unwrap();
            let answers: Vec<Value> = calls
                .iter()
                .rev()
                .filter(|c| c.get("id").is_some())
                .map(
                    |c| serde_json::json!({"jsonrpc": "2.0", "result": c["method"], "id": c["id"]}),
                )
                .collect();
            Some(response(
                "200 OK",
                &serde_json::to_string(&answers).unwrap(),
            ))
        })
        .await;
        let client = client_of(addr);
        let results = client
            .batch(vec![
                BatchCall::call("first", None),
                BatchCall::call("second", None),
                BatchCall::notification("quiet", None),
                BatchCall::call("third", None),
            ])
            .await
            .unwrap();
        let got: Vec<&str> = results.iter().map(|r| r.as_ref().unwrap().get()).collect();
        assert_eq!(got, [r#""first""#, r#""second""#, r#""third""#]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_batch_answer_leaves_out_gets_its_own_error() {
    bounded(async {
        let addr = fake_server(|body| {
            let calls: Vec<Value> = serde_json::from_str(body).unwrap();
            let first = serde_json::json!([{"jsonrpc": "2.0", "result": 1, "id": calls[0]["id"]}]);
            Some(response("200 OK", &first.to_string()))
        })
        .await;
        let results = client_of(addr)
            .batch(vec![BatchCall::call("a", None), BatchCall::call("b", None)])
            .await
            .unwrap();
        assert_eq!(results[0].as_ref().unwrap().get(), "1");
        assert!(matches!(results[1], Err(ClientError::Malformed(_))));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_take_204_or_200_with_any_body() {
    bounded(async {
        for answer in [
            "HTTP/1.1 204 No Content\r\n\r\n".to_owned(),
            response("200 OK", "null"),
            response("200 OK", "{}"),
            response("200 OK", ""),
            response("202 Accepted", ""),
        ] {
            let addr = fake_server(move |_| Some(answer.clone())).await;
            client_of(addr).notify_raw("note", None).await.unwrap();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_statuses_are_failed_with_an_envelope_and_transport_without() {
    bounded(async {
        let envelope = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"overloaded"},"id":null}"#;
        let addr = fake_server(move |_| Some(response("500 Internal Server Error", envelope))).await;
        let client = client_of(addr);
        let err = client.call_raw("any", None).await.unwrap_err();
        assert_eq!(err.rpc_error().map(|e| e.message()), Some("overloaded"));
        let err = client.notify_raw("any", None).await.unwrap_err();
        assert_eq!(err.rpc_error().map(|e| e.code().code()), Some(-32000));

        let addr = fake_server(|_| {
            Some(
                "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: 13\r\n\r\n<h1>oops</h1>"
                    .to_owned(),
            )
        })
        .await;
        let err = client_of(addr).call_raw("any", None).await.unwrap_err();
        let ClientError::Transport(source) = &err else {
            panic!("expected a transport error, got {err:?}");
        };
        let status = source
            .downcast_ref::<StatusError>()
            .expect("a StatusError");
        assert_eq!(status.status().as_u16(), 502);
        assert_eq!(status.body(), "<h1>oops</h1>");
        assert!(err.to_string().contains("502"), "{err}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_are_not_responses_are_malformed() {
    bounded(async {
        for body in [
            "null",
            "",
            "{}",
            r#"{"jsonrpc":"2.0","result":1,"id":999999}"#,
        ] {
            let addr = fake_server(move |_| Some(response("200 OK", body))).await;
            let err = client_of(addr).call_raw("any", None).await.unwrap_err();
            assert!(
                matches!(err, ClientError::Malformed(_)),
                "{body:?}: {err:?}"
            );
        }
        // An error of id null (the server could not read the id) is still the call's error.
        let addr = fake_server(|_| {
            Some(response(
                "200 OK",
                r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#,
            ))
        })
        .await;
        let err = client_of(addr).call_raw("any", None).await.unwrap_err();
        assert_eq!(err.rpc_error().map(|e| e.code().code()), Some(-32700));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_call_past_its_timeout_is_timed_out() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::builder(server.url.as_str())
            .call_timeout(Some(Duration::from_millis(100)))
            .build()
            .unwrap();
        let err = client.call_raw("gate", None).await.unwrap_err();
        match err {
            ClientError::TimedOut { method, limit } => {
                assert_eq!(method, "gate");
                assert_eq!(limit, Duration::from_millis(100));
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        // The client still works afterwards.
        assert_eq!(
            client.call_raw("add", params([1, 1])).await.unwrap().get(),
            "2"
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn without_a_timeout_a_call_waits_for_its_answer() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::builder(server.url.as_str())
            .call_timeout(None)
            .build()
            .unwrap();
        let call = tokio::spawn(async move { client.call_raw("gate", None).await });
        // Longer than any default a client might have slipped in below the test's own bound.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!call.is_finished());
        server.state.release.notify_one();
        assert_eq!(call.await.unwrap().unwrap().get(), r#""done""#);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_pool_reuses_connections() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::new(&server.url).unwrap();
        let mut ports = std::collections::HashSet::new();
        for _ in 0..10 {
            let port = client.call_raw("port", None).await.unwrap();
            ports.insert(port.get().to_owned());
            // hyper's pool takes a connection back in a task of its own once the answer is read;
            // a call made before that opens a second connection. Give it a moment.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(ports.len() < 10, "no connection was reused: {ports:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_are_sent_with_every_request() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::builder(server.url.as_str())
            .bearer_token("s3cret")
            .header("x-tenant", "t1")
            .build()
            .unwrap();
        assert_eq!(
            client.call_raw("auth", None).await.unwrap().get(),
            r#""Bearer s3cret""#
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_cap_is_too_long() {
    bounded(async {
        let server = start().await;
        let client = HttpClient::builder(server.url.as_str())
            .max_message_size(1000)
            .build()
            .unwrap();
        assert!(client.call_raw("big", params([100])).await.is_ok());
        match client.call_raw("big", params([5000])).await {
            Err(ClientError::TooLong { limit, got }) => {
                assert_eq!(limit, 1000);
                assert!(got > 1000);
            }
            other => panic!("expected TooLong, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_before_the_answer_is_closed() {
    bounded(async {
        let addr = fake_server(|_| None).await;
        match client_of(addr).call_raw("any", None).await {
            Err(ClientError::Closed { method }) => assert_eq!(method, "any"),
            other => panic!("expected Closed, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_a_transport_error() {
    bounded(async {
        // Bind then drop, so that the port is (almost certainly) closed.
        let addr = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let err = client_of(addr).call_raw("any", None).await.unwrap_err();
        assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_shutting_down_fails_calls_with_its_envelope() {
    bounded(async {
        let server = start().await;
        // One client with an idle pooled connection, another with a call in flight that keeps
        // the server draining (and so answering) until it is released.
        let idle = HttpClient::new(&server.url).unwrap();
        assert!(idle.call_raw("add", params([1, 1])).await.is_ok());
        let busy = HttpClient::new(&server.url).unwrap();
        let in_flight = tokio::spawn(async move { busy.call_raw("gate", None).await });
        while server.shutdown.in_flight() == 0 {
            tokio::task::yield_now().await;
        }
        let handle = server.shutdown.clone();
        let drained = tokio::spawn(async move { handle.shutdown().await });
        server.shutdown.shutting_down().await;

        let err = idle.call_raw("add", params([1, 1])).await.unwrap_err();
        assert_eq!(
            err.rpc_error().map(|e| e.code().code()),
            Some(-32000),
            "{err:?}"
        );

        server.state.release.notify_one();
        assert_eq!(in_flight.await.unwrap().unwrap().get(), r#""done""#);
        drained.await.unwrap();
    })
    .await;
}

#[test]
fn bad_settings_are_refused_by_name() {
    let key = |b: jrpc_runtime::http::HttpClientBuilder| b.build().err().map(|e| e.key());
    // `https://` is taken: the tests build the runtime with `tls`.
    for url in ["ftp://host/", "ws://host/ws", "not a url", "/rpc"] {
        assert_eq!(key(HttpClient::builder(url)), Some("url"), "{url}");
    }
    let ok = || HttpClient::builder("http://127.0.0.1:1/rpc");
    assert_eq!(
        key(ok().call_timeout(Some(Duration::ZERO))),
        Some("call_timeout")
    );
    assert_eq!(key(ok().max_message_size(0)), Some("max_message_size"));
    assert_eq!(key(ok().header("bad name", "v")), Some("header"));
    assert_eq!(key(ok().header("x-ok", "line\nbreak")), Some("header"));
    assert_eq!(key(ok()), None);
}
