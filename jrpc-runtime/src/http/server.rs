//! The HTTP server: the accept loop, one hyper connection per client, and the routing of a
//! request to the JSON-RPC endpoint, the WebSocket upgrade, or `404`.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ::http::{HeaderValue, Method, Request, Response};
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use super::config::{ContextHook, HttpServerBuilder, Settings};
use super::reply::{self, ResponseBody};
use super::request_id::x_request_id;
use super::service::{ResponseFuture, RpcService};
use super::shutdown::{Drain, Phase, ShutdownHandle, Tracked};
use crate::ws::Topics;
use crate::{ClientError, Methods, Transport};

/// An HTTP/1.1 JSON-RPC server: `POST` on the RPC path (default `/rpc`), WebSocket upgrades on the
/// WebSocket path (default `/ws`), `404` elsewhere, keep-alive connections, limits, and a
/// graceful shutdown. See the [module docs](super) for the statuses it answers and how the
/// WebSocket path is served.
///
/// Cloning is cheap; clones are the same server.
#[derive(Clone, Debug)]
pub struct HttpServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    endpoint: RpcService,
    settings: Settings,
    http1: http1::Builder,
    /// One permit per connection served: at `max_connections` the accept loop waits for one.
    slots: Arc<Semaphore>,
    /// The registry WebSocket connections subscribe to.
    topics: Topics,
}

/// What one connection holds while it is open, as HTTP and then as the WebSocket it may be
/// upgraded to (both sides share it, and the later to close gives it back): its unit of the
/// drain's connection count, and its `max_connections` slot when the accept loop took one.
struct Open {
    _counted: Tracked,
    _slot: Option<OwnedSemaphorePermit>,
}

/// What a request on the listener is for.
enum Route {
    /// The JSON-RPC endpoint (which answers `405` to anything but `POST`).
    Rpc,
    /// A `GET` on the WebSocket path: [`Router::websocket`].
    WebSocket,
    /// Any other path.
    NotFound,
}

impl HttpServer {
    /// A builder serving `methods`, with every setting at its default.
    pub fn builder(methods: Methods) -> HttpServerBuilder {
        HttpServerBuilder::new(methods)
    }

    pub(crate) fn new(
        methods: Methods,
        settings: Settings,
        context_hook: Option<ContextHook>,
        topics: Topics,
    ) -> Self {
        let drain = Drain::new(settings.drain_timeout);
        let endpoint = RpcService::new(
            methods,
            settings.max_body_bytes,
            settings.body_read_timeout,
            drain,
            context_hook,
        );
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(settings.header_read_timeout)
            .keep_alive(true);
        let slots = Arc::new(Semaphore::new(settings.max_connections));
        Self {
            inner: Arc::new(Inner {
                endpoint,
                settings,
                http1,
                slots,
                topics,
            }),
        }
    }

    /// The JSON-RPC endpoint alone, to mount in another router (axum's `route_service`, for one).
    /// It shares this server's table, limits and shutdown state.
    pub fn service(&self) -> RpcService {
        self.inner.endpoint.clone()
    }

    /// A handle to shut the server down gracefully.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.inner.endpoint.shutdown_handle()
    }

    /// The registry that handlers on the WebSocket path subscribe to
    /// ([`ContextExt::subscribe`](crate::ws::ContextExt::subscribe)).
    pub fn topics(&self) -> &Topics {
        &self.inner.topics
    }

    /// [`Topics::publish`] on [`topics`](Self::topics): the notification `method` with `params`
    /// to every WebSocket connection subscribed to `topic`, and how many it was queued for.
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`]: when `params` cannot be encoded.
    pub fn publish(
        &self,
        topic: &str,
        method: &str,
        params: impl Serialize,
    ) -> Result<usize, ClientError> {
        self.inner.topics.publish(topic, method, params)
    }

    /// Accepts connections on `listener` and serves each in its own task, until a shutdown
    /// begins; then returns (dropping the listener), while the open connections drain.
    ///
    /// At `max_connections` it waits for a connection to close before accepting another; a
    /// connection upgraded to WebSocket counts until the WebSocket closes. A failed accept never
    /// ends the loop: a client's reset is skipped, and a lack of resources (`EMFILE` and the
    /// like) is logged and retried after 100 ms.
    pub async fn serve(&self, listener: TcpListener) {
        tracing::info!(addr = ?listener.local_addr().ok(), "serving HTTP");
        let mut phase = self.inner.endpoint.drain().watch();
        let stopping = async move { reached(&mut phase, Phase::Draining).await };
        tokio::pin!(stopping);
        loop {
            let slot = tokio::select! {
                biased;
                () = &mut stopping => break,
                slot = Arc::clone(&self.inner.slots).acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => break, // never closed: the semaphore lives in `self`
                },
            };
            let accepted = tokio::select! {
                biased;
                () = &mut stopping => break,
                accepted = listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(pair) => pair,
                Err(err) if is_per_connection(&err) => continue,
                Err(err) => {
                    tracing::error!(error = %err, "accept failed; retrying in 100 ms");
                    tokio::select! {
                        () = &mut stopping => break,
                        () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    }
                }
            };
            // Answers are small and written whole: send them without waiting for more.
            let _ = stream.set_nodelay(true);
            tokio::spawn(self.connection(stream, Some(peer), Some(slot)));
        }
        tracing::info!("stopped accepting connections");
    }

    /// Serves one connection (HTTP/1.1 with keep-alive and upgrades) until the client closes it,
    /// it times out, or a shutdown closes it; for an accept loop of your own (over TLS, a Unix
    /// socket...). `max_connections` is the accept loop's to enforce, not this method's.
    pub fn serve_connection<I>(
        &self,
        io: I,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.connection(io, peer_addr, None)
    }

    /// [`serve_connection`](Self::serve_connection), holding `slot` until the connection (or
    /// the WebSocket it turns into) closes.
    fn connection<I>(
        &self,
        io: I,
        peer_addr: Option<SocketAddr>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let endpoint = match peer_addr {
            Some(addr) => self.inner.endpoint.clone().with_peer_addr(addr),
            None => self.inner.endpoint.clone(),
        };
        let drain = Arc::clone(self.inner.endpoint.drain());
        let open = Arc::new(Open {
            _counted: drain.track_connection(),
            _slot: slot,
        });
        // The router (and so `open`) lives as long as hyper's connection.
        let router = Router {
            endpoint,
            server: Arc::clone(&self.inner),
            open,
        };
        let http1 = self.inner.http1.clone();
        async move {
            let mut phase = drain.watch();
            let connection = http1
                .serve_connection(TokioIo::new(io), router)
                .with_upgrades();
            tokio::pin!(connection);
            // Open connections stay through `Draining`, so that requests on them get a 503.
            tokio::select! {
                result = connection.as_mut() => return ended(result),
                () = reached(&mut phase, Phase::Closing) => connection.as_mut().graceful_shutdown(),
            }
            tokio::select! {
                result = connection.as_mut() => ended(result),
                () = reached(&mut phase, Phase::Stopped) => tracing::debug!("connection dropped: drain budget spent"),
            }
        }
    }
}

async fn reached(phase: &mut watch::Receiver<Phase>, target: Phase) {
    // The sender lives as long as the server, which every connection holds.
    let _ = phase.wait_for(|now| *now >= target).await;
}

fn ended(result: Result<(), hyper::Error>) {
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}

/// Errors that concern one incoming connection only (it was reset before it was taken).
fn is_per_connection(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

/// The per-connection service: routes each request.
#[derive(Clone)]
struct Router {
    endpoint: RpcService,
    server: Arc<Inner>,
    open: Arc<Open>,
}

impl Router {
    fn route(&self, req: &Request<Incoming>) -> Route {
        let path = req.uri().path();
        let settings = &self.server.settings;
        if path == &*settings.ws_path && req.method() == Method::GET {
            Route::WebSocket
        } else if path == &*settings.rpc_path {
            Route::Rpc
        } else {
            Route::NotFound
        }
    }

    /// **The WebSocket hook.** Every `GET` on `ws_path` arrives here, on a connection served with
    /// upgrades enabled, while the server is serving (a shutdown answers `503` before this runs);
    /// `tag` is the request's `x-request-id` (taken or made up), which is echoed on the reply.
    ///
    /// [`crate::ws`] checks the handshake, answers `101` and serves the socket as a `Peer` over
    /// the endpoint's table, with the server's WebSocket settings and topics, and the context
    /// the endpoint makes of the upgrade request (so `map_context` applies). The socket holds
    /// the connection's [`Open`] (the drain waits for it, and it keeps its `max_connections`
    /// slot), closes with 1001 once the phase reaches `Draining`, and is dropped at `Stopped`.
    fn websocket(&self, req: Request<Incoming>, tag: &Arc<str>) -> Response<ResponseBody> {
        let drain = self.endpoint.drain();
        let (mut draining, mut stopped) = (drain.watch(), drain.watch());
        let hook = crate::ws::FromHttp {
            methods: self.endpoint.methods().clone(),
            settings: self.server.settings.websocket.clone(),
            topics: self.server.topics.clone(),
            guard: Box::new(Arc::clone(&self.open)),
            closing: Box::pin(async move { reached(&mut draining, Phase::Draining).await }),
            stop: Box::pin(async move { reached(&mut stopped, Phase::Stopped).await }),
        };
        crate::ws::upgrade_from_http(req, hook, |parts| {
            self.endpoint.context(Transport::WebSocket, parts, tag)
        })
    }
}

impl hyper::service::Service<Request<Incoming>> for Router {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let route = self.route(&req);
        if let Route::Rpc = route {
            return hyper::service::Service::call(&self.endpoint, req);
        }
        let tag = self.endpoint.tags().tag(req.headers());
        let unread = !req.body().is_end_stream();
        let mut res = if !self.endpoint.drain().is_serving() {
            reply::unavailable()
        } else if let Route::WebSocket = route {
            self.websocket(req, &tag)
        } else if unread {
            // The body is left unread, so the connection cannot carry another request.
            reply::closing(reply::not_found(req.uri().path()))
        } else {
            reply::not_found(req.uri().path())
        };
        if let Ok(value) = HeaderValue::from_str(&tag) {
            res.headers_mut().insert(x_request_id(), value);
        }
        Box::pin(std::future::ready(Ok(res)))
    }
}
