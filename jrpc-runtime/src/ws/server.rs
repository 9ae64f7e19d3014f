//! Provides the WebSocket server: its builder, its accept loop, the handshake on a raw socket or
//! over hyper's upgrade, and one [`Peer`](crate::peer::Peer) per connection.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::http::{HeaderMap, Request, Response};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request as HandshakeRequest, Response as HandshakeResponse,
};

use super::connection::{self, Meter, Metered, Settings, Signal};
use super::settings::WsSettings;
use super::upgrade;
use crate::dispatch::{Context, Methods};
use crate::error::ConfigError;
use crate::error::check;
use crate::limits::Limits;
use crate::limits::ServerBudget;
use crate::limits::WriteDeadline;
use crate::server::{ConnectionCap, Io, Shutdown, ShutdownHandle, Topics, serve_each};
use crate::server::{OriginPolicy, ResponseBody as Body, forbidden, unavailable};
use crate::transport::Transport;

/// Bounds how long a client may take over the opening handshake on a raw socket
/// ([`WsServer::serve`]); the same bound as HTTP's header read timeout.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves JSON-RPC over WebSocket: each connection is a [`Peer`](crate::peer::Peer), so handlers
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
    /// Which pages may open a socket.
    policy: OriginPolicy,
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
    policy: OriginPolicy,
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
            policy: OriginPolicy::new(),
        }
    }

    /// Decides which browser pages and `Host` names may open a socket (default
    /// [`OriginPolicy::new`]: pages of the server's own origin; on a server bound to a loopback
    /// address, loopback `Host` names only): a handshake it refuses is answered `403`, so that a
    /// page of another site cannot drive the server (cross-site WebSocket hijacking). Clients
    /// that send no `Origin` (not browsers) are not refused for it. An `http::HttpServer`'s
    /// WebSocket path takes the HTTP server's policy instead.
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets how many bytes the server may hold for all its clients together (default: a quarter of
    /// the machine's memory, at least 64 MiB and at most 1 GiB): request bodies being read, and
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

    /// Sets each connection's settings (default: [`WsSettings::default`]).
    pub fn settings(mut self, settings: WsSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets the registry that handlers subscribe to (see [`Topics`]); share one between the server
    /// and the code that publishes. Left unset, the server makes its own
    /// ([`WsServer::topics`]).
    pub fn topics(mut self, topics: Topics) -> Self {
        self.topics = Some(topics);
        self
    }

    /// Sets how long a shutdown lets calls finish before it drops the connections left (default
    /// 30 s, the grace period most orchestrators give a process between `SIGTERM` and
    /// `SIGKILL`). Zero stops at once.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.drain_timeout = budget;
        self
    }

    /// Sets how many connections [`serve`](WsServer::serve) takes at once (default 10 000); at the
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
                let bytes = self
                    .server_budget
                    .unwrap_or_else(ServerBudget::default_limit);
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
                policy: self.policy,
            }),
        })
    }
}

impl WsServer {
    /// Returns a builder serving `methods`, with every setting at its default.
    pub fn builder(methods: Methods) -> WsServerBuilder {
        WsServerBuilder::new(methods)
    }

    /// Returns the registry handlers subscribe to; [`Topics::publish`] on it reaches them.
    pub fn topics(&self) -> &Topics {
        &self.inner.topics
    }

    /// Returns a handle to shut the server down gracefully: reading stops on every connection,
    /// running calls finish and are answered, then each closes with 1001 (going away); past the
    /// drain budget the connections left are dropped. See [`ShutdownHandle::shutdown`].
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(&self.inner.shutdown))
    }

    /// Accepts connections on `listener` and serves each in its own task, up to
    /// `max_connections` at once, until a shutdown begins; then returns, while the open
    /// connections drain. Every connection must open with a WebSocket handshake, on any path. A
    /// failed accept never ends the loop.
    pub async fn serve(&self, listener: TcpListener) {
        // The origin policy's `Host` rule for a server only loopback clients reach.
        let loopback = listener
            .local_addr()
            .is_ok_and(|addr| addr.ip().is_loopback());
        serve_each(
            listener,
            &self.inner.cap,
            &self.inner.shutdown,
            "WebSocket",
            |stream, peer| self.connection(stream, peer, loopback),
        )
        .await;
    }

    /// Serves one socket that opens with a WebSocket handshake (for an accept loop of your own:
    /// TLS, a Unix socket...). Handlers see `peer_addr` and the handshake's headers. The origin
    /// policy's `Host` rule for a server bound to loopback applies only to the connections
    /// [`serve`](Self::serve) accepts.
    pub fn serve_connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.connection(io, peer_addr, false)
    }

    /// Does what [`serve_connection`](Self::serve_connection) does, for a socket that is
    /// (`loopback`) or is not bound to a loopback address.
    fn connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
        loopback: bool,
    ) -> impl Future<Output = ()> + Send + 'static {
        let this = self.clone();
        async move {
            let Some(counted) = this.inner.shutdown.admit_connection() else {
                return;
            };
            let headers: Arc<Mutex<HeaderMap>> = Arc::default();
            let callback = Handshake {
                headers: Arc::clone(&headers),
                policy: this.inner.policy.clone(),
                loopback,
            };
            let meter = this.meter();
            let io = WriteDeadline::new(io, this.inner.settings.write_timeout);
            let io = Metered::new(io, meter.clone(), true);
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
            this.run(ws, ctx, counted, meter).await;
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
        if let Err(why) = self.inner.policy.check(req.headers(), req.uri(), false) {
            return forbidden(&why);
        }
        let ctx = Context::new(Transport::WebSocket).with_headers_copied(req.headers());
        self.upgrade_with(req, ctx, ())
    }

    /// Does what [`upgrade`](Self::upgrade) does, with handlers' contexts built on `ctx` (the
    /// caller's peer address, headers, authenticated user...) and `guard` kept until the socket
    /// closes (a connection slot, a gauge). Its transport is taken as given: pass one on
    /// [`Transport::WebSocket`].
    pub fn upgrade_with<B, G>(&self, req: Request<B>, ctx: Context, guard: G) -> Response<Body>
    where
        G: Send + 'static,
    {
        // Counted from here, so that a shutdown waits for the upgrade to complete.
        let Some(counted) = self.inner.shutdown.admit_connection() else {
            return unavailable();
        };
        let this = self.clone();
        let settings = &self.inner.settings;
        let meter = self.meter();
        let (config, write_timeout) = (settings.ws, settings.write_timeout);
        upgrade::accept(req, config, write_timeout, meter.clone(), move |ws| {
            // Dropped in this order as the pump ends: the count, then the caller's guard.
            this.run(ws, ctx, (counted, guard), meter)
        })
    }

    /// Returns what counts a new connection's incoming messages in the server's byte budget.
    fn meter(&self) -> Option<Arc<Meter>> {
        let settings = &self.inner.settings;
        let budget = settings.peer.server_budget.as_ref()?;
        let max_frame = settings.ws.max_frame_size.unwrap_or(usize::MAX);
        let base = settings.ws.read_buffer_size;
        Some(Meter::new(Arc::clone(budget), max_frame, base))
    }

    /// Serves one WebSocket until it closes, with the server's topics in its handlers' context
    /// (the connection leaves them when its peer's loop ends); `meter` counts what it reads, and
    /// `keep` is held until it closes.
    fn run<S, K>(
        &self,
        ws: WebSocketStream<S>,
        ctx: Context,
        keep: K,
        meter: Option<Arc<Meter>>,
    ) -> impl Future<Output = ()> + Send + use<S, K>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        K: Send + 'static,
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
            meter,
            keep,
        );
        // Handlers hold their own handles; this one is not needed to keep the connection open.
        drop(peer);
        pump
    }
}

/// Keeps the handshake request's headers, for the connection's context.
struct Handshake {
    headers: Arc<Mutex<HeaderMap>>,
    policy: OriginPolicy,
    loopback: bool,
}

impl Callback for Handshake {
    fn on_request(
        self,
        request: &HandshakeRequest,
        response: HandshakeResponse,
    ) -> Result<HandshakeResponse, ErrorResponse> {
        let refused = self
            .policy
            .check(request.headers(), request.uri(), self.loopback);
        if let Err(why) = refused {
            tracing::warn!(%why, "WebSocket handshake refused: answered 403");
            let mut res = ErrorResponse::new(Some(why.to_string()));
            *res.status_mut() = ::http::StatusCode::FORBIDDEN;
            return Err(res);
        }
        if let Ok(mut headers) = self.headers.lock() {
            *headers = request.headers().clone();
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::{SinkExt as _, StreamExt as _};
    use tokio::sync::Semaphore;
    use tokio_tungstenite::tungstenite::Message;

    use super::*;
    use crate::wire::RpcError;
    use crate::ws::WsSettings;

    /// Frames that arrive at once are held to the server's budget as they arrive: each takes its
    /// room whole before its payload is read, so the one that does not fit waits unread, its
    /// client's bytes left in the socket, until room is given back; then it is read and answered.
    #[tokio::test(start_paused = true)]
    async fn frames_arriving_at_once_are_held_to_the_budget() {
        // Room for a call read (its frame in tungstenite's buffer, and its room as a message)
        // beside one waiting, and for two waiting, not three.
        const BUDGET: usize = 100_000;
        const FRAME: usize = 30_000;
        // What one read takes (`read_buffer_size`): counted as it comes, before a frame's room.
        const READ: usize = 4096;
        let gate = Arc::new(Semaphore::new(0));
        let mut methods = Methods::new();
        let held_up = Arc::clone(&gate);
        methods
            .register_notification("block", &[], move |(): (), _| {
                let gate = Arc::clone(&held_up);
                async move {
                    let _ = gate.acquire().await.map(|permit| permit.forget());
                }
            })
            .unwrap();
        methods
            .register("size", &["text"], |(text,): (String,), _| async move {
                Ok::<_, RpcError>(text.len())
            })
            .unwrap();
        let server = WsServer::builder(methods)
            .settings(
                WsSettings::new()
                    .ping_interval(None)
                    .idle_timeout(None)
                    .write_timeout(None),
            )
            .server_budget(BUDGET)
            .build()
            .unwrap();
        let budget = Arc::clone(server.inner.settings.peer.server_budget.as_ref().unwrap());
        let mut clients = Vec::new();
        for _ in 0..3 {
            let (near, far) = tokio::io::duplex(1 << 20);
            tokio::spawn(server.serve_connection(far, None));
            let (mut ws, _) = tokio_tungstenite::client_async("ws://test/", near)
                .await
                .unwrap();
            // The connection's loop is held up by the notification's handler: the call after it
            // waits, read and counted, for the loop to take it.
            ws.send(Message::text(r#"{"jsonrpc":"2.0","method":"block"}"#))
                .await
                .unwrap();
            let call = format!(
                r#"{{"jsonrpc":"2.0","method":"size","params":["{}"],"id":1}}"#,
                "x".repeat(FRAME)
            );
            ws.send(Message::text(call)).await.unwrap();
            clients.push(ws);
        }
        // The paused clock moves on once every task waits: all that could be read is.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let held = budget.held();
        // Two calls are read, and wait in their connections' links (tungstenite's read buffer,
        // grown to hold each, made anew once it held nothing); the third frame has had one read
        // (into the buffer tungstenite has) and waits for its room.
        assert!(
            held <= BUDGET,
            "{held} bytes held against a budget of {BUDGET}"
        );
        assert!(
            (2 * FRAME..2 * FRAME + 200 + READ).contains(&held),
            "{held} bytes held: not two calls and a read"
        );
        // Room given back: the third is read too, and every call is answered.
        gate.add_permits(3);
        for ws in &mut clients {
            let answer = loop {
                match ws.next().await {
                    Some(Ok(Message::Text(text))) => break text,
                    Some(Ok(_)) => {}
                    other => panic!("no answer: {other:?}"),
                }
            };
            let expected = format!(r#"{{"jsonrpc":"2.0","result":{FRAME},"id":1}}"#);
            assert_eq!(answer.as_str(), expected);
        }
    }
}
