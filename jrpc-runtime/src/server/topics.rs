//! Topics: named groups of WebSocket connections that receive the same notifications.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde::Serialize;

use crate::{Caller as _, ClientError, Context, Peer};

/// A registry of topics: a handler subscribes its connection to a topic, and
/// [`publish`](Topics::publish) sends a notification to every connection subscribed to it.
///
/// A `ws::WsServer` holds one (its own, or one given with
/// `ws::WsServerBuilder::topics`) and puts it in every
/// connection's [`Context`], where [`Context::subscribe`] finds it. A connection leaves every
/// topic when it closes, however it closes.
///
/// Cloning is cheap: clones share the registry.
///
/// ```
/// use jrpc_runtime::server::Topics;
/// use jrpc_runtime::ws::WsServer;
/// use jrpc_runtime::{Context, Methods, RpcError};
///
/// let mut methods = Methods::new();
/// methods
///     .register("watch", &["topic"], |(topic,): (String,), ctx: Context| async move {
///         ctx.subscribe(&topic)?;
///         Ok::<_, RpcError>(true)
///     })
///     .unwrap();
/// let topics = Topics::new();
/// let server = WsServer::builder(methods).topics(topics.clone()).build().unwrap();
/// // Elsewhere, later: every connection that called `watch("prices")` gets the notification.
/// let reached = topics.publish("prices", "price", ("ACME", 12.5)).unwrap();
/// assert_eq!(reached, 0);
/// # drop(server);
/// ```
#[derive(Clone, Default)]
pub struct Topics {
    inner: Arc<Registry>,
}

#[derive(Default)]
struct Registry {
    /// Topic name to its subscribers, by connection.
    topics: Mutex<HashMap<String, HashMap<u64, Peer>>>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, HashMap<u64, Peer>>> {
        // A panic while holding the lock leaves the map consistent (every change is one call).
        self.topics
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn remove(&self, topic: &str, connection: u64) -> bool {
        let mut topics = self.lock();
        let Some(subscribers) = topics.get_mut(topic) else {
            return false;
        };
        let removed = subscribers.remove(&connection).is_some();
        if subscribers.is_empty() {
            topics.remove(topic);
        }
        removed
    }
}

impl fmt::Debug for Topics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topics")
            .field("topics", &self.inner.lock().len())
            .finish()
    }
}

/// Why a connection could not subscribe.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The request did not come over a WebSocket connection (HTTP, in-process, stdio).
    #[error("topics need a WebSocket connection")]
    NotWebSocket,
    /// The connection's context holds no [`Topics`] registry (only [`Context::subscribe`]
    /// fails this way; [`Topics::subscribe`] names its registry).
    #[error("this connection has no topics registry")]
    NoRegistry,
}

impl From<SubscribeError> for crate::RpcError {
    /// `-32000` with the reason in `data`: the server cannot do what was asked on this transport.
    fn from(err: SubscribeError) -> Self {
        crate::RpcError::new(crate::ErrorCode::SERVER_ERROR, "Subscription failed")
            .with_data(&err.to_string())
    }
}

impl Topics {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Subscribes the connection that `ctx` belongs to to `topic`; returns `false` if it was
    /// subscribed already.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::NotWebSocket`] when `ctx` is not a WebSocket connection's.
    pub fn subscribe(&self, ctx: &Context, topic: &str) -> Result<bool, SubscribeError> {
        let (Some(membership), Some(peer)) = (ctx.extension::<Membership>(), ctx.peer()) else {
            return Err(SubscribeError::NotWebSocket);
        };
        let added = {
            let mut topics = self.inner.lock();
            let subscribers = topics.entry(topic.to_owned()).or_default();
            subscribers.insert(membership.id, peer.clone()).is_none()
        };
        if added {
            membership.joined(&self.inner, topic);
        }
        Ok(added)
    }

    /// Takes the connection that `ctx` belongs to out of `topic`; returns whether it was in.
    pub fn unsubscribe(&self, ctx: &Context, topic: &str) -> bool {
        let Some(membership) = ctx.extension::<Membership>() else {
            return false;
        };
        let removed = self.inner.remove(topic, membership.id);
        if removed {
            membership.left(&self.inner, topic);
        }
        removed
    }

    /// Sends the notification `method` with `params` to every connection subscribed to `topic`,
    /// and returns how many it was queued for. The params are encoded once.
    ///
    /// Queuing never waits: a connection whose outgoing queue is full is closed (WebSocket
    /// servers use [`Overflow::Close`](crate::Overflow::Close)), and left out of the count.
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
        let raw = crate::caller::encode_params(&params)?;
        let subscribers: Vec<(u64, Peer)> = match self.inner.lock().get(topic) {
            Some(subscribers) => subscribers
                .iter()
                .map(|(id, peer)| (*id, peer.clone()))
                .collect(),
            None => return Ok(0),
        };
        let mut reached = 0;
        for (id, peer) in subscribers {
            // With `Overflow::Close` the future is ready at once: it never waits for room.
            let sent = futures_util::FutureExt::now_or_never(peer.notify_raw(method, raw.clone()));
            match sent {
                Some(Ok(())) => reached += 1,
                Some(Err(_)) => {
                    // Closed: it leaves when its pump ends; make sure it is not counted again.
                    self.inner.remove(topic, id);
                }
                None => tracing::debug!(topic, "a subscriber's queue is full; skipped"),
            }
        }
        Ok(reached)
    }

    /// How many connections are subscribed to `topic`.
    pub fn subscribers(&self, topic: &str) -> usize {
        self.inner.lock().get(topic).map_or(0, HashMap::len)
    }

    /// The topics that have at least one subscriber.
    pub fn names(&self) -> Vec<String> {
        self.inner.lock().keys().cloned().collect()
    }
}

/// Topic operations on a handler's [`Context`], through the [`Topics`] registry of the server
/// the connection belongs to (a `ws::WsServer`, or an `http::HttpServer`'s WebSocket path). They
/// are methods of `Context` itself: no import needed.
///
/// ```
/// use jrpc_runtime::{Context, RpcError};
///
/// async fn watch(topic: String, ctx: Context) -> Result<bool, RpcError> {
///     Ok(ctx.subscribe(&topic)?)
/// }
/// ```
impl Context {
    /// The registry of the connection's server, if the request came over one that has it.
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn topics(&self) -> Option<&Topics> {
        self.extension::<Topics>()
    }

    /// Subscribes this connection to `topic`; `false` if it was subscribed already.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::NotWebSocket`] over other transports; [`SubscribeError::NoRegistry`]
    /// when the connection's server has no registry.
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn subscribe(&self, topic: &str) -> Result<bool, SubscribeError> {
        if self.extension::<Membership>().is_none() {
            return Err(SubscribeError::NotWebSocket);
        }
        self.topics()
            .ok_or(SubscribeError::NoRegistry)?
            .subscribe(self, topic)
    }

    /// Takes this connection out of `topic`; returns whether it was in.
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn unsubscribe(&self, topic: &str) -> bool {
        self.topics()
            .is_some_and(|topics| topics.unsubscribe(self, topic))
    }
}

/// The topic methods of [`Context`] as a trait, for code written when they needed an import;
/// `Context`'s own methods (which this calls) need none.
pub trait ContextExt {
    /// [`Context::topics`].
    fn topics(&self) -> Option<&Topics>;

    /// [`Context::subscribe`].
    ///
    /// # Errors
    ///
    /// As [`Context::subscribe`].
    fn subscribe(&self, topic: &str) -> Result<bool, SubscribeError>;

    /// [`Context::unsubscribe`].
    fn unsubscribe(&self, topic: &str) -> bool;
}

impl ContextExt for Context {
    fn topics(&self) -> Option<&Topics> {
        Context::topics(self)
    }

    fn subscribe(&self, topic: &str) -> Result<bool, SubscribeError> {
        Context::subscribe(self, topic)
    }

    fn unsubscribe(&self, topic: &str) -> bool {
        Context::unsubscribe(self, topic)
    }
}

/// A connection's identity for the registries, and the topics it joined, so that it leaves
/// them all when it closes. It lives in the connection's context; the connection's task holds
/// a [`Leave`] guard.
#[derive(Clone)]
pub(crate) struct Membership {
    id: u64,
    joined: Arc<Mutex<Joined>>,
}

/// The topics a connection joined, each with its registry.
type Joined = Vec<(Weak<Registry>, String)>;

/// Makes a connection leave every topic when it drops.
pub(crate) struct Leave(Membership);

impl Membership {
    pub(crate) fn new() -> (Self, Leave) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let membership = Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            joined: Arc::default(),
        };
        (membership.clone(), Leave(membership))
    }

    fn list(&self) -> MutexGuard<'_, Joined> {
        self.joined
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn joined(&self, registry: &Arc<Registry>, topic: &str) {
        self.list()
            .push((Arc::downgrade(registry), topic.to_owned()));
    }

    fn left(&self, registry: &Arc<Registry>, topic: &str) {
        let target = Arc::downgrade(registry);
        self.list()
            .retain(|(weak, name)| !(Weak::ptr_eq(weak, &target) && name == topic));
    }
}

impl Drop for Leave {
    fn drop(&mut self) {
        let joined = std::mem::take(&mut *self.0.list());
        for (registry, topic) in joined {
            if let Some(registry) = registry.upgrade() {
                registry.remove(&topic, self.0.id);
            }
        }
    }
}
