//! Serves MCP, the Model Context Protocol: both protocol eras on one server, chosen per request.
//!
//! | era | revisions | what marks a request | state |
//! | --- | --- | --- | --- |
//! | legacy | 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 | no revision in `params._meta` | begun by `initialize`: a session over HTTP, the connection over stdio |
//! | modern | 2026-07-28 | `params._meta["io.modelcontextprotocol/protocolVersion"]` | none: each request carries its revision and the client's capabilities |
//!
//! [`Mcp`] is a server: its tools (the methods of a `#[rpc_service(schema)]` service), resources,
//! prompts and completer, and the protocol table serving them. Serve it over stdio
//! ([`Mcp::serve_stdio`]), over any byte stream ([`Mcp::connect`]), or, with `http`, over
//! Streamable HTTP (`McpServer`: both eras on one endpoint; sessions, SSE answers, the GET stream
//! and resumability for the legacy one).
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`Mcp`], [`McpBuilder`] | the server and its settings |
//! | [`McpRequest`] | the MCP request a handler serves, in its `Context` ([`McpContext::mcp`]) |
//! | [`Content`], [`ToolResult`], [`ResourceContents`], [`PromptResult`] | what tools, resources and prompts answer |
//! | [`Resource`], [`ResourceTemplate`], [`Completion`], [`Skill`] | what else a server serves |
//! | [`Form`], [`Sampling`], [`Elicited`], [`SampledMessage`], [`Root`] | questions to the client and their answers |
//! | [`TaskSupport`] | which tools run as tasks (the extension `io.modelcontextprotocol/tasks`) |
//! | [`SessionStore`], [`TaskStore`], [`StateKeyRing`]; [`MemorySessions`], [`MemoryTasks`]; `RedisStore` (feature `redis`) | what replicas share: legacy sessions, tasks, the keys of `requestState` |
//!
//! The [guide] says how each era is served, what a handler sends,
//! how it asks the client, how replicas share the work, and what is not done.

mod context;
mod data;
mod protocol;
mod stdio;
mod store;

#[cfg(feature = "http")]
mod http;

/// Holds the guide: how each era is served, what a handler sends and asks, the transports, and the
/// decisions behind them.
#[doc = include_str!("../docs/mcp.md")]
pub mod guide {}

pub use context::McpContext;
pub use data::{
    Answers, Ask, Cached, CompleteRequest, Completion, CompletionRef, Elicited, Form, Mcp,
    McpBuilder, McpError, McpRequest, Resource, ResourceRequest, ResourceTemplate, Root,
    SampledMessage, Sampling, Skill, TaskSupport,
};
#[cfg(feature = "http")]
pub use http::{
    McpEndpoint, McpServer, McpServerBuilder, McpService, McpSession, ProtectedResource,
};
pub use protocol::content::{Annotations, Content, ResourceContents, Role, ToolResult};
pub use protocol::prompt::{PromptMessage, PromptResult};
pub use protocol::state::StateKeyRing;
pub use protocol::types::{CacheScope, Era, Implementation, LogLevel, UnknownLevel};
pub use protocol::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
pub use store::{
    MemorySessions, MemoryTasks, SessionChange, SessionLimits, SessionRecord, SessionStore,
    StoreError, TaskChange, TaskRecord, TaskStatus, TaskStore,
};
#[cfg(feature = "redis")]
pub use store::{RedisStore, RedisStoreBuilder};
