//! Provides topics: named groups of connections that receive the same notifications, in this
//! process or, with the `redis` feature, across every replica of a service.
//!
//! Any connection that stays open can join: a WebSocket, stdio, any byte stream served as a
//! [`Peer`]. The registry keys a connection by its peer handle and asks the handle to forget it
//! when its loop ends, so membership needs nothing from the transport.

#[cfg(feature = "redis")]
mod redis;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc};

use crate::caller::Caller as _;
use crate::dispatch::Context;
use crate::error::ClientError;
use crate::peer::{Items, Peer};

/// Holds what a topic feeds its subscriptions while one waits ([`Topics::items`]): the items
/// published last, shared by them all.
const FEED_CAPACITY: usize = 64;

#[cfg(feature = "redis")]
pub use self::redis::{RedisConnectError, RedisStatus, RedisTopicsBuilder};

/// Keeps a registry of topics: a handler subscribes its connection to a topic, and
/// [`publish`](Topics::publish) sends a notification to every connection subscribed to it.
///
/// Any connection that stays open can subscribe (WebSocket, stdio, any stream served as a
/// [`Peer`]); HTTP `POST` and in-process calls cannot ([`SubscribeError::NoConnection`]). A
/// connection leaves every topic when it closes, however it closes.
///
/// Where handlers find it: a `ws::WsServer` (or `http::HttpServer`) holds one (its own, or one
/// given with `topics`) and puts it in every WebSocket connection's [`Context`], where
/// [`Context::subscribe`] finds it. Over stdio, put it in the context yourself
/// ([`PeerConfigBuilder::context`](crate::peer::PeerConfigBuilder::context) with
/// [`Context::with_extension`]), or let the service hold it and call [`Topics::subscribe`].
///
/// [`Topics::new`] makes a registry local to the process; [`Topics::redis`] (feature `redis`)
/// one shared through Redis by every replica that connects with the same channel prefix (see
/// "Across replicas" there).
///
/// Cloning is cheap: clones share the registry.
///
/// ```
/// # #[cfg(feature = "ws")] {
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
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Topics {
    inner: Arc<Registry>,
}

#[derive(Default)]
struct Registry {
    state: Mutex<State>,
    /// The link to Redis, for a registry shared across replicas.
    #[cfg(feature = "redis")]
    bridge: Option<Arc<redis::Bridge>>,
}

#[derive(Default)]
struct State {
    /// Topic name to its subscribers, by connection (or watch).
    topics: HashMap<String, HashMap<u64, Subscriber>>,
    /// The connections this registry has asked to be told of closing, with their topics. An
    /// entry stays until its connection closes, so that a connection that leaves and joins again
    /// does not pile up close hooks.
    connections: HashMap<u64, HashSet<String>>,
    /// The feed of each topic with subscriptions fed from it ([`Topics::items`]): one send
    /// reaches them all, the item encoded once and shared.
    feeds: HashMap<String, Fed>,
}

/// Names a receiver of a topic's feed.
type FeedRx = broadcast::Receiver<Arc<RawValue>>;

/// Holds a topic's feed.
struct Fed {
    tx: broadcast::Sender<Arc<RawValue>>,
    /// How many subscriptions it feeds (a connection's share one receiver, so the receivers do
    /// not count them).
    count: usize,
    /// Its number, unique to the channel: a feed made again after its last subscription left is
    /// another.
    id: u64,
}

/// Receives a topic's notifications: a connection, a [`TopicWatch`]'s queue, or a subscription
/// fed from the topic's feed ([`Topics::items`]), which takes the params alone, shared.
#[derive(Clone)]
enum Subscriber {
    Peer(Peer),
    Watch(mpsc::Sender<Published>),
    /// Reads the topic's feed (`State::feeds`); here for the count and the topic's interest.
    Feed,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the maps consistent (every change is one call).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the Redis link that the set of topics with subscribers changed.
    fn topics_changed(&self) {
        #[cfg(feature = "redis")]
        if let Some(bridge) = &self.bridge {
            bridge.topics_changed();
        }
    }

    /// Takes `connection` out of `topic`; returns whether it was in.
    fn remove(&self, topic: &str, connection: u64) -> bool {
        let emptied = {
            let mut state = self.lock();
            let Some(subscribers) = state.topics.get_mut(topic) else {
                return false;
            };
            let Some(removed) = subscribers.remove(&connection) else {
                return false;
            };
            let emptied = subscribers.is_empty();
            if emptied {
                state.topics.remove(topic);
            }
            if let Some(joined) = state.connections.get_mut(&connection) {
                joined.remove(topic);
            }
            if matches!(removed, Subscriber::Feed)
                && let Some(fed) = state.feeds.get_mut(topic)
            {
                fed.count -= 1;
                if fed.count == 0 {
                    state.feeds.remove(topic);
                }
            }
            emptied
        };
        if emptied {
            self.topics_changed();
        }
        true
    }

    /// Forgets a connection that closed.
    fn forget(&self, connection: u64) {
        let emptied = {
            let mut state = self.lock();
            let joined = state.connections.remove(&connection).unwrap_or_default();
            let mut emptied = false;
            for topic in joined {
                if let Some(subscribers) = state.topics.get_mut(&topic) {
                    subscribers.remove(&connection);
                    if subscribers.is_empty() {
                        state.topics.remove(&topic);
                        emptied = true;
                    }
                }
            }
            emptied
        };
        if emptied {
            self.topics_changed();
        }
    }

    /// Queues the notification for every local subscriber of `topic`; returns how many took it.
    fn deliver(&self, topic: &str, method: &str, params: Option<&RawValue>) -> usize {
        // The connections and watches, and the feed, taken under the lock and served outside it.
        let (subscribers, feed): (Vec<(u64, Subscriber)>, _) = {
            let state = self.lock();
            let Some(subscribers) = state.topics.get(topic) else {
                return 0;
            };
            let feed = state
                .feeds
                .get(topic)
                .map(|fed| (fed.tx.clone(), fed.count));
            // A topic whose subscribers all read its feed (a WebSocket's, most often) has no
            // other to look for: its map is not walked.
            let fed = feed.as_ref().map_or(0, |(_, count)| *count);
            let others = if subscribers.len() > fed {
                subscribers
                    .iter()
                    .filter(|(_, subscriber)| !matches!(subscriber, Subscriber::Feed))
                    .map(|(id, subscriber)| (*id, subscriber.clone()))
                    .collect()
            } else {
                Vec::new()
            };
            (others, feed)
        };
        let mut reached = 0;
        // The subscriptions fed from the topic take the params as they are, encoded once and
        // shared, whatever their number: one send wakes them all.
        if let Some((feed, count)) = feed {
            reached += match params {
                Some(params) => feed.send(Arc::from(params.to_owned())).map_or(0, |_| count),
                None => count,
            };
        }
        for (id, subscriber) in subscribers {
            // A WebSocket (`Overflow::Close`) never waits for room; a peer that would wait, or a
            // full watch, is skipped, so that one slow subscriber holds up no one.
            let sent = match subscriber {
                Subscriber::Peer(peer) => {
                    let raw = params.map(ToOwned::to_owned);
                    futures_util::FutureExt::now_or_never(peer.notify_raw(method, raw))
                        .map(|sent| sent.is_ok())
                }
                Subscriber::Watch(tx) => match tx.try_send(Published {
                    topic: topic.to_owned(),
                    method: method.to_owned(),
                    params: params.map(ToOwned::to_owned),
                }) {
                    Ok(()) => Some(true),
                    Err(mpsc::error::TrySendError::Full(_)) => None,
                    Err(mpsc::error::TrySendError::Closed(_)) => Some(false),
                },
                Subscriber::Feed => continue,
            };
            match sent {
                Some(true) => reached += 1,
                Some(false) => {
                    // Closed: it leaves when its loop ends; make sure it is not counted again.
                    self.remove(topic, id);
                }
                None => tracing::warn!(topic, "a subscriber's queue is full: skipped for it"),
            }
        }
        reached
    }

    /// Returns the topics that have at least one subscriber.
    fn names(&self) -> Vec<String> {
        self.lock().topics.keys().cloned().collect()
    }
}

impl fmt::Debug for Topics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Topics");
        debug.field("topics", &self.inner.lock().topics.len());
        #[cfg(feature = "redis")]
        debug.field("redis", &self.redis_status());
        debug.finish()
    }
}

/// Says why a connection could not subscribe.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The request did not come over a connection that stays open (it came over HTTP `POST`,
    /// or in-process): there is nothing to send the notifications on.
    #[error(
        "topics need a connection that stays open (WebSocket, stdio); this request came over one that does not"
    )]
    NoConnection,
    /// The connection's context holds no [`Topics`] registry (only [`Context::subscribe`]
    /// fails this way; [`Topics::subscribe`] names its registry).
    #[error("this connection has no topics registry")]
    NoRegistry,
}

impl From<SubscribeError> for crate::wire::RpcError {
    /// Answers `-32000` with the reason in `data`: the server cannot do what was asked on this
    /// transport.
    fn from(err: SubscribeError) -> Self {
        crate::wire::RpcError::new(crate::wire::ErrorCode::SERVER_ERROR, "Subscription failed")
            .with_data(&err.to_string())
    }
}

impl Topics {
    /// Returns an empty registry, local to this process.
    pub fn new() -> Self {
        Self::default()
    }

    /// Subscribes the connection that `ctx` belongs to to `topic`; returns `false` if it was
    /// subscribed already.
    ///
    /// On a registry shared through Redis, what other replicas publish reaches the connection
    /// once this replica has subscribed to the topic's channel: await [`ready`](Self::ready)
    /// before telling the client it is subscribed.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::NoConnection`] when `ctx` is not a connection's that stays open.
    pub fn subscribe(&self, ctx: &Context, topic: &str) -> Result<bool, SubscribeError> {
        let peer = ctx.peer().ok_or(SubscribeError::NoConnection)?;
        Ok(self.subscribe_peer(peer, topic))
    }

    /// Subscribes the connection `peer` to `topic`; `false` if it was subscribed already. For a
    /// transport whose notifications go on a connection other than the request's (an MCP
    /// session's GET stream).
    pub fn subscribe_peer(&self, peer: &Peer, topic: &str) -> bool {
        let id = peer.connection_id();
        let (added, first, new_connection) = {
            let mut state = self.inner.lock();
            let joined = state.connections.get_mut(&id);
            let new_connection = joined.is_none();
            match joined {
                Some(joined) => {
                    joined.insert(topic.to_owned());
                }
                None => {
                    state
                        .connections
                        .insert(id, HashSet::from([topic.to_owned()]));
                }
            }
            let subscribers = state.topics.entry(topic.to_owned()).or_default();
            let first = subscribers.is_empty();
            let added = subscribers
                .insert(id, Subscriber::Peer(peer.clone()))
                .is_none();
            (added, first, new_connection)
        };
        if new_connection {
            // Registered outside the lock: on a connection that closed already it runs at once.
            let registry = Arc::downgrade(&self.inner);
            peer.on_close(move || {
                if let Some(registry) = Weak::upgrade(&registry) {
                    registry.forget(id);
                }
            });
        }
        if first {
            self.inner.topics_changed();
        }
        added
    }

    /// Takes the connection that `ctx` belongs to out of `topic`; returns whether it was in.
    pub fn unsubscribe(&self, ctx: &Context, topic: &str) -> bool {
        ctx.peer()
            .is_some_and(|peer| self.unsubscribe_peer(peer, topic))
    }

    /// Takes the connection `peer` out of `topic`; returns whether it was in.
    pub fn unsubscribe_peer(&self, peer: &Peer, topic: &str) -> bool {
        self.inner.remove(topic, peer.connection_id())
    }

    /// Sends the notification `method` with `params` to every connection subscribed to `topic`,
    /// and returns how many connections of this process it was queued for. The params are
    /// encoded once.
    ///
    /// Queuing never waits: a WebSocket connection whose outgoing queue is full is closed
    /// (WebSocket servers use [`Overflow::Close`](crate::peer::Overflow::Close)), and a connection
    /// that would wait for room ([`Overflow::Wait`](crate::peer::Overflow::Wait)) is skipped; neither
    /// is counted.
    ///
    /// On a registry shared through Redis this process's subscribers get the notification at
    /// once, from here, and the other replicas' through Redis; the count is this process's
    /// alone. See [`Topics::redis`] for what happens while Redis is unreachable.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when `params` cannot be encoded; on a registry shared through
    /// Redis, [`ClientError::TooLong`] when the message is over its `max_message_size` (it is
    /// then sent to no one).
    pub fn publish(
        &self,
        topic: &str,
        method: &str,
        params: impl Serialize,
    ) -> Result<usize, ClientError> {
        let raw = crate::caller::encode_params(&params)?;
        #[cfg(feature = "redis")]
        if let Some(bridge) = &self.inner.bridge {
            bridge.publish(topic, method, raw.as_deref())?;
        }
        Ok(self.inner.deliver(topic, method, raw.as_deref()))
    }

    /// Returns how many connections of this process are subscribed to `topic`.
    pub fn subscribers(&self, topic: &str) -> usize {
        self.inner.lock().topics.get(topic).map_or(0, HashMap::len)
    }

    /// Returns the topics that have at least one subscriber in this process.
    pub fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    /// Waits until what other replicas publish to `topic` reaches this process: until this
    /// replica has subscribed to the topic's Redis channel. Ready at once on a local registry,
    /// for a topic without local subscribers, and while Redis is unreachable (the subscription
    /// is made on reconnection; what is published before it is not seen here).
    pub async fn ready(&self, topic: &str) {
        #[cfg(feature = "redis")]
        if let Some(bridge) = &self.inner.bridge {
            let wanted = || self.inner.lock().topics.contains_key(topic);
            bridge.ready(topic, wanted).await;
        }
        #[cfg(not(feature = "redis"))]
        let _ = topic;
    }

    /// Returns a subscription's items fed from `topic`: the params of each notification
    /// published to it (here, and on a registry shared through Redis, on every replica) are an
    /// item, encoded once by the publisher; the method published with them is not used. What a
    /// subscribe handler returns to let a publisher on any replica reach its subscribers, each
    /// under its own id:
    ///
    /// ```
    /// use jrpc_runtime::server::Topics;
    /// use jrpc_runtime::{Methods, RpcError};
    ///
    /// let topics = Topics::new();
    /// let feed = topics.clone();
    /// let mut methods = Methods::new();
    /// methods
    ///     .register_subscription("subscribe_news", &[], "news", "unsubscribe_news", move |(): (), _ctx| {
    ///         let items = feed.items::<String>("news");
    ///         async move { Ok::<_, RpcError>(items) }
    ///     })
    ///     .unwrap();
    /// // Elsewhere: every subscription reads "hello".
    /// topics.publish("news", "news", "hello").unwrap();
    /// ```
    ///
    /// A publisher cannot wait for a subscriber: past the subscription's bound its policy
    /// applies, and under [`WhenFull::Wait`](crate::WhenFull::Wait) what is published while it
    /// waits is held in the topic's feed, which keeps the last 64 items for all its
    /// subscriptions; one that falls further behind skips its oldest (logged at WARN).
    ///
    /// Several subscriptions of one connection to the same topic read its feed together, once a
    /// published item (except under `Wait`); each still gets every item published after this call,
    /// under its own id, within its own bound.
    pub fn items<T>(&self, topic: &str) -> Items<T> {
        let (member, feed, rx, catch_up) = self.join_feed(topic);
        let topic: Arc<str> = Arc::from(topic);
        // Built here, in the service's own code, where the compiler sees through it.
        let items = futures_util::stream::unfold((rx, topic), |(mut rx, topic)| async move {
            loop {
                match rx.recv().await {
                    Ok(item) => return Some((item, (rx, topic))),
                    Err(broadcast::error::RecvError::Lagged(skipped)) => tracing::warn!(
                        topic = &*topic,
                        skipped,
                        "a subscription fell behind its topic's feed: its oldest items skipped"
                    ),
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        Items::feed(feed, items, catch_up, Box::new(member))
    }

    /// Adds a subscription to `topic`'s feed, under a number of its own, until the returned
    /// membership drops; returns it with the feed's number and two receivers of it, made at the
    /// same place.
    fn join_feed(&self, topic: &str) -> (Membership, u64, FeedRx, FeedRx) {
        let (id, first, feed, rx, catch_up) = {
            let mut state = self.inner.lock();
            let feed = state.feeds.entry(topic.to_owned()).or_insert_with(|| Fed {
                tx: broadcast::channel(FEED_CAPACITY).0,
                count: 0,
                id: next_member(),
            });
            feed.count += 1;
            let (rx, catch_up, feed) = (feed.tx.subscribe(), feed.tx.subscribe(), feed.id);
            let subscribers = state.topics.entry(topic.to_owned()).or_default();
            let id = next_member();
            let first = subscribers.is_empty();
            subscribers.insert(id, Subscriber::Feed);
            (id, first, feed, rx, catch_up)
        };
        if first {
            self.inner.topics_changed();
        }
        let member = Membership {
            id,
            topics: vec![topic.to_owned()],
            registry: Arc::downgrade(&self.inner),
        };
        (member, feed, rx, catch_up)
    }

    /// Adds `subscriber` to `topics`, under a number of its own, until the returned membership
    /// drops.
    fn join<I, S>(&self, topics: I, subscriber: Subscriber) -> Membership
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let id = next_member();
        let topics: Vec<String> = topics.into_iter().map(Into::into).collect();
        let mut first = false;
        {
            let mut state = self.inner.lock();
            for topic in &topics {
                let subscribers = state.topics.entry(topic.clone()).or_default();
                first |= subscribers.is_empty();
                subscribers.insert(id, subscriber.clone());
            }
        }
        if first {
            self.inner.topics_changed();
        }
        Membership {
            id,
            topics,
            registry: Arc::downgrade(&self.inner),
        }
    }

    /// Watches `topics`: what is published to any of them (in this process and, on a registry
    /// shared through Redis, on every replica) is queued for the watch, up to `capacity`
    /// notifications (at least one); past that a notification is skipped for this watch, as
    /// for a connection that would wait. For what takes notifications without being a
    /// [`Peer`] (an MCP listen stream over HTTP, which tags each with its own id). Dropping the
    /// watch leaves its topics.
    ///
    /// ```
    /// use jrpc_runtime::server::Topics;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let topics = Topics::new();
    /// let mut watch = topics.watch(["prices"], 16);
    /// assert_eq!(topics.publish("prices", "price", ("ACME", 12.5)).unwrap(), 1);
    /// let published = watch.recv().await.unwrap();
    /// assert_eq!((published.topic.as_str(), published.method.as_str()), ("prices", "price"));
    /// assert_eq!(published.params.unwrap().get(), r#"["ACME",12.5]"#);
    /// drop(watch);
    /// assert_eq!(topics.subscribers("prices"), 0);
    /// # });
    /// ```
    pub fn watch<I, S>(&self, topics: I, capacity: usize) -> TopicWatch
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        TopicWatch {
            member: self.join(topics, Subscriber::Watch(tx)),
            rx,
        }
    }
}

/// Returns the number of a new watch or feed: apart from connections' numbers, which count up
/// from 1.
fn next_member() -> u64 {
    static MEMBERS: AtomicU64 = AtomicU64::new(1 << 63);
    MEMBERS.fetch_add(1, Ordering::Relaxed)
}

/// Holds a notification published to a topic, as a [`TopicWatch`] receives it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Published {
    /// The topic it was published to.
    pub topic: String,
    /// Its method.
    pub method: String,
    /// Its params, as encoded once by the publisher.
    pub params: Option<Box<RawValue>>,
}

/// Receives what is published to some topics, as it comes ([`Topics::watch`]); dropping it leaves
/// them.
pub struct TopicWatch {
    member: Membership,
    rx: mpsc::Receiver<Published>,
}

/// Keeps a watch or a feed in its topics: dropped, it leaves them.
struct Membership {
    id: u64,
    topics: Vec<String>,
    registry: Weak<Registry>,
}

impl TopicWatch {
    /// Receives the next notification; `None` once the registry is gone.
    pub async fn recv(&mut self) -> Option<Published> {
        self.rx.recv().await
    }

    /// Returns the topics watched.
    pub fn topics(&self) -> &[String] {
        &self.member.topics
    }
}

impl fmt::Debug for TopicWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TopicWatch")
            .field("topics", &self.member.topics)
            .finish_non_exhaustive()
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            for topic in &self.topics {
                registry.remove(topic, self.id);
            }
        }
    }
}
