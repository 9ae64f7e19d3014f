//! What a handler knows about the request it serves.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use super::extensions::Extensions;
use crate::transport::{Headers, RequestTag, Transport};
use crate::wire::Id;

/// What a handler knows about its request: the transport, the request id, the peer's address,
/// HTTP headers, per-connection extensions, and the connection's peer handle where the transport
/// stays open.
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
#[derive(Clone)]
pub struct Context {
    id: Option<Id>,
    shared: Arc<Shared>,
}

#[derive(Clone)]
struct Shared {
    transport: Transport,
    peer_addr: Option<SocketAddr>,
    /// The request's (or the upgrade's) HTTP headers, where the transport has them.
    headers: Option<Headers>,
    request_tag: Option<RequestTag>,
    extensions: Extensions,
    /// The largest answer the transport sends, in bytes: a result is written up to it.
    answer_limit: usize,
}

impl Context {
    /// A context for requests arriving on `transport`.
    pub fn new(transport: Transport) -> Self {
        Self::of_request(transport, None, None, None, usize::MAX)
    }

    /// A context made whole at once (one allocation, and nothing to make unique after): what a
    /// transport builds for each HTTP request, whose answers it sends up to `answer_limit` bytes.
    pub(crate) fn of_request(
        transport: Transport,
        peer_addr: Option<SocketAddr>,
        request_tag: Option<RequestTag>,
        headers: Option<Headers>,
        answer_limit: usize,
    ) -> Self {
        let ctx = Self {
            id: None,
            shared: Arc::new(Shared {
                transport,
                peer_addr,
                headers: None,
                request_tag,
                extensions: Extensions::default(),
                answer_limit,
            }),
        };
        // Set through the one setter (the Arc is not shared yet: nothing is copied).
        match headers {
            Some(headers) => ctx.with_header_slot(headers),
            None => ctx,
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

    /// This context for a transport that sends answers of at most `bytes` (its
    /// `max_message_size`): a result is written up to it, and no further.
    #[must_use]
    pub(crate) fn with_answer_limit(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.shared).answer_limit = bytes;
        self
    }

    /// The largest answer the request's transport sends, in bytes (`usize::MAX` in process).
    pub(crate) fn answer_limit(&self) -> usize {
        self.shared.answer_limit
    }

    /// Adds a typed value in place (see [`with_extension`](Self::with_extension)).
    pub(crate) fn insert_extension<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.shared).extensions.insert(value);
    }

    /// This context for requests arriving on `transport` instead.
    #[must_use]
    pub(crate) fn with_transport(mut self, transport: Transport) -> Self {
        Arc::make_mut(&mut self.shared).transport = transport;
        self
    }

    /// This context stamped with a request's id.
    pub(crate) fn for_request(&self, id: Option<Id>) -> Self {
        Self {
            id,
            shared: Arc::clone(&self.shared),
        }
    }

    /// The transport the request arrived on.
    pub fn transport(&self) -> Transport {
        self.shared.transport
    }

    /// The request's id; `None` for a notification.
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// The peer's network address, where the transport has one.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.shared.peer_addr
    }

    /// The headers of the request (or of the WebSocket upgrade), where the transport has them.
    pub(crate) fn header_slot(&self) -> Option<&Headers> {
        self.shared.headers.as_ref()
    }

    /// The request tag (HTTP `x-request-id`, taken from the request or made up).
    pub fn request_tag(&self) -> Option<&str> {
        self.shared.request_tag.as_ref().map(RequestTag::as_str)
    }

    /// The value of type `T` that the transport or the application attached.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.shared.extensions.get::<T>()
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("transport", &self.shared.transport)
            .field("id", &self.id)
            .field("peer_addr", &self.shared.peer_addr)
            .field("request_tag", &self.request_tag())
            .field("headers", &self.header_slot().is_some())
            .field("extensions", &self.shared.extensions.len())
            .finish_non_exhaustive()
    }
}
