//! The floor: the least a Rust server can do to answer the benchmark's `add` call, with no
//! framework at all. On the plain port: HTTP/1.1 or HTTP/2 with prior knowledge on hyper 1's
//! connection builders (`POST /rpc`) and WebSocket on tokio-tungstenite (`GET /ws`), told apart
//! by a connection's first bytes; with a certificate, HTTPS on a second port (tokio-rustls,
//! HTTP/1.1 or HTTP/2 by ALPN). Each body is parsed into typed structs by
//! serde_json and each answer serialized from one (`answer.rs`). It skips what a framework adds
//! around that: limits, timeouts, tags, spans, hooks, shutdown.

mod answer;
mod websocket;

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use jrpc_bench::BoxError;

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
                        serve_http(stream, h2).await
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
        b"PRI " => serve_http(stream, true).await,
        _ => serve_http(stream, false).await,
    }
}

async fn serve_http<T>(io: T, h2: bool) -> Result<(), BoxError>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    if h2 {
        http2::Builder::new(TokioExecutor::new())
            .serve_connection(io, service_fn(rpc))
            .await?;
    } else {
        http1::Builder::new()
            .serve_connection(io, service_fn(rpc))
            .await?;
    }
    Ok(())
}

/// `POST /rpc`: the answer with `200`, or `204` when there is none (notifications).
async fn rpc(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let status = |status| {
        let mut res = Response::new(Full::default());
        *res.status_mut() = status;
        Ok(res)
    };
    if req.uri().path() != "/rpc" {
        return status(StatusCode::NOT_FOUND);
    }
    if req.method() != Method::POST {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let Ok(body) = req.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Some(answer) = answer::answer(&body.to_bytes()) else {
        return status(StatusCode::NO_CONTENT);
    };
    let mut res = Response::new(Full::new(Bytes::from(answer)));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(res)
}
