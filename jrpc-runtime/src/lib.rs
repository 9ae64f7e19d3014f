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
//! - [`http`] and [`ws`] serve HTTP and WebSocket on one listener, with clients; [`Client`]
//!   picks one by URL; [`server`] holds what both servers share, and topics: notifications for
//!   groups of connections on any transport that stays open, local or across replicas on Redis.
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
//! server    accept loop + connection cap, shutdown (CancellationToken + TaskTracker),
//!   ^       the replies a server writes itself, topics (local, or across replicas on Redis)
//!   |
//! http  ws  each on server; http hands WebSocket upgrades to ws's public WsServer::upgrade_with
//! ```
//!
//! Beside them: [`Caller`] (what every client implements, with `call` and `notify` written once),
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
//! | `redis` | [`Topics::redis`](server::Topics::redis): topics shared by every replica of a service through Redis pub/sub (the `redis` crate) | no |
//!
//! With `default-features = false, features = ["macros"]` the crate is the wire, the dispatcher,
//! the peer, framing, stdio and topics: an LSP or MCP server over stdio compiles no hyper, `http`
//! or tungstenite. `redis` adds the Redis client alone, with or without the servers.
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

mod caller;
#[cfg(any(feature = "http", feature = "ws"))]
mod client;
mod dispatch;
mod error;
pub mod framing;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod peer;
pub mod server;
pub mod stdio;
mod time;
mod wire;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

/// The package README's example, compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use caller::{Caller, ParamEncoding};
#[cfg(any(feature = "http", feature = "ws"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "ws"))))]
pub use client::Client;
pub use dispatch::{
    Batches, Context, ErrorReport, FromParams, MethodDoc, Methods, Observation, Outcome, ParamDoc,
    ParamStructure, Params, SchemaDoc, ServiceInfo, Transport, Whole,
};
pub use error::{ClientError, ConfigError, RegisterError};
pub use peer::{
    Cancellation, Driver, Framing, Lifetime, Overflow, Peer, PeerConfig, PeerConfigBuilder,
};
pub use wire::{ErrorCode, Id, Message, RpcError};

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use jrpc_macros::rpc_service;
