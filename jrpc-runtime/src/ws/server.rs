//! The WebSocket server: the handshake (over hyper's upgrade, or a raw socket), one [`Peer`] per
//! connection, and the graceful shutdown.

use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::http::header::{
    CONNECTION, CONTENT_TYPE, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION,
    UPGRADE,
};
use ::http::request::Parts;
use ::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request as HandshakeRequest, Response as HandshakeResponse,
};
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::config::WsServerBuilder;
use super::connection::{self, Settings, Signal};
use super::topics::{Membership, Topics};
use crate::http::{Drained, ResponseBody};
use crate::{ClientError, Context, Methods, RpcError, Transport};

/// How long a client may take over the opening handshake on a raw socket
/// ([`WsServer::serve`]); the same bound as HTTP's header read timeout.
const HANDSHAKE_TIMEOUT: Duration = crate::http::DEFAULT_HEADER_READ_TIMEOUT;

/// A JSON-RPC server over WebSocket: each connection is a [`Peer`](crate::Peer), so handlers
/// can push to their client and call it; topics reach groups of connections.
///
/// Three ways to serve it:
///
/// - [`serve`](Self::serve): its own accept loop; every socket must open with a WebSocket
///   handshake (any path).
/// - [`upgrade`](Self::upgrade): a hyper (or axum) handler answers the upgrade request with it.
/// - [`HttpServer`](crate::http::HttpServer) serves WebSocket on its `ws_path` itself, with
///   settings and a registry of its own (see the [`http` module docs](crate::http#websocket)).
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
/// let shutdown = server.clone();
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
    phase: watch::Sender<Phase>,
    open: watch::Sender<usize>,
    drain_timeout: Duration,
}

/// Where the server is in its life; phases only move forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Serving,
    /// No new connections; open ones finish their calls and close with 1001.
    Draining,
    /// The drain budget is spent: what is left is dropped.
    Stopped,
}

/// One open connection, counted until it drops.
struct Open(Arc<Inner>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl WsServer {
    /// A builder serving `methods`, with every setting at its default.
    pub fn builder(methods: Methods) -> WsServerBuilder {
        WsServerBuilder::new(methods)
    }

    pub(crate) fn new(
        methods: Methods,
        settings: Settings,
        topics: Topics,
        drain_timeout: Duration,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                methods,
                settings,
                topics,
                phase: watch::Sender::new(Phase::Serving),
                open: watch::Sender::new(0),
                drain_timeout,
            }),
        }
    }

    /// The registry handlers subscribe to.
    pub fn topics(&self) -> &Topics {
        &self.inner.topics
    }

    /// Sends the notification `method` with `params` to every connection subscribed to `topic`;
    /// returns how many it was queued for. See [`Topics::publish`].
    ///
    /// # Errors
    ///
    /// [`ClientError::Malformed`] when `params` cannot be encoded.
    pub fn publish(
        &self,
        topic: &str,
        method: &str,
        params: impl Serialize,
    ) -> Result<usize, ClientError> {
        self.inner.topics.publish(topic, method, params)
    }

    /// How many connections are open.
    pub fn connections(&self) -> usize {
        *self.inner.open.borrow()
    }

    /// Accepts connections on `listener` and serves each in its own task until a shutdown
    /// begins; then returns, while the open connections drain. Every connection must open with
    /// a WebSocket handshake, on any path. A failed accept is logged and retried.
    pub async fn serve(&self, listener: TcpListener) {
        tracing::info!(addr = ?listener.local_addr().ok(), "serving WebSocket");
        let mut phase = self.inner.phase.subscribe();
        loop {
            let accepted = tokio::select! {
                biased;
                _ = phase.wait_for(|phase| *phase != Phase::Serving) => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(self.serve_connection(stream, Some(peer)));
                }
                Err(err) => {
                    tracing::debug!(error = %err, "accept failed");
                    // Out of descriptors and the like: give the system a moment.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        tracing::info!("stopped accepting WebSocket connections");
    }

    /// Serves one socket that opens with a WebSocket handshake (for an accept loop of your own:
    /// TLS, a Unix socket...). Handlers see `peer_addr` and the handshake's headers.
    pub fn serve_connection<I>(
        &self,
        io: I,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let this = self.clone();
        async move {
            let Some(open) = this.open() else { return };
            let headers: Arc<Mutex<HeaderMap>> = Arc::default();
            let callback = KeepHeaders(Arc::clone(&headers));
            let handshake = tokio_tungstenite::accept_hdr_async_with_config(
                io,
                callback,
                Some(this.inner.settings.ws),
            );
            let ws = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                Ok(Ok(ws)) => ws,
                Ok(Err(err)) => return tracing::debug!(error = %err, "WebSocket handshake failed"),
                Err(_) => return tracing::debug!("WebSocket handshake timed out"),
            };
            let headers = headers
                .lock()
                .map(|mut headers| std::mem::take(&mut *headers))
                .unwrap_or_default();
            this.run(ws, base_context(headers, peer_addr), open).await;
        }
    }

    /// Answers a WebSocket upgrade request (`GET` with `Upgrade: websocket`) from hyper or a
    /// framework on it (axum: a handler taking `Request`), and serves the connection in a task
    /// of its own once the upgrade completes. Handlers see the request's headers.
    ///
    /// The answer is `101 Switching Protocols`; a request that is not a valid upgrade gets
    /// `400` (`426` for a WebSocket version other than 13), and `503` once a shutdown has begun,
    /// each with a JSON-RPC error envelope.
    pub fn upgrade<B>(&self, req: Request<B>) -> Response<ResponseBody> {
        // Counted from here, so that a shutdown waits for the upgrade to complete.
        let Some(open) = self.open() else {
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down",
            );
        };
        let this = self.clone();
        accept_upgrade(
            req,
            self.inner.settings.ws,
            |parts| base_context(parts.headers, None),
            move |ws, ctx| async move { this.run(ws, ctx, open).await },
        )
    }

    /// Shuts the server down gracefully and returns once it is done:
    ///
    /// 1. stops accepting connections ([`upgrade`](Self::upgrade) answers `503`);
    /// 2. stops reading on every connection, lets its running calls finish and be answered,
    ///    then closes it with 1001 (going away);
    /// 3. if the drain budget ([`drain_timeout`](WsServerBuilder::drain_timeout)) runs out,
    ///    drops the connections left.
    ///
    /// Calling it again, or from several clones, waits for the same drain. The calls still
    /// running are not counted here: [`Drained::BudgetSpent`] reports `calls: 0` and the
    /// connections left.
    pub async fn shutdown(&self) -> Drained {
        let deadline = crate::time::after(self.inner.drain_timeout);
        advance(&self.inner.phase, Phase::Draining);
        let mut open = self.inner.open.subscribe();
        let drained = tokio::time::timeout_at(deadline, open.wait_for(|n| *n == 0))
            .await
            .is_ok();
        if drained {
            return Drained::Complete;
        }
        let connections = *self.inner.open.borrow();
        tracing::warn!(
            connections,
            "drain budget spent; dropping WebSocket connections"
        );
        advance(&self.inner.phase, Phase::Stopped);
        // Dropping is immediate; this only lets the tasks run to notice it.
        let _ = tokio::time::timeout(Duration::from_secs(1), open.wait_for(|n| *n == 0))
            .await
            .is_ok();
        Drained::BudgetSpent {
            calls: 0,
            connections,
        }
    }

    /// Counts a connection, or `None` once a shutdown has begun.
    fn open(&self) -> Option<Open> {
        self.inner.open.send_modify(|n| *n += 1);
        let open = Open(Arc::clone(&self.inner));
        (*self.inner.phase.borrow() == Phase::Serving).then_some(open)
    }

    async fn run<S>(&self, ws: WebSocketStream<S>, ctx: Context, open: Open)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let closing = phase_signal(&self.inner.phase, Phase::Draining);
        let stop = phase_signal(&self.inner.phase, Phase::Stopped);
        serve_socket(
            ws,
            self.inner.methods.clone(),
            ctx,
            &self.inner.settings,
            &self.inner.topics,
            closing,
            stop,
        )
        .await;
        drop(open);
    }
}

fn advance(phase: &watch::Sender<Phase>, to: Phase) {
    phase.send_if_modified(|now| {
        let moved = *now < to;
        if moved {
            *now = to;
        }
        moved
    });
}

fn phase_signal(phase: &watch::Sender<Phase>, target: Phase) -> Signal {
    let mut rx = phase.subscribe();
    Box::pin(async move {
        // The sender lives in the server, which every connection task holds.
        let _ = rx.wait_for(|now| *now >= target).await;
    })
}

/// The context every connection's handlers start from.
fn base_context(headers: HeaderMap, peer_addr: Option<SocketAddr>) -> Context {
    let ctx = Context::new(Transport::WebSocket).with_headers(headers);
    match peer_addr {
        Some(addr) => ctx.with_peer_addr(addr),
        None => ctx,
    }
}

/// Serves one WebSocket until it closes, with `topics` in its handlers' context; it leaves every
/// topic then.
async fn serve_socket<S>(
    ws: WebSocketStream<S>,
    methods: Methods,
    ctx: Context,
    settings: &Settings,
    topics: &Topics,
    closing: Signal,
    stop: Signal,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (membership, leave) = Membership::new();
    let ctx = ctx
        .with_extension(membership)
        .with_extension(topics.clone());
    let (peer, pump) = connection::start(ws, methods, ctx, settings, closing, stop, false);
    // Handlers hold their own handles; this one is not needed to keep the connection open.
    drop(peer);
    pump.await;
    drop(leave);
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

/// A refused upgrade: the status and what was wrong.
type Refused = (StatusCode, &'static str);

/// Checks an upgrade request and builds the `101` answer; or says why it is refused.
fn handshake(
    req: &mut Parts,
) -> Result<(Response<ResponseBody>, hyper::upgrade::OnUpgrade), Refused> {
    let headers = &req.headers;
    let has_token = |name, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    if !has_token(UPGRADE, "websocket") || !has_token(CONNECTION, "upgrade") {
        return Err((
            StatusCode::BAD_REQUEST,
            "expected a WebSocket upgrade (`Connection: Upgrade`, `Upgrade: websocket`)",
        ));
    }
    if headers
        .get(SEC_WEBSOCKET_VERSION)
        .map(HeaderValue::as_bytes)
        != Some(b"13")
    {
        return Err((
            StatusCode::UPGRADE_REQUIRED,
            "only WebSocket version 13 is spoken",
        ));
    }
    let Some(key) = headers.get(SEC_WEBSOCKET_KEY) else {
        return Err((StatusCode::BAD_REQUEST, "`Sec-WebSocket-Key` is missing"));
    };
    let accept = derive_accept_key(key.as_bytes());
    let Some(on_upgrade) = req.extensions.remove::<hyper::upgrade::OnUpgrade>() else {
        return Err((
            StatusCode::BAD_REQUEST,
            "this connection cannot be upgraded",
        ));
    };
    let mut res = Response::new(Full::default());
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let out = res.headers_mut();
    out.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    out.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        out.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    Ok((res, on_upgrade))
}

/// An HTTP refusal with a JSON-RPC error envelope, as every HTTP error of this crate.
fn refusal(status: StatusCode, why: &str) -> Response<ResponseBody> {
    let code = if status == StatusCode::SERVICE_UNAVAILABLE {
        RpcError::new(crate::ErrorCode::SERVER_ERROR, "Server shutting down")
    } else {
        RpcError::invalid_request()
    };
    let body = crate::methods::error_bytes(&code.with_data(&why), None);
    let mut res = Response::new(Full::new(Bytes::from(body)));
    *res.status_mut() = status;
    if status == StatusCode::UPGRADE_REQUIRED {
        res.headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    }
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// Checks an upgrade request and answers it; once the upgrade completes, `serve` runs the socket
/// in a task of its own, with the context `context` makes of the request (its headers taken).
fn accept_upgrade<B, F, Fut>(
    req: Request<B>,
    config: WebSocketConfig,
    context: impl FnOnce(Parts) -> Context,
    serve: F,
) -> Response<ResponseBody>
where
    F: FnOnce(WebSocketStream<TokioIo<Upgraded>>, Context) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (mut parts, _body) = req.into_parts();
    let (res, on_upgrade) = match handshake(&mut parts) {
        Ok(pair) => pair,
        Err((status, why)) => return refusal(status, why),
    };
    let ctx = context(parts);
    tokio::spawn(async move {
        let io = match on_upgrade.await {
            Ok(io) => TokioIo::new(io),
            Err(err) => return tracing::debug!(error = %err, "WebSocket upgrade failed"),
        };
        let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        serve(ws, ctx).await;
    });
    res
}

/// What [`HttpServer`](crate::http::HttpServer)'s WebSocket hook hands over.
pub(crate) struct FromHttp {
    pub(crate) methods: Methods,
    /// The checked [`WsSettings`](super::WsSettings) of the HTTP server, its drain budget in.
    pub(crate) settings: Settings,
    pub(crate) topics: Topics,
    /// Held while the connection is open: the HTTP server's shutdown and `max_connections` count
    /// it.
    pub(crate) guard: Box<dyn Any + Send>,
    /// Resolves when a shutdown begins: close with 1001.
    pub(crate) closing: Signal,
    /// Resolves when the drain budget is spent: drop the connection.
    pub(crate) stop: Signal,
}

/// Upgrades a request that reached [`HttpServer`](crate::http::HttpServer)'s WebSocket path, and
/// serves the connection; `context` makes its handlers' context of the upgrade request.
pub(crate) fn upgrade_from_http<B>(
    req: Request<B>,
    hook: FromHttp,
    context: impl FnOnce(Parts) -> Context,
) -> Response<ResponseBody> {
    let config = hook.settings.ws;
    accept_upgrade(req, config, context, move |ws, ctx| async move {
        let FromHttp {
            methods,
            settings,
            topics,
            guard,
            closing,
            stop,
        } = hook;
        serve_socket(ws, methods, ctx, &settings, &topics, closing, stop).await;
        drop(guard);
    })
}
