//! Reads a subscription on the client's side: a typed stream of its items, which the connection's
//! loop feeds from the subscribe call's answer on, so that no item is lost between the answer and
//! the first poll.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, ready};

use futures_util::Stream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::caller::{Caller, decode_result};
use crate::error::ClientError;
use crate::wire::{ErrorCode, Id, RpcError};

/// Says why a [`Subscription`] ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Ended {
    /// The client unsubscribed ([`Subscription::unsubscribe`]).
    Unsubscribed,
    /// The server ended it with an error notification.
    Server(RpcError),
    /// It fell behind: the server ended it for its bound (`-32005`), or the client's own buffer
    /// was full (the stream was not read fast enough).
    Lagged,
    /// The connection closed.
    Closed,
}

/// Holds why a subscription ended, as the loop and the stream see it.
#[derive(Debug, Default)]
pub(crate) struct EndCell(Mutex<Option<Ended>>);

impl EndCell {
    /// Records `why`, unless a reason was recorded first.
    pub(crate) fn set(&self, why: Ended) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(why);
    }

    fn get(&self) -> Option<Ended> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Holds what a subscribe call opens once its answer comes: where the subscription's
/// notifications go.
pub(crate) struct Opening {
    pub(crate) notification: Arc<str>,
    pub(crate) items: mpsc::Sender<Box<RawValue>>,
    pub(crate) end: Arc<EndCell>,
}

/// Holds a subscription's route in the connection's loop.
pub(crate) struct Route {
    items: mpsc::Sender<Box<RawValue>>,
    end: Arc<EndCell>,
}

/// Holds the params of a subscription's notification.
#[derive(serde::Deserialize)]
struct Notified<'a> {
    subscription: Id,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Keeps the subscriptions of one client connection, by notification and id: what the loop routes
/// incoming notifications by.
#[derive(Default)]
pub(crate) struct Routes(std::collections::HashMap<Arc<str>, std::collections::HashMap<Id, Route>>);

impl Routes {
    /// Returns whether no subscription is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Opens the route `opening` asked for, with the id the subscribe call's `result` holds;
    /// returns the result, or why it is no id.
    pub(crate) fn open(
        &mut self,
        opening: Opening,
        result: Box<RawValue>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id: Id = decode_result(&result)?;
        self.0.entry(opening.notification).or_default().insert(
            id,
            Route {
                items: opening.items,
                end: opening.end,
            },
        );
        Ok(result)
    }

    /// Takes a notification of `method`, if it is a subscription's: `false` when it is not one.
    pub(crate) fn take(&mut self, method: &str, params: Option<&RawValue>) -> bool {
        let Some(routes) = self.0.get_mut(method) else {
            return false;
        };
        let Some(notified) =
            params.and_then(|params| serde_json::from_str::<Notified<'_>>(params.get()).ok())
        else {
            tracing::warn!(
                method,
                "a subscription's notification without its params: ignored"
            );
            return true;
        };
        let Some(route) = routes.get(&notified.subscription) else {
            // Its stream was dropped, or it was never this connection's: nothing to do.
            tracing::debug!(method, id = %notified.subscription, "notification of no subscription");
            return true;
        };
        let ended = match (notified.result, notified.error) {
            (_, Some(err)) => Some(if err.code() == ErrorCode::new(-32005) {
                Ended::Lagged
            } else {
                Ended::Server(err)
            }),
            (Some(item), None) => match route.items.try_send(item.to_owned()) {
                Ok(()) => None,
                Err(mpsc::error::TrySendError::Full(_)) => Some(Ended::Lagged),
                // The stream was dropped: it unsubscribed.
                Err(mpsc::error::TrySendError::Closed(_)) => Some(Ended::Unsubscribed),
            },
            (None, None) => None,
        };
        if let Some(why) = ended {
            route.end.set(why);
            routes.remove(&notified.subscription);
            if routes.is_empty() {
                self.0.remove(method);
            }
        }
        true
    }

    /// Ends every subscription: the connection closed.
    pub(crate) fn close(&mut self) {
        for (_, routes) in self.0.drain() {
            for (_, route) in routes {
                route.end.set(Ended::Closed);
            }
        }
    }
}

/// Calls a subscribe method and reads its notifications as a typed [`Subscription`]: what the
/// generated client's subscription methods use. Implemented by connections that stay open
/// ([`Peer`](crate::Peer), the WebSocket client).
pub trait Subscriber: Caller {
    /// Calls `method` with `params`; its answer is the subscription's id, and the notifications
    /// of `notification` that name it are its items. Dropping the subscription calls
    /// `unsubscribe` with its id.
    ///
    /// # Errors
    ///
    /// As the call's: [`ClientError::Failed`] with the server's refusal, the transport's failure;
    /// [`ClientError::Malformed`] when the answer is no id.
    fn subscribe<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        notification: &str,
        unsubscribe: &str,
    ) -> impl Future<Output = Result<Subscription<T>, ClientError>> + Send;
}

/// Holds an open subscription: a [`Stream`] of its items, decoded, from the subscribe call's
/// answer on. It ends when the server ends it, the connection closes, or its items come faster
/// than it is read (past the connection's `subscription_buffer`); [`ended`](Self::ended) says
/// which. Dropping it unsubscribes.
///
/// An item that does not decode into `T` is an `Err(ClientError::Malformed)`, and the stream
/// goes on.
#[must_use = "a subscription is read as a stream; dropping it unsubscribes"]
pub struct Subscription<T> {
    id: Id,
    items: mpsc::Receiver<Box<RawValue>>,
    end: Arc<EndCell>,
    /// Ends the subscription on the server: the connection, and the unsubscribe method.
    unsubscribe: Option<(crate::Peer, Arc<str>)>,
    item: PhantomData<fn() -> T>,
}

impl<T> Subscription<T> {
    /// Returns a subscription reading `items`, with the id `id`.
    pub(crate) fn new(
        id: Id,
        items: mpsc::Receiver<Box<RawValue>>,
        end: Arc<EndCell>,
        peer: crate::Peer,
        unsubscribe: &str,
    ) -> Self {
        Self {
            id,
            items,
            end,
            unsubscribe: Some((peer, Arc::from(unsubscribe))),
            item: PhantomData,
        }
    }

    /// Returns the subscription's id, as the server gave it.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// Returns why the subscription ended; `None` while it has not.
    pub fn ended(&self) -> Option<Ended> {
        self.end.get()
    }

    /// Unsubscribes, and returns what the server said: `true` if the subscription was live.
    ///
    /// # Errors
    ///
    /// The unsubscribe call's failure.
    pub async fn unsubscribe(mut self) -> Result<bool, ClientError> {
        self.end.set(Ended::Unsubscribed);
        let Some((peer, method)) = self.unsubscribe.take() else {
            return Ok(false);
        };
        peer.call(&method, [&self.id]).await
    }
}

impl<T: DeserializeOwned> Stream for Subscription<T> {
    type Item = Result<T, ClientError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match ready!(this.items.poll_recv(cx)) {
            Some(raw) => Poll::Ready(Some(decode_result(&raw))),
            None => {
                this.end.set(Ended::Closed);
                Poll::Ready(None)
            }
        }
    }
}

impl<T> fmt::Debug for Subscription<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("ended", &self.end.get())
            .finish_non_exhaustive()
    }
}

impl<T> Drop for Subscription<T> {
    fn drop(&mut self) {
        let Some((peer, method)) = self.unsubscribe.take() else {
            return;
        };
        // Ended by the server, or with its connection: nothing to unsubscribe.
        if matches!(
            self.end.get(),
            Some(Ended::Server(_) | Ended::Closed | Ended::Unsubscribed)
        ) || peer.is_closed()
        {
            return;
        }
        self.end.set(Ended::Unsubscribed);
        let id = self.id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.call::<bool>(&method, [id]).await;
            });
        }
    }
}
