//! # jrpc
//!
//! JSON-RPC 2.0 services in Rust: write a trait, put [`rpc_service`] on it, implement it, and
//! serve it over stdio, HTTP (1.1 and 2, SSE, TLS), WebSocket, Unix sockets or in-process; the
//! same attribute gives a typed client stub for any such server.
//!
//! - [`Methods`] is the method table and dispatcher: one body in, one body out.
//! - [`Context`] is what a handler knows about its request.
//! - [`Caller`] is what stubs call through; [`Methods`] itself is one, for in-process calls.
//! - [`framing`] reads and writes messages on byte streams (newline-delimited, or LSP's
//!   `Content-Length`); [`Peer`] is a two-way connection over them; [`stdio`] serves on
//!   stdin/stdout or calls a child process.
//! - [`http`] and [`ws`] serve HTTP and WebSocket on one listener, with clients; [`Client`] picks
//!   one by URL (`unix:` too); [`server`] holds what the servers share, the socket server and
//!   topics.
//! - [`Methods::layer`] puts tower layers around every call; [`layers`] has authorization and
//!   rate and in-flight limits.
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
//! | `otel` | OpenTelemetry through `tracing-opentelemetry`: a request's span is the child of its caller's `traceparent`, and calls carry the current span's context ([`guide::tracing`]) | no |
//!
//! With `default-features = false, features = ["macros"]` the crate is the wire, the dispatcher,
//! the peer, framing, stdio, topics and the Unix-socket server: an LSP or MCP server over stdio
//! compiles no hyper, `http` or tungstenite. `redis` adds the Redis client alone, with or without
//! the servers.
//!
//!
//! ## The guide
//!
//! Each chapter is a page of [`guide`]:
//!
//! - [`guide::layers`]: how the crate is built, layer on layer, and what may use what.
//! - [`guide::wire`]: the answer to every awkward corner of the specification.
//! - [`guide::clients`]: stubs over any transport, typed batches, typed errors.
//! - [`guide::discovery`]: method descriptions, OpenRPC and `rpc.discover`, JSON Schemas.
//! - [`guide::limits`]: one name per setting, and how memory is bounded.
//! - [`guide::transports`]: TLS, HTTP/2 and Unix sockets, and the decisions behind them.
//! - [`guide::topics`]: notifications to groups of connections, in one process or across replicas.
//! - [`guide::subscriptions`]: a call that goes on answering, its items bounded per subscription, a
//!   typed stream on the client.
//! - [`guide::logs`]: what is logged at which level, and the observer hook for metrics.
//! - [`guide::around_calls`]: call layers, authorization and limits, bearer authentication,
//!   cancellation and trace context: what runs around every call.
//! - [`guide::browsers`]: pages of other origins (CORS, the origin policy), DNS rebinding, a
//!   WebSocket's token, a typed client in the page.
//! - [`guide::protocols`]: the seams a protocol is built on (MCP's crate `jrpc-mcp` is), and
//!   which of them are stable.
//! - [`guide::cancellation`]: what cancels a request, on every transport, and `ctx.cancelled()`.
//! - [`guide::tracing`]: W3C trace context, read, logged and sent on; OpenTelemetry (`otel`).
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod batch;
mod caller;
mod client;
mod context;
mod dispatch;
mod error;
pub mod framing;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod layers;
pub mod limits;
mod peer;
pub mod server;
pub mod stdio;

/// Provides subscriptions: what a subscribe handler returns ([`Items`]), what a full bound does
/// ([`WhenFull`]), where ids come from, and the client's typed stream ([`Subscription`], why it
/// [`Ended`](subscription::Ended)). See the guide's [chapter](crate::guide::subscriptions).
pub mod subscription {
    pub use crate::peer::{
        Ended, IdProvider, Items, Subscriber, Subscription, WhenFull, random_id,
    };
}
mod time;
#[cfg(feature = "tls")]
mod tls;
mod transport;
pub mod wire;
mod woken;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

/// Holds the guide: what the crate does and why, a chapter a page. The crate's front page links
/// each.
pub mod guide {
    #[doc = include_str!("../docs/layers.md")]
    pub mod layers {}
    #[doc = include_str!("../docs/wire.md")]
    pub mod wire {}
    #[doc = include_str!("../docs/clients.md")]
    pub mod clients {}
    #[doc = include_str!("../docs/discovery.md")]
    pub mod discovery {}
    #[doc = include_str!("../docs/limits.md")]
    pub mod limits {}
    #[doc = include_str!("../docs/transports.md")]
    pub mod transports {}
    #[doc = include_str!("../docs/topics.md")]
    pub mod topics {}
    #[doc = include_str!("../docs/subscriptions.md")]
    pub mod subscriptions {}
    #[doc = include_str!("../docs/logs.md")]
    pub mod logs {}
    #[doc = include_str!("../docs/around-calls.md")]
    pub mod around_calls {}
    #[cfg(all(feature = "http", feature = "macros"))]
    #[doc = include_str!("../docs/protocols.md")]
    pub mod protocols {}
    #[cfg(all(feature = "http", feature = "ws"))]
    #[doc = include_str!("../docs/browsers.md")]
    pub mod browsers {}
    #[doc = include_str!("../docs/cancellation.md")]
    pub mod cancellation {}
    #[doc = include_str!("../docs/tracing.md")]
    pub mod tracing {}
}

/// Compiles the package README's example as a doc test.
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
    Answer, Batches, BoxError, Call, CallService, Context, ErrorReport, FromParams, MethodDoc,
    Methods, Notifications, NullParams, Observation, Outcome, ParamDoc, ParamStructure, Params,
    SchemaDoc, ServiceInfo, SpanId, SubscriptionDoc, TraceContext, TraceId, Whole,
};
pub use error::{ClientError, ConfigError, RegisterError};
pub use limits::Limits;
pub use peer::{
    CancelGuard, Cancellation, Driver, Framing, Items, Lifetime, Overflow, Peer, PeerConfig,
    PeerConfigBuilder, Subscriber, Subscription, WhenFull,
};
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::ClientTls;
pub use transport::Transport;
pub use wire::{ErrorCode, Id, Message, MessageError, RpcError};

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use jrpc_macros::rpc_service;
