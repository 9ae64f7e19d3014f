//! Runs ACP agents (the Agent Client Protocol, version 1) on jrpc: an editor starts the agent and
//! speaks JSON-RPC with it over stdio, one message a line.
//!
//! An agent implements [`Agent`] with the request and answer types of the official
//! [`agent-client-protocol-schema`](agent_client_protocol_schema) crate (re-exported as
//! [`schema`]); [`Acp`] serves it, and writes what every agent must do around it:
//!
//! - `initialize`: version negotiation (version 1) and the client's capabilities, which the file
//!   and terminal methods are checked against;
//! - sessions: each connection knows the sessions its client opened, and answers a request naming
//!   another `-32002` (resource not found);
//! - prompt turns: [`Session`] sends the turn's `session/update`s and calls the client
//!   (`session/request_permission`, `fs/*`, `terminal/*`) typed; `session/cancel` ends the
//!   running turn, answered `stopReason: "cancelled"`; `$/cancel_request` naming a request drops
//!   it and answers `-32800`;
//! - the wire: `"params": null` read as no params, batches refused (`-32600`), as ACP has none.
//!
//! ```no_run
//! use jrpc_acp::schema::{Error, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, StopReason};
//! use jrpc_acp::{Acp, Agent, Client, Session};
//!
//! struct Echo;
//!
//! impl Agent for Echo {
//!     async fn new_session(&self, _: NewSessionRequest, _: Client) -> Result<NewSessionResponse, Error> {
//!         Ok(NewSessionResponse::new("the-session"))
//!     }
//!
//!     async fn prompt(&self, request: PromptRequest, session: Session) -> Result<PromptResponse, Error> {
//!         session.say(jrpc_acp::text_of(&request.prompt)).await?;
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     Acp::builder(Echo).info("echo", "1.0.0").build()?.serve_stdio().await?;
//!     Ok(())
//! }
//! ```
//!
//! `examples/acp_agent.rs` counts, asks for permission and echoes; `cargo run -p jrpc-acp
//! --example acp_agent` runs it. The [guide] says how a turn is cancelled, what is checked, and
//! why the crate is shaped so.
//!
//! ## Why a trait
//!
//! An agent is [`Agent`], a trait of this crate, rather than a `#[rpc_service]` of its own over
//! the schema's types. What an agent writes is the same few methods every time, and the
//! protocol's rules sit between them: the version, the client's capabilities, which sessions a
//! connection opened, how `session/cancel` reaches the running turn and what it answers then.
//! With its own table an agent would write those rules again, and a missed one fails only
//! against a real client. With the trait, the methods carry the schema's types and nothing else,
//! an ACP author meets the shape of the official SDKs, and methods the trait lacks (extensions,
//! `session/list`) still come from a `#[rpc_service]` table beside it
//! ([`AcpBuilder::methods`]).
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod acp;
mod agent;
mod client;
mod connection;
mod error;
mod session;

/// Holds the guide: how an agent is served, how a turn ends and is cancelled, what is checked,
/// and the decisions behind them.
#[doc = include_str!("../docs/acp.md")]
pub mod guide {}

/// Holds ACP's types, version 1: the `v1` module of
/// [`agent-client-protocol-schema`](agent_client_protocol_schema), whose version this crate
/// pins.
pub use agent_client_protocol_schema::v1 as schema;

pub use acp::{Acp, AcpBuilder};
pub use agent::Agent;
pub use agent_client_protocol_schema::ProtocolVersion;
pub use client::Client;
pub use error::AcpError;
pub use session::{Session, Terminal};

use agent_client_protocol_schema::v1::ContentBlock;

/// Returns the text of `blocks` (a prompt's), its text blocks joined; other blocks (images,
/// resources) are left out.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}
