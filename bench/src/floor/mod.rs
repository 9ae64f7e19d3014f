//! The floor: the least a Rust server can do to answer the benchmark's `add` call, with no
//! framework at all. On the plain port: HTTP/1.1 or HTTP/2 with prior knowledge on hyper 1's
//! connection builders (`POST /rpc`) and WebSocket on tokio-tungstenite (`GET /ws`), told apart
//! by a connection's first bytes; with a certificate, HTTPS on a second port (tokio-rustls,
//! HTTP/1.1 or HTTP/2 by ALPN). Each body is parsed into typed structs by
//! serde_json and each answer serialized from one (`answer.rs`). It skips what a framework adds
//! around that: limits, timeouts, tags, spans, hooks, shutdown.

mod answer;
pub mod http;
mod websocket;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use jrpc_bench::BoxError;

use self::http::serve_http;

/// A TLS acceptor for the certificate and key in PEM files, offering `h2` and `http/1.1`.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, BoxError> {
    let certs = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves on `listener` until the process exits: with `tls`, HTTPS; without, HTTP and
/// WebSocket.
pub async fn serve(listener: TcpListener, tls: Option<TlsAcceptor>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        // A connection's error is the load generator hanging up (the benchmark checks every
        // answer on its side): nothing to report.
        tokio::spawn(async move {
            let _ = match tls {
                Some(tls) => match tls.accept(stream).await {
                    Ok(stream) => {
                        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                        serve_http(stream, h2).await.map_err(Into::into)
                    }
                    Err(err) => Err(err.into()),
                },
                None => plain(stream).await,
            };
        });
    }
}

/// A plain connection: a WebSocket if it starts with `GET ` (an upgrade), HTTP/2 if with
/// `PRI ` (its preface), HTTP/1.1 otherwise.
async fn plain(stream: TcpStream) -> Result<(), BoxError> {
    let mut first = [0u8; 4];
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Ok(());
        }
        if n == first.len() {
            break;
        }
        // Fewer than four bytes in: wait for the rest (peek returns at once while any is there).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    match &first {
        b"GET " => websocket::serve(stream).await,
        b"PRI " => Ok(serve_http(stream, true).await?),
        _ => Ok(serve_http(stream, false).await?),
    }
}
