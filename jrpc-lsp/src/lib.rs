//! Runs language servers on jrpc: the Language Server Protocol's lifecycle, typed pushes and
//! requests to the editor, work-done progress, positions in the connection's encoding, over
//! `Content-Length` framing on stdio or a socket, for a method table declared with
//! `#[rpc_service]` over [`lsp_types`]' params and results.
//!
//! ```no_run
//! use jrpc_lsp::lsp_types::request::{HoverRequest, Request};
//! use jrpc_lsp::lsp_types::*;
//! use jrpc_lsp::{LspContext as _, LspServer};
//! use jrpc_runtime::{Context, rpc_service};
//!
//! struct Server;
//!
//! #[rpc_service]
//! impl Server {
//!     #[rpc(params = whole)]
//!     async fn initialize(&self, _params: InitializeParams) -> InitializeResult {
//!         let capabilities = ServerCapabilities {
//!             hover_provider: Some(true.into()),
//!             ..ServerCapabilities::default()
//!         };
//!         InitializeResult { capabilities, server_info: None }
//!     }
//!
//!     #[notification]
//!     #[rpc(params = whole)]
//!     async fn initialized(&self, ctx: &Context, _params: InitializedParams) {
//!         let _ = ctx.client().log_message(MessageType::INFO, "ready").await;
//!     }
//!
//!     #[rpc(name = <HoverRequest as Request>::METHOD, params = whole)]
//!     async fn hover(&self, _params: HoverParams) -> Option<Hover> {
//!         None
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let exit = LspServer::new(Server.into_methods()).serve_stdio().await?;
//!     exit.exit_process()
//! }
//! ```
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`LspServer`], [`Exit`], [`peer_config`] | serving a table under the lifecycle, and how serving ended |
//! | [`LspContext`], [`Client`] | what a handler sends and asks the editor |
//! | [`WorkDone`], [`Progress`] | work-done progress whose `end` precedes the answer, however the request ends |
//! | [`PositionEncoding`], [`TextDocument`], [`offset_at`], [`position_at`] | positions in UTF-16 (or the encoding negotiated) and byte offsets |
//! | [`codes`] | LSP's error codes |
//!
//! `examples/lsp_server.rs` is a whole server (hover on the word under the cursor, the
//! `initialized` greeting and its `workspace/configuration` question); `cargo run --example
//! lsp_server` runs it. The [guide] says what the crate does and why.
//!
//! ## Decisions
//!
//! | question | decision, and why |
//! | --- | --- |
//! | which types crate | [`lsp-types`](lsp_types) (re-exported, so a server names the version the crate speaks): the one most Rust language servers and their frameworks (tower-lsp, async-lsp, lsp-server's users) are written on, so a server moves here with its types unchanged, and its `Request::METHOD` constants name methods in `#[rpc(name = ...)]`. gen-lsp-types, generated from the LSP 3.18 meta-model (tower-lsp-server's next release moves to it), is more complete and names methods by an enum; it is younger and changes with every release. A 3.18 type lsp-types lacks is a struct of your own in the same table |
//! | a trait per protocol method, or `#[rpc_service]` | `#[rpc_service]`: the table holds exactly the methods the server serves, so a method it lacks is `-32601` by the table and its capabilities say the same; extensions (rust-analyzer's, a `proposed` method) are written like the rest; nothing lags the types crate. A trait of some 90 defaulted methods (tower-lsp's) would save one attribute line a method |
//! | the lifecycle | a call layer the crate puts on the table: the `-32600` after `shutdown` is a reserved code only a layer may answer, and the layer decides in each call's first poll, in arrival order |
//! | where progress `end` goes | before the answer, always: the request asks to be told of its cancellation instead of being dropped, so nothing races the answer |
//! | the client's process | checked every 3 s with `kill(pid, 0)`, as vscode-languageserver does; off with [`LspServer::watch_client`] |
//!
//! Built on `jrpc-runtime`'s public face only, without its `http` and `ws` features: a language
//! server builds no HTTP or WebSocket crate.

mod client;
pub mod codes;
mod context;
mod lifecycle;
mod progress;
mod server;
mod session;
mod text;
mod watch;

/// Holds the guide: the lifecycle, talking to the editor, progress, positions, transports, and
/// the decisions behind them.
#[doc = include_str!("../docs/lsp.md")]
pub mod guide {}

/// Compiles the package README's example as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

pub use lsp_types;

pub use client::Client;
pub use context::LspContext;
pub use progress::{Progress, WorkDone};
pub use server::{LspServer, peer_config};
pub use session::Exit;
pub use text::{PositionEncoding, TextDocument, offset_at, position_at};
