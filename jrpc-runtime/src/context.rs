//! Extends a handler's [`Context`] beyond the request: the connection it runs on
//! ([`Context::peer`]) and the topics of its server ([`Context::subscribe`]).
//!
//! [`Context`] is the dispatcher's type and knows nothing above it; the layers above add to it
//! here, in one place, each through a typed value the context carries (the peer's own handle,
//! the server's registry).

use std::future::Future;

use crate::dispatch::Context;
#[cfg(any(feature = "http", feature = "ws"))]
use crate::dispatch::TraceContext;
use crate::peer::{CancelGuard, ConnectionPeer, Peer, Told};
use crate::server::{SubscribeError, Topics};

/// A handler's connection, and topic operations through the [`Topics`] registry the
/// connection's context carries (a `ws::WsServer` puts its own there). They are methods of
/// `Context` itself: no import needed.
///
/// ```
/// use jrpc_runtime::{Context, RpcError};
///
/// async fn watch(topic: String, ctx: Context) -> Result<bool, RpcError> {
///     let added = ctx.subscribe(&topic)?;
///     if let Some(topics) = ctx.topics() {
///         topics.ready(&topic).await;
///     }
///     Ok(added)
/// }
/// ```
impl Context {
    /// Returns the other side of the connection, to notify or call it from inside a handler; `None`
    /// on transports that do not stay open (HTTP, in-process).
    ///
    /// A notification handler may await a call on its own connection: while it runs, answers are
    /// read (and other messages wait for it, so that notifications keep their order).
    pub fn peer(&self) -> Option<&Peer> {
        self.extension::<ConnectionPeer>().map(ConnectionPeer::peer)
    }

    /// Asks to be told, rather than dropped, when this request is cancelled (by a cancel notice
    /// naming it, or [`Peer::cancel_request`]): [`cancelled`](Self::cancelled) resolves and the
    /// handler answers as it sees fit, for as long as the guard lives. `None` for a context that
    /// is no request's, or on transports that do not stay open.
    ///
    /// ```
    /// use jrpc_runtime::{Context, RpcError};
    ///
    /// async fn count(to: u32, ctx: &Context) -> Result<u32, RpcError> {
    ///     let _told = ctx.told_when_cancelled();
    ///     let stop = ctx.cancelled();
    ///     tokio::pin!(stop);
    ///     for n in 0..to {
    ///         tokio::select! {
    ///             () = &mut stop => return Ok(n),
    ///             () = tokio::task::yield_now() => {}
    ///         }
    ///     }
    ///     Ok(to)
    /// }
    /// ```
    pub fn told_when_cancelled(&self) -> Option<CancelGuard> {
        self.told(None)
    }

    /// Asks to be told when [`Peer::cancel_key`] names `key` (a session that a notification
    /// cancels as a whole: ACP's `session/cancel`), for as long as the guard lives: as with
    /// [`told_when_cancelled`](Self::told_when_cancelled), [`cancelled`](Self::cancelled)
    /// resolves and the handler answers. A cancel notice naming the request's id still drops it
    /// (and answers `-32800` under LSP and ACP), unless it asked for that too. `None` as for
    /// `told_when_cancelled`.
    pub fn cancellable_by_key(&self, key: impl Into<String>) -> Option<CancelGuard> {
        self.told(Some(key.into()))
    }

    /// Registers the request's token under its id, or under `key` when there is one.
    fn told(&self, key: Option<String>) -> Option<CancelGuard> {
        let id = self.id()?;
        let peer = self.peer()?;
        let token = self.cancel_token()?;
        let id = key.is_none().then(|| id.clone());
        Some(Told::register(&peer.shared.told, token, id, key))
    }

    /// Returns the connection's number, distinct among the process's connections: `None` on
    /// transports that do not stay open (an HTTP `POST` answered as JSON, in-process calls).
    pub fn connection_id(&self) -> Option<u64> {
        self.peer().map(Peer::connection_id)
    }

    /// Resolves once the connection the request came over is gone, so that work a handler starts
    /// for its client (a subscription's producer, a watch) can stop with it. Where the transport
    /// does not stay open, the connection is the request itself: it resolves when the request is
    /// cancelled (see [`cancelled`](Self::cancelled)).
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        let closed = self.peer().map(Peer::closed);
        let cancelled = self.cancelled();
        async move {
            match closed {
                Some(closed) => closed.await,
                None => cancelled.await,
            }
        }
    }

    /// Returns the registry of the connection's server, if the request came over one that has it.
    pub fn topics(&self) -> Option<&Topics> {
        self.extension::<Topics>()
    }

    /// Subscribes this connection to `topic`; `false` if it was subscribed already.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::NoConnection`] over transports that do not stay open;
    /// [`SubscribeError::NoRegistry`] when the context carries no registry.
    pub fn subscribe(&self, topic: &str) -> Result<bool, SubscribeError> {
        if self.peer().is_none() {
            return Err(SubscribeError::NoConnection);
        }
        self.topics()
            .ok_or(SubscribeError::NoRegistry)?
            .subscribe(self, topic)
    }

    /// Takes this connection out of `topic`; returns whether it was in.
    pub fn unsubscribe(&self, topic: &str) -> bool {
        self.topics()
            .is_some_and(|topics| topics.unsubscribe(self, topic))
    }
}

/// A request's headers, kept on its `Context` by the transports that have them.
#[cfg(any(feature = "http", feature = "ws"))]
impl Context {
    /// Sets the HTTP headers of the request (or of the WebSocket upgrade), and the caller's trace
    /// when they carry a valid `traceparent` (with its `tracestate`): see [`Context::trace`].
    #[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
    #[must_use]
    pub fn with_headers(self, headers: http::HeaderMap) -> Self {
        let trace = trace_of(&headers);
        let ctx = self.with_header_slot(headers);
        match trace {
            Some(trace) => ctx.with_trace(trace),
            None => ctx,
        }
    }

    /// Sets the headers of a request that the context outlives (a WebSocket upgrade), each value
    /// copied: hyper's values share the buffer the request was read into, and a copy of a few
    /// hundred bytes is cheaper than keeping that buffer (8 KiB or more) as long as the socket.
    #[cfg(feature = "ws")]
    #[must_use]
    pub(crate) fn with_headers_copied(self, headers: &http::HeaderMap) -> Self {
        self.with_headers(copied(headers))
    }

    /// Returns the HTTP headers of the request (or of the WebSocket upgrade).
    #[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
    pub fn headers(&self) -> Option<&http::HeaderMap> {
        self.header_slot()
    }
}

/// Names the `traceparent` header.
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) static TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// Names the `tracestate` header.
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) static TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");

/// Returns the trace context `headers` carry: a valid `traceparent`, and the `tracestate` beside it
/// (its several headers joined, as W3C Trace Context reads them).
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) fn trace_of(headers: &http::HeaderMap) -> Option<TraceContext> {
    let parent = headers.get(&TRACEPARENT)?.to_str().ok()?;
    let mut states = headers
        .get_all(&TRACESTATE)
        .iter()
        .filter_map(|value| value.to_str().ok());
    let state = match (states.next(), states.next()) {
        (Some(first), None) => Some(std::borrow::Cow::Borrowed(first)),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first},{second}");
            for more in states {
                joined.push(',');
                joined.push_str(more);
            }
            Some(std::borrow::Cow::Owned(joined))
        }
        (None, _) => None,
    };
    TraceContext::parse(parent, state.as_deref())
}

/// Sets `traceparent` and `tracestate` to `trace`'s, in place of any there were: what a client
/// sends on a call made while a traced request is served.
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) fn trace_headers(headers: &mut http::HeaderMap, trace: &TraceContext) {
    if let Ok(parent) = http::HeaderValue::try_from(trace.traceparent()) {
        headers.insert(TRACEPARENT.clone(), parent);
    }
    match trace.tracestate().map(http::HeaderValue::from_str) {
        Some(Ok(state)) => {
            headers.insert(TRACESTATE.clone(), state);
        }
        _ => {
            headers.remove(&TRACESTATE);
        }
    }
}

/// Returns `headers`, each value copied (see [`Context::with_headers_copied`]).
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
