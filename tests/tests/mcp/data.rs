//! MCP's data layer, in-process and over a byte stream: tools from a `#[rpc_service(schema)]`
//! service, how each kind of result is written, the lifecycle of both eras, and what a handler
//! sends through its context.

use jrpc_mcp::{Content, LogLevel, Mcp, McpContext as _, ResourceContents, ToolResult};
use jrpc_runtime::{Caller as _, Context, Methods, Peer, PeerConfig, RpcError, rpc_service};
use jrpc_tests::bounded;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A struct result: structured content.
#[derive(Serialize, JsonSchema)]
struct Weather {
    city: String,
    celsius: f64,
}

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Adds two numbers.
    ///
    /// Answers their sum as text.
    fn add(&self, a: f64, b: f64) -> Result<String, RpcError> {
        if (a + b).is_infinite() {
            return Err(RpcError::new(1, "too large"));
        }
        Ok((a + b).to_string())
    }

    /// The weather in a city.
    fn weather(&self, city: String) -> Weather {
        Weather {
            city,
            celsius: 21.5,
        }
    }

    /// A number.
    fn answer(&self) -> u32 {
        42
    }

    /// An image and a resource.
    fn blocks(&self) -> Vec<Content> {
        vec![
            Content::image("AA==", "image/png"),
            Content::resource(ResourceContents::text("test://a", "A")),
        ]
    }

    /// One block.
    fn one(&self) -> Content {
        Content::link("file:///a.rs", "a.rs").mime("text/x-rust")
    }

    /// A whole result.
    fn whole(&self) -> ToolResult {
        ToolResult::new([Content::text("not found")]).error(true)
    }

    /// Nothing.
    fn nothing(&self) {}

    /// Counts to `n`, as progress, then logs.
    async fn count(&self, ctx: &Context, n: u64) -> Result<String, RpcError> {
        for i in 1..=n {
            ctx.progress(i as f64, Some(n as f64), None).await?;
        }
        ctx.log(LogLevel::Debug, "debug detail").await?;
        ctx.log(LogLevel::Warning, json!({ "counted": n })).await?;
        Ok(n.to_string())
    }
}

fn mcp() -> Mcp {
    Mcp::builder("test-server", "1.2.3")
        .tools(Tools.into_methods())
        .tool_title("add", "Add")
        .instructions("Tools for tests.")
        .build()
        .unwrap()
}

fn modern(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(meta), Value::Object(extra)) = (meta.as_object_mut(), extra) {
        meta.extend(extra);
    }
    meta
}

/// Calls `method` with `params` in-process; the whole answer.
async fn call(mcp: &Mcp, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = mcp.methods().handle(&body.to_string()).await.unwrap();
    serde_json::from_str(&answer).unwrap()
}

async fn tool(mcp: &Mcp, name: &str, arguments: Value, meta: Option<Value>) -> Value {
    let mut params = json!({ "name": name, "arguments": arguments });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    call(mcp, "tools/call", params).await["result"].clone()
}

#[tokio::test]
async fn tools_are_listed_from_the_service_in_order() {
    let mcp = mcp();
    let listed = call(&mcp, "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "add", "weather", "answer", "blocks", "one", "whole", "nothing", "count"
        ]
    );
    let add = &tools[0];
    assert_eq!(add["title"], "Add");
    assert_eq!(
        add["description"],
        "Adds two numbers.\n\nAnswers their sum as text."
    );
    assert_eq!(
        add["inputSchema"],
        json!({ "type": "object", "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
                "required": ["a", "b"] })
    );
    assert_eq!(tools[1]["title"], Value::Null, "a title only when set");
    assert_eq!(tools[1]["outputSchema"]["type"], "object");
    assert_eq!(
        tools[2].get("outputSchema"),
        None,
        "legacy: object output schemas only"
    );
    assert_eq!(
        listed["result"].get("resultType"),
        None,
        "legacy results are not stamped"
    );

    let modern_list = call(&mcp, "tools/list", json!({ "_meta": modern(json!({})) })).await;
    let result = &modern_list["result"];
    assert_eq!(result["tools"][2]["outputSchema"]["type"], "integer");
    assert_eq!(
        (
            &result["resultType"],
            &result["ttlMs"],
            &result["cacheScope"]
        ),
        (&json!("complete"), &json!(0), &json!("public"))
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({ "name": "test-server", "version": "1.2.3" })
    );
}

#[tokio::test]
async fn each_kind_of_result_is_written_as_the_protocol_has_it() {
    let mcp = mcp();
    let args = json!({ "a": 2, "b": 3 });
    assert_eq!(
        tool(&mcp, "add", args, None).await,
        json!({ "content": [{ "type": "text", "text": "5" }] })
    );
    let weather = tool(&mcp, "weather", json!({ "city": "Oslo" }), None).await;
    assert_eq!(
        weather["structuredContent"],
        json!({ "city": "Oslo", "celsius": 21.5 })
    );
    assert_eq!(
        weather["content"][0]["text"],
        r#"{"city":"Oslo","celsius":21.5}"#
    );
    assert_eq!(
        tool(&mcp, "answer", json!({}), None).await,
        json!({ "content": [{ "type": "text", "text": "42" }] }),
        "legacy: a number is text alone"
    );
    let answer = tool(&mcp, "answer", json!({}), Some(modern(json!({})))).await;
    assert_eq!(
        (&answer["structuredContent"], &answer["resultType"]),
        (&json!(42), &json!("complete"))
    );
    let blocks = tool(&mcp, "blocks", json!({}), None).await;
    assert_eq!(blocks["content"][0]["type"], "image");
    assert_eq!(blocks["content"][1]["resource"]["uri"], "test://a");
    assert_eq!(
        tool(&mcp, "one", json!({}), None).await["content"],
        json!([{ "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs", "mimeType": "text/x-rust" }])
    );
    assert_eq!(
        tool(&mcp, "whole", json!({}), None).await,
        json!({ "content": [{ "type": "text", "text": "not found" }], "isError": true })
    );
    assert_eq!(
        tool(&mcp, "nothing", json!({}), None).await,
        json!({ "content": [] })
    );
}

#[tokio::test]
async fn failures_are_results_with_is_error_and_unknown_tools_are_errors() {
    let mcp = mcp();
    let failed = tool(&mcp, "add", json!({ "a": 1e308, "b": 1e308 }), None).await;
    assert_eq!(
        failed,
        json!({ "content": [{ "type": "text", "text": "too large" }], "isError": true })
    );
    let bad = tool(&mcp, "add", json!({ "a": "one" }), None).await;
    assert_eq!(bad["isError"], true);
    let text = bad["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Invalid params: parameter \"a\""),
        "{text}"
    );
    let unknown = call(&mcp, "tools/call", json!({ "name": "nope" })).await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "Unknown tool: nope");
    assert_eq!(unknown["error"]["data"]["tools"][0], "add");
}

#[tokio::test]
async fn both_eras_begin_as_their_revision_says() {
    let mcp = mcp();
    let init = call(
        &mcp,
        "initialize",
        json!({ "protocolVersion": "2025-06-18" }),
    )
    .await;
    assert_eq!(
        init["result"],
        json!({ "protocolVersion": "2025-06-18",
                "capabilities": { "logging": {}, "tools": { "listChanged": true } },
                "serverInfo": { "name": "test-server", "version": "1.2.3" },
                "instructions": "Tools for tests." })
    );
    let newest = call(
        &mcp,
        "initialize",
        json!({ "protocolVersion": "2026-07-28" }),
    )
    .await;
    assert_eq!(
        newest["result"]["protocolVersion"], "2025-11-25",
        "never a modern one"
    );
    assert_eq!(call(&mcp, "ping", json!({})).await["result"], json!({}));

    let discovered = call(
        &mcp,
        "server/discover",
        json!({ "_meta": modern(json!({})) }),
    )
    .await;
    assert_eq!(discovered["result"]["instructions"], "Tools for tests.");
    for method in ["initialize", "ping"] {
        let removed = call(&mcp, method, json!({ "_meta": modern(json!({})) })).await;
        assert_eq!(removed["error"]["code"], -32601, "{method}: {removed}");
    }
    let bare = call(&mcp, "server/discover", json!({})).await;
    assert_eq!(bare["error"]["code"], -32602);
}

#[test]
fn a_bad_server_is_refused_at_build_naming_the_setting() {
    let key = |builder: jrpc_mcp::McpBuilder| builder.build().unwrap_err().key();
    let b = || Mcp::builder("s", "1");
    let mut bad_name = Methods::new();
    bad_name
        .register("has space", &[], |(): (), _| async { Ok::<_, RpcError>(1) })
        .unwrap();
    assert_eq!(key(b().tools(bad_name)), "tools");
    assert_eq!(
        key(b().tools(Tools.into_methods()).tools(Tools.into_methods())),
        "tools"
    );
    assert_eq!(
        key(b().tool_schema("none", json!({ "type": "object" }))),
        "tool_schema"
    );
    assert_eq!(key(b().page_size(0)), "page_size");
    assert!(b().build().is_ok(), "a server with nothing to serve");
}

/// What a client connection saw: each notification's method and params.
fn client_methods() -> (Methods, mpsc::UnboundedReceiver<(String, Value)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut methods = Methods::new();
    for name in ["notifications/progress", "notifications/message"] {
        let tx = tx.clone();
        methods
            .register_notification(name, &[], move |params: jrpc_runtime::Params, _| {
                let value: Value = params.parse().unwrap_or_default();
                let _ = tx.send((name.to_owned(), value));
                async {}
            })
            .unwrap();
    }
    (methods, rx)
}

/// A client on a byte stream to `mcp`.
fn connect(mcp: &Mcp) -> (Peer, mpsc::UnboundedReceiver<(String, Value)>) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let (_server, serving) = mcp.connect(read, write).unwrap();
    tokio::spawn(serving);
    let (methods, seen) = client_methods();
    let config = PeerConfig::builder()
        .framing(jrpc_runtime::Framing::Lines)
        .build()
        .unwrap();
    let (client, driving) = Peer::connect(ours, methods, config);
    tokio::spawn(driving);
    (client, seen)
}

#[tokio::test]
async fn progress_and_logs_go_out_as_each_era_wants() {
    bounded(async {
        let mcp = mcp();
        let (client, mut seen) = connect(&mcp);
        let _: Value = client
            .call("initialize", json!({ "protocolVersion": "2025-11-25" }))
            .await
            .unwrap();
        let params =
            json!({ "name": "count", "arguments": { "n": 2 }, "_meta": { "progressToken": "t" } });
        let counted: Value = client.call("tools/call", params).await.unwrap();
        assert_eq!(counted["content"][0]["text"], "2");
        let mut got = Vec::new();
        while let Ok(one) = seen.try_recv() {
            got.push(one);
        }
        assert_eq!(
            got,
            [
                (
                    "notifications/progress".into(),
                    json!({ "progressToken": "t", "progress": 1, "total": 2 })
                ),
                (
                    "notifications/progress".into(),
                    json!({ "progressToken": "t", "progress": 2, "total": 2 })
                ),
                (
                    "notifications/message".into(),
                    json!({ "level": "debug", "logger": "test-server", "data": "debug detail" })
                ),
                (
                    "notifications/message".into(),
                    json!({ "level": "warning", "logger": "test-server", "data": { "counted": 2 } })
                ),
            ],
            "legacy, before any level is set: every level"
        );

        // Modern: no logs unless asked, then at or above the level asked.
        let params =
            json!({ "name": "count", "arguments": { "n": 0 }, "_meta": modern(json!({})) });
        let _: Value = client.call("tools/call", params).await.unwrap();
        let meta = modern(json!({ "io.modelcontextprotocol/logLevel": "info" }));
        let params = json!({ "name": "count", "arguments": { "n": 0 }, "_meta": meta });
        let _: Value = client.call("tools/call", params).await.unwrap();
        let got: Vec<(String, Value)> = std::iter::from_fn(|| seen.try_recv().ok()).collect();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].1["level"], "warning");
    })
    .await;
}

#[tokio::test]
async fn a_tool_called_in_process_sends_nothing() {
    // Outside an MCP request, progress and logs do nothing: the tool stays testable alone.
    let methods = Tools.into_methods();
    let counted: String = methods.call("count", json!({ "n": 3 })).await.unwrap();
    assert_eq!(counted, "3");
}
