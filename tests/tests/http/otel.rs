//! The `otel` feature, with OpenTelemetry's SDK and its in-memory exporter: a request's span is
//! the child of the caller's `traceparent`, and a call its handler makes to another server is a
//! span of the same trace, whose own `traceparent` the server downstream takes as its parent.

use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use jrpc_tests::raw_http::{Conn, post};
use jrpc_tests::servers::serve_http;
use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// The exported span named `name` whose `method` attribute is `method`.
fn span<'a>(spans: &'a [SpanData], name: &str, method: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|span| {
            span.name == name
                && span
                    .attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "method" && kv.value.as_str() == method)
        })
        .unwrap_or_else(|| panic!("no `{name}` span of `{method}` in {spans:#?}"))
}

#[test]
fn server_spans_continue_the_callers_trace_and_downstream_calls_stay_in_it() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("jrpc-tests")))
        .with(LevelFilter::DEBUG);
    let _default = subscriber.set_default();
    tracing::callsite::rebuild_interest_cache();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(jrpc_tests::bounded(async {
        let mut downstream = Methods::new();
        jrpc_tests::fixtures::add(&mut downstream);
        let (down, _) = serve_http(HttpServer::builder(downstream).build().unwrap()).await;
        let client = HttpClient::new(&format!("http://{down}/rpc")).unwrap();
        let mut edge = Methods::new();
        edge.register("proxy", &[], move |(): (), _ctx: Context| {
            let client = client.clone();
            async move {
                client
                    .call::<i64>("add", [1, 2])
                    .await
                    .map_err(|err| RpcError::new(1, err.to_string()))
            }
        })
        .unwrap();
        let (addr, _) = serve_http(HttpServer::builder(edge).build().unwrap()).await;
        let mut conn = Conn::open(addr).await;
        let headers = format!("traceparent: 00-{TRACE_ID}-{PARENT_ID}-01\r\n");
        let body = r#"{"jsonrpc":"2.0","method":"proxy","id":1}"#;
        conn.write(&post("/rpc", Some("application/json"), &headers, body))
            .await;
        let reply = conn.read_reply().await;
        assert_eq!(reply.json()["result"], 3, "{reply:?}");
    }));
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let trace_id = TraceId::from_hex(TRACE_ID).unwrap();
    let edge = span(&spans, "rpc", "proxy");
    assert_eq!(edge.span_context.trace_id(), trace_id);
    assert_eq!(edge.parent_span_id, SpanId::from_hex(PARENT_ID).unwrap());
    assert!(edge.parent_span_is_remote);
    let call = span(&spans, "call", "add");
    assert_eq!(call.span_context.trace_id(), trace_id);
    assert_eq!(call.parent_span_id, edge.span_context.span_id());
    let downstream = span(&spans, "rpc", "add");
    assert_eq!(downstream.span_context.trace_id(), trace_id);
    assert_eq!(downstream.parent_span_id, call.span_context.span_id());
    assert!(downstream.parent_span_is_remote);
}
