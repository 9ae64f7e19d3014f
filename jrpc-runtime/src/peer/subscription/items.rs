//! Holds what a subscribe handler returns: the items of one subscription, with its bound and what
//! a full bound does.

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt as _};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use crate::wire::RpcError;

/// Says what a subscription does when its bound is full: its client reads more slowly than its
/// producer makes items (see [`Items::when_full`]).
///
/// The default, [`Lag`](Self::Lag), ends only the subscription that fell behind, and says so:
/// its connection's calls and other subscriptions go on as if nothing happened, nothing is
/// dropped without the client knowing, and the client may subscribe again. A chain node's
/// `newHeads` may prefer [`DropOldest`](Self::DropOldest) (only the latest head matters), a log
/// that must be complete [`Wait`](Self::Wait) (the producer pauses; a topic feed cannot pause,
/// and lags instead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WhenFull {
    /// Ends the subscription with an error notification (`-32005`, "Subscription lagged", the
    /// bound in `data`); the producer is dropped (the default).
    #[default]
    Lag,
    /// Waits for room: the producer is not polled until the client reads (reth's way).
    Wait,
    /// Drops the oldest item waiting to make room for the newest.
    DropOldest,
    /// Closes the whole connection (geth's way), as a push that finds no room does.
    CloseConnection,
}

/// Defaults the items one subscription may hold unsent: 64.
pub(crate) const BOUND_ITEMS: usize = 64;

/// Defaults the bytes one subscription may hold unsent: 64 KiB, a quarter of a WebSocket's
/// watermark, so that one subscription that falls behind never holds enough to pause reading
/// (at half the watermark).
pub(crate) const BOUND_BYTES: usize = 64 * 1024;

/// Says how one subscription's producer is read, as the loop of its connection needs it.
pub(crate) enum Produced {
    /// An item, encoded.
    Item(Box<RawValue>),
    /// An item encoded once for every subscription that sends it.
    Shared(Arc<RawValue>),
    /// The end, with the error notification to send.
    Failed(RpcError),
}

/// Names a boxed stream of encoded items: what a subscription's pump polls.
pub(crate) type Producer = Pin<Box<dyn Stream<Item = Produced> + Send>>;

/// Holds a topic's feed as one subscription reads it. The first subscription of a connection to
/// a feed reads it alone, through `producer`; the next ones read it together through the
/// connection's hub, which takes each item once for them all, and `rx` (made with `producer`'s
/// receiver, at the same place in the feed) tells a joining one what the hub read before it.
pub(crate) struct TopicFeed {
    /// Which feed: unique to the channel, so that a feed made again is another.
    pub(crate) id: u64,
    /// The feed's items, read alone (or by the hub this subscription makes).
    pub(crate) producer: Producer,
    pub(crate) rx: broadcast::Receiver<Arc<RawValue>>,
    /// Held as long as the subscription lives: what counts it among the topic's subscribers.
    pub(crate) guard: Box<dyn Send + Sync>,
}

/// Says where a subscription's items come from.
pub(crate) enum Source {
    /// A stream of its own.
    Producer(Producer),
    /// A topic's feed, which the connection's subscriptions of it may read together.
    Feed(TopicFeed),
}

/// Holds the items of one subscription, as its subscribe handler returns them: a stream, encoded
/// item by item as the connection takes them, with the subscription's bound and what a full
/// bound does.
///
/// The subscription lives until the stream ends (after its last item, the client is told nothing
/// more), an item fails ([`Items::fallible`]: the error goes out as the subscription's error
/// notification), the client unsubscribes, or the connection closes; then the stream is dropped.
///
/// The stream has no task of its own: the task that writes its connection polls it when it
/// wakes, so its `poll_next` should return quickly. Work that takes long belongs in a task of
/// its own, which sends its items through a channel that the stream reads.
///
/// ```
/// use futures_util::stream;
/// use jrpc_runtime::{Items, WhenFull};
///
/// let heads = Items::new(stream::iter([1u64, 2, 3]))
///     .bound(16, 64 * 1024)
///     .when_full(WhenFull::DropOldest);
/// # drop(heads);
/// ```
#[must_use = "a subscription's items do nothing until a subscribe handler returns them"]
pub struct Items<T> {
    pub(crate) source: Source,
    pub(crate) bound_items: usize,
    pub(crate) bound_bytes: usize,
    pub(crate) when_full: WhenFull,
    item: PhantomData<fn() -> T>,
}

impl<T: Serialize + Send + 'static> Items<T> {
    /// Returns the items `stream` makes, each sent as the subscription's notification.
    pub fn new(stream: impl Stream<Item = T> + Send + 'static) -> Self {
        Self::fallible(stream.map(Ok))
    }

    /// Returns the items `stream` makes; an `Err` ends the subscription with that error as its
    /// error notification (`{"subscription": ID, "error": ...}`).
    pub fn fallible(stream: impl Stream<Item = Result<T, RpcError>> + Send + 'static) -> Self {
        let producer = stream.map(|item| match item {
            Ok(item) => match serde_json::value::to_raw_value(&item) {
                Ok(raw) => Produced::Item(raw),
                Err(err) => Produced::Failed(
                    RpcError::internal().with_data(&format!("an item did not encode: {err}")),
                ),
            },
            Err(err) => Produced::Failed(err),
        });
        Self::from_producer(Box::pin(producer))
    }
}

impl<T> Items<T> {
    /// Returns the items `stream` makes, encoded already (what a topic feed publishes: encoded
    /// once, whatever the number of subscribers).
    pub fn encoded(stream: impl Stream<Item = Box<RawValue>> + Send + 'static) -> Self {
        Self::from_producer(Box::pin(stream.map(Produced::Item)))
    }

    /// Returns the items `stream` makes, encoded once and shared by every subscription that sends
    /// them (a broadcast of `Arc<RawValue>`: one encoding per publish, however many subscribe).
    pub fn shared(stream: impl Stream<Item = Arc<RawValue>> + Send + 'static) -> Self {
        Self::from_producer(Box::pin(stream.map(Produced::Shared)))
    }

    /// Returns the items of the topic feed `id` (what
    /// [`Topics::items`](crate::server::Topics::items) returns): `items` read from one receiver,
    /// `rx` another made at the same place; `guard` held while the subscription lives.
    pub(crate) fn feed(
        id: u64,
        items: impl Stream<Item = Arc<RawValue>> + Send + 'static,
        rx: broadcast::Receiver<Arc<RawValue>>,
        guard: Box<dyn Send + Sync>,
    ) -> Self {
        Self::from_source(Source::Feed(TopicFeed {
            id,
            producer: Box::pin(items.map(Produced::Shared)),
            rx,
            guard,
        }))
    }

    fn from_producer(producer: Producer) -> Self {
        Self::from_source(Source::Producer(producer))
    }

    fn from_source(source: Source) -> Self {
        Self {
            source,
            bound_items: BOUND_ITEMS,
            bound_bytes: BOUND_BYTES,
            when_full: WhenFull::default(),
            item: PhantomData,
        }
    }

    /// Sets the subscription's bound: how many items, and bytes, may wait for its client (default
    /// 64 items and 64 KiB; at least one item is always let through). They count in the
    /// connection's watermark and the server's budget too: a connection past its watermark is
    /// full for every subscription on it.
    pub fn bound(mut self, items: usize, bytes: usize) -> Self {
        self.bound_items = items.max(1);
        self.bound_bytes = bytes;
        self
    }

    /// Sets what a full bound does (default [`WhenFull::Lag`]); see [`WhenFull`].
    pub fn when_full(mut self, when_full: WhenFull) -> Self {
        self.when_full = when_full;
        self
    }
}

impl<T> fmt::Debug for Items<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Items")
            .field("bound_items", &self.bound_items)
            .field("bound_bytes", &self.bound_bytes)
            .field("when_full", &self.when_full)
            .finish_non_exhaustive()
    }
}
