//! What an MCP server serves besides tools: resources (fixed, read when asked, templates),
//! prompts, completion, caching hints, the legacy log level, and the changes told to clients.

use std::time::Duration;

use jrpc_mcp::{
    CacheScope, Cached, CompleteRequest, Completion, Content, Mcp, McpContext as _, PromptMessage,
    PromptResult, Resource, ResourceContents, ResourceTemplate,
};
use jrpc_runtime::{Caller as _, Context, Methods, Peer, PeerConfig, RpcError, rpc_service};
use jrpc_tests::bounded;
use serde_json::{Value, json};
use tokio::sync::mpsc;

struct Prompts;

#[rpc_service(schema)]
impl Prompts {
    /// Greets someone.
    fn greet(&self, name: String, mood: Option<String>) -> String {
        format!("Hello {name}, {}", mood.unwrap_or_else(|| "hi".into()))
    }

    /// Shows an image.
    fn picture(&self) -> PromptResult {
        PromptResult::user(Content::image("AA==", "image/png")).description("a picture")
    }

    /// A short exchange.
    fn exchange(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::user(Content::text("Hi")),
            PromptMessage::assistant(Content::text("Hello")),
        ]
    }
}

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Says the tools changed.
    fn change(&self, ctx: &Context) -> Result<String, RpcError> {
        let req = ctx.mcp().ok_or_else(|| RpcError::new(1, "not MCP"))?;
        req.notify_tools_changed()
            .map_err(|err| RpcError::new(2, err.to_string()))?;
        Ok("changed".into())
    }
}

async fn complete(req: CompleteRequest, _ctx: Context) -> Result<Completion, RpcError> {
    let all = ["alice", "albert", "bob"];
    let typed = req.value().to_owned();
    Ok(Completion::new(
        all.iter()
            .filter(|name| name.starts_with(&typed))
            .map(|name| (*name).to_owned()),
    ))
}

fn mcp() -> Mcp {
    Mcp::builder("served", "1")
        .tools(Tools.into_methods())
        .prompts(Prompts.into_methods())
        .prompt_title("greet", "Greeting")
        .prompt_argument("greet", "name", "Who to greet")
        .resource(Resource::text("test://a", "a", "A text").mime("text/plain"))
        .resource(Resource::blob("test://b", "b", "AAE=").mime("application/octet-stream"))
        .resource(
            Resource::new("test://live", "live").read(|req, _| async move {
                Ok(vec![ResourceContents::text(req.uri(), "read now")])
            }),
        )
        .resource_template(ResourceTemplate::new("test://items/{id}", "item").read(
            |req, _| async move {
                let id = req.var("id").unwrap_or_default().to_owned();
                Ok(vec![ResourceContents::text(
                    req.uri(),
                    format!("item {id}"),
                )])
            },
        ))
        .completion(complete)
        .cache(Cached::Lists, Duration::from_secs(300), CacheScope::Public)
        .page_size(2)
        .build()
        .unwrap()
}

fn modern() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

async fn call(mcp: &Mcp, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = mcp.methods().handle(&body.to_string()).await.unwrap();
    serde_json::from_str(&answer).unwrap()
}

#[tokio::test]
async fn resources_are_listed_in_pages_and_read_by_uri() {
    let mcp = mcp();
    let first = call(&mcp, "resources/list", json!({})).await["result"].clone();
    assert_eq!(
        first["resources"],
        json!([{ "uri": "test://a", "name": "a", "mimeType": "text/plain" },
               { "uri": "test://b", "name": "b", "mimeType": "application/octet-stream" }])
    );
    let cursor = first["nextCursor"].clone();
    let second = call(&mcp, "resources/list", json!({ "cursor": cursor })).await["result"].clone();
    assert_eq!(second["resources"][0]["uri"], "test://live");
    assert_eq!(second.get("nextCursor"), None);
    let bad = call(&mcp, "resources/list", json!({ "cursor": "zz" })).await;
    assert_eq!(bad["error"]["code"], -32602);

    let read = |uri: &str| call(&mcp, "resources/read", json!({ "uri": uri }));
    assert_eq!(
        read("test://a").await["result"],
        json!({ "contents": [{ "uri": "test://a", "mimeType": "text/plain", "text": "A text" }] })
    );
    assert_eq!(
        read("test://b").await["result"]["contents"][0]["blob"],
        "AAE="
    );
    assert_eq!(
        read("test://live").await["result"]["contents"][0]["text"],
        "read now"
    );
    assert_eq!(
        read("test://items/7").await["result"]["contents"][0]["text"],
        "item 7"
    );
    let templates = call(&mcp, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([{ "uriTemplate": "test://items/{id}", "name": "item" }])
    );

    let missing = read("test://nope").await;
    assert_eq!(
        (&missing["error"]["code"], &missing["error"]["data"]),
        (&json!(-32002), &json!({ "uri": "test://nope" })),
        "legacy: -32002"
    );
    let params = json!({ "uri": "test://nope", "_meta": modern() });
    let missing = call(&mcp, "resources/read", params).await;
    assert_eq!(missing["error"]["code"], -32602, "modern: -32602");
    let params = json!({ "uri": "test://a", "_meta": modern() });
    let stamped = call(&mcp, "resources/read", params).await["result"].clone();
    assert_eq!(
        (&stamped["ttlMs"], &stamped["cacheScope"]),
        (&json!(0), &json!("private"))
    );
    let lists = call(&mcp, "resources/list", json!({ "_meta": modern() })).await["result"].clone();
    assert_eq!(
        (&lists["ttlMs"], &lists["cacheScope"]),
        (&json!(300_000), &json!("public"))
    );
}

#[tokio::test]
async fn prompts_are_listed_with_their_arguments_and_got_by_name() {
    let mcp = mcp();
    let listed = call(&mcp, "prompts/list", json!({})).await["result"].clone();
    assert_eq!(
        listed["prompts"][0],
        json!({ "name": "greet", "title": "Greeting", "description": "Greets someone.",
                "arguments": [{ "name": "name", "required": true, "description": "Who to greet" },
                              { "name": "mood", "required": false }] })
    );
    let greet = call(
        &mcp,
        "prompts/get",
        json!({ "name": "greet", "arguments": { "name": "Ada" } }),
    )
    .await;
    assert_eq!(
        greet["result"],
        json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Hello Ada, hi" } }] })
    );
    let picture = call(&mcp, "prompts/get", json!({ "name": "picture" })).await["result"].clone();
    assert_eq!(picture["description"], "a picture");
    assert_eq!(picture["messages"][0]["content"]["type"], "image");
    let exchange = call(&mcp, "prompts/get", json!({ "name": "exchange" })).await["result"].clone();
    assert_eq!(exchange["messages"][1]["role"], "assistant");
    let missing = call(
        &mcp,
        "prompts/get",
        json!({ "name": "greet", "arguments": {} }),
    )
    .await;
    assert_eq!(
        missing["error"]["code"], -32602,
        "a required argument missing"
    );
    let unknown = call(&mcp, "prompts/get", json!({ "name": "nope" })).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let params = json!({ "name": "picture", "_meta": modern() });
    assert_eq!(
        call(&mcp, "prompts/get", params).await["result"]["resultType"],
        "complete"
    );
}

#[tokio::test]
async fn completion_answers_what_the_completer_offers() {
    let mcp = mcp();
    let params = json!({ "ref": { "type": "ref/prompt", "name": "greet" },
                         "argument": { "name": "name", "value": "al" } });
    let completed = call(&mcp, "completion/complete", params).await["result"].clone();
    assert_eq!(
        completed,
        json!({ "completion": { "values": ["alice", "albert"], "total": 2, "hasMore": false } })
    );
    let params = json!({ "ref": { "type": "ref/prompt", "name": "nope" },
                         "argument": { "name": "name", "value": "" } });
    assert_eq!(
        call(&mcp, "completion/complete", params).await["error"]["code"],
        -32602
    );
    let capabilities = call(&mcp, "initialize", json!({})).await["result"]["capabilities"].clone();
    assert_eq!(
        capabilities,
        json!({ "logging": {}, "completions": {}, "tools": { "listChanged": true },
                "prompts": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true } })
    );
}

/// A client on a byte stream to `mcp`; what it was sent outside its calls comes out of the
/// receiver.
fn connect(mcp: &Mcp) -> (Peer, mpsc::UnboundedReceiver<(String, Value)>) {
    let (tx, seen) = mpsc::unbounded_channel();
    let mut methods = Methods::new();
    for name in [
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/resources/updated",
    ] {
        let tx = tx.clone();
        methods
            .register_notification(name, &[], move |params: jrpc_runtime::Params, _| {
                let _ = tx.send((name.to_owned(), params.parse().unwrap_or_default()));
                async {}
            })
            .unwrap();
    }
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let (_server, serving) = mcp.connect(read, write).unwrap();
    tokio::spawn(serving);
    let config = PeerConfig::builder()
        .framing(jrpc_runtime::Framing::Lines)
        .build()
        .unwrap();
    let (client, driving) = Peer::connect(ours, methods, config);
    tokio::spawn(driving);
    (client, seen)
}

#[tokio::test]
async fn a_legacy_connection_hears_of_changes_and_of_what_it_follows() {
    bounded(async {
        let mcp = mcp();
        let (client, mut seen) = connect(&mcp);
        let _: Value = client.call("initialize", json!({})).await.unwrap();
        let _: Value = client
            .call("resources/subscribe", json!({ "uri": "test://a" }))
            .await
            .unwrap();
        let changed: Value = client
            .call("tools/call", json!({ "name": "change", "arguments": {} }))
            .await
            .unwrap();
        assert_eq!(changed["content"][0]["text"], "changed");
        assert_eq!(
            seen.recv().await.unwrap(),
            ("notifications/tools/list_changed".into(), json!({}))
        );
        assert_eq!(mcp.notify_resource_updated("test://a").unwrap(), 1);
        assert_eq!(
            mcp.notify_resource_updated("test://b").unwrap(),
            0,
            "not followed"
        );
        assert_eq!(
            seen.recv().await.unwrap(),
            (
                "notifications/resources/updated".into(),
                json!({ "uri": "test://a" })
            )
        );
        let _: Value = client
            .call("resources/unsubscribe", json!({ "uri": "test://a" }))
            .await
            .unwrap();
        assert_eq!(mcp.notify_resource_updated("test://a").unwrap(), 0);
        let removed = client
            .call::<Value>(
                "resources/subscribe",
                json!({ "uri": "test://a", "_meta": modern() }),
            )
            .await
            .unwrap_err();
        assert_eq!(removed.rpc_error().map(|e| e.code().code()), Some(-32601));
    })
    .await;
}

#[tokio::test]
async fn the_legacy_log_level_is_the_connections() {
    struct Logs;
    #[rpc_service(schema)]
    impl Logs {
        /// Logs at two levels.
        async fn chatty(&self, ctx: &Context) -> Result<String, RpcError> {
            ctx.log(jrpc_mcp::LogLevel::Info, "info").await?;
            ctx.log(jrpc_mcp::LogLevel::Error, "error").await?;
            Ok("done".into())
        }
    }
    bounded(async {
        let mcp = Mcp::builder("logs", "1")
            .tools(Logs.into_methods())
            .build()
            .unwrap();
        let (client, mut seen) = connect(&mcp);
        let _: Value = client.call("initialize", json!({})).await.unwrap();
        let set: Value = client
            .call("logging/setLevel", json!({ "level": "warning" }))
            .await
            .unwrap();
        assert_eq!(set, json!({}));
        let _: Value = client
            .call("tools/call", json!({ "name": "chatty" }))
            .await
            .unwrap();
        let got: Vec<(String, Value)> = std::iter::from_fn(|| seen.try_recv().ok()).collect();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].1["level"], "error");
        let bad = client
            .call::<Value>("logging/setLevel", json!({ "level": "loud" }))
            .await
            .unwrap_err();
        assert_eq!(bad.rpc_error().map(|e| e.code().code()), Some(-32602));
    })
    .await;
}
