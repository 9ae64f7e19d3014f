//! What a handler knows about the request it serves.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use super::extensions::Extensions;
use crate::transport::Transport;
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
    #[cfg(any(feature = "http", feature = "ws"))]
    headers: Option<http::HeaderMap>,
    request_tag: Option<RequestTag>,
    extensions: Extensions,
}

/// A request tag: the application's text, or an HTTP request's `x-request-id`, taken from the
/// request (its value shares the buffer the request was read into) or made up (16 hex digits,
/// held in place).
#[derive(Clone, Debug)]
pub(crate) enum RequestTag {
    Text(Arc<str>),
    #[cfg(feature = "http")]
    Header(http::HeaderValue),
    #[cfg(feature = "http")]
    Hex([u8; 16]),
}

impl RequestTag {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Text(text) => text,
            // A tag taken is checked to be plain ASCII; one made up is hex digits.
            #[cfg(feature = "http")]
            Self::Header(value) => value.to_str().unwrap_or_default(),
            #[cfg(feature = "http")]
            Self::Hex(hex) => std::str::from_utf8(hex).unwrap_or_default(),
        }
    }
}

impl Context {
    /// A context for requests arriving on `transport`.
    pub fn new(transport: Transport) -> Self {
        Self {
            id: None,
            shared: Arc::new(Shared {
                transport,
                peer_addr: None,
                #[cfg(any(feature = "http", feature = "ws"))]
                headers: None,
                request_tag: None,
                extensions: Extensions::default(),
            }),
        }
    }

    /// A context made whole at once (one allocation, and nothing to make unique after): what a
    /// transport builds for each HTTP request.
    #[cfg(feature = "http")]
    pub(crate) fn of_request(
        transport: Transport,
        peer_addr: Option<SocketAddr>,
        request_tag: RequestTag,
        headers: Option<http::HeaderMap>,
    ) -> Self {
        Self {
            id: None,
            shared: Arc::new(Shared {
                transport,
                peer_addr,
                headers,
                request_tag: Some(request_tag),
                extensions: Extensions::default(),
            }),
        }
    }

    /// Sets the peer's network address.
    #[must_use]
    pub fn with_peer_addr(mut self, addr: SocketAddr) -> Self {
        Arc::make_mut(&mut self.shared).peer_addr = Some(addr);
        self
    }

    /// Sets the HTTP headers of the request (or of the WebSocket upgrade).
    #[cfg(any(feature = "http", feature = "ws"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
    #[must_use]
    pub fn with_headers(mut self, headers: http::HeaderMap) -> Self {
        Arc::make_mut(&mut self.shared).headers = Some(headers);
        self
    }

    /// Sets the headers of a request that the context outlives (a WebSocket upgrade), each value
    /// copied: hyper's values share the buffer the request was read into, and a copy of a few
    /// hundred bytes is cheaper than keeping that buffer (8 KiB or more) as long as the socket.
    #[cfg(feature = "ws")]
    #[must_use]
    pub(crate) fn with_headers_copied(self, headers: &http::HeaderMap) -> Self {
        self.with_headers(copied(headers))
    }

    /// Sets the request tag (HTTP `x-request-id`) that logs and replies carry.
    #[must_use]
    pub fn with_request_tag(mut self, tag: impl Into<Arc<str>>) -> Self {
        Arc::make_mut(&mut self.shared).request_tag = Some(RequestTag::Text(tag.into()));
        self
    }

    /// Sets the request tag to an HTTP request's.
    #[cfg(feature = "mcp")]
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

    /// The HTTP headers of the request (or of the WebSocket upgrade).
    #[cfg(any(feature = "http", feature = "ws"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
    pub fn headers(&self) -> Option<&http::HeaderMap> {
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

/// `headers`, each value copied (see [`Context::with_headers_copied`]).
#[cfg(feature = "ws")]
pub(crate) fn copied(headers: &http::HeaderMap) -> http::HeaderMap {
    let mut copied = http::HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        // `from_bytes` copies, and takes every value hyper took.
        if let Ok(mut copy) = http::HeaderValue::from_bytes(value.as_bytes()) {
            copy.set_sensitive(value.is_sensitive());
            copied.append(name.clone(), copy);
        }
    }
    copied
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("transport", &self.shared.transport)
            .field("id", &self.id)
            .field("peer_addr", &self.shared.peer_addr)
            .field("request_tag", &self.request_tag())
            .field("extensions", &self.shared.extensions.len())
            .finish_non_exhaustive()
    }
}
