//! Builds a [`WsClient`]: its settings, checked when it connects.

use std::time::Duration;

use tokio::sync::watch;

use super::WsClient;
use super::dial::Dialer;
use super::reconnect::{Reconnect, Supervisor};
use crate::dispatch::{Methods, TraceContext};
use crate::error::ClientError;
#[cfg(feature = "tls")]
use crate::tls::ClientTls;
use crate::ws::settings::WsSettings;

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
    reconnect: Option<Reconnect>,
    #[cfg(feature = "tls")]
    tls: ClientTls,
}

impl WsClientBuilder {
    pub(super) fn new(url: String) -> Self {
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
            reconnect: None,
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
    /// `traceparent` and `tracestate` instead of any set here (a reconnect, made by the client
    /// itself, carries none).
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

    /// Sets whether and how the client connects again when its connection closes (default
    /// `None`: it does not, and closes with its connection).
    ///
    /// With it, the client dials the same URL, with the same headers and settings, backing off
    /// as [`Reconnect`] says, and serves its [`methods`](Self::methods) on each new connection;
    /// the first `connect` is not retried. Subscriptions made through it
    /// ([`Subscriber::subscribe`](crate::peer::Subscriber::subscribe), and so a generated stub's) are
    /// subscribed again on each new connection, on the same stream (see
    /// [`Subscription`](crate::peer::Subscription)). It is the client's choice, not each
    /// subscription's: the generated stubs' subscribe methods have no place for one. A
    /// subscription that must not outlive its connection (its reader would rather fetch what it
    /// missed than read on across a gap) is made on [`WsClient::peer`]'s handle, and ends
    /// [`Closed`](crate::peer::Ended::Closed) with that connection.
    ///
    /// A call made while the client reconnects waits for the new connection, within its call
    /// timeout (the wait counts in it), as a call through alloy's or ethers' reconnecting
    /// WebSocket does: a short outage costs a caller some latency, not an error to handle. A call
    /// already sent when the connection closed fails with [`ClientError::Closed`] and is not sent
    /// again: the client cannot know whether the server ran it, and a call that is not
    /// idempotent must not run twice. Once the client gives up, every call fails with
    /// [`ClientError::Closed`] at once.
    pub fn reconnect(mut self, reconnect: Option<Reconnect>) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// Connects and starts serving the connection.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when a setting is out of range (a
    /// [`ConfigError`](crate::error::ConfigError), `tls` and [`reconnect`](Self::reconnect)'s
    /// included), a header is invalid, the URL is invalid (or `wss://` without the `tls`
    /// feature), the connection or its TLS handshake fails, it all takes longer than the connect
    /// timeout, or the server refuses the upgrade.
    pub async fn connect(self) -> Result<WsClient, ClientError> {
        let transport = ClientError::Transport;
        let settings = self
            .settings
            .check_client()
            .map_err(|err| transport(Box::new(err)))?;
        if let Some(reconnect) = &self.reconnect {
            reconnect.check().map_err(|err| transport(Box::new(err)))?;
        }
        let dialer = Dialer::new(
            self.url,
            &self.headers,
            settings,
            self.methods,
            self.connect_timeout,
            #[cfg(feature = "tls")]
            &self.tls,
        )?;
        // A connection made while a traced request is served goes on with its trace.
        let peer = dialer.dial(TraceContext::outgoing()).await?;
        let Some(reconnect) = self.reconnect else {
            return Ok(WsClient::one(peer));
        };
        let call_timeout = peer.call_timeout();
        let (link, link_rx) = watch::channel(Some(peer));
        let (reconnects, reconnects_rx) = watch::channel(0);
        let subscriptions = std::sync::Arc::default();
        let client = WsClient::reconnecting(link_rx, reconnects_rx, &subscriptions, call_timeout);
        tokio::spawn(
            Supervisor {
                dialer,
                reconnect,
                link,
                reconnects,
                subscriptions,
            }
            .run(),
        );
        Ok(client)
    }
}
