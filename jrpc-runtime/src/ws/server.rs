//! The WebSocket server: its builder, its accept loop, the handshake on a raw socket or over
//! hyper's upgrade, and one [`Peer`](crate::peer::Peer) per connection.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::http::{HeaderMap, Request, Response};
use futures_util::FutureExt as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request as HandshakeRequest, Response as HandshakeResponse,
};

use super::connection::{self, Settings, Signal};
use super::settings::WsSettings;
use super::upgrade;
use crate::dispatch::{Context, Methods};
use crate::error::ConfigError;
use crate::error::check;
use crate::peer::budget::WriteDeadline;
use crate::peer::limits::Limits;
use crate::peer::shared_budget::ServerBudget;
use crate::server::budget::default_budget;
use crate::server::reply::{self, Body};
use crate::server::{ConnectionCap, Io, Shutdown, ShutdownHandle, Topics, Tracked, serve_each};
use crate::transport::Transport;

/// How long a client may take over the opening handshake on a raw socket
/// ([`WsServer::serve`]); the same bound as HTTP's header read timeout.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// A JSON-RPC server over WebSocket: each connection is a [`Peer`](crate::peer::Peer), so handlers
/// can push to their client and call it; topics reach groups of connections.
///
/// Four ways to serve it:
///
/// - [`serve`](Self::serve): its own accept loop; every socket must open with a WebSocket
///   handshake (any path).
/// - [`serve_connection`](Self::serve_connection): one socket of an accept loop of your own.
/// - [`upgrade`](Self::upgrade), or [`upgrade_with`](Self::upgrade_with) with a context of your
///   own: a hyper (or axum) handler answers the upgrade request with it.
/// - `http::HttpServer` serves WebSocket on its `ws_path` itself, through
///   `upgrade_with` (see the `http` module docs, "WebSocket").
///
/// Cloning is cheap; clones are the same server.
///
/// ```no_run
/// use jrpc_runtime::ws::WsServer;
/// use jrpc_runtime::{Methods, RpcError};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut methods = Methods::new();
/// methods.register("add", &["a", "b"], |(a, b): (i64, i64), _| async move { Ok::<_, RpcError>(a + b) })?;
/// let server = WsServer::builder(methods).build()?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9000").await?;
/// # let stop_requested = std::future::pending::<()>();
/// let shutdown = server.shutdown_handle();
/// tokio::spawn(async move {
///     stop_requested.await; // Ctrl-C, SIGTERM...
///     shutdown.shutdown().await;
/// });
/// server.serve(listener).await;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WsServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    methods: Methods,
    settings: Settings,
    topics: Topics,
    shutdown: Arc<Shutdown>,
    cap: ConnectionCap,
}

/// Builds a [`WsServer`]: the connection settings ([`WsSettings`]), the drain budget, the
/// connection cap and the topics registry, checked by [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::ws::{WsServer, WsSettings};
///
/// let server = WsServer::builder(Methods::new())
///     .settings(
///         WsSettings::new()
///             .max_in_flight(16)
///             .max_message_size(256 * 1024)
///             .max_buffered(1024 * 1024)
///             .ping_interval(Some(Duration::from_secs(20)))
///             .idle_timeout(Some(Duration::from_secs(45))),
///     )
///     .max_connections(1000)
///     .build()
///     .expect("valid settings");
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct WsServerBuilder {
    methods: Methods,
    topics: Option<Topics>,
    settings: WsSettings,
    drain_timeout: Duration,
    max_connections: usize,
    shutdown: Option<ShutdownHandle>,
    /// The server's byte budget, in bytes (`None`: the default).
    server_budget: Option<usize>,
    /// The budget shared with another server (an HTTP server's, for its WebSocket path).
    shared_budget: Option<Arc<ServerBudget>>,
    /// Where the limits `settings` leaves unset come from: the defaults, or the HTTP server's
    /// on its WebSocket path.
    base: Limits,
}

impl WsServerBuilder {
    fn new(methods: Methods) -> Self {
        Self {
            methods,
            topics: None,
            settings: WsSettings::default(),
            drain_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            shutdown: None,
            base: Limits::DEFAULT,
            server_budget: None,
            shared_budget: None,
        }
    }

    /// The bytes the server may hold for all its clients together (default: a quarter of the
    /// machine's memory, at least 64 MiB and at most 1 GiB): request bodies being read, and
    /// answers and pushes not yet written, on every connection. When it is spent, new bodies
    /// and messages wait (their sockets are not read) until clients take what waits for them or
    /// are cut at `write_timeout`; nothing is refused for it. Calls already running finish, so
    /// the server holds at most this plus their answers. See the [`server`](crate::server)
    /// module docs, "Memory".
    pub fn server_budget(mut self, bytes: usize) -> Self {
        self.server_budget = Some(bytes);
        self
    }

    /// Counts this server's connections in `budget`, another server's.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "the HTTP server's path uses it")
    )]
    pub(crate) fn budget_with(mut self, budget: Arc<ServerBudget>) -> Self {
        self.shared_budget = Some(budget);
        self
    }

    /// Takes the limits `settings` leaves unset from `base` (an HTTP server's, for its
    /// WebSocket path).
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "the HTTP server's path uses it")
    )]
    pub(crate) fn base_limits(mut self, base: Limits) -> Self {
        self.base = base;
        self
    }

    /// The settings of each connection (default: [`WsSettings::default`]).
    pub fn settings(mut self, settings: WsSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The registry that handlers subscribe to (see [`Topics`]); share one between the server
    /// and the code that publishes. Left unset, the server makes its own
    /// ([`WsServer::topics`]).
    pub fn topics(mut self, topics: Topics) -> Self {
        self.topics = Some(topics);
        self
    }

    /// How long a shutdown lets calls finish before it drops the connections left (default
    /// 30 s, the grace period most orchestrators give a process between `SIGTERM` and
    /// `SIGKILL`). Zero stops at once.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.drain_timeout = budget;
        self
    }

    /// How many connections [`serve`](WsServer::serve) takes at once (default 10 000); at the
    /// cap it waits for one to close before accepting another.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// Drains with another server: a shutdown through `handle` (or this server's own handle,
    /// which is then the same) stops both, on that server's drain budget, which replaces
    /// [`drain_timeout`](Self::drain_timeout).
    pub fn shutdown_with(mut self, handle: &ShutdownHandle) -> Self {
        self.shutdown = Some(handle.clone());
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range: a `max_connections` of
    /// zero or above what a semaphore holds, or a [`WsSettings`] value, named by its method, for
    /// the reasons given there.
    pub fn build(self) -> Result<WsServer, ConfigError> {
        check::permits("max_connections", self.max_connections)?;
        let shutdown = match &self.shutdown {
            Some(handle) => Arc::clone(handle.state()),
            None => Shutdown::new(self.drain_timeout),
        };
        let mut settings = self.settings.check(shutdown.budget(), self.base)?;
        let budget = match self.shared_budget {
            Some(budget) => budget,
            None => {
                let bytes = self.server_budget.unwrap_or_else(default_budget);
                check::at_least_one("server_budget", bytes)?;
                ServerBudget::new(bytes)
            }
        };
        settings.peer.server_budget = Some(budget);
        Ok(WsServer {
            inner: Arc::new(Inner {
                methods: self.methods,
                settings,
                topics: self.topics.unwrap_or_default(),
                shutdown,
                cap: ConnectionCap::new(self.max_connections),
            }),
        })
    }
}

impl WsServer {
    /// A builder serving `methods`, with every setting at its default.
    pub fn builder(methods: Methods) -> WsServerBuilder {
        WsServerBuilder::new(methods)
    }

    /// The registry handlers subscribe to; [`Topics::publish`] on it reaches them.
    pub fn topics(&self) -> &Topics {
        &self.inner.topics
    }

    /// A handle to shut the server down gracefully: reading stops on every connection, running
    /// calls finish and are answered, then each closes with 1001 (going away); past the drain
    /// budget the connections left are dropped. See [`ShutdownHandle::shutdown`].
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(&self.inner.shutdown))
    }

    /// Accepts connections on `listener` and serves each in its own task, up to
    /// `max_connections` at once, until a shutdown begins; then returns, while the open
    /// connections drain. Every connection must open with a WebSocket handshake, on any path. A
    /// failed accept never ends the loop.
    pub async fn serve(&self, listener: TcpListener) {
        serve_each(
            listener,
            &self.inner.cap,
            &self.inner.shutdown,
            "WebSocket",
            |stream, peer| self.serve_connection(stream, peer),
        )
        .await;
    }

    /// Serves one socket that opens with a WebSocket handshake (for an accept loop of your own:
    /// TLS, a Unix socket...). Handlers see `peer_addr` and the handshake's headers.
    pub fn serve_connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let this = self.clone();
        async move {
            let Some(counted) = this.inner.shutdown.admit_connection() else {
                return;
            };
            let headers: Arc<Mutex<HeaderMap>> = Arc::default();
            let callback = KeepHeaders(Arc::clone(&headers));
            let io = WriteDeadline::new(io, this.inner.settings.write_timeout);
            let handshake = tokio_tungstenite::accept_hdr_async_with_config(
                io,
                callback,
                Some(this.inner.settings.ws),
            );
            let ws = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                Ok(Ok(ws)) => ws,
                Ok(Err(err)) => return tracing::warn!(error = %err, "WebSocket handshake refused"),
                Err(_) => return tracing::warn!("WebSocket handshake timed out"),
            };
            let headers = headers
                .lock()
                .map(|mut headers| std::mem::take(&mut *headers))
                .unwrap_or_default();
            let mut ctx = Context::new(Transport::WebSocket).with_headers(headers);
            if let Some(addr) = peer_addr {
                ctx = ctx.with_peer_addr(addr);
            }
            this.run(ws, ctx, counted).await;
        }
    }

    /// Answers a WebSocket upgrade request (`GET` with `Upgrade: websocket`) from hyper or a
    /// framework on it (axum: a handler taking `Request`), and serves the connection in a task
    /// of its own once the upgrade completes. Handlers see the request's headers.
    ///
    /// The answer is `101 Switching Protocols`; a request that is not a valid upgrade gets
    /// `400` (`426` for a WebSocket version other than 13), and `503` once a shutdown has begun,
    /// each with a JSON-RPC error envelope.
    pub fn upgrade<B>(&self, req: Request<B>) -> Response<Body> {
        let ctx = Context::new(Transport::WebSocket).with_headers_copied(req.headers());
        self.upgrade_with(req, ctx, ())
    }

    /// [`upgrade`](Self::upgrade), with handlers' contexts built on `ctx` (the caller's peer
    /// address, headers, authenticated user...) and `guard` kept until the socket closes (a
    /// connection slot, a gauge). Its transport is taken as given: pass one on
    /// [`Transport::WebSocket`].
    pub fn upgrade_with<B, G>(&self, req: Request<B>, ctx: Context, guard: G) -> Response<Body>
    where
        G: Send + 'static,
    {
        // Counted from here, so that a shutdown waits for the upgrade to complete.
        let Some(counted) = self.inner.shutdown.admit_connection() else {
            return reply::unavailable();
        };
        let this = self.clone();
        let settings = &self.inner.settings;
        upgrade::accept(req, settings.ws, settings.write_timeout, move |ws| {
            this.run(ws, ctx, counted).map(move |()| drop(guard))
        })
    }

    /// Serves one WebSocket until it closes, with the server's topics in its handlers' context
    /// (the connection leaves them when its peer's loop ends).
    fn run<S>(
        &self,
        ws: WebSocketStream<S>,
        ctx: Context,
        counted: Tracked,
    ) -> impl Future<Output = ()> + Send + use<S>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shutdown = &self.inner.shutdown;
        let closing: Signal = Box::pin(shutdown.draining());
        let stop: Signal = Box::pin(shutdown.stopped());
        let ctx = ctx.with_extension(self.inner.topics.clone());
        let (peer, pump) = connection::start(
            ws,
            self.inner.methods.clone(),
            ctx,
            &self.inner.settings,
            closing,
            stop,
        );
        // Handlers hold their own handles; this one is not needed to keep the connection open.
        drop(peer);
        // `map`, not an `async` block awaiting the pump: the block would hold its future twice
        // (the capture, and the future awaited), for as long as the socket is open.
        pump.map(move |()| drop(counted))
    }
}

/// Keeps the handshake request's headers, for the connection's context.
struct KeepHeaders(Arc<Mutex<HeaderMap>>);

impl Callback for KeepHeaders {
    fn on_request(
        self,
        request: &HandshakeRequest,
        response: HandshakeResponse,
    ) -> Result<HandshakeResponse, ErrorResponse> {
        if let Ok(mut headers) = self.0.lock() {
            *headers = request.headers().clone();
        }
        Ok(response)
    }
}
