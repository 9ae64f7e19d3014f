//! Holds what a handler knows about the request it serves.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::cancel::Slot;
use super::extensions::Extensions;
use super::trace::TraceContext;
use crate::transport::{Headers, RequestTag, Transport};
use crate::wire::Id;

/// Tells a handler about its request: the transport, the request id, the peer's address,
/// HTTP headers, the caller's trace, per-connection extensions, the connection's peer handle where
/// the transport stays open, and whether the request was cancelled.
///
/// Transports build one `Context` per connection (or per HTTP request) and the dispatcher stamps
/// each request's id on a cheap clone. A method takes it as `ctx: &Context`:
///
/// ```
/// use jrpc_runtime::{Context, Transport};
///
/// #[derive(Clone)]
/// struct User(&'static str);
///
/// let ctx = Context::new(Transport::Http).with_extension(User("ada"));
/// assert_eq!(ctx.transport().as_str(), "http");
/// assert_eq!(ctx.extension::<User>().map(|u| u.0), Some("ada"));
/// assert!(ctx.id().is_none());
/// ```
pub struct Context {
    /// The request's id: `None` in a context that is no request's (a connection's), `Some(None)`
    /// for a notification.
    id: Option<Option<Id>>,
    shared: Arc<Shared>,
    /// The request's cancellation (see [`cancelled`](Self::cancelled)).
    cancel: Slot,
}

#[derive(Clone)]
struct Shared {
    transport: Transport,
    peer_addr: Option<SocketAddr>,
    /// The request's (or the upgrade's) HTTP headers, where the transport has them.
    headers: Option<Headers>,
    request_tag: Option<RequestTag>,
    /// The caller's trace, where the transport read one; boxed, as most requests carry none.
    trace: Option<Box<TraceContext>>,
    extensions: Extensions,
    /// The largest answer the transport sends, in bytes: a result is written up to it.
    answer_limit: usize,
}

impl Context {
    /// Returns a context for requests arriving on `transport`.
    pub fn new(transport: Transport) -> Self {
        Self::of_request(None, transport, None, None, None, None, usize::MAX)
    }

    /// Returns a context made whole at once (one allocation, and nothing to make unique after):
    /// what a transport builds for each request of a connection, whose answers it sends up to
    /// `answer_limit` bytes. Made in `room`'s last context when nothing else holds it any more
    /// (one allocation less, for each request of a keep-alive connection).
    #[allow(clippy::too_many_arguments)] // What a context is made of, and where to make it.
    #[inline]
    pub(crate) fn of_request(
        room: Option<&ContextRoom>,
        transport: Transport,
        peer_addr: Option<SocketAddr>,
        request_tag: Option<RequestTag>,
        headers: Option<Headers>,
        trace: Option<Box<TraceContext>>,
        answer_limit: usize,
    ) -> Self {
        let shared = Shared {
            transport,
            peer_addr,
            headers,
            request_tag,
            trace,
            extensions: Extensions::default(),
            answer_limit,
        };
        let kept = room.and_then(|room| room.0.take());
        let shared = match kept {
            Some(mut kept) => match Arc::get_mut(&mut kept) {
                Some(unheld) => {
                    // The last request's context goes here, its headers with it.
                    *unheld = shared;
                    kept
                }
                None => Arc::new(shared),
            },
            None => Arc::new(shared),
        };
        Self {
            id: None,
            shared,
            cancel: Slot::new(),
        }
    }

    /// Sets the peer's network address.
    #[must_use]
    pub fn with_peer_addr(mut self, addr: SocketAddr) -> Self {
        Arc::make_mut(&mut self.shared).peer_addr = Some(addr);
        self
    }

    /// Sets the headers of the request (or of the WebSocket upgrade).
    #[must_use]
    #[allow(dead_code, reason = "set by the transports that have headers")]
    pub(crate) fn with_header_slot(mut self, headers: Headers) -> Self {
        Arc::make_mut(&mut self.shared).headers = Some(headers);
        self
    }

    /// Sets the request tag (HTTP `x-request-id`) that logs and replies carry.
    #[must_use]
    pub fn with_request_tag(self, tag: impl Into<Arc<str>>) -> Self {
        self.with_tag(RequestTag::Text(tag.into()))
    }

    /// Sets the request tag to one a transport made.
    #[must_use]
    pub(crate) fn with_tag(mut self, tag: RequestTag) -> Self {
        Arc::make_mut(&mut self.shared).request_tag = Some(tag);
        self
    }

    /// Adds a typed value, such as the authenticated user of a connection; one value per type.
    #[must_use]
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.shared).extensions.insert(value);
        self
    }

    /// Returns this context for a transport that sends answers of at most `bytes` (its
    /// `max_message_size`): a result is written up to it, and no further.
    #[must_use]
    pub(crate) fn with_answer_limit(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).answer_limit = bytes;
        self
    }

    /// Returns the largest answer the request's transport sends, in bytes (`usize::MAX` in
    /// process).
    pub(crate) fn answer_limit(&self) -> usize {
        self.shared.answer_limit
    }

    /// Adds a typed value in place (see [`with_extension`](Self::with_extension)).
    pub(crate) fn insert_extension<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.shared).extensions.insert(value);
    }

    /// Returns this context for requests arriving on `transport` instead.
    #[must_use]
    pub(crate) fn with_transport(mut self, transport: Transport) -> Self {
        Arc::make_mut(&mut self.shared).transport = transport;
        self
    }

    /// Sets the caller's trace, which the request's span and log line carry and calls made from
    /// its handler continue (see [`trace`](Self::trace)).
    #[must_use]
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        Arc::make_mut(&mut self.shared).trace = Some(Box::new(trace));
        self
    }

    /// Returns this context stamped with a request's id: the context its handler gets.
    #[inline]
    pub(crate) fn for_request(&self, id: Option<Id>) -> Self {
        Self {
            id: Some(id),
            shared: Arc::clone(&self.shared),
            cancel: Slot::new(),
        }
    }

    /// Returns the transport the request arrived on.
    pub fn transport(&self) -> Transport {
        self.shared.transport
    }

    /// Returns the request's id; `None` for a notification.
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref().and_then(Option::as_ref)
    }

    /// Returns the peer's network address, where the transport has one.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.shared.peer_addr
    }

    /// Returns the headers of the request (or of the WebSocket upgrade), where the transport has
    /// them.
    pub(crate) fn header_slot(&self) -> Option<&Headers> {
        self.shared.headers.as_ref()
    }

    /// Returns the request tag (HTTP `x-request-id`, taken from the request or made up).
    pub fn request_tag(&self) -> Option<&str> {
        self.shared.request_tag.as_ref().map(RequestTag::as_str)
    }

    /// Returns the value of type `T` that the transport or the application attached.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.shared.extensions.get::<T>()
    }

    /// Returns the caller's W3C trace context, where the request carried one: its HTTP request's
    /// (or WebSocket upgrade's) `traceparent` and `tracestate` headers, or an MCP request's
    /// `params._meta`. The request's span and DEBUG line carry its trace id, and the clients a
    /// handler calls through continue it.
    pub fn trace(&self) -> Option<&TraceContext> {
        self.shared.trace.as_deref()
    }

    /// Resolves once the request is cancelled: its caller went away (a dropped call, a closed
    /// connection, a reset stream), a cancel notice named it, its handler timed out, or a
    /// shutdown's drain budget ran out. The handler's own future is simply dropped then; this is
    /// for work it handed to other tasks, which take this future (it owns what it needs) or a
    /// clone of the context.
    ///
    /// It resolves only while the handler's future holds its context (every method the macro
    /// makes does); on a context that is no request's (a connection's, one made with
    /// [`new`](Self::new)) it never resolves. Nothing is allocated for it until it is asked for.
    ///
    /// ```
    /// use jrpc_runtime::{Context, RpcError};
    ///
    /// async fn export(ctx: &Context) -> Result<(), RpcError> {
    ///     let stop = ctx.cancelled();
    ///     let work = tokio::spawn(async move {
    ///         tokio::select! {
    ///             () = stop => {}, // the caller went away: stop early
    ///             () = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
    ///         }
    ///     });
    ///     work.await.map_err(|err| RpcError::new(1, err.to_string()))
    /// }
    /// ```
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        self.cancel.cancelled(self.id.is_some())
    }

    /// Returns the request's cancellation token (made now if it was not), for a layer that cancels
    /// it itself (a peer telling a request it is cancelled); `None` for a context that is no
    /// request's.
    pub(crate) fn cancel_token(&self) -> Option<CancellationToken> {
        self.cancel.token(self.id.is_some()).cloned()
    }

    /// Returns whether the request was cancelled (see [`cancelled`](Self::cancelled)).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// Keeps a connection's last request context, for the next to be made in once the last is done
/// with it ([`Context::of_request`]): a context's headers, which share the buffer its request's
/// head was read into, stay until then, or until the room is dropped.
#[derive(Default)]
pub(crate) struct ContextRoom(std::cell::Cell<Option<Arc<Shared>>>);

impl ContextRoom {
    /// Keeps `ctx`'s for the next request, once no more is to be added to it (a context that is
    /// shared is copied to be changed).
    #[inline]
    #[allow(dead_code, reason = "kept by the transports that reuse contexts")]
    pub(crate) fn keep(&self, ctx: &Context) {
        self.0.set(Some(Arc::clone(&ctx.shared)));
    }
}

/// A clone of a request's context shares its cancellation.
impl Clone for Context {
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            shared: Arc::clone(&self.shared),
            cancel: self.cancel.share(self.id.is_some()),
        }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("transport", &self.shared.transport)
            .field("id", &self.id())
            .field("peer_addr", &self.shared.peer_addr)
            .field("request_tag", &self.request_tag())
            .field("headers", &self.header_slot().is_some())
            .field("trace", &self.trace())
            .field("extensions", &self.shared.extensions.len())
            .finish_non_exhaustive()
    }
}
