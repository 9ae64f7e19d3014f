//! Builds one client for any URL: the scheme picks the transport.

use serde_json::value::RawValue;

use crate::caller::{BatchCall, Caller};
#[cfg(unix)]
use crate::dispatch::Context;
use crate::dispatch::Methods;
use crate::error::ClientError;
#[cfg(feature = "http")]
use crate::http::HttpClient;
use crate::peer::Framing;
use crate::peer::{Lifetime, Peer, PeerConfig};
#[cfg(feature = "tls")]
use crate::tls::ClientTls;
use crate::transport::Transport;
#[cfg(feature = "ws")]
use crate::ws::WsClient;

/// Calls a server over the transport the URL's scheme picks: HTTP, WebSocket or a Unix socket; a
/// [`Caller`], so every generated stub runs over it. Each kind is there with what it needs (the
/// `http` and `ws` cargo features, `tls` for `https://` and `wss://`, a Unix platform for `unix:`).
///
/// | URL | transport |
/// | --- | --- |
/// | `http://host:port/path`, `https://...` | [`HttpClient`](crate::http::HttpClient) |
/// | `ws://host:port/path`, `wss://...` | [`WsClient`](crate::ws::WsClient): the server's calls and notifications are served by [`ClientBuilder::methods`] |
/// | `unix:/path/to.sock` | a [`Peer`](crate::peer::Peer) on the socket, newline-delimited (or [`ClientBuilder::framing`]), as [`SocketServer`](crate::server::SocketServer) serves |
///
/// ```no_run
/// use jrpc_runtime::{Caller as _, Client};
///
/// # async fn run() -> Result<(), jrpc_runtime::ClientError> {
/// let client = Client::connect("ws://127.0.0.1:8080/ws").await?;
/// let sum: i64 = client.call("add", [2, 3]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Client {
    /// `http://` and `https://` URLs.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    Http(HttpClient),
    /// `ws://` and `wss://` URLs.
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    Ws(WsClient),
    /// `unix:PATH` URLs: a two-way peer on the socket.
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    Unix(Peer),
}

impl Client {
    /// Connects to `url` with default settings and no handlers of its own (a server's
    /// notifications and calls on a two-way transport are answered as unknown methods: use
    /// [`builder`](Self::builder) with [`methods`](ClientBuilder::methods) to serve them).
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] for a URL that cannot be used (its scheme's feature left out
    /// included), a setting refused, or a connection that fails.
    pub async fn connect(url: &str) -> Result<Self, ClientError> {
        Self::builder(url).connect().await
    }

    /// Returns a builder for a client of `url`.
    pub fn builder(url: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            url: url.into(),
            methods: Methods::new(),
            framing: Framing::Lines,
            #[cfg(feature = "tls")]
            tls: ClientTls::new(),
        }
    }
}

/// Holds the settings of a [`Client`], whatever its transport turns out to be.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct ClientBuilder {
    url: String,
    methods: Methods,
    framing: Framing,
    #[cfg(feature = "tls")]
    tls: ClientTls,
}

impl ClientBuilder {
    /// Sets the handlers of what the server sends on a two-way transport (WebSocket, Unix socket):
    /// its notifications and calls; none by default. Unused over HTTP.
    pub fn methods(mut self, methods: Methods) -> Self {
        self.methods = methods;
        self
    }

    /// Sets how messages are framed on a Unix socket (default [`Framing::Lines`]).
    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Sets what `https://` and `wss://` servers are trusted by (default: the system's roots).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = tls;
        self
    }

    /// Connects (or, for HTTP, builds the pool: the first call connects).
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] for a URL that cannot be used (its scheme's feature left out
    /// included), a setting refused, or a connection that fails.
    #[cfg_attr(
        not(all(feature = "http", feature = "ws", unix)),
        allow(unused_mut, unused_variables)
    )]
    pub async fn connect(self) -> Result<Client, ClientError> {
        let url = self.url.as_str();
        if let Some(path) = url.strip_prefix("unix:") {
            #[cfg(unix)]
            {
                let stream = tokio::net::UnixStream::connect(path).await.map_err(|err| {
                    ClientError::Transport(format!("cannot connect to {url}: {err}").into())
                })?;
                let config = PeerConfig::default()
                    .with_framing(self.framing)
                    .with_context(Context::new(Transport::Unix))
                    .with_lifetime(Lifetime::UntilUnused);
                let (peer, driver) = Peer::connect(stream, self.methods, config);
                tokio::spawn(async move {
                    if let Err(err) = driver.await {
                        tracing::debug!(%err, "Unix socket connection ended");
                    }
                });
                return Ok(Client::Unix(peer));
            }
            #[cfg(not(unix))]
            return Err(ClientError::Transport(
                format!("`{url}`: Unix sockets need a Unix platform ({path})").into(),
            ));
        }
        if url.starts_with("ws://") || url.starts_with("wss://") {
            #[cfg(feature = "ws")]
            {
                let builder = WsClient::builder(url).methods(self.methods);
                #[cfg(feature = "tls")]
                let builder = builder.tls(self.tls);
                return builder.connect().await.map(Client::Ws);
            }
            #[cfg(not(feature = "ws"))]
            return Err(unsupported(url, "ws"));
        }
        #[cfg(feature = "http")]
        {
            let builder = HttpClient::builder(url);
            #[cfg(feature = "tls")]
            let builder = builder.tls(self.tls);
            builder
                .build()
                .map(Client::Http)
                .map_err(|err| ClientError::Transport(Box::new(err)))
        }
        #[cfg(not(feature = "http"))]
        Err(unsupported(url, "http"))
    }
}

/// Returns the error for a URL whose transport this build left out.
#[cfg(not(all(feature = "http", feature = "ws")))]
fn unsupported(url: &str, feature: &str) -> ClientError {
    ClientError::Transport(format!("`{url}` needs the `{feature}` feature").into())
}

impl Caller for Client {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        match self {
            #[cfg(feature = "http")]
            Self::Http(client) => client.call_raw(method, params).await,
            #[cfg(feature = "ws")]
            Self::Ws(client) => client.call_raw(method, params).await,
            #[cfg(unix)]
            Self::Unix(peer) => peer.call_raw(method, params).await,
        }
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        match self {
            #[cfg(feature = "http")]
            Self::Http(client) => client.notify_raw(method, params).await,
            #[cfg(feature = "ws")]
            Self::Ws(client) => client.notify_raw(method, params).await,
            #[cfg(unix)]
            Self::Unix(peer) => peer.notify_raw(method, params).await,
        }
    }

    async fn batch_raw(
        &self,
        calls: Vec<BatchCall>,
    ) -> Result<Vec<Result<Box<RawValue>, ClientError>>, ClientError> {
        match self {
            #[cfg(feature = "http")]
            Self::Http(client) => client.batch_raw(calls).await,
            #[cfg(feature = "ws")]
            Self::Ws(client) => client.batch_raw(calls).await,
            #[cfg(unix)]
            Self::Unix(peer) => peer.batch_raw(calls).await,
        }
    }
}
