//! Dials a WebSocket server: one connection, from the TCP connection to the opening handshake,
//! under the connect timeout; what `connect` does once, and a reconnecting client each time.

use std::time::Duration;

use ::http::{HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use crate::context::trace_headers;
use crate::dispatch::{Context, Methods, TraceContext};
use crate::error::ClientError;
use crate::peer::Peer;
use crate::transport::Transport;
use crate::ws::connection::{self, Settings};

/// Names the error of a failed connect.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Holds what connecting to one server needs, checked: its address, the upgrade request's
/// headers, the connection's settings and the handlers it serves.
#[derive(Clone)]
pub(super) struct Dialer {
    url: String,
    host: String,
    port: u16,
    headers: Vec<(HeaderName, HeaderValue)>,
    settings: Settings,
    methods: Methods,
    connect_timeout: Duration,
    /// The TLS configuration of a `wss://` URL.
    #[cfg(feature = "tls")]
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl Dialer {
    /// Checks `url` and `headers`; `tls` is asked for its configuration only for a `wss://` URL.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] for an invalid URL or header, a `wss://` URL without the `tls`
    /// feature, or a TLS configuration that cannot be built.
    pub(super) fn new(
        url: String,
        headers: &[(String, String)],
        settings: Settings,
        methods: Methods,
        connect_timeout: Duration,
        #[cfg(feature = "tls")] tls: &crate::tls::ClientTls,
    ) -> Result<Self, ClientError> {
        let transport = ClientError::Transport;
        let request = url
            .as_str()
            .into_client_request()
            .map_err(|err| transport(Box::new(err)))?;
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|err| transport(Box::new(err)))?;
                let value = HeaderValue::from_str(value).map_err(|err| transport(Box::new(err)))?;
                Ok((name, value))
            })
            .collect::<Result<Vec<_>, ClientError>>()?;
        let uri = request.uri();
        let secure = uri.scheme_str() == Some("wss");
        // `[::1]` in a URL is `::1` to a socket.
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
        // Checked before connecting: a bad CA file fails at once, not after a connect.
        #[cfg(feature = "tls")]
        let tls = if secure {
            Some(
                tls.client_config(&[b"http/1.1"])
                    .map_err(|err| transport(Box::new(err)))?,
            )
        } else {
            None
        };
        #[cfg(not(feature = "tls"))]
        if secure {
            return Err(transport(
                format!("`{url}` needs the `tls` feature of jrpc-runtime").into(),
            ));
        }
        Ok(Self {
            url,
            host,
            port,
            headers,
            settings,
            methods,
            connect_timeout,
            #[cfg(feature = "tls")]
            tls,
        })
    }

    /// Connects, and starts serving the connection: its pump in a task of its own. The upgrade
    /// request carries `trace`'s `traceparent` and `tracestate` when there is one.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when the connection or its TLS handshake fails, it all takes
    /// longer than the connect timeout, or the server refuses the upgrade.
    pub(super) async fn dial(&self, trace: Option<TraceContext>) -> Result<Peer, ClientError> {
        let transport = ClientError::Transport;
        // A new request each time: its `Sec-WebSocket-Key` is a nonce of one handshake.
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|err| transport(Box::new(err)))?;
        for (name, value) in &self.headers {
            request.headers_mut().append(name, value.clone());
        }
        if let Some(trace) = trace {
            trace_headers(request.headers_mut(), &trace);
        }
        let (host, port) = (self.host.as_str(), self.port);
        let settings = &self.settings;
        let connecting = async move {
            let tcp = TcpStream::connect((host, port)).await?;
            // Answers are small and written whole: send them without waiting for more.
            let _ = tcp.set_nodelay(true);
            #[cfg(feature = "tls")]
            if let Some(config) = &self.tls {
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())?;
                let target = format!("{host}:{port}");
                let stream = tokio_rustls::TlsConnector::from(std::sync::Arc::clone(config))
                    .connect(name, tcp)
                    .await
                    .map_err(|err| -> BoxError {
                        match crate::tls::failure(&target, &err) {
                            Some(failed) => Box::new(failed),
                            None => Box::new(err),
                        }
                    })?;
                let (ws, _response) =
                    tokio_tungstenite::client_async_with_config(request, stream, Some(settings.ws))
                        .await?;
                return Ok::<_, BoxError>(start(ws, self.methods.clone(), settings));
            }
            let (ws, _response) =
                tokio_tungstenite::client_async_with_config(request, tcp, Some(settings.ws))
                    .await?;
            Ok::<_, BoxError>(start(ws, self.methods.clone(), settings))
        };
        tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| {
                let why = format!(
                    "connecting to {} took longer than {:?}",
                    self.url, self.connect_timeout
                );
                transport(Box::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    why,
                )))
            })?
            .map_err(transport)
    }

    /// Returns the URL it connects to.
    pub(super) fn url(&self) -> &str {
        &self.url
    }
}

/// Serves a client's socket: the pump in a task of its own, and the handle.
fn start<S>(ws: WebSocketStream<S>, methods: Methods, settings: &Settings) -> Peer
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (peer, pump) = connection::start(
        ws,
        methods,
        Context::new(Transport::WebSocket),
        settings,
        Box::pin(std::future::pending()),
        Box::pin(std::future::pending()),
        None,
        (),
    );
    tokio::spawn(pump);
    peer
}
