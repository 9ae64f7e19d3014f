//! Provides the two-way connection: both sides call.
//!
//! A [`Peer`] is a handle on a connection whose loop ([`Driver`]) one task runs; the loop serves
//! a [`Methods`](crate::dispatch::Methods) table to the other side, and the handle calls the other side
//! (it is a [`Caller`](crate::caller::Caller)). The pieces:
//!
//! | file | what |
//! | --- | --- |
//! | `config` | [`PeerConfig`] and its checking builder, [`Framing`], [`Overflow`], [`Lifetime`] |
//! | `handle` | [`Peer`]: the constructors, the `Caller` impl, the handle [`Context::peer`](crate::dispatch::Context::peer) finds |
//! | `connection` | the loop: what it reads, writes and runs, in which order |
//! | `cancel` | [`Cancellation`]: the notices sent for a call given up, and honoured |
//! | `told` | requests told when cancelled rather than dropped |
//! | `subscription` | subscriptions: [`Items`], the subscribe and unsubscribe methods, each subscription's bounded lane, the client's stream and its resubscribing after a reconnect |
//!
//! Three constructors, one per kind of stream: [`Peer::connect`] (one byte stream),
//! [`Peer::connect_split`] (separate halves: stdin and stdout, a child's pipes) and
//! [`Peer::start`] (a stream of messages and a sink of texts: a WebSocket, a test double). Each
//! takes the table to serve and a [`PeerConfig`].
//!
//! Messages are taken in arrival order: a notification handler finishes before the next message
//! is taken; a call starts in turn and runs in its own task; an answer wakes its caller in turn.
//! While a notification handler runs, the answers to the calls made since it started are read
//! (it may await one); other messages wait for it.

mod answer;
mod cancel;
mod config;
mod connection;
mod feed;
mod handle;
mod subscription;
mod told;

pub use cancel::Cancellation;
pub use config::{Framing, Lifetime, Overflow, PeerConfig, PeerConfigBuilder};
#[allow(
    unused_imports,
    reason = "a transport that reads in a task of its own feeds the loop"
)]
pub(crate) use connection::Input;
#[allow(
    unused_imports,
    reason = "a transport that reads in a task of its own feeds the loop"
)]
pub(crate) use feed::{Feed, Read};
pub(crate) use handle::ConnectionPeer;
#[allow(unused_imports, reason = "an SSE answer writes events a line each")]
pub(crate) use handle::one_line;
pub use handle::{Driver, Peer};
#[allow(
    unused_imports,
    reason = "a transport that writes in a task of its own takes the notifications"
)]
pub(crate) use subscription::Notifications;
#[cfg(feature = "ws")]
pub(crate) use subscription::TakerWakes;
pub use subscription::{Ended, IdProvider, Items, Subscriber, Subscription, WhenFull, random_id};
#[allow(
    unused_imports,
    reason = "a reconnecting client (the WebSocket's) subscribes again through it"
)]
pub(crate) use subscription::{Link, Resubscriptions};
pub use told::CancelGuard;
pub(crate) use told::Told;
