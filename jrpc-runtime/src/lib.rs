//! # jrpc
//!
//! JSON-RPC 2.0 services in Rust: write a trait, put [`rpc_service`] on it, implement it, and
//! serve it; the same attribute gives a typed client stub.
//!
//! - [`Methods`] is the method table and dispatcher: one body in, one body out.
//! - [`Context`] is what a handler knows about its request.
//! - [`Caller`] is what stubs call through; [`Methods`] itself is one, for in-process calls.
//! - [`framing`] reads and writes messages on byte streams (newline-delimited, or LSP's
//!   `Content-Length`); [`Peer`] is a two-way connection over them; [`stdio`] serves on
//!   stdin/stdout or calls a child process.
//! - [`http`] and [`ws`] serve HTTP (1.1 and 2) and WebSocket on one listener, with clients,
//!   over TLS with the `tls` feature; [`Client`] picks one by URL (`unix:` too); [`server`] holds
//!   what the servers share, [`server::SocketServer`] (two-way peers on Unix and TCP sockets), and
//!   topics: notifications for groups of connections on any transport that stays open, local or
//!   across replicas on Redis. A `POST` asking for `text/event-stream` gets an SSE answer, its
//!   handler's [`Context::peer`] live meanwhile.
//! - [`mcp`] serves MCP's Streamable HTTP (sessions, the GET stream, resumability) on those
//!   pieces.
//!
//! ## Layers
//!
//! Each layer is a folder with one concern; an arrow means "may use", and none runs back up.
//!
//! ```text
//! wire      Id, RpcError, the one parsed form of an incoming message, the writers of all that goes out
//!   ^
//! dispatch  Methods (registration, hooks, batches), params decoding, Context, in-process calls,
//!           descriptions, the OpenRPC document and rpc.discover
//!   ^
//! peer      PeerConfig, the Peer handle (a Caller), the connection loop, cancellation; framing below it
//!   ^
//! server    accept loop (TCP, Unix) + connection cap, shutdown (CancellationToken + TaskTracker),
//!   ^       the replies a server writes itself, TLS acceptance, topics (local, or across replicas
//!   |       on Redis); SocketServer (peers on Unix and TCP sockets)
//! http  ws  each on server; http hands WebSocket upgrades to ws's public WsServer::upgrade_with;
//!   ^       http's SSE answers run a request with a Peer whose writes are its events
//!   |
//! mcp       Streamable HTTP: sessions on http's SSE answers and event log, and server's pieces
//! ```
//!
//! Beside them: [`Caller`] (what every client implements, with `call`, `notify` and `batch_raw`
//! written once; [`DynCaller`] its dyn-compatible form), [`ClientTls`] (what clients trust),
//! [`ClientError`], [`ConfigError`] and [`RegisterError`] (the errors users handle), [`framing`]
//! (tokio-util codecs), [`stdio`] (a `Peer` on stdin/stdout or a child's pipes) and [`Client`].
//!
//! ## Cargo features
//!
//! | feature | brings | default |
//! | --- | --- | --- |
//! | `macros` | [`rpc_service`] | yes |
//! | `http` | [`http`]: the server on hyper 1, the endpoint as a tower service, the client; [`server`] | yes |
//! | `ws` | [`ws`]: the server and client on tokio-tungstenite; [`server`] | yes |
//! | `schema` | JSON Schemas from types (schemars 1.x): [`SchemaDoc::of`], `#[rpc_service(schema)]` | no |
//! | `tls` | TLS (rustls on *ring*): `server::ServerTls` for the HTTP server (`https://`, `wss://`, HTTP/2 by ALPN), `ClientTls` and `https://`/`wss://` URLs for the clients; brings `http` and `ws` | no |
//! | `redis` | [`Topics::redis`](server::Topics::redis): topics shared by every replica of a service through Redis pub/sub (the `redis` crate) | no |
//! | `mcp` | [`mcp`]: MCP's Streamable HTTP server; implies `http`, adds getrandom (session ids) | no |
//!
//! With `default-features = false, features = ["macros"]` the crate is the wire, the dispatcher,
//! the peer, framing, stdio, topics and the Unix-socket server: an LSP or MCP server over stdio
//! compiles no hyper, `http` or tungstenite. `redis` adds the Redis client alone, with or without
//! the servers.
//!
//! ## TLS, HTTP/2, Unix sockets
//!
//! Decisions, each for what a deployment expects:
//!
//! - The crypto provider is *ring*: it builds with a C compiler alone, and compiles far less C than
//!   `aws-lc-rs` (which builds here too). It is passed to rustls explicitly, never installed as
//!   the process default, so an application that also links `aws-lc-rs` sees no conflict.
//! - The HTTP server tells HTTP/1.1 from HTTP/2 by the client's first bytes (hyper-util's auto
//!   connection): a plain listener takes h2c with prior knowledge, TLS offers `h2` and `http/1.1`
//!   by ALPN. An HTTP/2 connection carries up to 200 concurrent streams (hyper's default), each a
//!   request under the same limits as an HTTP/1.1 one. WebSocket upgrades are HTTP/1.1's (a
//!   `wss://` client offers `http/1.1` alone).
//! - A TLS handshake runs in the connection's task, within `header_read_timeout`, holding the
//!   connection's `max_connections` slot; one that fails (plain HTTP to the TLS port, a client that
//!   refuses the certificate) drops that connection with a DEBUG line, and the server goes on.
//! - Clients trust the system's roots plus what [`ClientTls`] adds; an untrusted, mismatched or
//!   expired certificate fails at the handshake with [`ClientError::Transport`], whose message
//!   names the problem. `https://` uses HTTP/2 when the server's ALPN picks it.
//! - [`server::SocketServer`] serves each Unix (or TCP) connection as a [`Peer`]; handlers see
//!   [`Transport::Unix`] (or [`Transport::Tcp`]). A shutdown ends every connection's input, so
//!   running calls finish and are answered before it closes. The socket file is the caller's.
//! - Over a [`Peer`] (WebSocket, Unix socket, stdio) [`Caller::batch_raw`] sends a batch's
//!   elements as separate messages in one write, so a server that refuses batches (MCP) still
//!   answers them; over HTTP and in-process it is one JSON-RPC batch.
//!
//! ## The client side
//!
//! A stub (`CalculatorClient<C>`) works over any [`Caller`]: [`Methods`] in-process, the HTTP
//! and WebSocket clients, a [`Peer`] (stdio, a child process, a Unix socket), [`Client`], or
//! `Arc<dyn DynCaller>`. Each call runs in a `call` span (method, id, transport, outcome).
//!
//! **Typed batches.** `client.batch()` has a method per service method; each call added
//! returns a [`Slot`] typed with that method's result, and `.await` sends the batch
//! ([`Caller::batch_raw`]) and gives the [`BatchAnswers`], from which each slot takes its own
//! `Result<T, ClientError>`. [`Batch`] is the same by method name, for hand-written calls.
//!
//! ```
//! # use jrpc_runtime::{rpc_service, RpcError};
//! # #[rpc_service]
//! # pub trait Calculator {
//! #     async fn add(&self, a: i64, b: i64) -> i64;
//! #     async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError>;
//! # }
//! # struct Calc;
//! # impl Calculator for Calc {
//! #     async fn add(&self, a: i64, b: i64) -> i64 { a + b }
//! #     async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError> {
//! #         if divisor == 0.0 { return Err(RpcError::new(1, "division by zero")); }
//! #         Ok(dividend / divisor)
//! #     }
//! # }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let client = CalculatorClient::new(Calc.into_methods());
//! let mut batch = client.batch();
//! let sum = batch.add(2, 3);
//! let ratio = batch.divide(1.0, 0.0);
//! let mut answers = batch.await?;
//! assert_eq!(answers.take(sum)?, 5);
//! assert_eq!(answers.take(ratio).unwrap_err().rpc_error().map(|e| e.code().code()), Some(1));
//! # Ok::<_, jrpc_runtime::ClientError>(()) }).unwrap();
//! ```
//!
//! **Typed errors.** A server's error object arrives as [`ClientError::Failed`]; its `data`
//! decodes into a type of yours with [`RpcError::data_as`]. To have a stub fail with your own
//! enum, name it with `#[rpc_service(client_error = MyError)]` and implement
//! `From<ClientError> for MyError`, mapping the codes you know to variants and keeping the rest
//! (transport failures included) in one:
//!
//! ```
//! use jrpc_runtime::{rpc_service, ClientError, RpcError};
//!
//! #[derive(Debug, serde::Deserialize)]
//! pub struct Shortfall { pub needed: u64 }
//!
//! #[derive(Debug)]
//! pub enum BankError {
//!     Insufficient(Option<Shortfall>),
//!     Other(ClientError),
//! }
//!
//! impl From<ClientError> for BankError {
//!     fn from(err: ClientError) -> Self {
//!         match err.rpc_error() {
//!             Some(rpc) if rpc.code().code() == 1001 => {
//!                 Self::Insufficient(rpc.data_as().and_then(Result::ok))
//!             }
//!             _ => Self::Other(err),
//!         }
//!     }
//! }
//!
//! #[rpc_service(client_error = BankError)]
//! pub trait Bank {
//!     async fn withdraw(&self, amount: u64) -> Result<u64, RpcError>;
//! }
//! // BankClient::withdraw returns Result<u64, BankError>.
//! ```
//!
//! Decisions: the option is the stub's, once for all its methods (a service's codes are
//! usually one set); the server's error type is not reused, since it converts into an
//! `RpcError` and need not come back out of one. Typed batches keep [`ClientError`] per entry.
//! A batch whose params cannot all be encoded fails whole before anything is sent, as one
//! call does.
//!
//! ## Discovery
//!
//! Every method in a [`Methods`] table has a description ([`MethodDoc`]): its parameters (by
//! wire name, each required unless its type accepts a missing value, as decoding decides), its
//! result (none for a notification), and from `#[rpc_service]` its doc comment (the first
//! paragraph the summary, the rest the description) and `#[deprecated]`.
//! [`Methods::openrpc`] builds the OpenRPC 1.3 document of the table (merged services included,
//! in registration order), and [`Methods::discovery`] serves it as `rpc.discover`, the one
//! `rpc.` name a table answers. Methods registered by hand get the same description from their
//! registration, and [`Methods::describe`] replaces it. [`MethodDoc::params_schema`] is the
//! params as one JSON Schema (an MCP tool's `inputSchema`).
//!
//! Schemas are `{}` unless something says more: with the `schema` feature,
//! `#[rpc_service(schema)]` describes every parameter and result type with the schema schemars
//! derives for it (a type without `JsonSchema` is a compile error at that type), and a
//! hand-made description can use [`SchemaDoc::of`]. A service without `schema` asks nothing of
//! its types, with the feature on or off, so one crate's opting in never breaks another's
//! service; `schema` without the feature is one compile error saying to turn it on. Derive
//! `JsonSchema` with schemars 1.x in your own dependencies.
//!
//! Decisions: the document follows OpenRPC 1.3.2 with draft-07 schemas (the dialect of
//! OpenRPC's meta-schema), named types once under `components/schemas`; `params = whole` is
//! described by name when the value is an object of known properties, else as one parameter
//! standing for the whole params, marked `"x-jrpc-params": "whole"`; the result's descriptor is
//! named `result`; errors are not described (a handler's error type says nothing of its codes).
//!
//! ## Names
//!
//! One name per idea, on every builder that has it: `max_message_size` (bytes, a body or a
//! frame), `call_timeout` (an outgoing call, from sending to its answer), `handler_timeout` (an
//! incoming request, run by the table), `drain_timeout` (a shutdown or the end of input),
//! `max_in_flight` (incoming calls whose handlers run on one connection), `queue` (outgoing
//! messages waiting to be written), `max_buffered` (bytes one connection holds for its peer),
//! `write_timeout` (how long a write waits for the peer to take a byte), `batch_concurrency` (elements
//! of one batch running at once). Every builder checks
//! each value when it builds and names the first one out of range in a [`ConfigError`]; none
//! clamps. Defaults are given on each setter.
//!
//! ## Peers that do not read
//!
//! What a connection holds for its peer is bounded in bytes, and in time:
//!
//! | setting | bounds | past it |
//! | --- | --- | --- |
//! | `max_buffered` | the message being read (counted at `max_message_size`) and every outgoing text not yet written: answers, pushes, calls, queued or finished and waiting | the connection closes: WebSocket 1008 with a reason, HTTP `500` for the answer, a stream's loop ends with a [`QuotaExceeded`](std::io::ErrorKind::QuotaExceeded) error; a `tracing` warning and [`Outcome::Overflowed`] for the observer |
//! | `write_timeout` | how long a write waits for the peer to take a byte | the connection is dropped |
//! | `queue` | outgoing messages, by count: a second bound | as `max_buffered` |
//!
//! Reading pauses while half of the room for outgoing texts is taken, so a peer that reads never
//! meets the budget; it closes connections whose peer asks for more than it reads. The budget
//! must hold one message each way (`max_buffered` at least twice `max_message_size`). The
//! defaults follow from how many connections a process holds: the servers (up to 10 000
//! connections each) keep 256 KiB a connection (2.5 GiB for 10 000, whatever the clients do),
//! with messages of up to 128 KiB; a stream peer (one process, one connection) keeps 16 MiB,
//! with messages of up to 4 MiB. Raise `max_buffered` with `max_message_size` for larger
//! messages. The in-flight cap (`max_in_flight`) counts handlers still running, never answers
//! waiting to be written: a peer that reads late is never told busy for calls that finish at
//! once. Handlers hold their params while they run: that memory is bounded by `max_in_flight`
//! and `max_message_size`, not by the budget.
//!
//! ## Topics
//!
//! A [`Topics`](server::Topics) registry names groups of connections and sends one notification
//! to every connection of a group. Any connection that stays open can join (WebSocket, stdio, any
//! stream served as a [`Peer`]), so topics are built in every feature set; a connection leaves
//! its groups when its loop ends. [`Topics::new`](server::Topics::new) serves one process;
//! [`Topics::redis`](server::Topics::redis) (feature `redis`) every replica on one Redis: the
//! publishing replica's own subscribers get a message locally, the others' through Redis, once
//! each. While Redis is away local topics go on, publishes are held in a bounded queue and the
//! link reconnects; what is published while a replica is not subscribed again does not reach it.
//!
//! ## Logs
//!
//! The crate logs with [`tracing`](https://docs.rs/tracing); install any subscriber to see it. The
//! levels, by what they show:
//!
//! | level | what |
//! | --- | --- |
//! | `DEBUG` | one event per request (batch elements included), on every transport: `method`, `id` (`none` for a notification), `transport`, `elapsed`, `outcome` (`ok` or `error CODE`); each request also runs in an `rpc` span that records its outcome |
//! | `INFO` | nothing per request: a server starting, stopping accepting, draining and drained |
//! | `WARN` | connections refused (a bad WebSocket handshake) or closed by the server (idle, oversize, a protocol error, a full queue, the drain budget spent), messages skipped as too long, notifications whose params did not decode, a topics registry's Redis link lost (`INFO` when it is back) and each publish its full queue dropped |
//! | `ERROR` | failures answered `-32603`: a handler that panicked or timed out, a result that could not be encoded, a reserved code |
//!
//! With `tracing-subscriber` and `RUST_LOG=debug` (`EnvFilter`, on stderr, as the examples do), a
//! call over HTTP reads:
//!
//! ```text
//! DEBUG http{request_id=7a932392b0295177 peer=127.0.0.1:55272}: jrpc_runtime::dispatch::handle: request method=subtract id=1 transport=http elapsed=68.746µs outcome=ok
//! ```
//!
//! ```ignore
//! tracing_subscriber::fmt()
//!     .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
//!     .with_writer(std::io::stderr) // stdout carries the protocol over stdio
//!     .init();
//! ```
//!
//! ## Quick start
//!
//! ```
//! use jrpc_runtime::{rpc_service, Context, Methods, RpcError};
//!
//! #[rpc_service]
//! pub trait Calculator {
//!     /// Adds two integers.
//!     async fn add(&self, a: i64, b: i64) -> i64;
//!     async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError>;
//!     #[rpc(params = whole)]
//!     async fn sum(&self, numbers: Vec<i64>) -> i64;
//!     #[notification]
//!     async fn update(&self, values: Vec<i64>);
//!     async fn whoami(&self, ctx: &Context) -> String;
//! }
//!
//! struct Calc;
//!
//! impl Calculator for Calc {
//!     async fn add(&self, a: i64, b: i64) -> i64 { a + b }
//!     async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError> {
//!         if divisor == 0.0 { return Err(RpcError::new(1, "division by zero")); }
//!         Ok(dividend / divisor)
//!     }
//!     async fn sum(&self, numbers: Vec<i64>) -> i64 { numbers.iter().sum() }
//!     async fn update(&self, _values: Vec<i64>) {}
//!     async fn whoami(&self, ctx: &Context) -> String { ctx.transport().to_string() }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let methods: Methods = Calc.into_methods();
//! let answer = methods.handle(r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#).await;
//! assert_eq!(answer.as_deref(), Some(r#"{"jsonrpc":"2.0","result":5,"id":1}"#));
//!
//! let client = CalculatorClient::new(methods);
//! assert_eq!(client.add(2, 3).await.unwrap(), 5);
//! assert_eq!(client.sum(vec![1, 2, 4]).await.unwrap(), 7);
//! assert_eq!(client.whoami().await.unwrap(), "in-process");
//! let err = client.divide(1.0, 0.0).await.unwrap_err();
//! assert_eq!(err.rpc_error().map(|e| e.code().code()), Some(1));
//! # });
//! ```
//!
//! ## Wire semantics
//!
//! | input | answer |
//! | --- | --- |
//! | not JSON (a BOM, an empty body included) | -32700, id null |
//! | JSON but not a request object | -32600, with the id when it is a valid id, else null |
//! | a member written twice (`jsonrpc`, `method`, `params`, `id`, `result`, `error`) | -32600, with the id unless `id` is the one repeated |
//! | id an object, array or boolean | -32600, id null |
//! | `"id": null` | a call: answered, id null |
//! | no `id` member | a notification: never answered |
//! | number id | echoed byte for byte as written |
//! | unknown method | -32601 |
//! | a call to a `#[notification]` method | runs it; answered `null` |
//! | `[]` | one -32600 |
//! | batch | each element answered in request order; elements run concurrently (up to [`Methods::batch_concurrency`] at once) under one deadline; all notifications: nothing; refused or over the cap: one -32600 |
//! | handler error with a reserved code | replaced by -32603 |
//! | handler panic, timeout, unencodable result | -32603 "Internal error", no detail; the reason goes to `tracing` and [`Methods::on_error`] |
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod batch;
mod caller;
mod client;
mod dispatch;
mod error;
pub mod framing;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod peer;
pub mod server;
pub mod stdio;
mod time;
#[cfg(feature = "tls")]
mod tls;
mod wire;
mod woken;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

/// The package README's example, compiled as a doc test.
#[cfg(all(doctest, feature = "macros", feature = "http"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use batch::{Batch, BatchAnswers, Slot};
pub use caller::{BatchCall, BatchResults, BoxFuture, Caller, DynCaller, ParamEncoding};
pub use client::{Client, ClientBuilder};
pub use dispatch::{
    Batches, Context, ErrorReport, FromParams, MethodDoc, Methods, Notifications, Observation,
    Outcome, ParamDoc, ParamStructure, Params, SchemaDoc, ServiceInfo, Transport, Whole,
};
pub use error::{ClientError, ConfigError, RegisterError};
pub use peer::{
    Cancellation, Driver, Framing, Lifetime, Overflow, Peer, PeerConfig, PeerConfigBuilder,
};
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::ClientTls;
pub use wire::{ErrorCode, Id, Message, RpcError};

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use jrpc_macros::rpc_service;
