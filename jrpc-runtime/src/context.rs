//! What a handler reaches through its [`Context`] beyond the request: the connection it runs on
//! ([`Context::peer`]) and the topics of its server ([`Context::subscribe`]).
//!
//! [`Context`] is the dispatcher's type and knows nothing above it; the layers above add to it
//! here, in one place, each through a typed value the context carries (the peer's own handle,
//! the server's registry).

use crate::dispatch::Context;
use crate::peer::Peer;
use crate::peer::handle::Own;
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
    /// The other side of the connection, to notify or call it from inside a handler; `None` on
    /// transports that do not stay open (HTTP, in-process).
    ///
    /// A notification handler must not await a call on its own connection: incoming messages are
    /// read only after it finishes, so the answer would never be read. Spawn the call instead.
    pub fn peer(&self) -> Option<&Peer> {
        self.extension::<Own>().map(Own::peer)
    }

    /// The registry of the connection's server, if the request came over one that has it.
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
