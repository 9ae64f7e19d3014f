//! The modern era (2026-07-28) over Streamable HTTP, on the endpoint that serves the legacy era
//! too: its checks and their statuses, rule by rule, with HTTP written and read by hand.

use std::net::SocketAddr;

use jrpc_mcp::{Mcp, McpContext as _, McpServer};
use jrpc_runtime::{Context, RpcError, rpc_service};
use jrpc_tests::bounded;
use jrpc_tests::raw_http::{Reply, post, request};
use jrpc_tests::servers::serve_mcp;
use serde_json::{Value, json};

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Echoes its text.
    fn echo(&self, text: String) -> String {
        text
    }

    /// Reports two steps of progress.
    async fn steps(&self, ctx: &Context) -> Result<String, RpcError> {
        ctx.progress(1.0, Some(2.0), None).await?;
        ctx.progress(2.0, Some(2.0), None).await?;
        Ok("done".into())
    }
}

async fn start() -> SocketAddr {
    let mcp = Mcp::builder("modern", "1")
        .tools(Tools.into_methods())
        .build()
        .unwrap();
    serve_mcp(McpServer::builder(mcp).build().unwrap()).await.0
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A request body: `method` with `params` (and `_meta` unless `params` has one), id 7.
fn body(method: &str, mut params: Value) -> String {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }).to_string()
}

/// The headers a conforming client sends for `method` (and `name`), as lines.
fn headers(method: &str, name: Option<&str>) -> String {
    let mut lines = format!(
        "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\n"
    );
    if let Some(name) = name {
        lines.push_str(&format!("mcp-name: {name}\r\n"));
    }
    lines
}

async fn send(addr: SocketAddr, headers: &str, body: &str) -> Reply {
    bounded(request(
        addr,
        &post("/mcp", Some("application/json"), headers, body),
    ))
    .await
}

/// Asserts an error reply: its status, its code, and the request's id.
fn refused(reply: &Reply, status: u16, code: i64) -> Value {
    assert_eq!(reply.status, status, "{reply:?}");
    let answer = reply.json();
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert_eq!(answer["id"], 7, "errors carry the request's id: {answer}");
    answer
}

#[tokio::test]
async fn a_conforming_request_is_answered_stamped_and_without_a_session() {
    let addr = start().await;
    let reply = send(
        addr,
        &headers("tools/list", None),
        &body("tools/list", json!({})),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("mcp-session-id"), None);
    let result = &reply.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["tools"][0]["name"], "echo");
    let echoed = send(
        addr,
        &headers("tools/call", Some("echo")),
        &body(
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        ),
    )
    .await;
    assert_eq!(echoed.json()["result"]["content"][0]["text"], "hi");
    // A name that is no header value travels in base64, and tabs and spaces around it go.
    let encoded = send(
        addr,
        &headers("tools/call", Some(" \t=?base64?ZWNobw==?= ")),
        &body(
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "b64" } }),
        ),
    )
    .await;
    assert_eq!(encoded.json()["result"]["content"][0]["text"], "b64");
}

#[tokio::test]
async fn what_the_request_must_carry_is_checked_in_order() {
    let addr = start().await;
    let list = body("tools/list", json!({}));
    let no_version = "accept: application/json\r\nmcp-method: tools/list\r\n";
    refused(&send(addr, no_version, &list).await, 400, -32020);
    let without_meta = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {} });
    refused(
        &send(
            addr,
            &headers("tools/list", None),
            &without_meta.to_string(),
        )
        .await,
        400,
        -32602,
    );
    let no_caps = body(
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }),
    );
    refused(
        &send(addr, &headers("tools/list", None), &no_caps).await,
        400,
        -32602,
    );
    let other = body(
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "v9",
                           "io.modelcontextprotocol/clientCapabilities": {} } }),
    );
    refused(
        &send(addr, &headers("tools/list", None), &other).await,
        400,
        -32020,
    );
    let v9 = headers("tools/list", None).replace("2026-07-28", "v9");
    let unsupported = refused(&send(addr, &v9, &other).await, 400, -32022);
    assert_eq!(
        unsupported["error"]["data"],
        json!({ "supported": ["2026-07-28"], "requested": "v9" })
    );
    refused(
        &send(addr, &headers("prompts/list", None), &list).await,
        400,
        -32020,
    );
    let no_method = "accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\n";
    refused(&send(addr, no_method, &list).await, 400, -32020);
    let call = body(
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    );
    refused(
        &send(addr, &headers("tools/call", None), &call).await,
        400,
        -32020,
    );
    refused(
        &send(addr, &headers("tools/call", Some("other")), &call).await,
        400,
        -32020,
    );
    refused(
        &send(
            addr,
            &headers("tools/call", Some("=?base64?ZWNobw?=")),
            &call,
        )
        .await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn methods_not_served_in_this_era_are_404_and_notifications_202() {
    let addr = start().await;
    for method in ["initialize", "ping", "no/such"] {
        let reply = send(addr, &headers(method, None), &body(method, json!({}))).await;
        refused(&reply, 404, -32601);
    }
    let notice = json!({ "jsonrpc": "2.0", "method": "notifications/initialized",
                         "params": { "_meta": meta() } });
    let reply = send(
        addr,
        &headers("notifications/initialized", None),
        &notice.to_string(),
    )
    .await;
    assert_eq!((reply.status, reply.body.as_str()), (202, ""));
}

#[tokio::test]
async fn progress_comes_as_events_without_ids_then_the_answer() {
    let addr = start().await;
    let mut params = json!({ "name": "steps", "arguments": {} });
    let mut with_token = meta();
    with_token["progressToken"] = json!("p");
    params["_meta"] = with_token;
    let reply = send(
        addr,
        &headers("tools/call", Some("steps")),
        &body("tools/call", params),
    )
    .await;
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("x-accel-buffering"), Some("no"));
    assert!(!reply.body.contains("id: "), "no event ids: {}", reply.body);
    let events: Vec<Value> = reply
        .body
        .split_terminator("\n\n")
        .map(|event| serde_json::from_str(event.trim_start_matches("data: ")).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        events[1]["params"],
        json!({ "progressToken": "p", "progress": 2, "total": 2 })
    );
    assert_eq!(events[2]["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn a_legacy_client_on_the_same_endpoint_gets_a_session() {
    let addr = start().await;
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": { "protocolVersion": "2025-11-25", "capabilities": {} } });
    let reply = send(
        addr,
        "accept: application/json, text/event-stream\r\n",
        &init.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.header("mcp-session-id").is_some());
    assert_eq!(reply.json()["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(reply.json()["result"].get("resultType"), None);
}
