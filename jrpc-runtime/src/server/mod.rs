//! What every network server shares: the accept loop and its connection cap, graceful shutdown,
//! the replies a server writes itself, TLS acceptance, the topics registry; and the server of
//! two-way peers on Unix and TCP sockets, built on them.
//!
//! `http::HttpServer` and `ws::WsServer` are both built on these pieces, and neither reaches into
//! the other: the HTTP listener hands a WebSocket upgrade to the public
//! `ws::WsServer::upgrade_with`.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`ShutdownHandle`] | starts a graceful shutdown of any server and waits for it ([`Drained`]) |
//! | [`SocketServer`] | JSON-RPC on Unix or TCP sockets, one two-way [`Peer`](crate::Peer) per connection, either framing |
//! | [`ServerTls`] (with `tls`) | how the HTTP server terminates TLS: a rustls configuration, or PEM files checked at build time |
//! | [`Topics`] (with `ws`) | named groups of connections that get the same notifications; [`Context::subscribe`](crate::Context::subscribe) subscribes from a handler |

#![cfg_attr(
    not(all(feature = "http", feature = "ws")),
    allow(unused_imports, reason = "each server uses its part")
)]

mod accept;
mod io;
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) mod reply;
mod shutdown;
mod socket;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "ws")]
mod topics;

pub(crate) use accept::{Slot, Slots, accept_loop};
pub use io::Io;
pub use shutdown::{Drained, ShutdownHandle};
pub(crate) use shutdown::{Shutdown, Tracked};
pub use socket::{SocketServer, SocketServerBuilder};
#[cfg(feature = "tls")]
pub(crate) use tls::Acceptor;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::ServerTls;
#[cfg(feature = "ws")]
pub(crate) use topics::Membership;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use topics::{ContextExt, SubscribeError, Topics};
