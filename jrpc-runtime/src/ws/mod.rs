//! Carries JSON-RPC over WebSocket (tokio-tungstenite): a server where each connection is a
//! [`Peer`](crate::peer::Peer), topics, and a client.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`WsServer`] | the server: an accept loop ([`serve`](WsServer::serve)), a connection adapter ([`serve_connection`](WsServer::serve_connection)), an upgrade answer for hyper or axum ([`upgrade`](WsServer::upgrade), [`upgrade_with`](WsServer::upgrade_with)), a graceful shutdown ([`shutdown_handle`](WsServer::shutdown_handle)) |
//! | [`WsServerBuilder`] | its settings, checked by `build` |
//! | [`WsSettings`] | the settings of each connection, for a [`WsServer`] or an `http::HttpServer`'s WebSocket path |
//! | [`WsClient`] | the client: calls both ways; a [`Caller`](crate::caller::Caller) for generated stubs |
//! | [`Reconnect`] | whether and how a [`WsClient`] connects again (and subscribes again) when its connection closes |
//!
//! Topics ([`Topics`](crate::server::Topics), [`Context::subscribe`](crate::dispatch::Context::subscribe)) and the
//! shutdown handle are the [`server`](crate::server) layer's, shared with the HTTP server.
//!
//! `http::HttpServer` also serves WebSocket, on its `ws_path` (default
//! `/ws`) of the same listener, with [`WsSettings`] and a [`Topics`](crate::server::Topics) registry of its own (see the
//! `http` module docs, "WebSocket").
//!
//! # Messages
//!
//! One JSON-RPC message (or batch) per text frame (or binary frame of UTF-8 JSON: web3.py sends those); answers, notifications and calls from the
//! server are text frames too. A notification gets no frame back. A handler's own
//! notifications ([`Context::peer`](crate::dispatch::Context::peer)) go out before its answer. Handlers
//! see [`Transport::WebSocket`](crate::transport::Transport::WebSocket), the peer's address and the upgrade
//! request's headers in their [`Context`](crate::dispatch::Context).
//!
//! # Closing
//!
//! | event | what happens |
//! | --- | --- |
//! | a binary frame | a message, as a text frame is, when it is UTF-8 (close 1007 if not); close 1003 (unsupported data) with [`BinaryFrames::Refuse`] |
//! | a message over [`max_message_size`](WsSettings::max_message_size) | close 1009 (message too big) |
//! | a text frame that is not UTF-8 | close 1007 |
//! | a protocol violation | close 1002 |
//! | nothing received (pongs included) for [`idle_timeout`](WsSettings::idle_timeout) | close 1000 |
//! | a shutdown | reading stops, running calls finish and are answered, then close 1001 (going away) |
//! | the drain budget spent | dropped |
//! | a push (a notification or call from the server) that finds the connection past its watermark ([`max_buffered`](WsSettings::max_buffered)) or [`queue`](WsSettings::queue) messages waiting (the client does not keep up) | what was queued is dropped at once; close 1008 (policy) with a reason, which gets through if the socket takes it within `close_timeout` |
//! | a write that waited [`write_timeout`](WsSettings::write_timeout) for the client to take a byte | dropped |
//! | an answer over `max_message_size` | not sent: the call is answered `-32008` (its id kept) instead, and the connection goes on |
//! | a push over `max_message_size` | close 1011 (the message is not sent) |
//! | the client closes | the close is answered; running calls are cancelled |
//!
//! Past [`max_in_flight`](WsSettings::max_in_flight) calls running on one connection, a
//! call is answered `-32000` at once.
//!
//! A call whose handler finishes in its first poll (most do) is answered by the task that reads
//! the socket, without a hand-off to the connection's loop and back; a handler that waits goes on
//! in a task of its own. Messages keep the order a [`Peer`](crate::peer::Peer) gives them: a
//! notification handler finishes before what follows it runs, and a handler's pushes go out
//! before its answer.
//!
//! Pushes never wait for room ([`Overflow::Close`](crate::peer::Overflow::Close)): a server must not
//! stall on one slow client. So size [`queue`](WsSettings::queue) for the largest burst a
//! handler or a publish sends at once: a handler that pushes a thousand notifications in a loop
//! outruns the connection's writer and finds the queue full.
//!
//! # Memory
//!
//! An idle connection holds a 4 KiB read buffer, two small tasks (the peer's loop and the socket
//! pump), the peer's command channel and the link between the two tasks; tungstenite's 128 KiB
//! buffers are brought down to 4 KiB ([`read_buffer_size`](WsSettings::read_buffer_size)).
//!
//! Messages up to [`max_message_size`](WsSettings::max_message_size) (10 MiB) are taken and
//! answered. What waits for a client (answers, pushes, calls, until the socket has taken them) is
//! bounded without refusing messages: past the connection's watermark
//! ([`max_buffered`](WsSettings::max_buffered), 256 KiB) the connection stops reading, so a client
//! that sends and does not read fills its own socket, not the server; an answer larger than the
//! watermark is held whole. A client that takes nothing for
//! [`write_timeout`](WsSettings::write_timeout) (30 s) is cut. The kernel's socket buffers come on
//! top, outside the process.

mod client;
mod connection;
mod server;
mod settings;
mod upgrade;

pub use client::{Reconnect, WsClient, WsClientBuilder};
pub use connection::BinaryFrames;
pub use server::{WsServer, WsServerBuilder};
pub use settings::WsSettings;
