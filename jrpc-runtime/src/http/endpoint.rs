//! Provides the seam a protocol carried over HTTP is built on: [`Endpoint`], served on the HTTP
//! server's connections or as a tower service ([`EndpointService`]).

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use ::http::request::Parts;
use ::http::{HeaderMap, Request, Response};
use futures_util::future::Either;
use hyper::body::{Body, Bytes, Incoming};
use tracing::Instrument as _;

use super::auth::Grant;
use super::body::{COPIES, announced, post_checked, read_body};
use super::connection::Ends;
use super::reply::{self, ResponseBody};
use super::service::{BoxError, ResponseFuture, RpcShared, http_services, request_span, with_tag};
use crate::dispatch::{Context, Methods};
use crate::limits::{Held, ServerBudget};
use crate::peer::PeerConfig;
use crate::server::{OriginPolicy, ShutdownHandle, Tracked};
use crate::transport::{RequestTag, Transport};

/// Names the request bodies an endpoint reads: hyper's, or any tower stack's whose error boxes.
pub trait RequestBody: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> RequestBody for B where B: Body<Data: Send, Error: Into<BoxError>> + Send + 'static {}

/// Answers the HTTP requests to one path: a protocol carried over HTTP (MCP's Streamable HTTP,
/// A2A, a protocol of your own), mounted on an [`HttpServer`](super::HttpServer) with
/// [`endpoint`](super::HttpServerBuilder::endpoint), beside `/rpc` and `/ws`, or served alone with
/// [`HttpServer::service_for`](super::HttpServer::service_for).
///
/// The server does for an endpoint what it does for its own JSON-RPC path, before the endpoint
/// sees the request, in this order:
///
/// | step | what happens |
/// | --- | --- |
/// | a shutdown has begun | `503`, `-32000`, `Connection: close` |
/// | the request is tagged | its `x-request-id` (or one made up) is the request's tag, recorded in its `tracing` span `http` and sent back on the reply |
/// | the origin policy (unless [`Endpoint::public`]) | `403` for an `Origin` or `Host` the server's [`OriginPolicy`](crate::server::OriginPolicy) refuses |
/// | the bearer token (unless [`Endpoint::public`]) | `401` without one [`bearer_auth`](super::HttpServerBuilder::bearer_auth) takes; the identity it gives goes in the contexts the endpoint makes ([`EndpointRequest::context`]) |
/// | the endpoint's [`serve`](Endpoint::serve) | its reply, counted by the shutdown (which waits for it) as long as the [`EndpointRequest`] lives |
///
/// The endpoint reads a `POST`'s body with [`EndpointRequest::read_post`], under the server's
/// `max_message_size`, `body_read_timeout` and byte budget; runs requests on
/// [`EndpointRequest::methods`]; answers JSON ([`reply`](super::reply)), a refusal, or an event
/// stream ([`sse`](super::sse)) whose connection has the server's limits
/// ([`EndpointRequest::stream_config`]).
///
/// ```
/// use jrpc_runtime::http::{Endpoint, EndpointRequest, HttpServer, RequestBody, reply};
/// use jrpc_runtime::{Context, Methods, RpcError};
/// use http::{Request, Response, StatusCode};
///
/// /// A toy protocol: a `POST` of one JSON-RPC request whose answer is wrapped in `{"answer": ...}`.
/// struct Wrapped;
///
/// impl Endpoint for Wrapped {
///     fn serve<B: RequestBody>(
///         &self,
///         req: Request<B>,
///         request: EndpointRequest,
///     ) -> impl Future<Output = Response<reply::ResponseBody>> + Send + 'static {
///         async move {
///             let post = match request.read_post(req).await {
///                 Ok(post) => post,
///                 Err(refused) => return refused,
///             };
///             let Ok(text) = std::str::from_utf8(&post.body) else {
///                 return reply::not_utf8();
///             };
///             let ctx = request.context(post.parts.headers.clone());
///             let answer = request.methods().handle_in(text, &ctx).await.unwrap_or_default();
///             reply::json(StatusCode::OK, format!(r#"{{"answer":{answer}}}"#).into())
///         }
///     }
/// }
///
/// let mut methods = Methods::new();
/// methods.register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move { Ok::<_, RpcError>(a + b) })?;
/// let server = HttpServer::builder(methods).endpoint("/wrapped", Wrapped).build()?;
/// # drop(server);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Endpoint: Send + Sync + 'static {
    /// Answers `req`, any method; `request` holds what the server knows of it and the limits it
    /// is served under, and counts it for a graceful shutdown until dropped.
    ///
    /// The reply's `x-request-id` is set by the server; an endpoint that leaves a body unread
    /// should ask the client to close the connection ([`reply::closing`]).
    fn serve<B: RequestBody>(
        &self,
        req: Request<B>,
        request: EndpointRequest,
    ) -> impl Future<Output = Response<ResponseBody>> + Send + 'static;

    /// Returns whether requests reach the endpoint without the server's bearer token (default
    /// `false`): metadata a client reads before it has a token (an OAuth protected resource's).
    fn public(&self) -> bool {
        false
    }
}

impl<E: Endpoint> Endpoint for Arc<E> {
    fn serve<B: RequestBody>(
        &self,
        req: Request<B>,
        request: EndpointRequest,
    ) -> impl Future<Output = Response<ResponseBody>> + Send + 'static {
        (**self).serve(req, request)
    }

    fn public(&self) -> bool {
        (**self).public()
    }
}

/// Holds what the server knows of a request to an [`Endpoint`], and the limits it serves it under.
/// It counts the request for a graceful shutdown until dropped: hold it until the reply is made (an
/// event stream's task may hold it to its end).
pub struct EndpointRequest {
    shared: Arc<RpcShared>,
    tag: RequestTag,
    peer_addr: Option<SocketAddr>,
    grant: Option<Grant>,
    _in_flight: Tracked,
}

impl fmt::Debug for EndpointRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointRequest")
            .field("request_id", &self.request_id())
            .field("peer_addr", &self.peer_addr)
            .finish_non_exhaustive()
    }
}

/// Holds a `POST` read whole by [`EndpointRequest::read_post`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Post {
    /// The request's head.
    pub parts: Parts,
    /// Its body.
    pub body: Bytes,
    /// Its room in the server's byte budget (the body and its params decoded): given back when
    /// dropped, once the answer is made.
    pub held: Held,
}

impl EndpointRequest {
    /// Returns the request's tag: its `x-request-id` when it is 1 to 128 characters of
    /// `A-Z a-z 0-9 - _ . : / + = @`, else 16 hex digits made up.
    pub fn request_id(&self) -> &str {
        self.tag.as_str()
    }

    /// Returns the client's address, when the server knows it.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer_addr
    }

    /// Returns the server's table, with its `handler_timeout`, `batches` and
    /// `batch_concurrency` set.
    pub fn methods(&self) -> &Methods {
        &self.shared.methods
    }

    /// Returns the largest body taken and answer sent, in bytes (`max_message_size`).
    pub fn max_message_size(&self) -> usize {
        self.shared.max_message_size
    }

    /// Returns the byte budget the server's connections share.
    pub fn budget(&self) -> &Arc<ServerBudget> {
        &self.shared.budget
    }

    /// Returns the settings an event stream's connection runs with: the server's watermark,
    /// queue, call timeout and budget, pushes that never wait for room.
    pub fn stream_config(&self) -> &PeerConfig {
        &self.shared.streams
    }

    /// Returns a handle on the server's shutdown: whether one has begun, and a future that
    /// resolves when it does.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(&self.shared.shutdown))
    }

    /// Reads a `POST`'s JSON body whole: its headers checked (a JSON content type or none, no
    /// announced length over `max_message_size`), then the body waits for room in the server's
    /// byte budget, and is read within `body_read_timeout`, at most `max_message_size` bytes.
    ///
    /// # Errors
    ///
    /// The reply refusing it, to send as it is: `415`, `413`, `400` (a body that broke off) or
    /// `408`, each with a JSON-RPC error envelope. The method is not checked.
    pub async fn read_post<B: RequestBody>(
        &self,
        req: Request<B>,
    ) -> Result<Post, Response<ResponseBody>> {
        let limit = self.shared.max_message_size;
        // The origin policy was applied before the endpoint saw the request.
        post_checked(&req, limit, &OriginPolicy::ANY, false)?;
        let (parts, body) = req.into_parts();
        let mut held = self
            .shared
            .budget
            .take(announced(&body, limit) * COPIES)
            .await;
        let timeout = self.shared.body_read_timeout;
        let body = read_body(body, limit, timeout, Some(&mut held)).await?;
        Ok(Post { parts, body, held })
    }

    /// Returns the context of a handler that serves this request: [`Transport::Http`], the
    /// request's tag, `headers` (and the trace their `traceparent` names), the client's address,
    /// the identity the bearer token gave, and answers up to `max_message_size`.
    pub fn context(&self, headers: HeaderMap) -> Context {
        let mut ctx = Context::new(Transport::Http)
            .with_answer_limit(self.shared.max_message_size)
            .with_tag(self.tag.clone())
            .with_headers(headers);
        if let Some(grant) = &self.grant {
            ctx = grant.clone().apply(ctx);
        }
        if let Some(addr) = self.peer_addr {
            ctx = ctx.with_peer_addr(addr);
        }
        ctx
    }
}

/// Answers `req` with `endpoint` as [`Endpoint`] says, the answer handed to
/// [`Ends::answered`] with `ends`.
pub(crate) fn respond<E: Endpoint, B: RequestBody>(
    endpoint: &E,
    shared: &Arc<RpcShared>,
    Connection {
        peer_addr,
        loopback,
    }: Connection,
    req: Request<B>,
    ends: Option<Ends>,
) -> ResponseFuture {
    let tags = &shared.tags;
    let tag = tags.tag(req.headers());
    let reply_tag = tags.reply_value(&tag);
    // Held until the answer is ready, so that a shutdown waits for it.
    let Some(in_flight) = shared.shutdown.track_call() else {
        let res = with_tag(reply::unavailable(), reply_tag);
        return Box::pin(std::future::ready(Ok(Ends::answered(ends, res))));
    };
    let public = endpoint.public();
    if !public && let Some(refusal) = shared.policy.refusal(req.headers(), req.uri(), loopback) {
        let res = with_tag(reply::unread(&req, refusal), reply_tag);
        return Box::pin(std::future::ready(Ok(Ends::answered(ends, res))));
    }
    let grant = match &shared.auth {
        Some(auth) if !public => match auth.check(req.headers()) {
            Ok(grant) => Some(grant),
            Err(refusal) => {
                let res = with_tag(reply::unread(&req, *refusal), reply_tag);
                return Box::pin(std::future::ready(Ok(Ends::answered(ends, res))));
            }
        },
        _ => None,
    };
    let span = request_span(&tag, peer_addr);
    let request = EndpointRequest {
        shared: Arc::clone(shared),
        tag,
        peer_addr,
        grant,
        _in_flight: in_flight,
    };
    let answer = endpoint.serve(req, request);
    let answer = async move {
        let res = answer.await;
        Ok(Ends::answered(ends, with_tag(res, reply_tag)))
    };
    // Entering a disabled span on every poll is measurable per request.
    Box::pin(match span.is_disabled() {
        true => Either::Left(answer),
        false => Either::Right(answer.instrument(span)),
    })
}

/// Holds what a connection tells of itself to the requests it carries.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Connection {
    /// The client's address, when known.
    pub(crate) peer_addr: Option<SocketAddr>,
    /// Whether the socket is bound to a loopback address (the origin policy's `Host` rule).
    pub(crate) loopback: bool,
}

/// Names an [`Endpoint`] as the server's connections serve it: with hyper's bodies, behind one
/// type, answering as [`respond`] does.
pub(crate) type Mounted = dyn Fn(&Arc<RpcShared>, Connection, Request<Incoming>, Option<Ends>) -> ResponseFuture
    + Send
    + Sync;

/// Returns `endpoint` as the server's connections serve it.
pub(crate) fn mounted(endpoint: impl Endpoint) -> Arc<Mounted> {
    Arc::new(move |shared, conn, req, ends| respond(&endpoint, shared, conn, req, ends))
}

/// Serves an [`Endpoint`] as a service: a [`tower_service::Service`] (to mount in axum with
/// `Router::route_service`) and a [`hyper::service::Service`], for request bodies of any
/// [`RequestBody`] type, made by [`HttpServer::service_for`](super::HttpServer::service_for). It
/// serves whatever reaches it (it does not route by path), under the server's limits, budget,
/// bearer authentication and shutdown, and never fails.
///
/// Cloning is cheap: clones share the endpoint and the server's state.
pub struct EndpointService<E> {
    endpoint: Arc<E>,
    shared: Arc<RpcShared>,
    peer_addr: Option<SocketAddr>,
}

impl<E> Clone for EndpointService<E> {
    fn clone(&self) -> Self {
        Self {
            endpoint: Arc::clone(&self.endpoint),
            shared: Arc::clone(&self.shared),
            peer_addr: self.peer_addr,
        }
    }
}

impl<E> fmt::Debug for EndpointService<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointService")
            .field("peer_addr", &self.peer_addr)
            .finish_non_exhaustive()
    }
}

impl<E: Endpoint> EndpointService<E> {
    pub(crate) fn new(endpoint: Arc<E>, shared: Arc<RpcShared>) -> Self {
        Self {
            endpoint,
            shared,
            peer_addr: None,
        }
    }

    /// Returns this service, telling the endpoint that its requests come from `addr`; for a
    /// service that serves one connection.
    #[must_use]
    pub fn with_peer_addr(mut self, addr: SocketAddr) -> Self {
        self.peer_addr = Some(addr);
        self
    }

    /// Returns the endpoint it serves.
    pub fn endpoint(&self) -> &Arc<E> {
        &self.endpoint
    }

    /// Returns a handle to shut the service (and the server it came from) down gracefully.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(&self.shared.shutdown))
    }
}

impl<E: Endpoint> EndpointService<E> {
    /// Answers one request; what the `Service` impls call.
    fn boxed_respond<B: RequestBody>(&self, req: Request<B>) -> ResponseFuture {
        let conn = Connection {
            peer_addr: self.peer_addr,
            loopback: false,
        };
        respond(&*self.endpoint, &self.shared, conn, req, None)
    }
}

http_services!(EndpointService<E>, E: Endpoint);
