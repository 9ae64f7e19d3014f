//! W3C trace context over HTTP and WebSocket: a request's `traceparent` (and `tracestate`) is its
//! handler's `ctx.trace()`, its DEBUG line's `trace_id`, and goes on, with a new span id, on the
//! calls its handler makes with the HTTP client; a request without one (or with one that is not
//! valid) has none, and its handler's calls carry none.

use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller as _, Context, Methods, RpcError, TraceContext};
use jrpc_tests::cancel::hang;
use jrpc_tests::logs::logged;
use jrpc_tests::raw_http::{Conn, post};
use jrpc_tests::servers::serve_http;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// An edge server whose `proxy` calls `hang` on a downstream server with the HTTP client, and
/// whose `whose` answers the trace id its handler sees; the downstream `hang`'s reports.
pub(crate) async fn edge_and_downstream() -> (std::net::SocketAddr, jrpc_tests::cancel::Hang) {
    let mut downstream = Methods::new();
    let hang = hang(&mut downstream);
    let (down, _) = serve_http(HttpServer::builder(downstream).build().unwrap()).await;
    let client = HttpClient::new(&format!("http://{down}/rpc")).unwrap();
    let mut edge = Methods::new();
    edge.register("proxy", &[], move |(): (), _ctx: Context| {
        let client = client.clone();
        async move {
            client
                .call::<()>("hang", ())
                .await
                .map_err(|err| RpcError::new(1, err.to_string()))
        }
    })
    .unwrap();
    edge.register("whose", &[], |(): (), ctx: Context| async move {
        Ok::<_, RpcError>(ctx.trace().map(|trace| trace.trace_id().to_string()))
    })
    .unwrap();
    let (addr, _) = serve_http(HttpServer::builder(edge).build().unwrap()).await;
    (addr, hang)
}

fn traced_post(body: &str, headers: &str) -> Vec<u8> {
    post("/rpc", Some("application/json"), headers, body)
}

#[tokio::test]
async fn a_traceparent_goes_on_downstream_with_a_new_span_id() {
    let (addr, mut hang) = edge_and_downstream().await;
    let mut conn = Conn::open(addr).await;
    let headers = format!("traceparent: {TRACEPARENT}\r\ntracestate: congo=t61rcWkgMzE\r\n");
    conn.write(&traced_post(
        r#"{"jsonrpc":"2.0","method":"proxy","id":1}"#,
        &headers,
    ))
    .await;
    let sent = TraceContext::parse(TRACEPARENT, None).unwrap();
    let seen = hang.started().await.trace.expect("the trace, downstream");
    assert_eq!(seen.trace_id(), sent.trace_id());
    assert_ne!(seen.parent_id(), sent.parent_id(), "a new span id");
    assert!(seen.sampled());
    assert_eq!(seen.tracestate(), Some("congo=t61rcWkgMzE"));

    // In a batch too.
    let mut conn = Conn::open(addr).await;
    let batch =
        r#"[{"jsonrpc":"2.0","method":"proxy","id":1},{"jsonrpc":"2.0","method":"whose","id":2}]"#;
    conn.write(&traced_post(batch, &headers)).await;
    let seen = hang.started().await.trace.expect("the trace, downstream");
    assert_eq!(seen.trace_id(), sent.trace_id());
}

#[tokio::test]
async fn without_a_valid_traceparent_there_is_no_trace() {
    let (addr, mut hang) = edge_and_downstream().await;
    for headers in [
        "",
        "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n",
    ] {
        let mut conn = Conn::open(addr).await;
        conn.write(&traced_post(
            r#"{"jsonrpc":"2.0","method":"proxy","id":1}"#,
            headers,
        ))
        .await;
        assert!(hang.started().await.trace.is_none(), "{headers:?}");
        let whose = conn_call(addr, headers).await;
        assert_eq!(whose["result"], serde_json::Value::Null, "{headers:?}");
    }
}

/// `whose`, over a connection of its own with `headers`.
async fn conn_call(addr: std::net::SocketAddr, headers: &str) -> serde_json::Value {
    let mut conn = Conn::open(addr).await;
    conn.write(&traced_post(
        r#"{"jsonrpc":"2.0","method":"whose","id":2}"#,
        headers,
    ))
    .await;
    conn.read_reply().await.json()
}

#[tokio::test]
async fn the_upgrades_traceparent_is_the_websockets_calls_trace() {
    let mut methods = Methods::new();
    let mut hang = hang(&mut methods);
    let (addr, _) = serve_http(HttpServer::builder(methods).build().unwrap()).await;
    let client = WsClient::builder(format!("ws://{addr}/ws"))
        .header("traceparent", TRACEPARENT)
        .connect()
        .await
        .unwrap();
    let call = tokio::spawn(async move { client.call::<()>("hang", ()).await });
    let seen = hang.started().await.trace.expect("the upgrade's trace");
    assert_eq!(seen.traceparent(), TRACEPARENT);
    call.abort();
}

#[test]
fn the_debug_line_carries_the_trace_id() {
    let ((), captured) = logged(LevelFilter::DEBUG, FmtSpan::NONE, |_| async {
        let (addr, _hang) = edge_and_downstream().await;
        let headers = format!("traceparent: {TRACEPARENT}\r\n");
        let whose = conn_call(addr, &headers).await;
        assert_eq!(whose["result"], "4bf92f3577b34da6a3ce929d0e0e4736");
        let whose = conn_call(addr, "").await;
        assert_eq!(whose["result"], serde_json::Value::Null);
    });
    let lines = captured.lines();
    let requests: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains(" request method=whose"))
        .collect();
    assert_eq!(requests.len(), 2, "{lines:#?}");
    assert!(
        requests[0].contains("trace_id=4bf92f3577b34da6a3ce929d0e0e4736"),
        "{requests:#?}"
    );
    assert!(!requests[1].contains("trace_id="), "{requests:#?}");
}
