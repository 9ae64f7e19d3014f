//! Call layers and authorization on MCP's Streamable HTTP: each batch element through the
//! layers, `401` with the protected resource's metadata named, that metadata served (RFC 9728),
//! and the token's identity in the handler's context; on the data layer, the identity in a
//! tool's context and a layer on the tools table, in both eras.

use std::net::SocketAddr;

use jrpc_mcp::{Mcp, McpServer, McpServerBuilder, ProtectedResource};
use jrpc_runtime::http::BearerAuth;
use jrpc_runtime::layers::Authorize;
use jrpc_runtime::{Context, Methods, RpcError, rpc_service};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{GUARDED_ANSWER, GUARDED_BATCH, guarded, guarded_batch_seen};
use jrpc_tests::raw_http::{Reply, post, request};
use jrpc_tests::servers::serve_mcp;
use serde_json::json;

async fn serve(builder: McpServerBuilder) -> SocketAddr {
    serve_mcp(builder.build().unwrap()).await.0
}

async fn send(addr: SocketAddr, raw: &[u8]) -> Reply {
    bounded(request(addr, raw)).await
}

#[tokio::test]
async fn a_post_runs_the_layers_for_each_element() {
    let mut methods = Methods::new();
    let seen = guarded(&mut methods);
    let addr = serve(McpServer::builder(methods).stateless(true)).await;
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), "", GUARDED_BATCH),
    )
    .await;
    assert_eq!((reply.status, reply.body.as_str()), (200, GUARDED_ANSWER));
    assert_eq!(*seen.lock().unwrap(), guarded_batch_seen());
}

const METADATA_URL: &str = "https://mcp.example/.well-known/oauth-protected-resource/mcp";

#[derive(Clone, Debug)]
struct User(String);

async fn protected() -> SocketAddr {
    let mut methods = Methods::new();
    methods
        .register("initialize", &[], |(): (), _| async {
            Ok::<_, RpcError>(json!({"protocolVersion": "2025-11-25", "capabilities": {}}))
        })
        .unwrap();
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.extension::<User>().map(|user| user.0.clone()))
        })
        .unwrap();
    let auth = BearerAuth::verifier(|token| {
        token
            .strip_prefix("user-")
            .map(|name| User(name.to_owned()))
    });
    let metadata = ProtectedResource::new("https://mcp.example/mcp")
        .authorization_server("https://auth.example")
        .scopes(["tools"]);
    serve(
        McpServer::builder(methods)
            .http(|http| http.bearer_auth(auth))
            .protected_resource(metadata),
    )
    .await
}

#[tokio::test]
async fn a_request_without_a_token_is_told_where_the_metadata_is_before_its_body_is_read() {
    let addr = protected().await;
    let initialize = r#"{"jsonrpc":"2.0","method":"initialize","id":0}"#;
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), "", initialize),
    )
    .await;
    reply.assert_envelope(401, -32600);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!(r#"Bearer resource_metadata="{METADATA_URL}""#).as_str())
    );
    let wrong = "authorization: Bearer nobody\r\n";
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), wrong, initialize),
    )
    .await;
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            format!(r#"Bearer error="invalid_token", resource_metadata="{METADATA_URL}""#).as_str()
        )
    );
    // GET and DELETE ask too.
    let get = b"GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\n\r\n";
    assert_eq!(send(addr, get).await.status, 401);
}

#[tokio::test]
async fn the_metadata_is_served_to_anyone_at_both_well_known_paths() {
    let addr = protected().await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let get = format!("GET {path} HTTP/1.1\r\nhost: localhost\r\n\r\n");
        let reply = send(addr, get.as_bytes()).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(
            reply.json(),
            json!({
                "resource": "https://mcp.example/mcp",
                "authorization_servers": ["https://auth.example"],
                "scopes_supported": ["tools"],
                "bearer_methods_supported": ["header"],
            })
        );
    }
    let posted = post("/.well-known/oauth-protected-resource", None, "", "{}");
    assert_eq!(send(addr, &posted).await.status, 405);
}

#[tokio::test]
async fn the_tokens_identity_reaches_the_handler_in_a_session() {
    let addr = protected().await;
    let token = "authorization: Bearer user-ada\r\n";
    let initialize = r#"{"jsonrpc":"2.0","method":"initialize","id":0}"#;
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), token, initialize),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let headers = format!("{token}mcp-session-id: {session}\r\n");
    let whoami = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), &headers, whoami),
    )
    .await;
    assert_eq!(reply.json()["result"], "ada");
}

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Answers who called.
    fn whoami(&self, ctx: &Context) -> String {
        ctx.extension::<User>()
            .map_or("nobody", |user| &user.0)
            .to_owned()
    }

    /// Answers a secret, to `ada` alone.
    fn secret(&self) -> String {
        "42".into()
    }
}

/// A data-layer server behind bearer tokens, its tools table behind an `Authorize` layer.
async fn protected_tools() -> SocketAddr {
    let mut tools = Tools.into_methods();
    tools.layer(Authorize::new(|tool, ctx: &Context| {
        tool != "secret" || ctx.extension::<User>().is_some_and(|user| user.0 == "ada")
    }));
    let mcp = Mcp::builder("protected", "1").tools(tools).build().unwrap();
    let auth = BearerAuth::verifier(|token| {
        token
            .strip_prefix("user-")
            .map(|name| User(name.to_owned()))
    });
    serve(McpServer::builder(mcp).http(|http| http.bearer_auth(auth))).await
}

/// `tools/call` of `name` as the modern era sends it, with `token`: the result.
async fn modern_call(addr: SocketAddr, token: &str, name: &str) -> serde_json::Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    } });
    let headers = format!(
        "{token}accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: {name}\r\n"
    );
    let reply = send(
        addr,
        &post(
            "/mcp",
            Some("application/json"),
            &headers,
            &body.to_string(),
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()["result"].clone()
}

#[tokio::test]
async fn a_modern_tool_call_carries_the_identity_through_the_tools_layers() {
    let addr = protected_tools().await;
    let ada = "authorization: Bearer user-ada\r\n";
    let bob = "authorization: Bearer user-bob\r\n";
    let result = modern_call(addr, ada, "whoami").await;
    assert_eq!(result["content"][0]["text"], "ada");
    assert_eq!(
        modern_call(addr, ada, "secret").await["content"][0]["text"],
        "42"
    );
    let refused = modern_call(addr, bob, "secret").await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["content"][0]["text"], "Forbidden");
    let reply = send(
        addr,
        &post(
            "/mcp",
            Some("application/json"),
            "",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        ),
    )
    .await;
    assert_eq!(reply.status, 401);
}

#[tokio::test]
async fn a_legacy_tool_call_carries_the_identity_through_the_tools_layers() {
    let addr = protected_tools().await;
    let bob = "authorization: Bearer user-bob\r\n";
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "test", "version": "1" },
    } });
    let reply = send(
        addr,
        &post(
            "/mcp",
            Some("application/json"),
            bob,
            &initialize.to_string(),
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let headers = format!("{bob}mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n");
    let call = |name: &str| {
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": name } })
            .to_string()
    };
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), &headers, &call("whoami")),
    )
    .await;
    assert_eq!(reply.json()["result"]["content"][0]["text"], "bob");
    let reply = send(
        addr,
        &post("/mcp", Some("application/json"), &headers, &call("secret")),
    )
    .await;
    assert_eq!(reply.json()["result"]["isError"], true, "{reply:?}");
}
