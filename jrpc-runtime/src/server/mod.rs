//! What servers share: the accept loop and its connection cap, graceful shutdown, the replies a
//! server writes itself (these with `http` or `ws`), and the topics registry (in every build).
//!
//! `http::HttpServer` and `ws::WsServer` are both built
//! on these pieces, and neither reaches into the other: the HTTP listener hands a WebSocket
//! upgrade to the public `ws::WsServer::upgrade_with`.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`ShutdownHandle`] (with `http` or `ws`) | starts a graceful shutdown of either server and waits for it ([`Drained`]) |
//! | [`Topics`] | named groups of connections that get the same notifications; [`ContextExt`] subscribes from a handler |
//! | [`Topics::redis`] (with `redis`) | a registry shared by every replica of a service through Redis pub/sub |
//!
//! Topics need nothing from a transport but a connection that stays open ([`Context::peer`](crate::Context::peer)),
//! so they are built without `http` and `ws` too: a stdio server (one process per client, an MCP
//! server say) joins the topics of its siblings through Redis.

#![cfg_attr(
    not(all(feature = "http", feature = "ws")),
    allow(unused_imports, reason = "each server uses its part")
)]

#[cfg(any(feature = "http", feature = "ws"))]
mod accept;
#[cfg(any(feature = "http", feature = "ws"))]
mod io;
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) mod reply;
#[cfg(any(feature = "http", feature = "ws"))]
mod shutdown;
mod topics;

#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) use accept::{Slot, Slots, accept_loop, serve_each};
#[cfg(any(feature = "http", feature = "ws"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
pub use io::Io;
#[cfg(any(feature = "http", feature = "ws"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
pub use shutdown::{Drained, ShutdownHandle};
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) use shutdown::{Shutdown, Tracked};
pub use topics::{ContextExt, SubscribeError, Topics};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use topics::{RedisConnectError, RedisStatus, RedisTopicsBuilder};
