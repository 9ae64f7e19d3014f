//! Serves the JSON-RPC endpoint as a service: one HTTP request in, one HTTP response out.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(feature = "ws")]
use ::http::HeaderMap;
use ::http::request::Parts;
use ::http::{HeaderValue, Method, Request, Response, Version};
use futures_util::future::Either;
use hyper::body::Body;

use super::auth::{BearerAuth, Grant, Refusal};
use super::body::{COPIES, announced, post_checked, read_body};
use super::connection::Ends;
use super::endpoint::RequestBody;
use super::events::EventLog;
use super::reply::{self, ResponseBody};
use super::request_id::{Tags, x_request_id};
use super::sse::{self, Replies};
use crate::context::trace_of;
use crate::dispatch::{Context, ContextRoom, Methods, too_large_answer};
use crate::limits::ServerBudget;
use crate::peer::PeerConfig;
use crate::server::{OriginPolicy, Shutdown, ShutdownHandle, Tracked};
use crate::transport::RequestTag;
use crate::transport::Transport;
use crate::wire::{id_of, incoming};

/// Names the error type request bodies may fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Names the future of an HTTP endpoint's `Service::call`: boxed, as tower and hyper take it.
pub(crate) type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

/// Names what [`HttpServerBuilder::map_context`] takes.
type ContextFn = dyn Fn(&::http::request::Parts, Context) -> Context + Send + Sync;

/// Holds the application's addition to each request's [`Context`]; see
/// [`HttpServerBuilder::map_context`].
#[derive(Clone)]
pub(crate) struct ContextHook(pub(crate) Arc<ContextFn>);

impl fmt::Debug for ContextHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContextHook(..)")
    }
}

/// Holds what [`RpcService::checked`] lets through: whether the request asks for an event stream,
/// whether it carries a `traceparent`, its tag, and the identity its token gave.
type Checked = (bool, bool, RequestTag, Option<Grant>);

/// Holds what a request goes through before it runs (the bearer token it must carry, what the
/// application adds to its context), and which tag its reply carries back.
#[derive(Clone, Debug, Default)]
pub(crate) struct Admission {
    /// Which pages may reach the server.
    pub(crate) policy: OriginPolicy,
    pub(crate) auth: Option<BearerAuth>,
    pub(crate) context_hook: Option<ContextHook>,
    /// Whether a reply carries a made-up `x-request-id` too.
    pub(crate) always_send_request_id: bool,
}

/// Answers a `POST` carrying a JSON-RPC body: the JSON-RPC endpoint.
///
/// It is a [`tower_service::Service`] (so it mounts in axum with `Router::route_service`) and a
/// [`hyper::service::Service`] (so it serves a hyper connection directly), for request bodies of
/// any [`Body`] type. It never fails: every problem is an HTTP status with a JSON-RPC error
/// envelope. It does not route by path: whatever reaches it is taken as a JSON-RPC request.
/// [`HttpServer`](super::HttpServer) adds the path routing, the WebSocket upgrade and the
/// connection handling.
///
/// | request | reply |
/// | --- | --- |
/// | a call, or a batch with a call | `200` with the answer; with `Accept: text/event-stream`, an event stream of what the handler sends, then the answer ([module docs](super#sse-answers)) |
/// | notifications only | `204`, no body |
/// | not `POST` | `405`, `Allow: POST`, `-32600` |
/// | a content type that is not JSON | `415`, `-32600` |
/// | a body over `max_message_size` | `413`, `-32600` |
/// | a body that could not be read | `400`, `-32600` |
/// | during a shutdown | `503`, `-32000`, `Connection: close` |
///
/// Every reply but `204` and an event stream has a body of `content-type: application/json`: the answer, or an
/// envelope `{"jsonrpc":"2.0","error":{"code":..,"message":..,"data":..},"id":null}` whose `data`
/// says what went wrong.
///
/// JSON is `application/json` (with any parameters, such as `charset`) or any
/// `application/*+json`. A request **without** a content type is taken too: small clients
/// (shell scripts, embedded devices, some JSON-RPC libraries) often leave it out, the body is
/// parsed as JSON whatever the header says, and a body that is not JSON is answered `-32700`
/// anyway, so refusing it would protect nothing.
///
/// Each request's handler sees a [`Context`] with [`Transport::Http`], the request's headers, the
/// peer's address (when known: [`HttpServer`](super::HttpServer) sets it; a service mounted in
/// another server gets it only from [`with_peer_addr`](Self::with_peer_addr)), and the request
/// tag: the request's `x-request-id` when it is 1 to 128 characters of
/// `A-Z a-z 0-9 - _ . : / + = @`, else 16 hex digits made up here. The tag is recorded in the
/// request's `tracing` span (`http`, field `request_id`); the request's own is sent back in
/// `x-request-id`, one made up only with
/// [`always_send_request_id`](super::HttpServerBuilder::always_send_request_id).
/// [`HttpServerBuilder::map_context`](super::HttpServerBuilder::map_context) adds to it (the user
/// an authentication layer found, for one).
///
/// Cloning is cheap: clones share the table, the limits and the shutdown state.
#[derive(Clone, Debug)]
pub struct RpcService {
    shared: Arc<RpcShared>,
    peer_addr: Option<SocketAddr>,
    /// Serving a connection to a socket bound to a loopback address: the origin policy's `Host`
    /// rule for such servers applies.
    loopback: bool,
    /// Serving an [`HttpServer`](super::HttpServer)'s own connections: no code of the
    /// application sees its replies.
    own: bool,
}

/// Holds what the clones of an [`RpcService`] share, and the endpoints mounted beside it.
#[derive(Debug)]
pub(crate) struct RpcShared {
    pub(crate) methods: Methods,
    pub(crate) max_message_size: usize,
    /// The byte budget the server's connections share: bodies wait for it, answers count in it.
    pub(crate) budget: Arc<ServerBudget>,
    pub(crate) body_read_timeout: Duration,
    pub(crate) shutdown: Arc<Shutdown>,
    pub(crate) tags: Tags,
    context_hook: Option<ContextHook>,
    /// Which pages may reach the server.
    pub(crate) policy: OriginPolicy,
    /// What every request must carry, when set.
    pub(crate) auth: Option<BearerAuth>,
    /// The connection settings of an SSE answer.
    pub(crate) streams: PeerConfig,
    /// Where SSE answers' events wait to be sent (none is kept after).
    log: Arc<EventLog>,
    next_stream: AtomicU64,
    /// Where answers to the calls of SSE answers' handlers go.
    replies: Arc<Replies>,
}

impl RpcService {
    pub(crate) fn new(
        methods: Methods,
        max_message_size: usize,
        budget: Arc<ServerBudget>,
        body_read_timeout: Duration,
        shutdown: Arc<Shutdown>,
        admission: Admission,
        streams: PeerConfig,
    ) -> Self {
        let Admission {
            policy,
            auth,
            context_hook,
            always_send_request_id,
        } = admission;
        Self {
            shared: Arc::new(RpcShared {
                methods,
                max_message_size,
                budget,
                body_read_timeout,
                shutdown,
                tags: Tags::new(always_send_request_id),
                context_hook,
                policy,
                auth,
                streams,
                log: EventLog::new(0),
                next_stream: AtomicU64::new(0),
                replies: Replies::new(),
            }),
            peer_addr: None,
            loopback: false,
            own: false,
        }
    }

    /// Returns this service, telling handlers that its requests come from `addr`; for a service
    /// that serves one connection.
    #[must_use]
    pub fn with_peer_addr(mut self, addr: SocketAddr) -> Self {
        self.peer_addr = Some(addr);
        self
    }

    /// Returns this service, serving an [`HttpServer`](super::HttpServer)'s own connections.
    pub(crate) fn own(mut self) -> Self {
        self.own = true;
        self
    }

    /// Returns a handle to shut this endpoint (and the [`HttpServer`](super::HttpServer) it came
    /// from) down gracefully.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(&self.shared.shutdown))
    }

    pub(crate) fn shutdown(&self) -> &Arc<Shutdown> {
        &self.shared.shutdown
    }

    pub(crate) fn shared(&self) -> &Arc<RpcShared> {
        &self.shared
    }

    pub(crate) fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer_addr
    }

    /// Returns this service, serving a connection to a socket bound to a loopback address when
    /// `loopback` holds.
    pub(crate) fn bound_to_loopback(mut self, loopback: bool) -> Self {
        self.loopback = loopback;
        self
    }

    /// Returns whether it serves a connection to a socket bound to a loopback address.
    pub(crate) fn loopback(&self) -> bool {
        self.loopback
    }

    pub(crate) fn tags(&self) -> &Tags {
        &self.shared.tags
    }

    /// Returns the context a WebSocket's calls start from, made once of the upgrade request: the
    /// transport, the request tag, the peer's address, the identity `bearer_auth` found (left in
    /// the request's extensions by [`admit`](Self::admit)), the headers `headers` makes of the
    /// request's (once `map_context` has read them), and what `map_context` adds. (An HTTP
    /// request's is made in [`answer`](Self::answer).)
    #[cfg(feature = "ws")]
    #[inline]
    pub(crate) fn context(
        &self,
        transport: Transport,
        parts: &mut Parts,
        tag: RequestTag,
        headers: fn(&mut HeaderMap) -> HeaderMap,
        trace: Option<Box<crate::dispatch::TraceContext>>,
    ) -> Context {
        if self.shared.context_hook.is_none() && self.shared.auth.is_none() {
            let (headers, limit) = (
                Some(headers(&mut parts.headers)),
                self.shared.max_message_size,
            );
            let peer = self.peer_addr;
            return Context::of_request(None, transport, peer, Some(tag), headers, trace, limit);
        }
        self.context_with(transport, parts, tag, headers, trace)
    }

    /// Does what [`context`](Self::context) does, with an identity or `map_context` to add.
    #[cfg(feature = "ws")]
    #[cold]
    fn context_with(
        &self,
        transport: Transport,
        parts: &mut Parts,
        tag: RequestTag,
        headers: fn(&mut HeaderMap) -> HeaderMap,
        trace: Option<Box<crate::dispatch::TraceContext>>,
    ) -> Context {
        let limit = self.shared.max_message_size;
        let peer = self.peer_addr;
        let mut ctx = Context::of_request(None, transport, peer, Some(tag), None, trace, limit);
        if let Some(grant) = parts.extensions.get::<Grant>() {
            ctx = grant.clone().apply(ctx);
        }
        if let Some(hook) = &self.shared.context_hook {
            ctx = (hook.0)(parts, ctx);
        }
        // Set through the one slot: the trace was read already (the hook may set one).
        ctx.with_header_slot(headers(&mut parts.headers))
    }

    /// Lets a request (or a WebSocket upgrade) through when the origin policy allows it and it
    /// carries a token `bearer_auth` takes (or when neither is asked for): the identity the
    /// token gives goes in its extensions, for [`context`](Self::context). Else the `403` or
    /// `401` that refuses it.
    pub(crate) fn admit<B>(&self, req: &mut Request<B>) -> Result<(), Box<Refusal>> {
        self.admit_as(req, false)
    }

    /// Does what [`admit`](Self::admit) does, for a WebSocket upgrade, whose bearer token may come
    /// as the `access_token` query parameter, which a browser's `WebSocket` can send.
    #[cfg(feature = "ws")]
    pub(crate) fn admit_upgrade<B>(&self, req: &mut Request<B>) -> Result<(), Box<Refusal>> {
        self.admit_as(req, true)
    }

    /// Does what [`admit`](Self::admit) does, reading the query's `access_token` too for an
    /// `upgrade`.
    fn admit_as<B>(&self, req: &mut Request<B>, upgrade: bool) -> Result<(), Box<Refusal>> {
        let policy = &self.shared.policy;
        if let Some(refusal) = policy.refusal(req.headers(), req.uri(), self.loopback) {
            return Err(Box::new(refusal));
        }
        let grant = match &self.shared.auth {
            None => return Ok(()),
            Some(auth) if upgrade => auth.check_upgrade(req.headers(), req.uri())?,
            Some(auth) => auth.check(req.headers())?,
        };
        req.extensions_mut().insert(grant);
        Ok(())
    }

    /// Returns the identity the request's bearer token gives (`None` when no token is asked
    /// for), or the `401` that refuses it.
    #[inline]
    fn authenticate<B>(&self, req: &Request<B>) -> Result<Option<Grant>, Box<Refusal>> {
        match &self.shared.auth {
            None => Ok(None),
            Some(auth) => auth.check(req.headers()).map(Some),
        }
    }

    /// Returns the value of the `x-request-id` of a reply to a request of `version` tagged `tag`.
    ///
    /// On this server's own HTTP/2 connections, it is marked sensitive, which HTTP/2's header
    /// compression (HPACK) never indexes: every reply has a tag of its own, and indexed, each
    /// would be looked for among the tags indexed before (h2 compares it with each: its table
    /// is hashed by name only) and then added, pushing entries that do repeat out of the table.
    /// Only there: a sensitive value prints as `Sensitive` in `Debug`, which a middleware
    /// logging a mounted service's replies would show.
    #[inline]
    fn reply_tag(&self, tag: &RequestTag, version: Version) -> Option<HeaderValue> {
        let mut value = self.shared.tags.reply_value(tag)?;
        if self.own && version == Version::HTTP_2 {
            value.set_sensitive(true);
        }
        Some(value)
    }

    /// Returns an HTTP request's context: its transport, peer, tag, headers, trace and answer
    /// limit, and the identity a bearer token gave (which `admit` left in the request's
    /// extensions). With `map_context`, which runs once the body is read and reads the request's
    /// parts before the context takes the headers, the parts too: kept boxed, so that a request's
    /// future without the hook does not carry their room.
    ///
    /// Made in `room`, a connection's, when it has one; and kept there for the next request
    /// unless `map_context` is still to change it.
    #[inline]
    fn request_context(
        &self,
        mut parts: Parts,
        (tag, grant): (RequestTag, Option<Grant>),
        trace: Option<Box<crate::dispatch::TraceContext>>,
        room: Option<&ContextRoom>,
    ) -> (Context, Option<Box<Parts>>) {
        let (headers, hooked) = match self.shared.context_hook {
            None => (Some(std::mem::take(&mut parts.headers)), None),
            Some(_) => (None, Some(Box::new(parts))),
        };
        let (peer, limit, tag) = (self.peer_addr, self.shared.max_message_size, Some(tag));
        let mut ctx = Context::of_request(room, Transport::Http, peer, tag, headers, trace, limit);
        if let Some(grant) = grant {
            ctx = grant.apply(ctx);
        }
        if let (Some(room), None) = (room, &hooked) {
            room.keep(&ctx);
        }
        (ctx, hooked)
    }

    /// Lets a request through to have its body read, or makes the reply that refuses it: its
    /// method, then its headers ([`post_checked`]: the origin policy, the content type and
    /// length), then its bearer token; a refused body is never read. And its tag: `tag` when its
    /// span has it already, else read in the pass over the headers that checked them. Whether it
    /// asks for an event stream, whether it carries a `traceparent`, the tag, and the identity
    /// its token gave.
    #[allow(clippy::result_large_err)] // The refusal is the reply, sent as it is.
    #[inline(always)]
    fn checked<B: Body>(
        &self,
        req: &mut Request<B>,
        tag: Option<RequestTag>,
    ) -> Result<Checked, Response<ResponseBody>> {
        let tags = &self.shared.tags;
        let posted = if *req.method() == Method::POST {
            let shared = &*self.shared;
            post_checked(req, shared.max_message_size, &shared.policy, self.loopback)
        } else {
            match self.admit(req) {
                Err(refusal) => Err(reply::unread(req, *refusal)),
                Ok(()) => Err(reply::unread(req, reply::method_not_allowed(req.method()))),
            }
        };
        let refused = match posted {
            Ok(posted) => {
                let tag = tag.unwrap_or_else(|| tags.tag_of(posted.request_id));
                let (events, traced) = (posted.events, posted.traced);
                match self.authenticate(req) {
                    Ok(grant) => return Ok((events, traced, tag, grant)),
                    Err(refusal) => (reply::unread(req, *refusal), Some(tag)),
                }
            }
            Err(res) => (res, tag),
        };
        let (res, tag) = refused;
        let tag = tag.unwrap_or_else(|| tags.tag(req.headers()));
        Err(with_tag(res, self.reply_tag(&tag, req.version())))
    }

    /// Answers a request, counted by the shutdown as `in_flight` until its answer is ready, the
    /// answer handed to [`Ends::answered`] with `ends`.
    ///
    /// Not an `async fn`: the request is checked and taken apart first, so that its future
    /// (moved whole for every request) holds its parts once (an `async fn` keeps its arguments
    /// twice, and the request whole beside its parts). Inlined into its one caller, which builds
    /// the future in place rather than copying it out of a call.
    #[inline]
    fn answer<B>(
        self,
        mut req: Request<B>,
        tag: Option<RequestTag>,
        in_flight: Tracked,
        ends: Option<Ends>,
        room: Option<&ContextRoom>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, Infallible>> + Send + 'static + use<B>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let (asks_for_events, traced, tag, grant) = match self.checked(&mut req, tag) {
            Ok(checked) => checked,
            Err(res) => return Either::Left(std::future::ready(Ok(Ends::answered(ends, res)))),
        };
        // The reply's `x-request-id`, set where the reply is made: a future around this one to
        // set it would move the reply once more, and poll one more layer.
        let reply_tag = self.reply_tag(&tag, req.version());
        // Read by name only when the pass saw it: the two headers are in no request but a traced
        // one.
        let trace = traced
            .then(|| trace_of(req.headers()))
            .flatten()
            .map(Box::new);
        let (parts, body) = req.into_parts();
        // The context is made here, so that the future holds it rather than what it is made of.
        let (ctx, mut hooked) = self.request_context(parts, (tag, grant), trace, room);
        let shared = self.shared;
        Either::Right(async move {
            let res = 'answered: {
                let (limit, timeout) = (shared.max_message_size, shared.body_read_timeout);
                // The body waits for room in the server's budget before it is read (its socket
                // is not read meanwhile); the wait is not the client's, so the read timeout
                // starts after. The room is for the body and its params decoded ([`COPIES`]),
                // until the answer is made.
                let mut held = shared.budget.take(announced(&body, limit) * COPIES).await;
                let body = match read_body(body, limit, timeout, Some(&mut held)).await {
                    Ok(body) => body,
                    Err(res) => break 'answered res,
                };
                // Read where it lies: the body is usually a slice of the connection's read
                // buffer.
                let Ok(text) = std::str::from_utf8(&body) else {
                    break 'answered reply::not_utf8();
                };
                let events = asks_for_events && sse::has_call(text);
                // An answer to a call a handler made during an SSE answer.
                if !shared.replies.is_empty() && shared.replies.route(text) {
                    break 'answered reply::no_content();
                }
                let ctx = match (&shared.context_hook, hooked.as_deref_mut()) {
                    (Some(hook), Some(parts)) => {
                        // The trace was read already (the hook may set one).
                        (hook.0)(parts, ctx).with_header_slot(std::mem::take(&mut parts.headers))
                    }
                    _ => ctx,
                };
                if events {
                    let stream = shared.next_stream.fetch_add(1, Ordering::Relaxed);
                    let answer = sse::SseAnswer {
                        methods: &shared.methods,
                        log: &shared.log,
                        stream,
                        replies: &shared.replies,
                        config: &shared.streams,
                    };
                    let answered =
                        Box::pin(answer.run(ctx, text.to_owned(), in_flight, sse::Cancel::IfGone))
                            .await;
                    break 'answered sse::reply(answered);
                }
                // `handle_bytes` without the `async fn` around it: started and polled once in
                // place, and only a handler that waits boxed.
                let now = std::future::poll_fn(|cx| {
                    std::task::Poll::Ready(shared.methods.answer_now(text, &ctx, cx))
                });
                let answer = match now.await {
                    Ok(answer) => answer,
                    Err(later) => later.await,
                };
                let Some(answer) = answer else {
                    break 'answered reply::no_content();
                };
                let answer = if answer.len() > shared.max_message_size {
                    too_large_answer_to(text, answer.len(), shared.max_message_size)
                } else {
                    answer
                };
                drop(held);
                // Held to here, so that a shutdown waits for the answer.
                drop(in_flight);
                reply::answer_counted(answer, &shared.budget)
            };
            Ok(Ends::answered(ends, with_tag(res, reply_tag)))
        })
    }
}

/// Returns the answer that replaces one of `bytes`, larger than `limit`, to the request `text`:
/// an error answer to its call, with its id (`null` for a batch).
#[cold]
fn too_large_answer_to(text: &str, bytes: usize, limit: usize) -> Vec<u8> {
    let request = (!incoming::is_batch(text))
        .then(|| incoming::parse_request(text).ok())
        .flatten();
    let method = request.as_ref().map(|req| &*req.method);
    let id = request.as_ref().and_then(|req| req.id).map(id_of);
    too_large_answer(method, id.as_ref(), bytes, limit)
}

/// Returns the `tracing` span a request runs in: `http`, with its tag and (when known) the peer's
/// address.
pub(crate) fn request_span(tag: &RequestTag, peer_addr: Option<SocketAddr>) -> tracing::Span {
    let span = tracing::debug_span!(
        "http",
        request_id = %tag.as_str(),
        peer = tracing::field::Empty
    );
    if let (false, Some(addr)) = (span.is_disabled(), peer_addr) {
        span.record("peer", tracing::field::display(addr));
    }
    span
}

/// Returns `res` with `value` in `x-request-id`: its request's tag as [`Tags::reply_value`] gives
/// it.
#[inline]
pub(crate) fn with_tag(
    mut res: Response<ResponseBody>,
    value: Option<HeaderValue>,
) -> Response<ResponseBody> {
    if let Some(value) = value {
        res.headers_mut().insert(x_request_id(), value);
    }
    res
}

impl RpcService {
    /// Answers one HTTP request, the answer handed to [`Ends::answered`] with `ends`; its
    /// context made in `room`, its connection's, when it has one.
    #[inline(always)]
    pub(crate) fn respond<B>(
        &self,
        req: Request<B>,
        ends: Option<Ends>,
        room: Option<&ContextRoom>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, Infallible>> + Send + 'static + use<B>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        use tracing::Instrument as _;
        // Held until the answer is ready, so that a shutdown waits for it.
        let Some(in_flight) = self.shared.shutdown.track_call() else {
            let tag = self.shared.tags.tag(req.headers());
            let value = self.shared.tags.reply_value(&tag);
            let res = with_tag(reply::unavailable(), value);
            return Either::Left(std::future::ready(Ok(Ends::answered(ends, res))));
        };
        // The span only when a subscriber may want it, with the request's tag read here; else
        // the answer reads the tag in its own pass over the headers.
        let (tag, span) = if tracing::level_enabled!(tracing::Level::DEBUG) {
            let tag = self.shared.tags.tag(req.headers());
            let span = request_span(&tag, self.peer_addr);
            (Some(tag), Some(span).filter(|span| !span.is_disabled()))
        } else {
            (None, None)
        };
        // The answer sets the tag on its reply itself (no future around it to do so).
        let answer = self.clone().answer(req, tag, in_flight, ends, room);
        // Entering a disabled span on every poll is measurable per request.
        Either::Right(match span {
            None => Either::Left(answer),
            Some(span) => Either::Right(answer.instrument(span)),
        })
    }

    /// Answers one HTTP request; what the `Service` impls call.
    #[inline(always)]
    fn boxed_respond<B: RequestBody>(&self, req: Request<B>) -> ResponseFuture {
        Box::pin(self.respond(req, None, None))
    }
}

/// Implements tower's `Service` (always ready: limits apply per request, there is no queue)
/// and hyper's for an HTTP endpoint type, each answering with the type's `boxed_respond`.
macro_rules! http_services {
    ($ty:ty $(, $g:ident: $bound:path)?) => {
        impl<B: super::RequestBody $(, $g: $bound)?> tower_service::Service<::http::Request<B>>
            for $ty
        {
            type Response = ::http::Response<super::reply::ResponseBody>;
            type Error = ::std::convert::Infallible;
            type Future = super::service::ResponseFuture;

            fn poll_ready(
                &mut self,
                _cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<Result<(), Self::Error>> {
                ::std::task::Poll::Ready(Ok(()))
            }

            fn call(&mut self, req: ::http::Request<B>) -> Self::Future {
                self.boxed_respond(req)
            }
        }

        impl<B: super::RequestBody $(, $g: $bound)?> hyper::service::Service<::http::Request<B>>
            for $ty
        {
            type Response = ::http::Response<super::reply::ResponseBody>;
            type Error = ::std::convert::Infallible;
            type Future = super::service::ResponseFuture;

            #[inline(always)]
            fn call(&self, req: ::http::Request<B>) -> Self::Future {
                self.boxed_respond(req)
            }
        }
    };
}
pub(super) use http_services;

http_services!(RpcService);

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::time::Duration;

    use ::http::StatusCode;
    use http_body_util::{BodyExt as _, Full, StreamBody};
    use hyper::body::{Bytes, Frame};
    use tower_service::Service as _;

    use super::*;
    use crate::wire::RpcError;

    fn service(max_message_size: usize) -> RpcService {
        let mut methods = Methods::new();
        methods
            .register("echo_tag", &[], |(): (), ctx: Context| async move {
                Ok::<_, RpcError>(ctx.request_tag().map(str::to_owned))
            })
            .unwrap();
        RpcService::new(
            methods,
            max_message_size,
            ServerBudget::new(1 << 20),
            Duration::from_secs(30),
            Shutdown::new(Duration::from_secs(1)),
            super::Admission::default(),
            sse::stream_config(
                crate::limits::Limits::new()
                    .max_message_size(max_message_size)
                    .queue(16)
                    .call_timeout(None),
            )
            .unwrap(),
        )
    }

    async fn body_text(res: Response<ResponseBody>) -> String {
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn serves_as_a_tower_service() {
        let mut svc = service(1024);
        let req = Request::post("/anywhere")
            .header("x-request-id", "abc")
            .body(Full::new(Bytes::from_static(
                br#"{"jsonrpc":"2.0","method":"echo_tag","id":1}"#,
            )))
            .unwrap();
        let res = svc.call(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["x-request-id"], "abc");
        assert_eq!(
            body_text(res).await,
            r#"{"jsonrpc":"2.0","result":"abc","id":1}"#
        );
    }

    /// Checks that a server's own HTTP/2 replies carry the tag as a value HPACK never indexes;
    /// HTTP/1.1 replies, and a mounted service's, carry it plainly.
    #[tokio::test]
    async fn marks_the_tag_sensitive_on_its_own_http2_connections() {
        let body = br#"{"jsonrpc":"2.0","method":"echo_tag","id":1}"#;
        for (own, version, sensitive) in [
            (true, Version::HTTP_2, true),
            (true, Version::HTTP_11, false),
            (false, Version::HTTP_2, false),
        ] {
            let mut svc = service(1024);
            if own {
                svc = svc.own();
            }
            let req = Request::post("/rpc")
                .version(version)
                .header("x-request-id", "abc")
                .body(Full::new(Bytes::from_static(body)))
                .unwrap();
            let res = svc.call(req).await.unwrap();
            let tag = &res.headers()["x-request-id"];
            assert_eq!(tag.as_bytes(), b"abc");
            assert_eq!(tag.is_sensitive(), sensitive, "{own} {version:?}");
        }
    }

    #[tokio::test]
    async fn counts_a_streamed_body_against_the_cap() {
        let chunks = (0..8).map(|_| Ok::<_, Infallible>(Frame::data(Bytes::from(vec![b' '; 100]))));
        let body = StreamBody::new(futures_util::stream::iter(chunks));
        let res = service(500)
            .boxed_respond(Request::post("/").body(body).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(body_text(res).await.contains("limit of 500 bytes"));
    }
}
