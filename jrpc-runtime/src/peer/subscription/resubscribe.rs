//! Subscribes a reconnecting client's subscriptions again on each of its new connections: each
//! keeps its stream, and takes the id the new connection gives it.
//!
//! A subscription's life through a reconnecting client:
//!
//! | state | its items' sender | what moves it on |
//! | --- | --- | --- |
//! | subscribing | in the subscribe call's [`Opening`] | the answer opens its route (the id is told), or the call fails and the subscription is never made |
//! | routed | in the route of the connection's loop | the connection closes: the route parks the sender here; the server ends it, it lags, or its stream is dropped: it ends |
//! | parked | here | the client's next connection subscribes it again (back to subscribing); the client gives up: it ends [`Closed`](Ended::Closed) |
//!
//! The stream stays open while one of them holds the sender, and ends once none does: after the
//! items already read, as any subscription's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, watch};

use super::client::{EndCell, Ended, ItemSender, Opening, Subscription};
use crate::caller::Caller as _;
use crate::error::ClientError;
use crate::peer::Peer;
use crate::wire::Id;

/// Names the connection a reconnecting client's calls go over now: `None` between connections.
/// Its sender is dropped once the client gives up.
pub(crate) type Link = watch::Receiver<Option<Peer>>;

/// Holds what subscribes one subscription again: its call, its current id, and its items'
/// sender while no connection routes them.
pub(crate) struct Resubscribed {
    /// Tells it from the others of its client.
    key: u64,
    method: Box<str>,
    params: Option<Box<RawValue>>,
    notification: Arc<str>,
    unsubscribe: Arc<str>,
    /// The id the current (or last) connection gave it.
    id: Mutex<Id>,
    end: Arc<EndCell>,
    /// Its items' sender, between connections.
    parked: Mutex<Option<ItemSender>>,
}

impl Resubscribed {
    /// Records the id a connection gave it.
    pub(super) fn set_id(&self, id: Id) {
        *self.id.lock().unwrap_or_else(PoisonError::into_inner) = id;
    }

    /// Returns the id the current (or last) connection gave it.
    pub(super) fn id(&self) -> Id {
        self.id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Returns its unsubscribe method.
    pub(super) fn unsubscribe(&self) -> &Arc<str> {
        &self.unsubscribe
    }

    /// Returns where why it ended is kept, shared with its stream.
    pub(super) fn end(&self) -> &Arc<EndCell> {
        &self.end
    }

    /// Keeps its items' sender until the next connection: the last one closed.
    pub(super) fn park(&self, items: ItemSender) {
        *self.parked.lock().unwrap_or_else(PoisonError::into_inner) = Some(items);
    }

    /// Takes its items' sender, if it is parked.
    fn unpark(&self) -> Option<ItemSender> {
        self.parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Returns what a subscribe call opens for it, routing to `items`.
    fn opening(self: &Arc<Self>, items: ItemSender) -> Opening {
        Opening {
            notification: Arc::clone(&self.notification),
            items,
            end: Arc::clone(&self.end),
            resubscribed: Some(Arc::clone(self)),
        }
    }
}

/// Keeps a reconnecting client's live subscriptions, to subscribe them again on each new
/// connection.
#[derive(Default)]
pub(crate) struct Resubscriptions {
    live: Mutex<HashMap<u64, Arc<Resubscribed>>>,
    next_key: AtomicU64,
}

/// Takes a subscription out of its registry if its subscribe call is given up (its future
/// dropped, or failed) before it became a stream.
struct Unmade<'a> {
    registry: &'a Resubscriptions,
    key: Option<u64>,
}

impl Drop for Unmade<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.registry.remove_key(key);
        }
    }
}

impl Resubscriptions {
    /// Calls the subscribe `method` on `peer`, the client's current connection, and returns its
    /// stream, which is subscribed again on each later connection of `link`.
    ///
    /// # Errors
    ///
    /// As [`Subscriber::subscribe`](super::Subscriber::subscribe)'s.
    pub(crate) async fn subscribe<T: DeserializeOwned>(
        self: &Arc<Self>,
        peer: &Peer,
        link: Link,
        method: &str,
        params: Option<Box<RawValue>>,
        notification: &str,
        unsubscribe: &str,
    ) -> Result<Subscription<T>, ClientError> {
        let (items, rx) = mpsc::channel(peer.subscription_buffer());
        let resubscribed = Arc::new(Resubscribed {
            key: self.next_key.fetch_add(1, Ordering::Relaxed),
            method: method.into(),
            params: params.clone(),
            notification: Arc::from(notification),
            unsubscribe: Arc::from(unsubscribe),
            id: Mutex::new(Id::NULL),
            end: Arc::default(),
            parked: Mutex::new(None),
        });
        // Registered before the call: its connection may close as soon as it is answered, and
        // the next one must find it parked here.
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(resubscribed.key, Arc::clone(&resubscribed));
        let mut unmade = Unmade {
            registry: self,
            key: Some(resubscribed.key),
        };
        let opening = resubscribed.opening(items);
        peer.open_subscription(method, params, opening).await?;
        unmade.key = None;
        Ok(Subscription::through_client(
            rx,
            resubscribed,
            link,
            Arc::clone(self),
        ))
    }

    /// Takes `resubscribed` out: its stream is gone, or was never made.
    pub(super) fn remove(&self, resubscribed: &Resubscribed) {
        self.remove_key(resubscribed.key);
    }

    fn remove_key(&self, key: u64) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
    }

    /// Subscribes again, on `peer`, the client's new connection, every subscription its last
    /// connection carried; returns once each is answered. The calls go out together.
    pub(crate) async fn resubscribe(&self, peer: &Peer) {
        let parked: Vec<_> = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(|resubscribed| {
                let items = resubscribed.unpark()?;
                Some((Arc::clone(resubscribed), items))
            })
            .collect();
        futures_util::future::join_all(
            parked
                .into_iter()
                .map(|(resubscribed, items)| again(peer, resubscribed, items)),
        )
        .await;
    }

    /// Ends every subscription [`Closed`](Ended::Closed): the client gave up reconnecting.
    pub(crate) fn close(&self) {
        for resubscribed in self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            resubscribed.end.set(Ended::Closed);
            // Its stream ends once the items already read are taken.
            drop(resubscribed.unpark());
        }
    }
}

/// Subscribes `resubscribed` again on `peer`, routing to `items`, which were parked.
async fn again(peer: &Peer, resubscribed: Arc<Resubscribed>, items: ItemSender) {
    // Its stream was dropped, or it ended, while no connection carried it.
    if items.is_closed() || resubscribed.end.get().is_some() {
        return;
    }
    // The call's opening holds a clone: this one is parked again if the connection closes
    // before the answer.
    let opening = resubscribed.opening(items.clone());
    let params = resubscribed.params.clone();
    match peer
        .open_subscription(&resubscribed.method, params, opening)
        .await
    {
        Ok(id) => {
            // Its stream was dropped while the call was out: end what the server opened.
            if items.is_closed() || resubscribed.end.get() == Some(Ended::Unsubscribed) {
                let _ = peer.call::<bool>(&resubscribed.unsubscribe, [id]).await;
            }
        }
        // This connection went too: the next one subscribes it.
        Err(ClientError::Closed { .. }) => resubscribed.park(items),
        Err(err) => {
            tracing::warn!(
                method = %resubscribed.method,
                error = %err,
                "a subscription could not be subscribed again after a reconnect: it ends"
            );
            resubscribed.end.set(match err {
                ClientError::Failed(err) => Ended::Server(err),
                _ => Ended::Closed,
            });
        }
    }
}
