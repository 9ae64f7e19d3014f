//! What a legacy session owes its client beyond requests and answers, and the headers a modern
//! request must agree with: the `Host` check, the negotiated revision, a stream closed for the
//! client to poll (SEP-1699), and arguments mirrored in `Mcp-Param-*` headers (SEP-2243).

use std::net::SocketAddr;

use jrpc_mcp::{Mcp, McpContext as _, McpServer, McpServerBuilder};
use jrpc_runtime::{Context, rpc_service};
use jrpc_tests::bounded;
use jrpc_tests::raw_http::{Reply, post, request};
use jrpc_tests::servers::serve_mcp;
use serde_json::{Value, json};

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Closes its stream for the client to poll, then answers.
    async fn polled(&self, ctx: &Context) -> String {
        assert!(ctx.close_stream_for_polling());
        "after the poll".into()
    }

    /// Answers its arguments, which headers mirror.
    fn regional(&self, region: String, count: u32) -> String {
        format!("{region}:{count}")
    }
}

async fn start(configure: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> SocketAddr {
    let schema = json!({ "type": "object", "required": ["region"], "properties": {
        "region": { "type": "string", "x-mcp-header": "Region" },
        "count": { "type": "integer", "x-mcp-header": "Count" },
    } });
    let mcp = Mcp::builder("legacy", "1")
        .tools(Tools.into_methods())
        .tool_schema("regional", schema)
        .build()
        .unwrap();
    serve_mcp(configure(McpServer::builder(mcp)).build().unwrap())
        .await
        .0
}

const BOTH: &str = "accept: application/json, text/event-stream\r\n";

fn call(id: i64, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

async fn send(addr: SocketAddr, raw: &[u8]) -> Reply {
    bounded(request(addr, raw)).await
}

/// A session whose `initialize` asked for `version`; its id.
async fn initialize(addr: SocketAddr, version: &str) -> String {
    let init = call(
        0,
        "initialize",
        json!({ "protocolVersion": version, "capabilities": {} }),
    );
    let reply = send(addr, &post("/mcp", Some("application/json"), BOTH, &init)).await;
    assert_eq!(reply.json()["result"]["protocolVersion"], version);
    reply.header("mcp-session-id").unwrap().to_owned()
}

#[tokio::test]
async fn hosts_outside_the_allow_list_get_403() {
    let addr = start(|b| b).await;
    let init = call(0, "initialize", json!({}));
    let with_host = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n{BOTH}content-length: {}\r\n\r\n{init}",
            init.len()
        )
    };
    for bad in [
        "evil.example",
        "evil.example:80",
        "localhost.evil.example",
        "[::2]:80",
    ] {
        send(addr, with_host(bad).as_bytes())
            .await
            .assert_envelope(403, -32600);
    }
    for good in ["localhost", "LOCALHOST:3000", "127.0.0.1:80", "[::1]:8080"] {
        assert_eq!(
            send(addr, with_host(good).as_bytes()).await.status,
            200,
            "{good}"
        );
    }
    let named = start(|b| b.allowed_hosts(["mcp.example"])).await;
    assert_eq!(
        send(named, with_host("mcp.example:443").as_bytes())
            .await
            .status,
        200
    );
    send(named, with_host("localhost").as_bytes())
        .await
        .assert_envelope(403, -32600);
    let any = start(|b| b.allowed_hosts(Vec::<String>::new())).await;
    assert_eq!(
        send(any, with_host("evil.example").as_bytes()).await.status,
        200
    );
}

#[tokio::test]
async fn a_session_speaks_the_revision_it_agreed_on() {
    let addr = start(|b| b).await;
    let id = initialize(addr, "2025-06-18").await;
    let ping = call(1, "ping", json!({}));
    let headers = |version: &str| {
        format!("{BOTH}mcp-session-id: {id}\r\nmcp-protocol-version: {version}\r\n")
    };
    let agreed = send(
        addr,
        &post(
            "/mcp",
            Some("application/json"),
            &headers("2025-06-18"),
            &ping,
        ),
    )
    .await;
    assert_eq!(agreed.json()["result"], json!({}));
    let other = send(
        addr,
        &post(
            "/mcp",
            Some("application/json"),
            &headers("2025-11-25"),
            &ping,
        ),
    )
    .await;
    let body = other.assert_envelope(400, -32600);
    assert!(
        body["error"]["data"]
            .as_str()
            .unwrap()
            .contains("2025-06-18"),
        "{body}"
    );
}

#[tokio::test]
async fn a_stream_closed_for_polling_is_resumed_to_its_answer() {
    let addr = start(|b| b).await;
    let id = initialize(addr, "2025-11-25").await;
    let headers = format!("{BOTH}mcp-session-id: {id}\r\n");
    let polled = call(5, "tools/call", json!({ "name": "polled" }));
    let closed = send(
        addr,
        &post("/mcp", Some("application/json"), &headers, &polled),
    )
    .await;
    assert_eq!(closed.header("content-type"), Some("text/event-stream"));
    let events: Vec<&str> = closed.body.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 1, "the priming event alone: {events:?}");
    let primer = events[0];
    assert!(primer.contains("retry: 3000"), "{primer}");
    let last_id = primer
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\nlast-event-id: {last_id}\r\nmcp-session-id: {id}\r\n\r\n"
    );
    let resumed = send(addr, get.as_bytes()).await;
    let answer: Value = serde_json::from_str(
        resumed
            .body
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["result"]["content"][0]["text"], "after the poll");
}

#[tokio::test]
async fn arguments_mirrored_in_headers_must_agree_with_them() {
    let addr = start(|b| b).await;
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {} });
    let regional = |arguments: Value| {
        call(
            9,
            "tools/call",
            json!({ "name": "regional", "arguments": arguments, "_meta": meta }),
        )
    };
    let base = "accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: regional\r\n";
    let send_with = |extra: &'static str, body: String| async move {
        send(
            addr,
            &post(
                "/mcp",
                Some("application/json"),
                &format!("{base}{extra}"),
                &body,
            ),
        )
        .await
    };
    let ok = send_with(
        "mcp-param-region: eu-west\r\nmcp-param-count: 3.0\r\n",
        regional(json!({ "region": "eu-west", "count": 3 })),
    )
    .await;
    assert_eq!(
        ok.json()["result"]["content"][0]["text"],
        "eu-west:3",
        "{ok:?}"
    );
    let encoded = send_with(
        "Mcp-Param-Region: =?base64?w6l0w6k=?=\r\n",
        regional(json!({ "region": "été", "count": null })),
    )
    .await;
    assert_eq!(encoded.status, 200, "{encoded:?}");
    for (extra, arguments) in [
        ("", json!({ "region": "eu" })),
        ("mcp-param-region: us\r\n", json!({ "region": "eu" })),
        (
            "mcp-param-region: eu\r\nmcp-param-count: 4\r\n",
            json!({ "region": "eu", "count": 3 }),
        ),
        (
            "mcp-param-region: eu\r\nmcp-param-count: 3\r\n",
            json!({ "region": "eu" }),
        ),
        (
            "mcp-param-region: =?base64?ZXU?=\r\n",
            json!({ "region": "eu" }),
        ),
    ] {
        let reply = send_with(extra, regional(arguments.clone())).await;
        assert_eq!(reply.status, 400, "{extra:?} {arguments}");
        assert_eq!(reply.json()["error"]["code"], -32020);
    }
}
