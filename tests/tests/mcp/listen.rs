//! The modern era's `subscriptions/listen`: the acknowledgement first, then the changes asked
//! for, each tagged with the listen request's id; over a byte stream (ended by
//! `notifications/cancelled`) and over HTTP (ended by the client, or by a shutdown with the
//! result).

use jrpc_mcp::{Mcp, McpServer, Resource};
use jrpc_runtime::server::Drained;
use jrpc_runtime::{Caller as _, Methods, Peer, PeerConfig, RpcError, rpc_service};
use jrpc_tests::raw_http::{Conn, post};
use jrpc_tests::servers::serve_mcp;
use jrpc_tests::{bounded, eventually};
use serde_json::{Value, json};
use tokio::sync::mpsc;

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// A tool.
    fn noop(&self) -> String {
        String::new()
    }
}

fn mcp() -> Mcp {
    Mcp::builder("listening", "1")
        .tools(Tools.into_methods())
        .resource(Resource::text("test://r", "r", "R"))
        .build()
        .unwrap()
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn listen_params() -> Value {
    json!({ "_meta": meta(),
            "notifications": { "toolsListChanged": true, "promptsListChanged": true,
                               "resourceSubscriptions": ["test://r"] } })
}

#[tokio::test]
async fn a_listen_stream_over_a_connection_hears_what_it_asked_for() {
    bounded(async {
        let mcp = mcp();
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(theirs);
        let (_server, serving) = mcp.connect(read, write).unwrap();
        tokio::spawn(serving);
        let (tx, mut heard) = mpsc::unbounded_channel();
        let mut methods = Methods::new();
        methods.fallback(move |method: String, params: jrpc_runtime::Params, _| {
            let _ = tx.send((method, params.parse::<Value>().unwrap_or_default()));
            async { Ok::<_, RpcError>(()) }
        });
        let config = PeerConfig::builder()
            .framing(jrpc_runtime::Framing::Lines)
            .cancellation(jrpc_runtime::Cancellation::Mcp)
            .build()
            .unwrap();
        let (client, driving) = Peer::connect(ours, methods, config);
        tokio::spawn(driving);
        let listening = tokio::spawn({
            let client = client.clone();
            async move {
                client
                    .call::<Value>("subscriptions/listen", listen_params())
                    .await
            }
        });
        let (method, ack) = heard.recv().await.unwrap();
        assert_eq!(method, "notifications/subscriptions/acknowledged");
        let id = ack["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
        assert!(id.is_number(), "{ack}");
        assert_eq!(
            ack["notifications"],
            json!({ "toolsListChanged": true, "resourceSubscriptions": ["test://r"] }),
            "no prompts are served: that is not honored"
        );
        mcp.notify_prompts_changed().unwrap();
        mcp.notify_tools_changed().unwrap();
        mcp.notify_resource_updated("test://other").unwrap();
        mcp.notify_resource_updated("test://r").unwrap();
        let (method, params) = heard.recv().await.unwrap();
        assert_eq!(method, "notifications/tools/list_changed");
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
        let (method, params) = heard.recv().await.unwrap();
        assert_eq!(method, "notifications/resources/updated");
        assert_eq!(params["uri"], "test://r");
        // The client gives up the call: its cancellation ends the stream, which leaves its topics.
        assert_eq!(mcp.topics().subscribers("mcp/tools"), 1);
        listening.abort();
        let _ = listening.await;
        eventually(|| mcp.topics().subscribers("mcp/tools") == 0).await;
        let legacy = client
            .call::<Value>("subscriptions/listen", json!({ "notifications": {} }))
            .await
            .unwrap_err();
        assert_eq!(legacy.rpc_error().map(|e| e.code().code()), Some(-32601));
    })
    .await;
}

#[tokio::test]
async fn a_listen_stream_over_http_ends_with_its_result_at_a_shutdown() {
    let mcp = mcp();
    let server = McpServer::builder(mcp.clone()).build().unwrap();
    let (addr, _) = serve_mcp(server.clone()).await;
    let body = json!({ "jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                       "params": listen_params() });
    let headers = "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: subscriptions/listen\r\n";
    let mut conn = Conn::open(addr).await;
    conn.write(&post(
        "/mcp",
        Some("application/json"),
        headers,
        &body.to_string(),
    ))
    .await;
    let head = bounded(conn.read_head()).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let mut pending = String::new();
    let event = |text: String| -> Value {
        serde_json::from_str(text.trim_start_matches("data: ")).unwrap()
    };
    let ack = event(bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    assert_eq!(mcp.notify_tools_changed().unwrap(), 1);
    let changed = event(bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(
        changed,
        json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": "L" } } })
    );
    let drained = bounded(server.shutdown_handle().shutdown()).await;
    assert_eq!(drained, Drained::Complete);
    let last = event(bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(last["id"], "L");
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    assert_eq!(bounded(conn.read_event(&mut pending)).await, None);
}

/// A quiet listen stream gets a comment each keep-alive interval (on a paused clock, over an
/// in-memory pipe), and its changes between them.
#[tokio::test(start_paused = true)]
async fn a_quiet_listen_stream_gets_keep_alive_comments() {
    let mcp = mcp();
    let server = McpServer::builder(mcp.clone())
        .keep_alive(Some(std::time::Duration::from_secs(10)))
        .build()
        .unwrap();
    let (client, served) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.serve_connection(served, None));
    let mut conn = Conn::over(client);
    let body = json!({ "jsonrpc": "2.0", "id": "K", "method": "subscriptions/listen",
                       "params": listen_params() });
    let headers = "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: subscriptions/listen\r\n";
    conn.write(&post(
        "/mcp",
        Some("application/json"),
        headers,
        &body.to_string(),
    ))
    .await;
    assert_eq!(bounded(conn.read_head()).await.status, 200);
    let mut pending = String::new();
    let ack = bounded(conn.read_event(&mut pending)).await.unwrap();
    assert!(
        ack.contains("notifications/subscriptions/acknowledged"),
        "{ack}"
    );
    let started = tokio::time::Instant::now();
    let comment = bounded(conn.read_event(&mut pending)).await;
    assert_eq!(comment.as_deref(), Some(": keep-alive"));
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(10));
    assert_eq!(mcp.notify_tools_changed().unwrap(), 1);
    let changed = bounded(conn.read_event(&mut pending)).await.unwrap();
    assert!(
        changed.contains("notifications/tools/list_changed"),
        "{changed}"
    );
}
