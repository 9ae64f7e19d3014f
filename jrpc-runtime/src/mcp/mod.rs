//! MCP's Streamable HTTP transport (protocol revisions 2025-03-26, 2025-06-18 and 2025-11-25),
//! for any [`Methods`](crate::dispatch::Methods) table: sessions, SSE answers, the GET stream, origin and
//! protocol-version checks, resumability, and a stateless mode. It is built on the HTTP layer's
//! SSE answers ([`crate::http`]) and the [`server`](crate::server) pieces.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`McpServer`] | the server: an accept loop and a connection adapter, the endpoint at `/mcp` |
//! | [`McpServerBuilder`] | its settings, checked by `build` |
//! | [`McpService`] | the endpoint alone, a tower and hyper service |
//! | [`McpSession`] | a session, in a handler's [`Context`](crate::dispatch::Context): its id and its GET stream's [`Peer`](crate::peer::Peer) |
//! | [`ProtectedResource`] | the endpoint's metadata as an OAuth protected resource (RFC 9728) |
//!
//! # The rules
//!
//! | request | answer |
//! | --- | --- |
//! | any, with an `Origin` not allowed ([`allowed_origins`](McpServerBuilder::allowed_origins)) | `403` |
//! | any, with an `MCP-Protocol-Version` other than the three revisions | `400` |
//! | any, without a bearer token the verifier takes, when [`http`](McpServerBuilder::http) sets a `bearer_auth` | `401`, `WWW-Authenticate: Bearer` (with `resource_metadata="<url>"` when [`protected_resource`](McpServerBuilder::protected_resource) is set), before the body is read |
//! | `GET` of `/.well-known/oauth-protected-resource` (and that path followed by the endpoint's) | the protected resource's metadata (RFC 9728), when [`protected_resource`](McpServerBuilder::protected_resource) is set; no token asked |
//! | `POST` of `initialize`, no `Mcp-Session-Id` | a new session: its id in `Mcp-Session-Id` (128 random bits, 32 hex digits) on the answer |
//! | `POST` (or `GET`, `DELETE`) without `Mcp-Session-Id`, not `initialize` | `400` |
//! | with an id no open session has (never issued, ended, expired) | `404` |
//! | `POST` of notifications and answers only | `202`, no body; notifications run first, answers go to the calls that wait for them |
//! | `POST` with a request, `Accept` naming `text/event-stream` | an SSE answer: the handler's [`Context::peer`](crate::dispatch::Context::peer) pushes and calls on it, then the answer; `application/json` when it sends nothing |
//! | `POST` with a request, no such `Accept` | `application/json`; the handler has no peer |
//! | `POST` that is not JSON, or not messages | `400`, the JSON-RPC error (`-32700`, `-32600`) |
//! | `POST` past the session's [`max_in_flight`](McpServerBuilder::max_in_flight) | `200`, `-32000` |
//! | `GET`, `Accept: text/event-stream` | `200 text/event-stream`: the session's stream of what [`McpSession::peer`] sends; `409` if it is open already |
//! | `GET` without that `Accept` | `406` |
//! | `GET` with `Last-Event-ID` | the events of that event's stream after it, then that stream live until it ends (a request's) or on (the GET stream) |
//! | `DELETE` | `204`: the session ends, its GET stream ends, its id then gets `404` |
//! | another method | `405`, with `Allow` |
//! | a `POST` of `initialize` at [`max_sessions`](McpServerBuilder::max_sessions), none idle to end | `503`, `-32000` |
//! | anything, once a shutdown has begun | `503`; every session ends, and with it its GET stream |
//!
//! In [stateless](McpServerBuilder::stateless) mode no session is issued or asked for, `GET` and
//! `DELETE` are `405`, and events carry no ids.
//!
//! # Resumability
//!
//! Every event of a session carries an id `S-N`: `S` its stream (0 the GET stream, then one per
//! request), `N` its place in the session's one sequence. A session keeps the events it sent, up
//! to [`replay_buffer`](McpServerBuilder::replay_buffer) bytes, so that a client whose stream broke
//! can `GET` with `Last-Event-ID` and get what followed, on that stream only. A request runs on
//! when its client goes; what it sends waits in the session, within
//! `max_buffered` ([`http`](McpServerBuilder::http)), for a client that resumes.
//!
//! # Bounds
//!
//! | what | bound |
//! | --- | --- |
//! | sessions | [`max_sessions`](McpServerBuilder::max_sessions), each ended after [`session_idle_timeout`](McpServerBuilder::session_idle_timeout) unused |
//! | requests running in a session | [`max_in_flight`](McpServerBuilder::max_in_flight) |
//! | events waiting to be sent, per stream | `max_buffered` ([`http`](McpServerBuilder::http)) bytes and `queue` messages; past them the stream's connection closes |
//! | events kept for replay, per session | [`replay_buffer`](McpServerBuilder::replay_buffer) bytes |
//! | answers awaited from the client, per stream | `queue` (the oldest is forgotten past it) |
//! | a message | `max_message_size` |
//! | a write the client does not take | `write_timeout` |
//! | connections | `max_connections` (all [`http`](McpServerBuilder::http)) |
//!
//! # Not done
//!
//! Batches are the table's to take or refuse ([`Methods::batches`](crate::dispatch::Methods::batches)):
//! 2025-03-26 had them, later revisions do not. A client's `notifications/cancelled` is a
//! notification like any other here: it does not abort the request it names (over stdio,
//! [`Cancellation::Mcp`](crate::peer::Cancellation::Mcp) does). The server never closes a stream early
//! to have the client poll (the 2025-11-25 `retry` field), and sends no priming event. Of
//! authorization it takes bearer tokens and serves the resource's metadata; the tokens' checks
//! (a JWT's signature and audience, an introspection) are the verifier's, and a session is not
//! bound to the identity that opened it.
//!
//! # Example
//!
//! ```
//! use jrpc_runtime::mcp::McpServer;
//! use jrpc_runtime::server::Drained;
//! use jrpc_runtime::{Methods, RpcError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut methods = Methods::new();
//! methods.register("ping", &[], |(): (), _ctx| async move {
//!     Ok::<_, RpcError>(serde_json::json!({}))
//! })?;
//! let server = McpServer::builder(methods).build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let shutdown = server.shutdown_handle();
//! let serving = tokio::spawn(async move { server.serve(listener).await });
//! assert_eq!(shutdown.shutdown().await, Drained::Complete);
//! serving.await?;
//! # Ok(())
//! # }
//! ```

mod config;
mod endpoint;
mod protected;
mod server;
mod session;

pub use config::McpServerBuilder;
pub use endpoint::McpService;
pub use protected::ProtectedResource;
pub use server::McpServer;
pub use session::McpSession;
