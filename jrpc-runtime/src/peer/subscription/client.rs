//! Reads a subscription on the client's side: a typed stream of its items, which the connection's
//! loop feeds from the subscribe call's answer on, so that no item is lost between the answer and
//! the first poll.
//!
//! A subscription of one connection ends with it. A reconnecting client's subscription
//! ([`Resubscribed`]) outlives its connection: when it closes, the route hands the stream's sender
//! back instead of ending the stream, and the client subscribes again on its next connection.

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

use super::resubscribe::{Link, Resubscribed, Resubscriptions};
use crate::caller::{Caller, decode_result};
use crate::error::ClientError;
use crate::peer::Peer;
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
    /// The connection closed (for a reconnecting client's subscription: the client gave up
    /// reconnecting, or could not subscribe it again).
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

    pub(super) fn get(&self) -> Option<Ended> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Names the sender of a subscription's items, which the loop routes its notifications to.
pub(crate) type ItemSender = mpsc::Sender<Box<RawValue>>;

/// Holds what a subscribe call opens once its answer comes: where the subscription's
/// notifications go.
pub(crate) struct Opening {
    pub(crate) notification: Arc<str>,
    pub(crate) items: ItemSender,
    pub(crate) end: Arc<EndCell>,
    /// A reconnecting client's subscription: told its id when the route opens, and given its
    /// sender back when the connection closes.
    pub(crate) resubscribed: Option<Arc<Resubscribed>>,
}

/// Holds a subscription's route in the connection's loop.
pub(crate) struct Route {
    items: ItemSender,
    end: Arc<EndCell>,
    resubscribed: Option<Arc<Resubscribed>>,
}

/// Holds the params of a subscription's notification.
#[derive(serde::Deserialize)]
struct Notified<'a> {
    subscription: Id,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    /// An error object, or whatever else a server sends there: jsonrpsee sends a string.
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Returns the error a subscription ended with: the error object as sent, or a server error
/// whose message is the string sent (jsonrpsee's `Err("...")`), or whose `data` is the value.
fn end_error(error: &RawValue) -> RpcError {
    if let Ok(err) = serde_json::from_str::<RpcError>(error.get()) {
        return err;
    }
    match serde_json::from_str::<String>(error.get()) {
        Ok(message) => RpcError::new(ErrorCode::SERVER_ERROR, message),
        Err(_) => RpcError::new(ErrorCode::SERVER_ERROR, "Subscription error").with_data(error),
    }
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
        // Told here, as the answer is read: before this connection can close and the next one
        // subscribe it again.
        if let Some(resubscribed) = &opening.resubscribed {
            resubscribed.set_id(id.clone());
        }
        self.0.entry(opening.notification).or_default().insert(
            id,
            Route {
                items: opening.items,
                end: opening.end,
                resubscribed: opening.resubscribed,
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
            (_, Some(err)) => Some(match end_error(err) {
                err if err.code() == ErrorCode::new(-32005) => Ended::Lagged,
                err => Ended::Server(err),
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

    /// Ends every subscription: the connection closed. A reconnecting client's is given its
    /// sender back instead, its stream left open, to be subscribed again on the next connection.
    pub(crate) fn close(&mut self) {
        for (_, routes) in self.0.drain() {
            for (_, route) in routes {
                match route.resubscribed {
                    Some(resubscribed) => resubscribed.park(route.items),
                    None => route.end.set(Ended::Closed),
                }
            }
        }
    }
}

/// Closes what is left when the loop is dropped rather than ended (its task aborted).
impl Drop for Routes {
    fn drop(&mut self) {
        self.close();
    }
}

/// Calls a subscribe method and reads its notifications as a typed [`Subscription`]: what the
/// generated client's subscription methods use. Implemented by connections that stay open
/// ([`Peer`], the WebSocket client, which may subscribe again after a reconnect).
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
/// A subscription made through a reconnecting WebSocket client (see
/// `ws::WsClientBuilder::reconnect`) outlives its connection: the client subscribes it again, with
/// the same method and params, on each new connection, and its items go on coming to this same
/// stream under the new id ([`id`](Self::id) returns the current one). Items the server sent
/// while no connection was up are lost; none is delivered twice. It ends
/// [`Closed`](Ended::Closed) only when the client gives up reconnecting.
///
/// An item that does not decode into `T` is an `Err(ClientError::Malformed)`, and the stream
/// goes on.
#[must_use = "a subscription is read as a stream; dropping it unsubscribes"]
pub struct Subscription<T> {
    items: mpsc::Receiver<Box<RawValue>>,
    end: Arc<EndCell>,
    /// Where it is subscribed: what unsubscribing calls.
    on: Subscribed,
    item: PhantomData<fn() -> T>,
}

/// Says where a subscription is subscribed.
enum Subscribed {
    /// On one connection, under one id: it ends with the connection, which it keeps open.
    Connection {
        peer: Peer,
        id: Id,
        unsubscribe: Arc<str>,
    },
    /// Through a reconnecting client: on its current connection, under the id that connection
    /// gave it. The link keeps the client reconnecting.
    #[allow(
        dead_code,
        reason = "a reconnecting client (the WebSocket's) subscribes again through it"
    )]
    Client {
        resubscribed: Arc<Resubscribed>,
        link: Link,
        registry: Arc<Resubscriptions>,
    },
}

impl<T> Subscription<T> {
    /// Returns a subscription of `peer`'s connection reading `items`, with the id `id`.
    pub(crate) fn new(
        id: Id,
        items: mpsc::Receiver<Box<RawValue>>,
        end: Arc<EndCell>,
        peer: Peer,
        unsubscribe: &str,
    ) -> Self {
        Self {
            items,
            end,
            on: Subscribed::Connection {
                peer,
                id,
                unsubscribe: Arc::from(unsubscribe),
            },
            item: PhantomData,
        }
    }

    /// Returns a reconnecting client's subscription reading `items`: `registry` subscribes it
    /// again on each connection `link` gives.
    #[allow(
        dead_code,
        reason = "a reconnecting client (the WebSocket's) subscribes again through it"
    )]
    pub(super) fn through_client(
        items: mpsc::Receiver<Box<RawValue>>,
        resubscribed: Arc<Resubscribed>,
        link: Link,
        registry: Arc<Resubscriptions>,
    ) -> Self {
        Self {
            items,
            end: Arc::clone(resubscribed.end()),
            on: Subscribed::Client {
                resubscribed,
                link,
                registry,
            },
            item: PhantomData,
        }
    }

    /// Returns the subscription's id, as the server gave it: for a reconnecting client's, the id
    /// its current connection gave it (the last one while no connection is up).
    pub fn id(&self) -> Id {
        match &self.on {
            Subscribed::Connection { id, .. } => id.clone(),
            Subscribed::Client { resubscribed, .. } => resubscribed.id(),
        }
    }

    /// Returns why the subscription ended; `None` while it has not.
    pub fn ended(&self) -> Option<Ended> {
        self.end.get()
    }

    /// Unsubscribes, and returns what the server said: `true` if the subscription was live
    /// (`false` at once for a reconnecting client's while no connection is up: it is subscribed
    /// nowhere, and will not be again).
    ///
    /// # Errors
    ///
    /// The unsubscribe call's failure.
    pub async fn unsubscribe(self) -> Result<bool, ClientError> {
        self.end.set(Ended::Unsubscribed);
        self.forget();
        let Some((peer, method, id)) = self.target() else {
            return Ok(false);
        };
        peer.call(&method, [id]).await
    }

    /// Takes a reconnecting client's subscription out of those it subscribes again.
    fn forget(&self) {
        if let Subscribed::Client {
            resubscribed,
            registry,
            ..
        } = &self.on
        {
            registry.remove(resubscribed);
        }
    }

    /// Returns the connection it is subscribed on (for a reconnecting client's, the current one,
    /// if one is open), its unsubscribe method and its id there.
    fn target(&self) -> Option<(Peer, Arc<str>, Id)> {
        let (peer, unsubscribe) = match &self.on {
            Subscribed::Connection {
                peer, unsubscribe, ..
            } => (peer.clone(), unsubscribe),
            Subscribed::Client {
                resubscribed, link, ..
            } => (
                link.borrow().clone().filter(|peer| !peer.is_closed())?,
                resubscribed.unsubscribe(),
            ),
        };
        Some((peer, Arc::clone(unsubscribe), self.id()))
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
            .field("id", &self.id())
            .field("ended", &self.end.get())
            .finish_non_exhaustive()
    }
}

impl<T> Drop for Subscription<T> {
    fn drop(&mut self) {
        self.forget();
        // Ended by the server, with its connection, or unsubscribed: nothing to unsubscribe.
        if matches!(
            self.end.get(),
            Some(Ended::Server(_) | Ended::Closed | Ended::Unsubscribed)
        ) {
            return;
        }
        self.end.set(Ended::Unsubscribed);
        let Some((peer, method, id)) = self.target().filter(|(peer, ..)| !peer.is_closed()) else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.call::<bool>(&method, [id]).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Routes with one subscription, `"0x1"` of `item`; its end.
    fn one_route() -> (Routes, Arc<EndCell>) {
        let (items, _rx) = mpsc::channel(4);
        let end = Arc::new(EndCell::default());
        let opening = Opening {
            notification: Arc::from("item"),
            items,
            end: Arc::clone(&end),
            resubscribed: None,
        };
        let mut routes = Routes::default();
        let id = RawValue::from_string(r#""0x1""#.to_owned()).unwrap();
        routes.open(opening, id).unwrap();
        (routes, end)
    }

    #[test]
    fn an_error_notification_ends_the_subscription_whatever_its_error_holds() {
        let cases = [
            (
                r#"{"code": 7, "message": "gone"}"#,
                Ended::Server(RpcError::new(7, "gone")),
            ),
            (r#"{"code": -32005, "message": "lagged"}"#, Ended::Lagged),
            // jsonrpsee's `Err("...")`.
            (
                r#""ran out""#,
                Ended::Server(RpcError::new(ErrorCode::SERVER_ERROR, "ran out")),
            ),
            (
                "[1,2]",
                Ended::Server(
                    RpcError::new(ErrorCode::SERVER_ERROR, "Subscription error").with_data(&[1, 2]),
                ),
            ),
        ];
        for (error, ended) in cases {
            let (mut routes, end) = one_route();
            let params = format!(r#"{{"subscription": "0x1", "error": {error}}}"#);
            let params = RawValue::from_string(params).unwrap();
            assert!(routes.take("item", Some(&params)));
            assert_eq!(end.get(), Some(ended), "{error}");
            assert!(routes.is_empty(), "{error}");
        }
    }
}
