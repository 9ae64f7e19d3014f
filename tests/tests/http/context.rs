//! The context each request of a keep-alive HTTP/1.1 connection gets: its own headers and tag,
//! whether the context of the request before was let go (and is made over) or is still held by
//! a handler (and is left as it is).

use std::sync::{Arc, Mutex};

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::{Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::request_header;
use jrpc_tests::raw_http::{Conn, post};
use jrpc_tests::servers::serve_http;

/// `seen` answers its request's `x-custom` header and tag; `keep` does too, and keeps its context.
fn methods(kept: &Arc<Mutex<Vec<Context>>>) -> Methods {
    let mut methods = Methods::new();
    let answer = |ctx: &Context| serde_json::json!({ "custom": request_header(ctx, "x-custom"), "tag": ctx.request_tag() });
    methods
        .register("seen", &[], move |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(answer(&ctx))
        })
        .unwrap();
    let kept = Arc::clone(kept);
    methods
        .register("keep", &[], move |(): (), ctx: Context| {
            kept.lock().unwrap().push(ctx.clone());
            async move { Ok::<_, RpcError>(answer(&ctx)) }
        })
        .unwrap();
    methods
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_of_a_connection_gets_a_context_of_its_own() {
    bounded(async {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let server = HttpServer::builder(methods(&kept)).build().unwrap();
        let (addr, _serving) = serve_http(server).await;
        let mut conn = Conn::open(addr).await;
        let mut call = async |method: &str, extra: &str| {
            let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}","id":1}}"#);
            let reply = conn
                .send(&post("/rpc", Some("application/json"), extra, &body))
                .await;
            assert_eq!(reply.status, 200, "{method} {extra:?}");
            reply.json()["result"].clone()
        };
        let mut tags = Vec::new();
        for (method, custom) in [
            ("seen", Some("a")),
            ("seen", None),
            ("keep", Some("b")),
            ("seen", Some("c")),
            ("seen", None),
        ] {
            let extra = custom
                .map(|c| format!("x-custom: {c}\r\n"))
                .unwrap_or_default();
            let seen = call(method, &extra).await;
            assert_eq!(seen["custom"].as_str(), custom, "{method} {custom:?}");
            tags.push(seen["tag"].as_str().unwrap().to_owned());
        }
        tags.sort();
        tags.dedup();
        assert_eq!(
            tags.len(),
            5,
            "every request has a tag of its own: {tags:?}"
        );
        // The context `keep` held was not made over for the requests after it.
        let kept = kept.lock().unwrap();
        assert_eq!(request_header(&kept[0], "x-custom").as_deref(), Some("b"));
    })
    .await;
}
