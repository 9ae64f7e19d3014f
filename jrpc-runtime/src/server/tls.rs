//! Accepts TLS (rustls): what a server is given ([`ServerTls`]), what it builds of it (checked
//! when the server is built), and the handshake each accepted connection goes through.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::Io;
use crate::error::ConfigError;

/// Lists the protocols a server offers by ALPN when the configuration names none: HTTP/2 first, as
/// clients that speak it prefer it.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Says how a server terminates TLS: a [`rustls::ServerConfig`] of your own, or a certificate chain
/// and a private key in PEM files, read and checked when the server is built.
///
/// ```no_run
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::http::HttpServer;
/// use jrpc_runtime::server::ServerTls;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = HttpServer::builder(Methods::new())
///     .tls(ServerTls::pem_files("cert.pem", "key.pem"))
///     .build()?; // a missing file, or a key that does not match, fails here (key `tls`)
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
/// server.serve(listener).await; // https:// and wss://, HTTP/1.1 and HTTP/2
/// # Ok(()) }
/// ```
///
/// Decisions:
///
/// - PEM files hold the leaf certificate first, then any intermediates; the key is PKCS#8 (ECDSA
///   P-256 or P-384, Ed25519, RSA), or SEC1 or PKCS#1. They are read once, at build time: to
///   rotate certificates, build a `rustls::ServerConfig` with a certificate resolver of your own.
/// - The crypto provider is *ring* (rustls' `ring` feature), chosen explicitly, so a build that
///   also has rustls' `aws-lc-rs` elsewhere never panics over which one is the process default.
/// - ALPN offers `h2` and `http/1.1`; a configuration of your own that names no protocol gets
///   these too, one that names some is taken as it is.
#[derive(Clone)]
pub struct ServerTls(Source);

#[derive(Clone)]
enum Source {
    Config(Arc<ServerConfig>),
    Files { cert: PathBuf, key: PathBuf },
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::Config(_) => f.write_str("ServerTls(rustls::ServerConfig)"),
            Source::Files { cert, key } => f
                .debug_struct("ServerTls")
                .field("cert", cert)
                .field("key", key)
                .finish(),
        }
    }
}

impl ServerTls {
    /// Takes a certificate chain (`cert`, PEM, the leaf first) and its private key (`key`, PEM),
    /// read and checked when the server is built.
    pub fn pem_files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self(Source::Files {
            cert: cert.into(),
            key: key.into(),
        })
    }

    /// Takes a rustls configuration of your own (client certificates, a certificate resolver,
    /// another crypto provider...).
    pub fn config(config: Arc<ServerConfig>) -> Self {
        Self(Source::Config(config))
    }

    /// Reads and checks the configuration: what a server's `build` calls.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] with key `tls`: a file that cannot be read, holds no certificate or no
    /// key, or a key that rustls refuses or that does not match the certificate.
    pub(crate) fn acceptor(&self, handshake_timeout: Duration) -> Result<Acceptor, ConfigError> {
        let mut config = match &self.0 {
            Source::Config(config) => Arc::clone(config),
            Source::Files { cert, key } => Arc::new(from_files(cert, key)?),
        };
        if config.alpn_protocols.is_empty() {
            Arc::make_mut(&mut config).alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        }
        Ok(Acceptor {
            acceptor: TlsAcceptor::from(config),
            handshake_timeout,
        })
    }
}

fn refused(reason: String) -> ConfigError {
    ConfigError::new("tls", reason)
}

fn from_files(cert: &Path, key: &Path) -> Result<ServerConfig, ConfigError> {
    let chain = read(cert)?;
    let certs = CertificateDer::pem_slice_iter(&chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| refused(format!("{}: {err}", cert.display())))?;
    if certs.is_empty() {
        return Err(refused(format!(
            "{}: no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it",
            cert.display()
        )));
    }
    let pem = read(key)?;
    let key_der = PrivateKeyDer::from_pem_slice(&pem).map_err(|err| {
        refused(format!(
            "{}: no PEM private key in it (PKCS#8, SEC1 or PKCS#1): {err}",
            key.display()
        ))
    })?;
    ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|err| refused(err.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|err| refused(format!("{} and {}: {err}", cert.display(), key.display())))
}

fn read(path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|err| refused(format!("cannot read {}: {err}", path.display())))
}

/// Holds the checked TLS configuration a server runs with.
#[derive(Clone)]
pub(crate) struct Acceptor {
    acceptor: TlsAcceptor,
    handshake_timeout: Duration,
}

impl fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acceptor")
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl Acceptor {
    /// Runs the handshake on an accepted connection, within the handshake timeout; `None` (after
    /// a DEBUG line) when it fails: plain HTTP sent to the TLS port, a client that distrusts the
    /// certificate, a port scanner. The connection is then dropped; the server goes on.
    pub(crate) async fn accept<T: Io>(&self, io: T) -> Option<TlsStream<T>> {
        match tokio::time::timeout(self.handshake_timeout, self.acceptor.accept(io)).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(limit = ?self.handshake_timeout, "TLS handshake timed out");
                None
            }
        }
    }
}
