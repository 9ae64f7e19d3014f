//! What `tracing` shows of the requests served: one DEBUG line per request on every transport,
//! with its method, id, transport, duration and outcome; the request span records the outcome;
//! nothing per request at INFO.

use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller as _, Methods, Peer, PeerConfig, RpcError};
use jrpc_tests::logs::logged;
use jrpc_tests::servers::serve_http;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;

fn methods() -> Methods {
    let mut methods = Methods::new();
    methods
        .register("add", &["a", "b"], |(a, b): (i64, i64), _| async move {
            Ok::<_, RpcError>(a + b)
        })
        .unwrap();
    methods
        .register("fail", &[], |(): (), _| async {
            Err::<(), _>(RpcError::new(7, "nope"))
        })
        .unwrap();
    methods
}

/// Serves and calls `add` and `fail` over every transport, under a subscriber at `level`.
fn run_all(level: LevelFilter, spans: FmtSpan) -> Vec<String> {
    let ((), captured) = logged(level, spans, |_| async {
        // In-process.
        let methods = methods();
        let sum: i64 = methods.call("add", [1, 2]).await.unwrap();
        assert_eq!(sum, 3);
        assert!(methods.call::<()>("fail", ()).await.is_err());
        // A peer over a stream.
        let (a, b) = tokio::io::duplex(4096);
        let (_server, server_loop) = Peer::connect(a, methods.clone(), PeerConfig::default());
        tokio::spawn(server_loop);
        let (client, client_loop) = Peer::connect(b, Methods::new(), PeerConfig::default());
        tokio::spawn(client_loop);
        let sum: i64 = client.call("add", [3, 4]).await.unwrap();
        assert_eq!(sum, 7);
        // HTTP and WebSocket.
        let server = HttpServer::builder(methods).build().unwrap();
        let (addr, _) = serve_http(server).await;
        let http = HttpClient::new(&format!("http://{addr}/rpc")).unwrap();
        let sum: i64 = http.call("add", [5, 6]).await.unwrap();
        assert_eq!(sum, 11);
        let ws = WsClient::connect(&format!("ws://{addr}/ws"), Methods::new())
            .await
            .unwrap();
        assert!(ws.call::<()>("fail", ()).await.is_err());
    });
    captured.lines()
}

#[test]
fn each_request_is_one_debug_line_with_its_outcome() {
    let lines = run_all(LevelFilter::DEBUG, FmtSpan::NONE);
    let requests: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains(" request method="))
        .collect();
    let has = |parts: &[&str]| {
        requests
            .iter()
            .any(|line| parts.iter().all(|part| line.contains(part)))
    };
    // In-process ids are drawn from one counter for the whole process.
    assert!(
        has(&[
            "request method=add id=",
            "transport=in-process elapsed=",
            "outcome=ok"
        ]),
        "{requests:#?}"
    );
    assert!(
        has(&["method=fail id=", "transport=in-process", "outcome=error 7"]),
        "{requests:#?}"
    );
    assert!(has(&["method=add id=1 transport=stream"]), "{requests:#?}");
    assert!(has(&["method=add id=1 transport=http"]), "{requests:#?}");
    assert!(
        has(&["method=fail id=1 transport=ws", "outcome=error 7"]),
        "{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .all(|line| line.starts_with(" DEBUG") || line.starts_with("DEBUG")),
        "{requests:#?}"
    );
    // Five requests, one line each: the client side logs none.
    assert_eq!(requests.len(), 5, "{requests:#?}");
}

#[test]
fn the_request_span_records_the_outcome() {
    let lines = run_all(LevelFilter::DEBUG, FmtSpan::CLOSE);
    assert!(
        lines.iter().any(
            |line| line.contains("rpc{method=fail transport=in-process id=")
                && line.contains(" outcome=error 7}: ")
                && line.ends_with("close")
        ),
        "{lines:#?}"
    );
}

#[test]
fn each_request_has_one_span() {
    let lines = run_all(LevelFilter::DEBUG, FmtSpan::CLOSE);
    let closed: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("rpc{") && line.ends_with("close"))
        .collect();
    // The five requests of `run_all`, each closing its one span with its outcome.
    assert_eq!(closed.len(), 5, "{closed:#?}");
    assert!(
        closed.iter().all(|line| line.contains(" outcome=")),
        "{closed:#?}"
    );
}

#[test]
fn info_shows_no_request() {
    let lines = run_all(LevelFilter::INFO, FmtSpan::NONE);
    assert!(
        !lines.iter().any(|line| line.contains("method=")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|line| line.contains("serving HTTP")),
        "{lines:#?}"
    );
}
