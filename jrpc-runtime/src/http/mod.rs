//! Carries JSON-RPC over HTTP/1.1: a server on hyper 1, the same endpoint as a `tower` service to
//! mount in axum or any tower stack, a graceful shutdown, and a client.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`HttpServer`] | the server: an accept loop ([`serve`](HttpServer::serve)) and a connection adapter ([`serve_connection`](HttpServer::serve_connection)) |
//! | [`HttpServerBuilder`] | its settings, checked by `build` ([`ConfigError`](crate::error::ConfigError) names the bad one) |
//! | [`RpcService`] | the endpoint alone: a `tower_service::Service` and a `hyper::service::Service` |
//! | [`ShutdownHandle`](crate::server::ShutdownHandle) | starts a graceful shutdown and waits for it ([`Drained`](crate::server::Drained)) |
//! | [`HttpClient`] | the client: keep-alive pool, timeouts, batches; a [`Caller`](crate::caller::Caller) |
//!
//! # Statuses
//!
//! | request | status | body |
//! | --- | --- | --- |
//! | `POST` on the RPC path with a call (or a batch holding one) | `200` | the JSON-RPC answer, errors included (`-32700` for a body that is not JSON); with `Accept: text/event-stream`, an event stream when the handler sends something (see below) |
//! | `POST` of the answer to a call a handler made during an SSE answer | `204` | none |
//! | the same with notifications only | `204` | none |
//! | another method on the RPC path | `405`, `Allow: POST` | `-32600` |
//! | a body over `max_message_size` (declared, or counted as it arrives) | `413` | `-32600`, the limit in `data` |
//! | a call whose answer is over `max_message_size` | `200` | `-32008` with the call's id, the limit in `data` (the answer stops being written once it passes it; in a batch, the element that would pass it, and `null` for a batch still too large whole); the client sees [`ClientError::AnswerTooLarge`](crate::error::ClientError::AnswerTooLarge) |
//! | a `content-type` that is not JSON | `415` | `-32600` |
//! | a body that breaks off (bad chunking, a client gone mid-body) | `400` | `-32600` |
//! | a body slower than `body_read_timeout` | `408` | `-32600` |
//! | another path | `404` | `-32600` |
//! | anything, once a shutdown has begun | `503`, `Connection: close` | `-32000` |
//!
//! Bodies and answers up to [`max_message_size`](HttpServerBuilder::max_message_size) (default
//! 10 MiB) are served, over HTTP/1.1 and HTTP/2 alike. A refusal (`413`, `408`, `400`, `415`) is
//! logged at WARN with the limit and the setting to raise. A client that sends and never reads
//! is dropped once a reply has waited [`write_timeout`](HttpServerBuilder::write_timeout)
//! (default 30 s) for it to take a byte; an HTTP/1.1 connection reads no further request while
//! its answer waits. Answers are made whole by the dispatcher and handed to hyper as one buffer,
//! which it writes without copying.
//!
//! # Idle connections
//!
//! An HTTP/1.1 keep-alive connection that stays idle for
//! [`free_idle_after`](HttpServerBuilder::free_idle_after) (default 50 ms) is parked: hyper's
//! connection and the buffers it keeps between requests (16 KiB) are dropped, and the socket
//! waits on its own, in a task of about 2 KiB (over TLS, the TLS session's buffers stay too), for
//! the client's next bytes, which start a new one. A connection busy with a request, with an
//! answer still being written, or with an event stream however quiet, is never parked; one busier
//! than that never pays for it, and one that pauses longer pays a few microseconds of CPU on its
//! next request. [`header_read_timeout`](HttpServerBuilder::header_read_timeout) closes a
//! connection that sends no complete request head within it of its last answer (of its opening,
//! for its first request), parked or not.
//!
//! # SSE answers
//!
//! A `POST` whose `Accept` names `text/event-stream` (`*/*` does not: curl, `fetch` and
//! `requests` send it and expect JSON) and whose body holds a call runs with its handler's
//! [`Context::peer`](crate::dispatch::Context::peer) live for the request: what the handler sends the
//! client (notifications, and calls) goes out as Server-Sent Events (`data: <json>`), in order,
//! then the answer, then the stream ends. The client answers a handler's call by posting the
//! answer to the RPC path (`204`); it is handed to the call waiting for it.
//!
//! | the handler | the reply |
//! | --- | --- |
//! | sends nothing | `200 application/json`, as without the header |
//! | sends something | `200 text/event-stream`: the events, the answer last |
//! | pushes past the watermark before anything went out | `500`, `-32603`: the answer is lost |
//!
//! Events wait for the client below the watermark [`max_buffered`](HttpServerBuilder::max_buffered)
//! and within [`queue`](HttpServerBuilder::queue) messages, and their writes keep the
//! [`write_timeout`](HttpServerBuilder::write_timeout); a push past either bound closes the
//! stream's connection (the handler's pushes then fail) and the stream ends after what it holds;
//! the answer itself is never refused for room. A
//! client that goes away before the answer cancels the handler. A handler that pushes in a loop
//! that never waits should yield (`tokio::task::yield_now`) now and then, so that events go out
//! as it makes them. A handler's calls wait [`call_timeout`](HttpServerBuilder::call_timeout)
//! (default 60 s) for the posted answer.
//!
//! Decisions: the answer to a call goes to the call whatever connection posts it (the ids of
//! calls are unique in the server, not tied to a client); a notification's body (nothing to
//! answer) is served as without the header; responses in a batch are not routed.
//!
//! Every reply but `204` and an event stream is `content-type: application/json`; the errors the HTTP layer answers
//! itself are envelopes with `"id": null` and a `data` string saying what went wrong. A reply
//! carries the request's own `x-request-id` back; one made up for a request without goes back
//! only with [`always_send_request_id`](HttpServerBuilder::always_send_request_id) (see
//! [`RpcService`]).
//!
//! # WebSocket
//!
//! `http` is the one transport module that uses another: the HTTP server hands its upgrades to a
//! WebSocket server and takes its settings, so `http` sits above `ws`, and no code in `ws` names
//! `http`. The hand-off is one public call, so `ws` stays whole alone (its own listener, or
//! mounted by anyone's hyper server); moving the upgrade below both would add a module that only
//! this server uses.
//!
//! With the `ws` feature, [`HttpServer`] answers `GET` upgrades on its `ws_path` (default `/ws`)
//! on the same listener: it hands each upgrade to the public
//! [`WsServer::upgrade_with`](crate::ws::WsServer::upgrade_with) of a WebSocket server it builds
//! with the same table and shutdown, which serves the socket as [`crate::ws`] describes
//! (messages, close codes, backpressure). What the HTTP server adds to it, and why:
//!
//! | concern | decision |
//! | --- | --- |
//! | settings | the limits ([`Limits`](crate::limits::Limits): `max_message_size`, `max_buffered`, `max_in_flight`, `queue`, `write_timeout`, `call_timeout`) set on the HTTP builder apply to the WebSocket path too; [`HttpServerBuilder::websocket`] takes a [`WsSettings`](crate::ws::WsSettings), the same value a [`WsServer`](crate::ws::WsServer) takes, for what only WebSocket has (pings, idle timeout, buffers) and for limits that differ on `/ws` (a limit it sets wins); `build` checks it and names a bad setting by its `WsSettings` method (`queue`, `idle_timeout`...). The drain budget is the server's one [`drain_timeout`](HttpServerBuilder::drain_timeout): one shutdown, one budget. |
//! | topics | the server holds a [`Topics`](crate::server::Topics) registry (its own, or one given to [`HttpServerBuilder::topics`]); every WebSocket connection's context carries it, so handlers [`subscribe`](crate::dispatch::Context::subscribe), and [`publish`](crate::server::Topics::publish) on [`HttpServer::topics`] reaches the subscribers. A connection leaves its topics when it closes. Contexts of `POST` requests do not carry it: a handler that publishes from HTTP holds the registry itself (share it through `topics`). |
//! | context | [`map_context`](HttpServerBuilder::map_context) runs once per WebSocket, on the upgrade request, and its context is the base of every call on the connection: an authentication layer in front sees WebSocket clients as it sees HTTP ones. The context also has the upgrade's headers, its `x-request-id` tag and the peer's address. |
//! | limits | a connection counts against [`max_connections`](HttpServerBuilder::max_connections) from its accept until it closes, as HTTP or as the WebSocket it was upgraded to; it counts once, not once per side. A shutdown waits for it the same way. |
//!
//! ```
//! # #[cfg(feature = "ws")] {
//! use jrpc_runtime::http::HttpServer;
//! use jrpc_runtime::ws::WsSettings;
//! use jrpc_runtime::{Context, Methods, RpcError};
//!
//! let mut methods = Methods::new();
//! methods.register("watch", &["topic"], |(topic,): (String,), ctx: Context| async move {
//!     Ok::<_, RpcError>(ctx.subscribe(&topic)?)
//! })?;
//! let server = HttpServer::builder(methods)
//!     .websocket(WsSettings::new().max_in_flight(8).queue(1024))
//!     .build()?;
//! // Every WebSocket connection that called `watch("prices")` gets the notification.
//! let reached = server.topics().publish("prices", "price", ("ACME", 12.5))?;
//! assert_eq!(reached, 0);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//!
//! use jrpc_runtime::http::{HttpClient, HttpServer};
//! use jrpc_runtime::server::Drained;
//! use jrpc_runtime::{Caller as _, Methods, RpcError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut methods = Methods::new();
//! methods.register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move { Ok::<_, RpcError>(a + b) })?;
//!
//! let server = HttpServer::builder(methods)
//!     .rpc_path("/rpc")
//!     .max_message_size(1024 * 1024)
//!     .max_buffered(2 * 1024 * 1024)
//!     .handler_timeout(Some(Duration::from_secs(10)))
//!     .drain_timeout(Duration::from_secs(5))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! let shutdown = server.shutdown_handle();
//! let serving = tokio::spawn(async move { server.serve(listener).await });
//!
//! let client = HttpClient::new(&format!("http://{addr}/rpc"))?;
//! let sum: i64 = client.call("add", [2, 3]).await?;
//! assert_eq!(sum, 5);
//!
//! assert_eq!(shutdown.shutdown().await, Drained::Complete);
//! serving.await?;
//! # Ok(())
//! # }
//! ```
//!
//! To mount the endpoint in axum instead, build the server the same way and route
//! [`HttpServer::service`] (see `examples/axum_mount.rs`):
//!
//! ```ignore
//! let app = axum::Router::new().route_service("/rpc", server.service());
//! ```

mod auth;
mod body;
mod client;
mod config;
mod connection;
mod endpoint;
mod events;
mod layer;
pub mod reply;
mod request_id;
mod server;
mod service;
pub mod sse;

pub use crate::caller::BatchCall;
pub use auth::BearerAuth;
pub use client::{HttpClient, HttpClientBuilder, StatusError};
pub use config::{HttpServerBuilder, check_path};
#[cfg(feature = "ws")]
pub(crate) use connection::{Rewound, tcp_under};
pub use endpoint::{Endpoint, EndpointRequest, EndpointService, Post, RequestBody};
pub use layer::Routes;
pub use server::HttpServer;
pub use service::{BoxError, RpcService};
