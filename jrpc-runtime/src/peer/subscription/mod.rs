//! Provides subscriptions, both sides: a subscribe method answers an id, then its items go out as
//! notifications that name it, until the client unsubscribes, the producer ends, or the
//! connection closes; a client reads them as a typed stream.
//!
//! | file | what |
//! | --- | --- |
//! | `items` | [`Items`]: what a subscribe handler returns (a stream, its bound, [`WhenFull`]) |
//! | `register` | [`Methods::register_subscription`](crate::Methods::register_subscription): the subscribe and unsubscribe methods, the ids, the pump that polls a producer |
//! | `lane` | one subscription's notifications on their way to the loop, within its bound |
//! | `registry` | one connection's subscriptions: by id, the cap, the lanes with notifications |
//! | `client` | the client's side: [`Subscriber`], [`Subscription`] (a typed stream), [`Ended`], the routes of a connection's notifications |
//! | `resubscribe` | a reconnecting client's subscriptions, subscribed again on each new connection under the same stream |
//!
//! The subscribe call's answer always goes before the subscription's first notification: the
//! lane opens only once the loop has queued that answer.

mod client;
mod items;
mod lane;
mod register;
mod registry;
#[allow(
    dead_code,
    reason = "a reconnecting client (the WebSocket's) subscribes again through it"
)]
mod resubscribe;

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
