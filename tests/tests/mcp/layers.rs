//! Call layers and authorization on MCP's Streamable HTTP: each batch element through the
//! layers, `401` with the protected resource's metadata named, that metadata served (RFC 9728),
//! and the token's identity in the handler's context.

use std::net::SocketAddr;

use jrpc_runtime::http::BearerAuth;
use jrpc_runtime::mcp::{McpServer, McpServerBuilder, ProtectedResource};
use jrpc_runtime::{Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{GUARDED_ANSWER, GUARDED_BATCH, guarded, guarded_batch_seen};
use jrpc_tests::raw_http::{Reply, post, request};
use serde_json::json;
use tokio::net::TcpListener;

async fn serve(builder: McpServerBuilder) -> SocketAddr {
    let server: McpServer = builder.build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener).await });
    addr
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
    let get = b"GET /mcp HTTP/1.1\r\nhost: test\r\naccept: text/event-stream\r\n\r\n";
    assert_eq!(send(addr, get).await.status, 401);
}

#[tokio::test]
async fn the_metadata_is_served_to_anyone_at_both_well_known_paths() {
    let addr = protected().await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let get = format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n");
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
