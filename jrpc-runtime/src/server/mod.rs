//! What every network server shares: the accept loop and its connection cap, graceful shutdown,
//! the replies a server writes itself, and the topics registry.
//!
//! `http::HttpServer` and `ws::WsServer` are both built
//! on these pieces, and neither reaches into the other: the HTTP listener hands a WebSocket
//! upgrade to the public `ws::WsServer::upgrade_with`.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`ShutdownHandle`] | starts a graceful shutdown of either server and waits for it ([`Drained`]) |
//! | [`Topics`] (with `ws`) | named groups of connections that get the same notifications; [`ContextExt`] subscribes from a handler |

#![cfg_attr(
    not(all(feature = "http", feature = "ws")),
    allow(unused_imports, reason = "each server uses its part")
)]

mod accept;
mod io;
pub(crate) mod reply;
mod shutdown;
#[cfg(feature = "ws")]
mod topics;

pub(crate) use accept::{Slot, Slots, accept_loop, serve_each};
pub use io::Io;
pub use shutdown::{Drained, ShutdownHandle};
pub(crate) use shutdown::{Shutdown, Tracked};
#[cfg(feature = "ws")]
pub(crate) use topics::Membership;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use topics::{ContextExt, SubscribeError, Topics};
