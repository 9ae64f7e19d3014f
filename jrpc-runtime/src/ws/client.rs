//! The WebSocket client: a [`Peer`] over a client socket.

use std::time::Duration;

use ::http::{HeaderName, HeaderValue};
use serde_json::value::RawValue;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::connection;
use super::settings::WsSettings;
use crate::{Caller, ClientError, Context, Methods, Peer, Transport};

/// A JSON-RPC client over WebSocket; both sides call.
///
/// Calls go out with [`Caller::call`] (or any generated stub: the client is a [`Caller`]);
/// what the server sends, its notifications and its calls, is served by the [`Methods`] given at
/// connect time. Cloning is cheap: clones share the connection, which closes (1000) when the
/// last clone drops.
///
/// Only `ws://` URLs: this crate builds tokio-tungstenite without TLS.
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

    /// A builder for a connection to `url` (`ws://host:port/path`).
    pub fn builder(url: impl Into<String>) -> WsClientBuilder {
        WsClientBuilder::new(url.into())
    }

    /// The connection's [`Peer`] handle.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Whether the connection has closed.
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
}

/// Settings of a [`WsClient`] connection.
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
        }
    }

    /// The handlers of what the server sends (notifications and calls); none by default.
    pub fn methods(mut self, methods: Methods) -> Self {
        self.methods = methods;
        self
    }

    /// Adds a header to the upgrade request (authorization, cookies...).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long a call waits for its answer (default 60 s); `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.settings = self.settings.call_timeout(limit);
        self
    }

    /// The largest message either way (default 4 MiB).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.settings = self.settings.max_message_size(bytes);
        self
    }

    /// The most bytes the connection holds for the server (default 16 MiB; see
    /// [`WsSettings::max_buffered`]); at least twice `max_message_size`. The client's own calls
    /// wait for room rather than close it.
    pub fn max_buffered(mut self, bytes: usize) -> Self {
        self.settings = self.settings.max_buffered(bytes);
        self
    }

    /// How many calls from the server may run at once (default 64).
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.settings = self.settings.max_in_flight(calls);
        self
    }

    /// How often to ping the server (default `None`: the server pings).
    pub fn ping_interval(mut self, every: Option<Duration>) -> Self {
        self.settings = self.settings.ping_interval(every);
        self
    }

    /// Closes the connection when the server sends nothing for this long (default `None`).
    pub fn idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.settings = self.settings.idle_timeout(limit);
        self
    }

    /// How long connecting may take, the TCP connection and the opening handshake together
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
    /// [`ConfigError`](crate::ConfigError)), a header is invalid, the URL is invalid, the
    /// connection fails or times out, or the server refuses the upgrade.
    pub async fn connect(self) -> Result<WsClient, ClientError> {
        let transport = |err: Box<dyn std::error::Error + Send + Sync>| ClientError::Transport(err);
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
        let connecting =
            tokio_tungstenite::connect_async_with_config(request, Some(settings.ws), true);
        let (ws, _response) = tokio::time::timeout(self.connect_timeout, connecting)
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
            .map_err(|err| transport(Box::new(err)))?;
        let (peer, pump) = connection::start(
            ws,
            self.methods,
            Context::new(Transport::WebSocket),
            &settings,
            Box::pin(std::future::pending()),
            Box::pin(std::future::pending()),
        );
        tokio::spawn(pump);
        Ok(WsClient { peer })
    }
}
