//! Cancellation and trace context over MCP's Streamable HTTP: a client's POSTed
//! `notifications/cancelled` aborts its session's running request with that id (answered as
//! JSON or as an event stream), and a request's `params._meta.traceparent` is its handler's
//! trace; on the data layer, a tool's call is cancelled so, and a modern request's trace reaches
//! its tool.

use std::net::SocketAddr;

use jrpc_mcp::{Mcp, McpServer};
use jrpc_runtime::{Context, Methods, RpcError, rpc_service};
use jrpc_tests::cancel::{Hang, hang};
use jrpc_tests::raw_http::{Conn, post, request};
use jrpc_tests::servers::serve_mcp;
use serde_json::json;
use tokio::sync::mpsc;

/// An MCP server with `initialize` and `hang`, on a free local port.
async fn start() -> (SocketAddr, Hang) {
    let mut methods = Methods::new();
    let hang = hang(&mut methods);
    methods
        .register("initialize", &[], |(): (), _| async move {
            Ok::<_, RpcError>(json!({ "protocolVersion": "2025-11-25", "capabilities": {} }))
        })
        .unwrap();
    let (addr, _) = serve_mcp(McpServer::builder(methods).build().unwrap()).await;
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
    // The stream has its priming event (an id, no data), the handler's `tick`, and ends without
    // an answer.
    let mut pending = String::new();
    let mut events = Vec::new();
    while let Some(event) = conn.read_event(&mut pending).await {
        events.push(event);
    }
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].ends_with("data: "), "{events:?}");
    assert!(events[1].contains("\"tick\""), "{events:?}");
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

/// Signals when dropped.
struct Dropped(mpsc::UnboundedSender<()>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

struct Tools {
    started: mpsc::UnboundedSender<()>,
    dropped: mpsc::UnboundedSender<()>,
}

#[rpc_service(schema)]
impl Tools {
    /// Waits for ever, telling when it starts and when it is dropped.
    async fn wait(&self) -> String {
        let _dropped = Dropped(self.dropped.clone());
        let _ = self.started.send(());
        std::future::pending::<()>().await;
        String::new()
    }

    /// Answers the caller's `traceparent`.
    fn traced(&self, ctx: &Context) -> String {
        ctx.trace()
            .map_or_else(String::new, jrpc_runtime::TraceContext::traceparent)
    }
}

/// A data-layer server with `wait` and `traced`; what `wait` tells (started, dropped).
async fn start_tools() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<()>,
    mpsc::UnboundedReceiver<()>,
) {
    let (started, started_rx) = mpsc::unbounded_channel();
    let (dropped, dropped_rx) = mpsc::unbounded_channel();
    let tools = Tools { started, dropped };
    let mcp = Mcp::builder("cancel", "1")
        .tools(tools.into_methods())
        .build()
        .unwrap();
    let (addr, _) = serve_mcp(McpServer::builder(mcp).build().unwrap()).await;
    (addr, started_rx, dropped_rx)
}

#[tokio::test]
async fn a_posted_cancelled_notice_aborts_a_tool_call() {
    let (addr, mut started, mut dropped) = start_tools().await;
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "test", "version": "1" },
    } });
    let reply = request(addr, &mcp_post(None, "application/json", &init.to_string())).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "wait", "arguments": {} } });
    let mut conn = Conn::open(addr).await;
    conn.write(&mcp_post(
        Some(&session),
        "application/json",
        &call.to_string(),
    ))
    .await;
    started.recv().await.unwrap();
    cancel(addr, &session, 7).await;
    dropped.recv().await.unwrap();
    let reply = conn.read_reply().await;
    assert_eq!(reply.status, 202, "{reply:?}");
}

#[tokio::test]
async fn a_modern_requests_meta_traceparent_reaches_its_tool() {
    let (addr, _, _) = start_tools().await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "traced",
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": traceparent,
        },
    } });
    let headers = "accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: traced\r\n";
    let reply = request(
        addr,
        &post("/mcp", Some("application/json"), headers, &call.to_string()),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["result"]["content"][0]["text"], traceparent);
}
