//! TLS: the HTTP server on https and wss (HTTP/1.1 and HTTP/2 by ALPN, h2c in plain), every
//! client path over it (HttpClient, WsClient, Client, batches, server pushes), trust (a CA of
//! one's own, an unknown issuer, another name), settings checked at build time, and handshakes
//! that fail without taking the server down.

use std::net::SocketAddr;
use std::sync::Arc;

use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::server::ServerTls;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{BatchCall, Caller, Client, ClientError, ClientTls, Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::add;
use jrpc_tests::tls::Certs;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::value::to_raw_value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn methods() -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(ctx.transport().as_str())
        })
        .unwrap();
    methods
        .register("echo", &["text"], |(text,): (String,), _| async move {
            Ok::<_, RpcError>(text)
        })
        .unwrap();
    methods
        .register("pushes", &["n"], |(n,): (u32,), ctx: Context| async move {
            let peer = ctx.peer().ok_or_else(RpcError::internal)?;
            for i in 1..=n {
                peer.notify("pushed", [i])
                    .await
                    .map_err(|_| RpcError::internal())?;
            }
            Ok::<_, RpcError>(n)
        })
        .unwrap();
    methods
}

/// An HTTPS server with `certs`, on a free port.
async fn serve(certs: &Certs) -> SocketAddr {
    let server = HttpServer::builder(methods())
        .tls(ServerTls::pem_files(&certs.cert, &certs.key))
        .build()
        .unwrap();
    jrpc_tests::servers::serve_http(server).await.0
}

fn trusting(certs: &Certs) -> ClientTls {
    ClientTls::new().ca_pem(certs.cert_pem.as_bytes())
}

#[tokio::test]
async fn every_client_calls_over_tls() {
    let certs = Certs::localhost();
    let addr = serve(&certs).await;
    bounded(async {
        let http = HttpClient::builder(format!("https://{addr}/rpc"))
            .tls(trusting(&certs))
            .build()
            .unwrap();
        let sum: i64 = http.call("add", [2, 3]).await.unwrap();
        assert_eq!(sum, 5);
        let who: String = http.call("whoami", ()).await.unwrap();
        assert_eq!(who, "http");
        let batch = http
            .batch_raw(vec![
                BatchCall::call("add", to_raw_value(&[1, 1]).ok()),
                BatchCall::notification("add", to_raw_value(&[0, 0]).ok()),
                BatchCall::call("whoami", None),
            ])
            .await
            .unwrap();
        let texts: Vec<String> = batch
            .into_iter()
            .map(|r| r.unwrap().get().to_owned())
            .collect();
        assert_eq!(texts, ["2", r#""http""#]);

        // A server's pushes arrive over wss before the answer, as a typed stream.
        let mut handlers = Methods::new();
        let mut pushed = handlers
            .notifications::<[u32; 1]>("pushed", std::num::NonZeroUsize::new(8).unwrap())
            .unwrap();
        let ws = WsClient::builder(format!("wss://{addr}/ws"))
            .tls(trusting(&certs))
            .methods(handlers)
            .connect()
            .await
            .unwrap();
        let who: String = ws.call("whoami", ()).await.unwrap();
        assert_eq!(who, "ws");
        let n: u32 = ws.call("pushes", [3]).await.unwrap();
        assert_eq!(n, 3);
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(pushed.next().await.unwrap()[0]);
        }
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(pushed.missed(), 0);

        for url in [format!("https://{addr}/rpc"), format!("wss://{addr}/ws")] {
            let client = Client::builder(&url)
                .tls(trusting(&certs))
                .connect()
                .await
                .unwrap();
            let sum: i64 = client.call("add", [20, 22]).await.unwrap();
            assert_eq!(sum, 42, "{url}");
        }
        // By name too: the certificate is for `localhost` as well.
        let by_name = HttpClient::builder(format!("https://localhost:{}/rpc", addr.port()))
            .tls(trusting(&certs))
            .build()
            .unwrap();
        let sum: i64 = by_name.call("add", [1, 2]).await.unwrap();
        assert_eq!(sum, 3);
    })
    .await;
}

#[tokio::test]
async fn the_client_speaks_http2_when_the_server_offers_only_that() {
    let certs = Certs::localhost();
    // A rustls configuration of one's own, whose ALPN names h2 alone: a client that could not
    // speak HTTP/2 would fail its handshake (no common protocol).
    let chain = vec![CertificateDer::from_pem_slice(certs.cert_pem.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_file(&certs.key).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let server = HttpServer::builder(methods())
        .tls(ServerTls::config(Arc::new(config)))
        .build()
        .unwrap();
    let (addr, _) = jrpc_tests::servers::serve_http(server).await;
    bounded(async {
        let http = HttpClient::builder(format!("https://{addr}/rpc"))
            .tls(trusting(&certs))
            .build()
            .unwrap();
        // Several calls at once share the one HTTP/2 connection.
        let calls = (0..8).map(|n| http.call::<i64>("add", [n, 1]));
        let sums: Vec<i64> = futures_util::future::try_join_all(calls).await.unwrap();
        assert_eq!(sums, (1..=8).collect::<Vec<_>>());
        // At the defaults, a 2 MiB body and its 2 MiB answer pass HTTP/2's flow control (the
        // server's HTTP/2 is the same for h2c, which only the first bytes tell apart).
        let two = "h".repeat(2 * 1024 * 1024);
        let echoed: String = http.call("echo", [&two]).await.unwrap();
        assert_eq!(echoed, two);
    })
    .await;
}

/// The message of a client's failure, its sources included.
fn chain(err: &ClientError) -> String {
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(err) = cause {
        text.push_str(&format!(" / {err}"));
        cause = err.source();
    }
    text
}

#[tokio::test]
async fn an_untrusted_or_mismatched_certificate_is_a_clear_error() {
    let certs = Certs::localhost();
    let addr = serve(&certs).await;
    bounded(async {
        // Only the system's roots: the self-signed certificate is nobody's.
        let http = HttpClient::new(&format!("https://{addr}/rpc")).unwrap();
        let err = http.call::<i64>("add", [1, 2]).await.unwrap_err();
        let text = chain(&err);
        assert!(matches!(err, ClientError::Transport(_)), "{text}");
        assert!(text.contains("UnknownIssuer"), "{text}");
        assert!(text.contains("not signed by a trusted CA"), "{text}");

        let err = WsClient::builder(format!("wss://{addr}/ws"))
            .connect()
            .await
            .unwrap_err();
        assert!(chain(&err).contains("UnknownIssuer"), "{}", chain(&err));

        // Trusted, but for other names than the URL's host.
        let other = Certs::for_names(&["jrpc.invalid"]);
        let addr = serve(&other).await;
        let err = HttpClient::builder(format!("https://{addr}/rpc"))
            .tls(trusting(&other))
            .build()
            .unwrap()
            .call::<i64>("add", [1, 2])
            .await
            .unwrap_err();
        let text = chain(&err);
        assert!(text.contains("not valid for name"), "{text}");
        assert!(text.contains("another name"), "{text}");
    })
    .await;
}

#[tokio::test]
async fn plain_http_and_failed_handshakes_are_dropped_and_the_server_goes_on() {
    let certs = Certs::localhost();
    let addr = serve(&certs).await;
    bounded(async {
        for _ in 0..3 {
            let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
            let body = r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#;
            let request = format!(
                "POST /rpc HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(request.as_bytes()).await.unwrap();
            // The server reads no HTTP here: it ends the connection (an alert, then the end).
            let mut seen = Vec::new();
            let _ = socket.read_to_end(&mut seen).await;
            assert!(
                !String::from_utf8_lossy(&seen).contains("HTTP/1.1"),
                "{seen:?}"
            );
        }
        // A client that gives up on the certificate mid-handshake.
        let _ = HttpClient::new(&format!("https://{addr}/rpc"))
            .unwrap()
            .call::<i64>("add", [1, 2])
            .await
            .unwrap_err();
        let http = HttpClient::builder(format!("https://{addr}/rpc"))
            .tls(trusting(&certs))
            .build()
            .unwrap();
        assert_eq!(http.call::<i64>("add", [2, 2]).await.unwrap(), 4);
    })
    .await;
}

#[test]
fn tls_settings_are_checked_when_built() {
    let certs = Certs::localhost();
    let missing = certs.dir().join("missing.pem");
    let garbage = certs.dir().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let build = |tls: ServerTls| {
        HttpServer::builder(Methods::new())
            .tls(tls)
            .build()
            .map(drop)
            .unwrap_err()
    };
    let err = build(ServerTls::pem_files(&missing, &certs.key));
    assert_eq!(err.key(), "tls");
    assert!(err.reason().contains("missing.pem"), "{err}");
    let err = build(ServerTls::pem_files(&garbage, &certs.key));
    assert_eq!(err.key(), "tls");
    assert!(err.reason().contains("no PEM certificate"), "{err}");
    // The certificate's own file holds no key.
    let err = build(ServerTls::pem_files(&certs.cert, &certs.cert));
    assert_eq!(err.key(), "tls");
    // A key of another certificate does not match.
    let other = Certs::localhost();
    let err = build(ServerTls::pem_files(&certs.cert, &other.key));
    assert_eq!(err.key(), "tls", "{err}");

    let err = HttpClient::builder("https://127.0.0.1:1/rpc")
        .tls(ClientTls::new().ca_file(&missing))
        .build()
        .unwrap_err();
    assert_eq!(err.key(), "tls");
    let err = HttpClient::builder("https://127.0.0.1:1/rpc")
        .tls(ClientTls::new().system_roots(false))
        .build()
        .unwrap_err();
    assert!(err.reason().contains("no root certificate"), "{err}");
    // Plain HTTP reads no CA file.
    assert!(
        HttpClient::builder("http://127.0.0.1:1/rpc")
            .tls(ClientTls::new().ca_file(&missing))
            .build()
            .is_ok()
    );
}
