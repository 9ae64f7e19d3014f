//! Provides subscriptions, both sides: a subscribe method answers an id, then its items go out as
//! notifications that name it, until the client unsubscribes, the producer ends, or the
//! connection closes; a client reads them as a typed stream.
//!
//! | file | what |
//! | --- | --- |
//! | `items` | [`Items`]: what a subscribe handler returns (a stream, its bound, [`WhenFull`]) |
//! | `register` | [`Methods::register_subscription`](crate::Methods::register_subscription): the subscribe and unsubscribe methods, the ids, the pump that polls a producer |
//! | `hub` | a topic feed read once for a connection's second and later subscriptions of it, each fed in its lane |
//! | `lane` | one subscription's producer, polled by the connection's taker, and its notifications waiting within its bound; the queue of lanes for the taker to visit |
//! | `registry` | one connection's subscriptions: by id, the cap, the lanes for the taker to visit |
//! | `taker` | [`Notifications`]: the seam a transport that writes in a task of its own takes the notifications through |
//! | `client` | the client's side: [`Subscriber`], [`Subscription`] (a typed stream), [`Ended`], the routes of a connection's notifications |
//! | `resubscribe` | a reconnecting client's subscriptions, subscribed again on each new connection under the same stream |
//!
//! A subscription has no task of its own: whoever writes its connection (the loop, or a
//! WebSocket's pump) polls its producer when it wakes. The subscribe call's answer always goes
//! before the subscription's first notification: the lane opens, and its producer is first
//! polled, only once the writer has that answer.

mod client;
mod hub;
mod items;
mod lane;
mod register;
mod registry;
#[allow(
    dead_code,
    reason = "a reconnecting client (the WebSocket's) subscribes again through it"
)]
mod resubscribe;
mod taker;

pub(crate) use client::{EndCell, Opening, Routes};
pub use client::{Ended, Subscriber, Subscription};
pub use items::{Items, WhenFull};
pub use register::{IdProvider, random_id};
pub(crate) use registry::Subscriptions;
#[allow(
    unused_imports,
    reason = "a reconnecting client (the WebSocket's) subscribes again through it"
)]
pub(crate) use resubscribe::{Link, Resubscriptions};
pub(crate) use taker::Notifications;
#[cfg(feature = "ws")]
pub(crate) use taker::TakerWakes;
