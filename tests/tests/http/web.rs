//! The web: tower-http's layers on the HTTP server (CORS, compression, request ids, timeouts),
//! over HTTP/1.1 and h2c alike; the origin policy (other origins refused, the server's own and
//! clients without `Origin` let through, loopback `Host` names only on a loopback server); and a
//! browser's WebSocket authenticating with `access_token`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::header::{
    ACCEPT_ENCODING, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_REQUEST_METHOD, CONTENT_ENCODING,
    CONTENT_TYPE, HOST, ORIGIN,
};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Version};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use jrpc_runtime::http::{BearerAuth, HttpServer, HttpServerBuilder};
use jrpc_runtime::server::OriginPolicy;
use jrpc_runtime::ws::WsServer;
use jrpc_runtime::{Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::raw_http::request;
use jrpc_tests::raw_ws::RawWs;
use jrpc_tests::servers::{connect_in_memory, serve_http, serve_ws};
use serde_json::Value;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::timeout::TimeoutLayer;

/// The origin of the pages allowed.
const PAGE: &str = "https://app.example";

const ADD: &str = r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#;

/// Returns a table with `add`, `tag` (the request's tag), `big` (an answer of 10 000 bytes) and
/// `slow` (an hour's sleep).
fn methods() -> Methods {
    let mut methods = Methods::new();
    methods
        .register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move {
            Ok::<_, RpcError>(a + b)
        })
        .unwrap();
    methods
        .register("tag", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.request_tag().map(str::to_owned))
        })
        .unwrap();
    methods
        .register("big", &[], |(): (), _ctx| async move {
            Ok::<_, RpcError>("x".repeat(10_000))
        })
        .unwrap();
    methods
        .register("slow", &[], |(): (), _ctx| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, RpcError>(0)
        })
        .unwrap();
    methods
}

/// The HTTP versions each layer is tried on: HTTP/1.1, and HTTP/2 with prior knowledge (h2c).
const VERSIONS: [Version; 2] = [Version::HTTP_11, Version::HTTP_2];

/// What a request got back.
struct Got {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Got {
    fn header(&self, name: http::header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Sends `req` (its version set) to `server` over an in-memory connection of that version, and
/// reads the whole reply.
async fn send(server: &HttpServer, req: Request<Full<Bytes>>) -> Got {
    let io = TokioIo::new(connect_in_memory(server, 1 << 20));
    let version = req.version();
    let res = if version == Version::HTTP_2 {
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .unwrap();
        tokio::spawn(conn);
        sender.send_request(req).await.unwrap()
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(conn);
        sender.send_request(req).await.unwrap()
    };
    assert_eq!(res.version(), version);
    let (head, body) = res.into_parts();
    Got {
        status: head.status,
        headers: head.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

/// Returns a request of `version` to `/rpc` with `method`, from the page's origin when `origin`.
fn to_rpc(version: Version, method: Method, origin: Option<&str>) -> http::request::Builder {
    let mut builder = Request::builder()
        .method(method)
        .uri("http://localhost/rpc")
        .version(version);
    if version == Version::HTTP_11 {
        builder = builder.header(HOST, "localhost");
    }
    if let Some(origin) = origin {
        builder = builder.header(ORIGIN, origin);
    }
    builder
}

/// Returns a `POST` of `body` to `/rpc` of `version`.
fn post(version: Version, origin: Option<&str>, body: &str) -> Request<Full<Bytes>> {
    to_rpc(version, Method::POST, origin)
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

/// Returns a server of [`methods`] with `settings` applied.
fn server(settings: impl FnOnce(HttpServerBuilder) -> HttpServerBuilder) -> HttpServer {
    settings(HttpServer::builder(methods())).build().unwrap()
}

#[tokio::test]
async fn a_cors_layer_answers_the_preflight_and_tags_the_answer() {
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::list([HeaderValue::from_static(PAGE)]))
        .allow_methods([Method::POST])
        .allow_headers([CONTENT_TYPE]);
    let policy = OriginPolicy::new().allow_origins([PAGE]);
    let server = server(|b| b.origin_policy(policy).layer(cors));
    for version in VERSIONS {
        let preflight = to_rpc(version, Method::OPTIONS, Some(PAGE))
            .header(ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .body(Full::default())
            .unwrap();
        let got = bounded(send(&server, preflight)).await;
        assert!(got.status.is_success(), "{version:?} {}", got.status);
        assert_eq!(
            got.header(ACCESS_CONTROL_ALLOW_ORIGIN),
            Some(PAGE),
            "{version:?}"
        );
        let got = bounded(send(&server, post(version, Some(PAGE), ADD))).await;
        assert_eq!(got.status, StatusCode::OK, "{version:?}");
        assert_eq!(
            got.header(ACCESS_CONTROL_ALLOW_ORIGIN),
            Some(PAGE),
            "{version:?}"
        );
        assert_eq!(got.json()["result"], 5);
        // Another origin gets no CORS header from the layer, and a 403 from the policy.
        let got = bounded(send(
            &server,
            post(version, Some("https://evil.example"), ADD),
        ))
        .await;
        assert_eq!(got.status, StatusCode::FORBIDDEN, "{version:?}");
        assert_eq!(got.header(ACCESS_CONTROL_ALLOW_ORIGIN), None);
        assert_eq!(got.json()["error"]["code"], -32600);
    }
}

#[tokio::test]
async fn a_compression_layer_compresses_a_large_answer() {
    let server = server(|b| b.layer(CompressionLayer::new()));
    for version in VERSIONS {
        let mut req = post(version, None, r#"{"jsonrpc":"2.0","method":"big","id":1}"#);
        req.headers_mut()
            .insert(ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        let got = bounded(send(&server, req)).await;
        assert_eq!(got.status, StatusCode::OK, "{version:?}");
        assert_eq!(got.header(CONTENT_ENCODING), Some("gzip"), "{version:?}");
        // gzip's magic number, and far fewer bytes than the answer's 10 000 `x`.
        assert_eq!(&got.body[..2], &[0x1f, 0x8b], "{version:?}");
        assert!(
            got.body.len() < 1_000,
            "{version:?}: {} bytes",
            got.body.len()
        );
        // Without `Accept-Encoding` the answer is sent as it is.
        let got = bounded(send(&server, post(version, None, ADD))).await;
        assert_eq!(got.header(CONTENT_ENCODING), None);
        assert_eq!(got.json()["result"], 5);
    }
}

/// Makes request ids `n-1`, `n-2`... from a counter.
#[derive(Clone, Default)]
struct Counted(Arc<AtomicU64>);

impl MakeRequestId for Counted {
    fn make_request_id<B>(&mut self, _req: &Request<B>) -> Option<RequestId> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        HeaderValue::from_str(&format!("n-{n}"))
            .ok()
            .map(RequestId::new)
    }
}

#[tokio::test]
async fn a_request_id_layer_tags_the_request_the_handler_sees() {
    let layers = tower::ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(Counted::default()))
        .layer(PropagateRequestIdLayer::x_request_id());
    let server = server(|b| b.layer(layers));
    for (n, version) in VERSIONS.into_iter().enumerate() {
        let got = bounded(send(
            &server,
            post(version, None, r#"{"jsonrpc":"2.0","method":"tag","id":1}"#),
        ))
        .await;
        let id = format!("n-{}", n + 1);
        assert_eq!(got.json()["result"], id.as_str(), "{version:?}");
        assert_eq!(
            got.header(http::HeaderName::from_static("x-request-id")),
            Some(id.as_str())
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_timeout_layer_answers_a_slow_call_408() {
    let server = server(|b| {
        b.layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(5),
        ))
    });
    for version in VERSIONS {
        let got = send(
            &server,
            post(version, None, r#"{"jsonrpc":"2.0","method":"slow","id":1}"#),
        )
        .await;
        assert_eq!(got.status, StatusCode::REQUEST_TIMEOUT, "{version:?}");
        // A quick call is not concerned.
        let got = send(&server, post(version, None, ADD)).await;
        assert_eq!(got.json()["result"], 5, "{version:?}");
    }
}

#[tokio::test]
async fn other_origins_are_refused_and_the_servers_own_is_not() {
    let (addr, _) = serve_http(server(|b| b)).await;
    let raw = |origin: &str| {
        let origin = match origin {
            "" => String::new(),
            origin => format!("origin: {origin}\r\n"),
        };
        format!(
            "POST /rpc HTTP/1.1\r\nhost: {addr}\r\n{origin}content-type: application/json\r\ncontent-length: {}\r\n\r\n{ADD}",
            ADD.len()
        )
    };
    // No `Origin`: not a browser.
    let reply = bounded(request(addr, raw("").as_bytes())).await;
    assert_eq!(reply.status, 200);
    // The server's own origin.
    let reply = bounded(request(addr, raw(&format!("http://{addr}")).as_bytes())).await;
    assert_eq!(reply.status, 200);
    for other in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let reply = bounded(request(addr, raw(other).as_bytes())).await;
        let body = reply.assert_envelope(403, -32600);
        assert!(
            body["error"]["data"]
                .as_str()
                .unwrap()
                .contains("allow_origins"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_loopback_server_answers_only_loopback_host_names() {
    let raw = |host: &str| {
        format!(
            "POST /rpc HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{ADD}",
            ADD.len()
        )
    };
    let (addr, _) = serve_http(server(|b| b)).await;
    let port = addr.port();
    for good in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "[::1]".into(),
    ] {
        assert_eq!(
            bounded(request(addr, raw(&good).as_bytes())).await.status,
            200,
            "{good}"
        );
    }
    // A page of another site whose name resolves to 127.0.0.1 (DNS rebinding).
    for bad in [
        "evil.example",
        "evil.example:8080",
        "localhost.evil.example",
    ] {
        let reply = bounded(request(addr, raw(bad).as_bytes())).await;
        let body = reply.assert_envelope(403, -32600);
        assert!(
            body["error"]["data"]
                .as_str()
                .unwrap()
                .contains("allow_hosts"),
            "{body}"
        );
    }
    // Told otherwise: names listed, or any.
    let named = OriginPolicy::new().allow_hosts(["api.example"]);
    let (addr, _) = serve_http(server(|b| b.origin_policy(named))).await;
    assert_eq!(
        bounded(request(addr, raw("api.example").as_bytes()))
            .await
            .status,
        200
    );
    assert_eq!(
        bounded(request(addr, raw("evil.example").as_bytes()))
            .await
            .status,
        403
    );
    let any = OriginPolicy::new().allow_any_host();
    let (addr, _) = serve_http(server(|b| b.origin_policy(any))).await;
    assert_eq!(
        bounded(request(addr, raw("evil.example").as_bytes()))
            .await
            .status,
        200
    );
}

/// Opens a WebSocket on `addr` with `headers`; returns the status of the answer.
async fn upgrade_status(addr: std::net::SocketAddr, path: &str, headers: &str) -> u16 {
    let raw = format!(
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nupgrade: websocket\r\nconnection: upgrade\r\n\
         sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n{headers}\r\n"
    );
    bounded(request(addr, raw.as_bytes())).await.status
}

#[tokio::test]
async fn a_websocket_of_another_origin_is_refused_on_both_servers() {
    let (http, _) = serve_http(server(|b| b)).await;
    let (ws, _) = serve_ws(WsServer::builder(methods()).build().unwrap()).await;
    for (addr, path) in [(http, "/ws"), (ws, "/")] {
        assert_eq!(
            upgrade_status(addr, path, "origin: http://evil.example\r\n").await,
            403
        );
        assert_eq!(upgrade_status(addr, path, "origin: null\r\n").await, 403);
        assert_eq!(upgrade_status(addr, path, "").await, 101);
        let own = format!("origin: http://{addr}\r\n");
        assert_eq!(upgrade_status(addr, path, &own).await, 101);
    }
    let allowed = OriginPolicy::new().allow_origins(["http://evil.example"]);
    let (ws, _) = serve_ws(
        WsServer::builder(methods())
            .origin_policy(allowed)
            .build()
            .unwrap(),
    )
    .await;
    assert_eq!(
        upgrade_status(ws, "/", "origin: http://evil.example\r\n").await,
        101
    );
}

#[tokio::test]
async fn a_websocket_authenticates_with_its_access_token() {
    let auth = BearerAuth::tokens([("t0ken", "ada")]);
    let (addr, _) = serve_http(server(|b| b.bearer_auth(auth))).await;
    assert_eq!(upgrade_status(addr, "/ws", "").await, 401);
    assert_eq!(
        upgrade_status(addr, "/ws?access_token=wrong", "").await,
        401
    );
    // Percent-encoded as a form: `t0ken` as `t%30ken`.
    let mut ws = bounded(RawWs::connect(
        addr,
        "/ws?other=1&access_token=t%30ken",
        &[],
    ))
    .await;
    ws.send_text(ADD).await;
    assert_eq!(bounded(ws.next_json()).await["result"], 5);
    // Only the WebSocket path reads it: a POST must carry `Authorization`.
    let raw = format!(
        "POST /rpc?access_token=t0ken HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{ADD}",
        ADD.len()
    );
    assert_eq!(bounded(request(addr, raw.as_bytes())).await.status, 401);
}
