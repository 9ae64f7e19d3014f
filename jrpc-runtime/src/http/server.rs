//! Provides the HTTP server: the accept loop (with a TLS handshake first, when it has TLS), one
//! hyper connection per client (HTTP/1.1 or HTTP/2, told apart by what the client sends), and the
//! routing of a request to the JSON-RPC endpoint, the WebSocket upgrade, or `404`.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "ws")]
use ::http::Method;
use ::http::{Request, Response};
use futures_util::future::Either;
use hyper::body::Body as _;
use hyper::body::Incoming;
use tokio::net::TcpListener;

use super::connection::{Ends, Protocols, Responder, drive};
use super::endpoint::{Connection, Endpoint, EndpointService, Mounted};
use super::layer::{Layered, ServerLayer};
use super::reply::{self, ResponseBody};
#[cfg(feature = "ws")]
use super::request_id::kept;
use super::service::RpcService;
use crate::dispatch::ContextRoom;
#[cfg(feature = "tls")]
use crate::server::Acceptor;
#[cfg(feature = "ws")]
use crate::server::Topics;
use crate::server::{ConnectionCap, ConnectionPermit, Io, ShutdownHandle, accept_loop};
#[cfg(feature = "ws")]
use crate::transport::RequestTag;
#[cfg(feature = "ws")]
use crate::transport::Transport;
#[cfg(feature = "ws")]
use crate::ws::WsServer;

/// Holds the checked settings the server runs with.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// `None` when only the endpoints are served.
    pub(crate) rpc_path: Option<Box<str>>,
    #[cfg(feature = "ws")]
    pub(crate) ws_path: Option<Box<str>>,
    pub(crate) endpoints: Box<[Mount]>,
    /// The tower layer every request goes through, when set.
    pub(crate) layer: Option<ServerLayer>,
    pub(crate) header_read_timeout: Duration,
    pub(crate) free_idle_after: Option<Duration>,
    pub(crate) write_timeout: Option<Duration>,
}

/// Holds an endpoint mounted at a path.
#[derive(Clone)]
pub(crate) struct Mount {
    pub(crate) path: Box<str>,
    pub(crate) endpoint: Arc<Mounted>,
}

impl fmt::Debug for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mount")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Serves JSON-RPC over HTTP: `POST` on the RPC path (default `/rpc`), WebSocket upgrades on the
/// WebSocket path (default `/ws`, with the `ws` feature), `404` elsewhere, keep-alive
/// connections, limits, and a graceful shutdown. It speaks HTTP/1.1 and HTTP/2 (with prior
/// knowledge on a plain listener, `h2c`; by ALPN over TLS), and TLS with the `tls` feature
/// ([`HttpServerBuilder::tls`](super::HttpServerBuilder::tls)). See the [module docs](super)
/// for the statuses it answers and how the WebSocket path is served.
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
    protocols: Arc<Protocols>,
    cap: ConnectionCap,
    /// The TLS handshake every accepted connection goes through first, when there is one.
    #[cfg(feature = "tls")]
    tls: Option<Acceptor>,
    /// What the WebSocket path hands its upgrades to; it shares the endpoint's shutdown.
    #[cfg(feature = "ws")]
    ws: WsServer,
}

/// Says what a request on the listener is for.
enum Route<'a> {
    /// The JSON-RPC endpoint (which answers `405` to anything but `POST`).
    Rpc,
    /// A `GET` on the WebSocket path.
    #[cfg(feature = "ws")]
    WebSocket,
    /// An endpoint mounted at its path.
    Endpoint(&'a Arc<Mounted>),
    /// Any other path.
    NotFound,
}

impl HttpServer {
    pub(crate) fn new(
        endpoint: RpcService,
        settings: Settings,
        cap: ConnectionCap,
        #[cfg(feature = "ws")] ws: WsServer,
        #[cfg(feature = "tls")] tls: Option<Acceptor>,
    ) -> Self {
        let protocols = Protocols::new(settings.header_read_timeout, settings.free_idle_after);
        Self {
            inner: Arc::new(Inner {
                endpoint,
                settings,
                protocols: Arc::new(protocols),
                cap,
                #[cfg(feature = "tls")]
                tls,
                #[cfg(feature = "ws")]
                ws,
            }),
        }
    }

    /// Returns the JSON-RPC endpoint alone, to mount in another router (axum's `route_service`, for
    /// one). It shares this server's table, limits and shutdown state.
    pub fn service(&self) -> RpcService {
        self.inner.endpoint.clone()
    }

    /// Returns `endpoint` as a service served under this server's limits, byte budget, bearer
    /// authentication and shutdown, to mount in another router (axum's `route_service`); the
    /// server itself serves the endpoints given to
    /// [`HttpServerBuilder::endpoint`](super::HttpServerBuilder::endpoint).
    pub fn service_for<E: Endpoint>(&self, endpoint: Arc<E>) -> EndpointService<E> {
        EndpointService::new(endpoint, Arc::clone(self.inner.endpoint.shared()))
    }

    /// Returns a handle to shut the server down gracefully, its WebSocket connections included.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.inner.endpoint.shutdown_handle()
    }

    /// Returns the registry that handlers on the WebSocket path subscribe to
    /// ([`Context::subscribe`](crate::dispatch::Context::subscribe));
    /// [`Topics::publish`] on it reaches them.
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn topics(&self) -> &Topics {
        self.inner.ws.topics()
    }

    /// Returns how many times one of the server's HTTP/1.1 connections, idle for
    /// [`free_idle_after`](HttpServerBuilder::free_idle_after), freed its buffers so far: what a
    /// test of that setting counts.
    #[doc(hidden)]
    pub fn idle_frees(&self) -> u64 {
        self.inner.protocols.parked()
    }

    /// Accepts connections on `listener` and serves each in its own task, until a shutdown
    /// begins; then returns (dropping the listener), while the open connections drain.
    ///
    /// With TLS, each connection's handshake runs first, in the connection's task, within the
    /// `header_read_timeout`; one that fails (plain HTTP sent to the TLS port, a client that
    /// distrusts the certificate) drops that connection only.
    ///
    /// At `max_connections` it waits for a connection to close before accepting another; a
    /// connection upgraded to WebSocket counts until the WebSocket closes. A failed accept never
    /// ends the loop: a client's reset is skipped, and a lack of resources (`EMFILE` and the
    /// like) is logged and retried after 100 ms.
    pub async fn serve(&self, listener: TcpListener) {
        let shutdown = Arc::clone(self.inner.endpoint.shutdown());
        #[cfg(feature = "tls")]
        let what = if self.inner.tls.is_some() {
            "HTTPS"
        } else {
            "HTTP"
        };
        #[cfg(not(feature = "tls"))]
        let what = "HTTP";
        // The origin policy's `Host` rule for a server only loopback clients reach.
        let loopback = listener
            .local_addr()
            .is_ok_and(|addr| addr.ip().is_loopback());
        accept_loop(
            listener,
            &self.inner.cap,
            &shutdown,
            what,
            |stream, peer, permit| {
                #[cfg(feature = "tls")]
                if let Some(tls) = &self.inner.tls {
                    let (this, tls) = (self.clone(), tls.clone());
                    // Counted from the accept, so that a shutdown waits for the handshake too.
                    let counted = shutdown.track_connection();
                    tokio::spawn(async move {
                        if let Some(stream) = tls.accept(stream).await {
                            this.connection(stream, peer, Some(permit), loopback).await;
                        }
                        drop(counted);
                    });
                    return;
                }
                tokio::spawn(self.connection(stream, peer, Some(permit), loopback));
            },
        )
        .await;
    }

    /// Serves one connection (HTTP/1.1 with keep-alive and upgrades, or HTTP/2) until the client
    /// closes it, it times out, or a shutdown closes it; for an accept loop of your own (a Unix
    /// socket, TLS of your own...). The server's TLS is not applied here: `io` is the plain
    /// stream. `max_connections` is the accept loop's to enforce, not this method's. The origin
    /// policy's `Host` rule for a server bound to loopback applies only to the connections
    /// [`serve`](Self::serve) accepts: list the names to check here
    /// ([`OriginPolicy::allow_hosts`](crate::server::OriginPolicy::allow_hosts)).
    pub fn serve_connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.connection(io, peer_addr, None, false)
    }

    /// Does what [`serve_connection`](Self::serve_connection) does, holding `permit` until the
    /// connection (or the WebSocket it turns into) closes.
    fn connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
        permit: Option<ConnectionPermit>,
        loopback: bool,
    ) -> impl Future<Output = ()> + Send + 'static {
        let endpoint = match peer_addr {
            Some(addr) => self.inner.endpoint.clone().with_peer_addr(addr),
            None => self.inner.endpoint.clone(),
        }
        .bound_to_loopback(loopback)
        .own();
        let shutdown = Arc::clone(self.inner.endpoint.shutdown());
        // Counted as HTTP while hyper serves it; a WebSocket it turns into counts itself.
        let counted = shutdown.track_connection();
        // The router, and so the permit, lives as long as hyper's connection; a WebSocket upgrade
        // keeps a clone of the permit until the socket closes.
        let mut router = Router {
            endpoint,
            server: Arc::clone(&self.inner),
            permit: Arc::new(permit),
            room: ContextRoom::default(),
            layered: None,
        };
        if let Some(layer) = &self.inner.settings.layer {
            router.layered = Some(Layered::new(layer, router.clone()));
        }
        drive(
            &self.inner.protocols,
            io,
            router,
            self.inner.settings.write_timeout,
            shutdown,
            counted,
        )
    }
}

/// Routes each request: the per-connection service.
pub(crate) struct Router {
    endpoint: RpcService,
    server: Arc<Inner>,
    /// Held for the connection's life (and a WebSocket's it turns into): its place under the cap.
    #[cfg_attr(not(feature = "ws"), allow(dead_code, reason = "held for its drop"))]
    permit: Arc<Option<ConnectionPermit>>,
    /// Where each request's context is made.
    room: ContextRoom,
    /// The server's layer around this router, which then answers every request through it.
    layered: Option<Layered>,
}

/// Gives each clone a room of its own.
impl Clone for Router {
    fn clone(&self) -> Self {
        Self {
            endpoint: self.endpoint.clone(),
            server: Arc::clone(&self.server),
            permit: Arc::clone(&self.permit),
            room: ContextRoom::default(),
            layered: self.layered.clone(),
        }
    }
}

impl Router {
    #[inline]
    fn route(&self, req: &Request<Incoming>) -> Route<'_> {
        let path = req.uri().path();
        let settings = &self.server.settings;
        #[cfg(feature = "ws")]
        if let Some(ws) = &settings.ws_path
            && **ws == *path
            && req.method() == Method::GET
        {
            return Route::WebSocket;
        }
        if let Some(rpc) = &settings.rpc_path
            && **rpc == *path
        {
            return Route::Rpc;
        }
        self.mounted(path)
    }

    /// Returns the endpoint mounted at `path`, if any.
    #[inline(never)]
    fn mounted(&self, path: &str) -> Route<'_> {
        let found = (self.server.settings.endpoints.iter()).find(|mount| &*mount.path == path);
        match found {
            Some(mount) => Route::Endpoint(&mount.endpoint),
            None => Route::NotFound,
        }
    }

    /// Upgrades a request to a WebSocket: **the WebSocket hook.** Every `GET` on `ws_path` arrives
    /// here, on a connection served with upgrades enabled, while the server is serving (a shutdown
    /// answers `503` before this runs); `tag` is the request's `x-request-id` (taken or made up),
    /// which its reply carries as `Tags::reply_value` says.
    ///
    /// The upgrade goes to the public [`WsServer::upgrade_with`], with the context the endpoint
    /// makes of the upgrade request (so `map_context` applies, and the identity `bearer_auth`
    /// found; without one the upgrade is answered `401`) and the connection's
    /// `max_connections` permit, which the socket keeps until it closes.
    #[cfg(feature = "ws")]
    fn websocket(&self, mut req: Request<Incoming>, tag: &RequestTag) -> Response<ResponseBody> {
        if let Err(res) = self.endpoint.admit_upgrade(&mut req) {
            return super::reply::unread(&req, *res);
        }
        let (mut parts, body) = req.into_parts();
        let copied = |headers: &mut ::http::HeaderMap| crate::context::copied(headers);
        let trace = crate::context::trace_of(&parts.headers).map(Box::new);
        let ctx = self
            .endpoint
            .context(Transport::WebSocket, &mut parts, kept(tag), copied, trace);
        let req = Request::from_parts(parts, body);
        self.server
            .ws
            .upgrade_with(req, ctx, Arc::clone(&self.permit))
    }
}

impl Responder for Router {
    fn respond(
        &self,
        req: Request<Incoming>,
        ends: Option<Ends>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, Infallible>> + Send + 'static + use<>
    {
        if let Some(layered) = &self.layered {
            return Either::Right(layered.respond(req, ends));
        }
        let route = self.route(&req);
        let endpoint = match route {
            Route::Rpc => {
                return Either::Left(self.endpoint.respond(req, ends, Some(&self.room)));
            }
            Route::Endpoint(mounted) => Some(Arc::clone(mounted)),
            _ => None,
        };
        if let Some(mounted) = endpoint {
            let conn = Connection {
                peer_addr: self.endpoint.peer_addr(),
                loopback: self.endpoint.loopback(),
            };
            return Either::Right(mounted(self.endpoint.shared(), conn, req, ends));
        }
        let tag = self.endpoint.tags().tag(req.headers());
        let unread = !req.body().is_end_stream();
        let res = match route {
            _ if !self.endpoint.shutdown().is_serving() => reply::unavailable(),
            #[cfg(feature = "ws")]
            Route::WebSocket => self.websocket(req, &tag),
            // The body is left unread, so the connection cannot carry another request.
            _ if unread => reply::closing(reply::not_found(req.uri().path())),
            _ => reply::not_found(req.uri().path()),
        };
        let value = self.endpoint.tags().reply_value(&tag);
        let res = super::service::with_tag(res, value);
        // Boxed: not the JSON-RPC path's, and the future is smaller for it.
        Either::Right(Box::pin(std::future::ready(Ok(Ends::answered(ends, res)))))
    }
}
