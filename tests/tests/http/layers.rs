//! Call layers over HTTP (a `POST` and an SSE answer, each batch element through them), and
//! bearer authentication: `401` with the challenge before the body is read, the identity in the
//! handler's context, per-method rights with `Authorize`.

use std::net::SocketAddr;

use jrpc_runtime::Methods;
use jrpc_runtime::http::HttpServer;
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{self, GUARDED_ANSWER, GUARDED_BATCH, guarded, guarded_batch_seen};
use jrpc_tests::raw_http::{Conn, Reply, post, request};
use jrpc_tests::servers::serve_http;
use serde_json::{Value, json};

const SSE: &str = "accept: application/json, text/event-stream\r\n";

async fn post_with(addr: SocketAddr, extra: &str, body: &str) -> Reply {
    bounded(request(
        addr,
        &post("/rpc", Some("application/json"), extra, body),
    ))
    .await
}

#[tokio::test]
async fn a_post_and_an_sse_answer_run_the_layers_for_each_element() {
    let mut methods = Methods::new();
    let seen = guarded(&mut methods);
    fixtures::ticks(&mut methods);
    let (addr, _) = serve_http(HttpServer::builder(methods).build().unwrap()).await;

    let reply = post_with(addr, "", GUARDED_BATCH).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, GUARDED_ANSWER));
    assert_eq!(*seen.lock().unwrap(), guarded_batch_seen());

    // An SSE answer: the pushes, then the batch's answers, the refused one among them.
    seen.lock().unwrap().clear();
    let batch = r#"[{"jsonrpc":"2.0","method":"ticks","params":[1],"id":1},{"jsonrpc":"2.0","method":"secret","id":2}]"#;
    let reply = post_with(addr, SSE, batch).await;
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events: Vec<Value> = reply
        .body
        .split_terminator("\n\n")
        .map(|event| serde_json::from_str(event.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    assert_eq!(events[0]["method"], "tick");
    assert_eq!(events[1][0]["result"], 1);
    assert_eq!(events[1][1]["error"]["code"], -32003);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("ticks".to_owned(), Some("1".to_owned())),
            ("secret".to_owned(), Some("2".to_owned()))
        ]
    );
}

/// The `access` fixture, served with its bearer authentication.
async fn authenticated() -> SocketAddr {
    let mut methods = Methods::new();
    let auth = fixtures::access(&mut methods);
    let server = HttpServer::builder(methods)
        .bearer_auth(auth)
        .build()
        .unwrap();
    serve_http(server).await.0
}

const WHOAMI: &str = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;

#[tokio::test]
async fn a_request_without_a_token_it_takes_is_answered_401_with_the_challenge() {
    let addr = authenticated().await;
    let reply = post_with(addr, "", WHOAMI).await;
    let envelope = reply.assert_envelope(401, -32600);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    assert!(
        envelope["error"]["data"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer")
    );

    let reply = post_with(addr, "authorization: Bearer nope\r\n", WHOAMI).await;
    reply.assert_envelope(401, -32600);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(r#"Bearer error="invalid_token""#)
    );
    let reply = post_with(addr, "authorization: Basic ZnVsbDo=\r\n", WHOAMI).await;
    assert_eq!(
        (reply.status, reply.header("www-authenticate")),
        (401, Some("Bearer"))
    );
}

#[tokio::test]
async fn the_401_comes_before_the_body_is_read() {
    let addr = authenticated().await;
    bounded(async {
        let mut conn = Conn::open(addr).await;
        // The head announces a body that never comes: a server reading it would wait forever.
        conn.write(
            b"POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n",
        )
        .await;
        let reply = conn.read_reply().await;
        assert_eq!(reply.status, 401);
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        // The unread body cannot be skipped: the connection ends with the reply.
        assert_eq!(reply.header("connection"), Some("close"));
        assert!(conn.is_closed().await);
    })
    .await;
}

#[tokio::test]
async fn the_tokens_identity_reaches_the_handler_and_authorize() {
    let addr = authenticated().await;
    let as_ = |token: &str| format!("authorization: Bearer {token}\r\n");
    let reply = post_with(addr, &as_("full"), WHOAMI).await;
    assert_eq!(reply.json()["result"], "Some(Full)");
    let batch =
        r#"[{"jsonrpc":"2.0","method":"whoami","id":1},{"jsonrpc":"2.0","method":"write","id":2}]"#;
    let reply = post_with(addr, &as_("read"), batch).await;
    assert_eq!(
        reply.json(),
        json!([
            {"jsonrpc": "2.0", "result": "Some(Read)", "id": 1},
            {"jsonrpc": "2.0", "error": {"code": -32003, "message": "Forbidden", "data": {"method": "write"}}, "id": 2},
        ])
    );
    let reply = post_with(addr, &as_("full"), batch).await;
    assert_eq!(reply.json()[1]["result"], "written");
}
