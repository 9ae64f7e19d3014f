//! Cancellation over HTTP: a client that closes its HTTP/1.1 connection mid-call, an HTTP/2
//! stream reset, an SSE answer's stream gone and a shutdown's drain budget spent each drop the
//! handler, resolve its context's `cancelled()` and are observed `cancelled`; through one proxy
//! hop (a handler calling another server with the HTTP client), the edge's cancellation reaches
//! the server downstream.

use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use jrpc_runtime::Methods;
use jrpc_runtime::http::HttpServer;
use jrpc_tests::cancel::hang;
use jrpc_tests::raw_http::{Conn, post, post_json};
use jrpc_tests::servers::serve_http;

const HANG: &str = r#"{"jsonrpc":"2.0","method":"hang","id":1}"#;

#[tokio::test]
async fn an_http1_client_that_closes_its_connection_cancels_its_call() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (addr, _) = serve_http(HttpServer::builder(methods).build().unwrap()).await;
    let mut conn = Conn::open(addr).await;
    conn.write(&post_json(HANG)).await;
    hang.started().await;
    drop(conn);
    hang.cancelled().await;
}

#[tokio::test]
async fn an_http2_stream_reset_cancels_its_call_and_the_connection_goes_on() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    jrpc_tests::fixtures::add(&mut methods);
    let (addr, _) = serve_http(HttpServer::builder(methods).build().unwrap()).await;
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let request = |body: &'static str| {
        http::Request::post(format!("http://{addr}/rpc"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    };
    let mut call = Box::pin(sender.send_request(request(HANG)));
    hang.started_while(&mut call).await;
    // Dropping the response future resets the stream (RST_STREAM, CANCEL).
    drop(call);
    hang.cancelled().await;
    let res = sender
        .send_request(request(
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2}"#,
        ))
        .await
        .unwrap();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], br#"{"jsonrpc":"2.0","result":3,"id":2}"#);
}

#[tokio::test]
async fn an_sse_answers_stream_gone_cancels_its_call() {
    // Before the stream's first event (the reply not sent yet), and after it (the body sending).
    for params in [r#"{}"#, r#"{"push":true}"#] {
        let mut methods = Methods::new();
        let mut hang = hang(&mut methods);
        let (addr, _) = serve_http(HttpServer::builder(methods).build().unwrap()).await;
        let mut conn = Conn::open(addr).await;
        let body = format!(r#"{{"jsonrpc":"2.0","method":"hang","params":{params},"id":1}}"#);
        conn.write(&post(
            "/rpc",
            Some("application/json"),
            "accept: text/event-stream\r\n",
            &body,
        ))
        .await;
        hang.started().await;
        if params.contains("push") {
            let head = conn.read_head().await;
            assert_eq!(head.header("content-type"), Some("text/event-stream"));
        }
        drop(conn);
        hang.cancelled().await;
    }
}

#[tokio::test]
async fn the_drain_budget_spent_cancels_http_calls() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let server = HttpServer::builder(methods)
        .drain_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let shutdown = server.shutdown_handle();
    let (addr, _) = serve_http(server).await;
    let mut conn = Conn::open(addr).await;
    conn.write(&post_json(HANG)).await;
    hang.started().await;
    let drained = tokio::spawn(async move { shutdown.shutdown().await });
    hang.cancelled().await;
    drained.await.unwrap();
}

#[tokio::test]
async fn cancelling_at_the_edge_cancels_downstream_through_one_hop() {
    let (addr, mut hang) = super::trace::edge_and_downstream().await;
    let mut conn = Conn::open(addr).await;
    conn.write(&post_json(r#"{"jsonrpc":"2.0","method":"proxy","id":1}"#))
        .await;
    hang.started().await;
    // The edge's client goes: the edge's handler, and its call downstream, are dropped.
    drop(conn);
    hang.cancelled().await;
}
