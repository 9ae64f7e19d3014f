//! Cancellation and trace context over MCP's Streamable HTTP: a client's POSTed
//! `notifications/cancelled` aborts its session's running request with that id (answered as
//! JSON or as an event stream), and a request's `params._meta.traceparent` is its handler's
//! trace.

use std::net::SocketAddr;

use jrpc_runtime::mcp::McpServer;
use jrpc_runtime::{Methods, RpcError};
use jrpc_tests::cancel::{Hang, hang};
use jrpc_tests::raw_http::{Conn, post, request};
use serde_json::json;
use tokio::net::TcpListener;

/// An MCP server with `initialize` and `hang`, on a free local port.
async fn start() -> (SocketAddr, Hang) {
    let mut methods = Methods::new();
    let hang = hang(&mut methods);
    methods
        .register("initialize", &[], |(): (), _| async move {
            Ok::<_, RpcError>(json!({ "protocolVersion": "2025-11-25", "capabilities": {} }))
        })
        .unwrap();
    let server = McpServer::builder(methods).build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener).await });
    (addr, hang)
}

/// A POST to `/mcp` of `body`, in session `session`, accepting `accept`.
fn mcp_post(session: Option<&str>, accept: &str, body: &str) -> Vec<u8> {
    let mut headers = format!("accept: {accept}\r\n");
    if let Some(id) = session {
        headers.push_str(&format!("mcp-session-id: {id}\r\n"));
    }
    post("/mcp", Some("application/json"), &headers, body)
}

async fn initialize(addr: SocketAddr) -> String {
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#;
    let reply = request(addr, &mcp_post(None, "application/json", body)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.header("mcp-session-id").unwrap().to_owned()
}

/// Posts the client's `notifications/cancelled` for request `id` in `session`.
async fn cancel(addr: SocketAddr, session: &str, id: i64) {
    let notice = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "the user pressed stop"},
    });
    let reply = request(
        addr,
        &mcp_post(Some(session), "application/json", &notice.to_string()),
    )
    .await;
    assert_eq!(reply.status, 202, "{reply:?}");
}

#[tokio::test]
async fn a_posted_cancelled_notice_aborts_the_request_answered_as_json() {
    let (addr, mut hang) = start().await;
    let session = initialize(addr).await;
    let mut conn = Conn::open(addr).await;
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"hang"}"#;
    conn.write(&mcp_post(Some(&session), "application/json", body))
        .await;
    hang.started().await;
    cancel(addr, &session, 5).await;
    hang.cancelled().await;
    // MCP answers a cancelled request nothing: its POST gets `202` with no body.
    let reply = conn.read_reply().await;
    assert_eq!(reply.status, 202, "{reply:?}");
    assert!(reply.body.is_empty(), "{reply:?}");
}

#[tokio::test]
async fn a_posted_cancelled_notice_aborts_the_request_answered_as_events() {
    let (addr, mut hang) = start().await;
    let session = initialize(addr).await;
    let mut conn = Conn::open(addr).await;
    let body = r#"{"jsonrpc":"2.0","id":6,"method":"hang","params":{"push":true}}"#;
    let both = "application/json, text/event-stream";
    conn.write(&mcp_post(Some(&session), both, body)).await;
    hang.started().await;
    let head = conn.read_head().await;
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    cancel(addr, &session, 6).await;
    hang.cancelled().await;
    // The stream has the handler's `tick`, and ends without an answer.
    let mut pending = String::new();
    let mut events = Vec::new();
    while let Some(event) = conn.read_event(&mut pending).await {
        events.push(event);
    }
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].contains("\"tick\""), "{events:?}");
}

#[tokio::test]
async fn a_requests_meta_traceparent_is_its_handlers_trace() {
    let (addr, mut hang) = start().await;
    let session = initialize(addr).await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "hang",
        "params": {"_meta": {"traceparent": traceparent, "tracestate": "congo=t61rcWkgMzE"}},
    });
    let mut conn = Conn::open(addr).await;
    conn.write(&mcp_post(
        Some(&session),
        "application/json",
        &body.to_string(),
    ))
    .await;
    let started = hang.started().await;
    let trace = started.trace.expect("a trace from `_meta`");
    assert_eq!(trace.traceparent(), traceparent);
    assert_eq!(trace.tracestate(), Some("congo=t61rcWkgMzE"));
    drop(conn);
}
