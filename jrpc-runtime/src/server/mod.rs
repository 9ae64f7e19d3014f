//! What servers share: the accept loop and its connection cap, graceful shutdown, the replies a
//! server writes itself (with `http` or `ws`), TLS acceptance (with `tls`), and the topics
//! registry; and the server of two-way peers on Unix and TCP sockets, built on them. All but the
//! replies and TLS are in every build: a stdio or Unix-socket server needs no HTTP.
//!
//! `http::HttpServer` and `ws::WsServer` are both built on these pieces, and neither reaches into
//! the other: the HTTP listener hands a WebSocket upgrade to the public
//! `ws::WsServer::upgrade_with`.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`Limits`](crate::Limits) | the limits every connection keeps (message size, watermark, calls in flight, queue, timeouts), one type for HTTP, WebSocket and peers |
//! | [`ShutdownHandle`] | starts a graceful shutdown of any server and waits for it ([`Drained`]) |
//! | [`SocketServer`] | JSON-RPC on Unix or TCP sockets, one two-way [`Peer`](crate::Peer) per connection, either framing |
//! | [`ServerTls`] (with `tls`) | how the HTTP server terminates TLS: a rustls configuration, or PEM files checked at build time |
//! | [`Topics`] | named groups of connections that get the same notifications; [`Context::subscribe`](crate::Context::subscribe) subscribes from a handler |
//! | [`Topics::redis`] (with `redis`) | a registry shared by every replica of a service through Redis pub/sub |
//!
//! # Memory
//!
//! Messages up to `max_message_size` (default 10 MiB, as jsonrpsee) are served on every
//! transport, requests and answers alike; a larger request is refused (HTTP `413`, WebSocket
//! 1009, a stream's line `-32600`), a larger answer replaced by `-32008` for its call, each logged
//! at WARN with the setting to raise. Memory is bounded without refusing messages, at two levels:
//!
//! | bound | default | what it does |
//! | --- | --- | --- |
//! | per connection: the watermark [`max_buffered`](crate::Limits::max_buffered) | 256 KiB (16 MiB on a [`PeerConfig`](crate::PeerConfig)) | past half of it unsent, the connection stops reading; an answer larger than it is held whole |
//! | per server: `server_budget` ([`HttpServerBuilder`](crate::http::HttpServerBuilder), [`WsServerBuilder`](crate::ws::WsServerBuilder)) | a quarter of the machine's memory, at least 64 MiB and at most 1 GiB (1 GiB where `/proc/meminfo` cannot be read) | counts request bodies being read and answers and pushes not yet written, on all connections (HTTP answers under 16 KiB, which hyper copies at once, are not counted); when spent, new bodies and messages wait, their sockets unread |
//! | per client that takes nothing: [`write_timeout`](crate::Limits::write_timeout) | 30 s | the connection is dropped, and what it held given back |
//!
//! So clients that send and never read make the server hold at most its budget, plus the answers
//! of the calls running when it filled and the per-connection buffers (a WebSocket's incoming
//! messages wait within `max_message_size` in its hand-off; hyper reads at most 64 KiB ahead),
//! until `write_timeout` cuts them. Meanwhile a well-behaved client's call waits while the
//! budget is spent; it is never refused for it.
//!
//! Sizing: the budget is what the server may spend on its clients' backlog; keep it below the
//! memory the process may use, less what the handlers need. With 10 000 connections that may
//! each ask for large answers, the budget still bounds them: what 10 000 idle connections cost
//! comes on top (`bench/README.md` measures it). Lower `max_buffered` (say to 64 KiB) to make each slow client pause
//! sooner, and `write_timeout` (say to 10 s) to give back a non-reader's bytes sooner; raise
//! `server_budget` only with the memory to back it.
//!
//! Topics need nothing from a transport but a connection that stays open ([`Context::peer`](crate::Context::peer)),
//! so they are built without `http` and `ws` too: a stdio server (one process per client, an MCP
//! server say) joins the topics of its siblings through Redis.

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
mod topics;

pub(crate) use accept::{Slot, Slots, accept_loop, serve_each};
pub use io::Io;
#[cfg(any(feature = "http", feature = "ws"))]
pub use reply::ResponseBody;
pub use shutdown::{Drained, ShutdownHandle};
pub(crate) use shutdown::{Shutdown, Tracked};
pub use socket::{SocketServer, SocketServerBuilder};
#[cfg(feature = "tls")]
pub(crate) use tls::Acceptor;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::ServerTls;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use topics::{RedisConnectError, RedisStatus, RedisTopicsBuilder};
pub use topics::{SubscribeError, Topics};
