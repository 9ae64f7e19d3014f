//! Provides the WebSocket client: a [`Peer`] over a client socket.

use std::time::Duration;

use ::http::{HeaderName, HeaderValue};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::connection::{self, Settings};
use super::settings::WsSettings;
use crate::caller::Caller;
use crate::context::trace_headers;
use crate::dispatch::{Context, Methods, TraceContext};
use crate::error::ClientError;
use crate::peer::Peer;
#[cfg(feature = "tls")]
use crate::tls::ClientTls;
use crate::transport::Transport;

/// Names the error of a failed connect.
#[cfg(feature = "tls")]
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Speaks JSON-RPC over WebSocket as a client; both sides call.
///
/// Calls go out with [`Caller::call`] (or any generated stub: the client is a [`Caller`]);
/// what the server sends, its notifications and its calls, is served by the [`Methods`] given at
/// connect time. Cloning is cheap: clones share the connection, which closes (1000) when the
/// last clone drops.
///
/// `ws://` URLs, and `wss://` with the `tls` feature (trust: the system's roots plus what
/// [`WsClientBuilder::tls`] adds; a certificate it does not trust fails `connect` at once,
/// saying so).
///
/// ```no_run
/// use jrpc_runtime::ws::WsClient;
/// use jrpc_runtime::{Caller as _, Methods, RpcError};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut handlers = Methods::new();
/// handlers.register_notification("tick", &["n"], |(n,): (u64,), _| async move { println!("tick {n}") })?;
/// let client = WsClient::connect("ws://127.0.0.1:9000/ws", handlers).await?;
/// let sum: i64 = client.call("add", [2, 3]).await?;
/// assert_eq!(sum, 5);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WsClient {
    peer: Peer,
}

impl WsClient {
    /// Connects to `url` with the default settings; `methods` serves what the server sends.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when the URL is invalid, the connection fails or takes longer
    /// than the default connect timeout, or the server refuses the upgrade (the error carries
    /// its HTTP response).
    pub async fn connect(url: &str, methods: Methods) -> Result<Self, ClientError> {
        Self::builder(url).methods(methods).connect().await
    }

    /// Returns a builder for a connection to `url` (`ws://host:port/path`).
    pub fn builder(url: impl Into<String>) -> WsClientBuilder {
        WsClientBuilder::new(url.into())
    }

    /// Returns the connection's [`Peer`] handle.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Returns whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }
}

impl Caller for WsClient {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.peer.call_raw(method, params).await
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.peer.notify_raw(method, params).await
    }

    async fn batch_raw(
        &self,
        calls: Vec<crate::caller::BatchCall>,
    ) -> Result<crate::caller::BatchResults, ClientError> {
        self.peer.batch_raw(calls).await
    }
}

impl crate::Subscriber for WsClient {
    fn subscribe<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: impl serde::Serialize,
        notification: &str,
        unsubscribe: &str,
    ) -> impl std::future::Future<Output = Result<crate::Subscription<T>, ClientError>> + Send {
        self.peer
            .subscribe(method, params, notification, unsubscribe)
    }
}

/// Holds the settings of a [`WsClient`] connection.
///
/// ```no_run
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::ws::WsClient;
///
/// # async fn run() -> Result<(), jrpc_runtime::ClientError> {
/// let client = WsClient::builder("ws://127.0.0.1:9000/ws")
///     .header("authorization", "Bearer 42")
///     .call_timeout(Some(Duration::from_secs(5)))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct WsClientBuilder {
    url: String,
    methods: Methods,
    headers: Vec<(String, String)>,
    settings: WsSettings,
    connect_timeout: Duration,
    #[cfg(feature = "tls")]
    tls: ClientTls,
}

impl WsClientBuilder {
    fn new(url: String) -> Self {
        Self {
            url,
            methods: Methods::new(),
            headers: Vec::new(),
            // A client pings only when asked, and never gives up on a quiet server by itself. It
            // is one connection, not one of thousands: its limits are a stream peer's.
            settings: WsSettings::new()
                .ping_interval(None)
                .idle_timeout(None)
                .max_message_size(crate::framing::DEFAULT_MAX_LEN)
                .max_buffered(4 * crate::framing::DEFAULT_MAX_LEN),
            connect_timeout: Duration::from_secs(10),
            #[cfg(feature = "tls")]
            tls: ClientTls::new(),
        }
    }

    /// Sets what a `wss://` URL's server is trusted by (default [`ClientTls::new`]: the system's
    /// roots).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = tls;
        self
    }

    /// Sets the handlers of what the server sends (notifications and calls); none by default.
    pub fn methods(mut self, methods: Methods) -> Self {
        self.methods = methods;
        self
    }

    /// Adds a header to the upgrade request (authorization, cookies...). A connection made while a
    /// traced request is served (see [`TraceContext::outgoing`]) carries that trace's
    /// `traceparent` and `tracestate` instead of any set here.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets how long a call waits for its answer (default 60 s); `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.settings = self.settings.call_timeout(limit);
        self
    }

    /// Sets the largest message either way (default 4 MiB).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.settings = self.settings.max_message_size(bytes);
        self
    }

    /// Sets the most bytes the connection holds for the server (default 16 MiB; see
    /// [`WsSettings::max_buffered`]); at least twice `max_message_size`. The client's own calls
    /// wait for room rather than close it.
    pub fn max_buffered(mut self, bytes: usize) -> Self {
        self.settings = self.settings.max_buffered(bytes);
        self
    }

    /// Sets which cancellation notices the connection sends and honours (default
    /// [`Cancellation::Off`](crate::peer::Cancellation::Off)): with one on, a call given up (its
    /// future dropped, or timed out) tells the server, which drops its handler.
    pub fn cancellation(mut self, cancellation: crate::peer::Cancellation) -> Self {
        self.settings = self.settings.cancellation(cancellation);
        self
    }

    /// Sets how many calls from the server may run at once (default 64).
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.settings = self.settings.max_in_flight(calls);
        self
    }

    /// Sets how often to ping the server (default `None`: the server pings).
    pub fn ping_interval(mut self, every: Option<Duration>) -> Self {
        self.settings = self.settings.ping_interval(every);
        self
    }

    /// Closes the connection when the server sends nothing for this long (default `None`).
    pub fn idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.settings = self.settings.idle_timeout(limit);
        self
    }

    /// Sets how long connecting may take, the TCP connection and the opening handshake together
    /// (default 10 s); past it `connect` fails with [`ClientError::Transport`] holding an
    /// [`io::ErrorKind::TimedOut`](std::io::ErrorKind::TimedOut) error.
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Connects and starts serving the connection.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when a setting is out of range (a
    /// [`ConfigError`](crate::error::ConfigError), `tls` included), a header is invalid, the URL is
    /// invalid (or `wss://` without the `tls` feature), the connection or its TLS handshake
    /// fails, it all takes longer than the connect timeout, or the server refuses the upgrade.
    pub async fn connect(self) -> Result<WsClient, ClientError> {
        let transport = ClientError::Transport;
        let settings = self
            .settings
            .check_client()
            .map_err(|err| transport(Box::new(err)))?;
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|err| transport(Box::new(err)))?;
        for (name, value) in &self.headers {
            let name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|err| transport(Box::new(err)))?;
            let value = HeaderValue::from_str(value).map_err(|err| transport(Box::new(err)))?;
            request.headers_mut().append(name, value);
        }
        // A connection made while a traced request is served goes on with its trace.
        if let Some(trace) = TraceContext::outgoing() {
            trace_headers(request.headers_mut(), &trace);
        }
        let uri = request.uri().clone();
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
                self.tls
                    .client_config(&[b"http/1.1"])
                    .map_err(|err| transport(Box::new(err)))?,
            )
        } else {
            None
        };
        #[cfg(not(feature = "tls"))]
        if secure {
            return Err(transport(
                format!("`{}` needs the `tls` feature of jrpc-runtime", self.url).into(),
            ));
        }
        let methods = self.methods;
        let connecting = async move {
            let tcp = TcpStream::connect((host.as_str(), port)).await?;
            // Answers are small and written whole: send them without waiting for more.
            let _ = tcp.set_nodelay(true);
            #[cfg(feature = "tls")]
            if let Some(config) = tls {
                let name = rustls::pki_types::ServerName::try_from(host.clone())?;
                let target = format!("{host}:{port}");
                let stream = tokio_rustls::TlsConnector::from(config)
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
                return Ok::<_, BoxError>(start(ws, methods, &settings));
            }
            let (ws, _response) =
                tokio_tungstenite::client_async_with_config(request, tcp, Some(settings.ws))
                    .await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(start(ws, methods, &settings))
        };
        let peer = tokio::time::timeout(self.connect_timeout, connecting)
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
            .map_err(transport)?;
        Ok(WsClient { peer })
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
    );
    tokio::spawn(pump);
    peer
}
