//! Says what clients trust for `https://` and `wss://` ([`ClientTls`]), and how a failed handshake
//! is told.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{CertificateError, ClientConfig, RootCertStore};

use crate::error::ConfigError;

/// Says what a client trusts for `https://` and `wss://` URLs: the system's root certificates (by
/// default), plus CA certificates of your own; or a [`rustls::ClientConfig`] of your own.
///
/// ```no_run
/// use jrpc_runtime::{Client, ClientTls};
///
/// # async fn run() -> Result<(), jrpc_runtime::ClientError> {
/// // A server whose certificate a private CA signed (or a self-signed one: its own CA).
/// let client = Client::builder("https://10.0.0.7:8443/rpc")
///     .tls(ClientTls::new().ca_file("ca.pem"))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
///
/// Decisions:
///
/// - The system's roots are the platform's store (`rustls-native-certs`: the CA bundle of the
///   OS, `SSL_CERT_FILE` and `SSL_CERT_DIR` included), read once per process: they follow the
///   OS's updates, where a bundle compiled into the binary would go stale with it.
/// - Files are read, and every setting checked, when the client is built: a missing file or one
///   with no certificate is a [`ConfigError`] with key `tls`, not a failure of the first call.
/// - The crypto provider is *ring*, chosen explicitly (see
///   [`ServerTls`](crate::server::ServerTls)); ALPN offers `h2` and `http/1.1` over HTTP, and
///   `http/1.1` for WebSocket (its upgrade is an HTTP/1.1 exchange).
/// - A certificate the client does not trust (unknown issuer, another name, expired) fails the
///   connection at once with [`ClientError::Transport`](crate::error::ClientError::Transport), whose
///   message names the problem and whose source is the [`rustls::Error`].
#[derive(Clone)]
pub struct ClientTls {
    system_roots: bool,
    cas: Vec<Ca>,
    config: Option<Arc<ClientConfig>>,
}

#[derive(Clone)]
enum Ca {
    File(PathBuf),
    Pem(Vec<u8>),
}

impl Default for ClientTls {
    /// Returns the system's roots, nothing added.
    fn default() -> Self {
        Self {
            system_roots: true,
            cas: Vec::new(),
            config: None,
        }
    }
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("system_roots", &self.system_roots)
            .field("cas", &self.cas.len())
            .field("config", &self.config.is_some())
            .finish()
    }
}

impl ClientTls {
    /// Returns trust in the system's roots, nothing added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds to the trusted CAs the certificates in the PEM file at `path` (read when the client is
    /// built).
    #[must_use]
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.cas.push(Ca::File(path.into()));
        self
    }

    /// Adds to the trusted CAs the certificates of `pem` (PEM text).
    #[must_use]
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.cas.push(Ca::Pem(pem.into()));
        self
    }

    /// Sets whether the system's roots are trusted (default `true`); with `false`, only the CAs
    /// added are.
    #[must_use]
    pub fn system_roots(mut self, trusted: bool) -> Self {
        self.system_roots = trusted;
        self
    }

    /// Uses a rustls configuration of your own (client certificates, pinning, another root store);
    /// the settings above are then not used. Its ALPN protocols are replaced by the client's.
    pub fn config(config: Arc<ClientConfig>) -> Self {
        Self {
            config: Some(config),
            ..Self::default()
        }
    }

    /// Returns the rustls configuration, offering `alpn`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] with key `tls`: a CA file that cannot be read or holds no certificate, a
    /// certificate rustls refuses, or no root at all to trust.
    pub(crate) fn client_config(&self, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, ConfigError> {
        let refused = |reason: String| ConfigError::new("tls", reason);
        let mut config = match &self.config {
            Some(config) => Arc::clone(config),
            None => {
                let mut roots = RootCertStore::empty();
                if self.system_roots {
                    roots.roots.extend(system_roots().roots.iter().cloned());
                }
                for ca in &self.cas {
                    let (what, pem) = match ca {
                        Ca::File(path) => (
                            path.display().to_string(),
                            std::fs::read(path).map_err(|err| {
                                refused(format!("cannot read {}: {err}", path.display()))
                            })?,
                        ),
                        Ca::Pem(pem) => ("the CA PEM".to_owned(), pem.clone()),
                    };
                    let certs = CertificateDer::pem_slice_iter(&pem)
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|err| refused(format!("{what}: {err}")))?;
                    if certs.is_empty() {
                        return Err(refused(format!("{what}: no PEM certificate in it")));
                    }
                    for cert in certs {
                        roots
                            .add(cert)
                            .map_err(|err| refused(format!("{what}: {err}")))?;
                    }
                }
                if roots.is_empty() {
                    return Err(refused(
                        "no root certificate to trust: the system has none (install the CA \
                         bundle, `ca-certificates`) and none was added (`ClientTls::ca_file`)"
                            .to_owned(),
                    ));
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let config = ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|err| refused(err.to_string()))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Arc::new(config)
            }
        };
        Arc::make_mut(&mut config).alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }
}

/// Returns a configuration that never verifies anything: what a client that may only see `http://`
/// URLs holds for its connector.
///
/// # Errors
///
/// [`ConfigError`] (key `tls`) if the provider refused its own default protocol versions.
pub(crate) fn unused_config() -> Result<Arc<ClientConfig>, ConfigError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| ConfigError::new("tls", err.to_string()))?
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Returns the system's roots, read once per process; certificates that do not parse are skipped.
fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for err in &found.errors {
            tracing::debug!(error = %err, "a system root store could not be read");
        }
        let mut roots = RootCertStore::empty();
        let (added, skipped) = roots.add_parsable_certificates(found.certs);
        tracing::debug!(added, skipped, "system root certificates");
        roots
    })
}

/// Reports a TLS handshake that failed: what went wrong, said for a person, with the rustls error
/// as the source.
#[derive(Debug)]
pub(crate) struct TlsFailed {
    target: String,
    error: rustls::Error,
}

impl fmt::Display for TlsFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TLS handshake with {} failed: {}",
            self.target, self.error
        )?;
        let hint = match &self.error {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                "the server's certificate is not signed by a trusted CA (self-signed? trust its \
                 CA, e.g. `ClientTls::ca_file`)"
            }
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => "the server's certificate is for another name than the URL's host",
            rustls::Error::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. },
            ) => "the server's certificate has expired",
            _ => return Ok(()),
        };
        write!(f, ": {hint}")
    }
}

impl Error for TlsFailed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.error)
    }
}

/// Finds the TLS failure in `err`'s chain, if any, as a [`TlsFailed`] for `target`. rustls' error
/// travels inside an `io::Error` (sometimes one inside another), whose `source` skips what it
/// wraps, so the walk looks inside each `io::Error` before following `source`.
pub(crate) fn failure(target: &str, err: &(dyn Error + 'static)) -> Option<TlsFailed> {
    let mut cause = Some(err);
    while let Some(current) = cause {
        if let Some(error) = current.downcast_ref::<rustls::Error>() {
            return Some(TlsFailed {
                target: target.to_owned(),
                error: error.clone(),
            });
        }
        cause = match current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn Error + 'static)),
            None => current.source(),
        };
    }
    None
}
