//! Holds what servers share: the accept loop and its connection cap, graceful shutdown, the replies
//! a server writes itself (with `http` or `ws`), TLS acceptance (with `tls`), and the topics
//! registry; and the server of two-way peers on Unix and TCP sockets, built on them. All but the
//! replies and TLS are in every build: a stdio or Unix-socket server needs no HTTP.
//!
//! `http::HttpServer` and `ws::WsServer` are both built on these pieces, and neither reaches into
//! the other: the HTTP listener hands a WebSocket upgrade to the public
//! `ws::WsServer::upgrade_with`.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`Limits`](crate::limits::Limits) | the limits every connection keeps (message size, watermark, calls in flight, queue, timeouts), one type for HTTP, WebSocket and peers |
//! | [`ResponseBody`], [`refusal`], [`envelope`], [`json`], [`closing`], [`unavailable`] (with `http` or `ws`) | the replies a server writes itself: an HTTP status with a JSON-RPC error envelope |
//! | [`ShutdownHandle`] | starts a graceful shutdown of any server and waits for it ([`Drained`]) |
//! | [`SocketServer`] | JSON-RPC on Unix or TCP sockets, one two-way [`Peer`](crate::peer::Peer) per connection, either framing |
//! | [`ServerTls`] (with `tls`) | how the HTTP server terminates TLS: a rustls configuration, or PEM files checked at build time |
//! | [`Topics`] | named groups of connections that get the same notifications; [`Context::subscribe`](crate::dispatch::Context::subscribe) subscribes from a handler |
//! | [`Topics::redis`] (with `redis`) | a registry shared by every replica of a service through Redis pub/sub |
//!
//! How the limits bound memory, and how to size them for many connections:
//! [`guide::limits`](crate::guide::limits).
//!
//! Topics need nothing from a transport but a connection that stays open ([`Context::peer`](crate::dispatch::Context::peer)),
//! so they are built without `http` and `ws` too: a stdio server (one process per client, an MCP
//! server say) joins the topics of its siblings through Redis.

#![cfg_attr(
    not(all(feature = "http", feature = "ws")),
    allow(unused_imports, reason = "each server uses its part")
)]

mod accept;
mod io;
#[cfg(any(feature = "http", feature = "ws"))]
mod origin;
#[cfg(any(feature = "http", feature = "ws"))]
mod reply;
mod shutdown;
mod socket;
#[cfg(feature = "tls")]
mod tls;
mod topics;

pub(crate) use accept::{ConnectionCap, ConnectionPermit, accept_loop, serve_each};
pub use io::Io;
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) use origin::forbidden;
#[cfg(any(feature = "http", feature = "ws"))]
pub use origin::{OriginPolicy, OriginRefused};
#[cfg(any(feature = "http", feature = "ws"))]
pub use reply::ResponseBody;
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) use reply::json_type;
#[cfg(any(feature = "http", feature = "ws"))]
pub use reply::{closing, envelope, json, refusal, unavailable};
pub use shutdown::{Drained, ShutdownHandle};
pub(crate) use shutdown::{Shutdown, Tracked};
pub use socket::{SocketServer, SocketServerBuilder};
#[cfg(feature = "tls")]
pub(crate) use tls::Acceptor;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::ServerTls;
pub use topics::{Published, SubscribeError, TopicWatch, Topics};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use topics::{RedisConnectError, RedisStatus, RedisTopicsBuilder};
