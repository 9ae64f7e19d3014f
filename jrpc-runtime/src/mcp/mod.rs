//! MCP, the Model Context Protocol: both protocol eras on one server, chosen per request.
//!
//! | era | revisions | what marks a request | state |
//! | --- | --- | --- | --- |
//! | legacy | 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 | no revision in `params._meta` | begun by `initialize`: a session over HTTP, the connection over stdio |
//! | modern | 2026-07-28 | `params._meta["io.modelcontextprotocol/protocolVersion"]` | none: each request carries its revision and the client's capabilities |
//!
//! [`Mcp`] is a server: its tools (the methods of a `#[rpc_service(schema)]` service) and the
//! protocol table serving them. Serve it over stdio ([`Mcp::serve_stdio`]), over any byte stream
//! ([`Mcp::connect`]), or, with `http`, over Streamable HTTP ([`McpServer`]: sessions, SSE
//! answers, the GET stream, origin and protocol-version checks, resumability, a stateless mode).

mod data;
mod protocol;
mod stdio;

#[cfg(feature = "http")]
mod http;

pub use data::{
    Answers, Ask, Cached, CompleteRequest, Completion, CompletionRef, Elicited, Form, Mcp,
    McpBuilder, McpError, McpRequest, Resource, ResourceRequest, ResourceTemplate, Root,
    SampledMessage, Sampling,
};
#[cfg(feature = "http")]
pub use http::{McpServer, McpServerBuilder, McpService, McpSession};
pub use protocol::content::{Annotations, Content, ResourceContents, Role, ToolResult};
pub use protocol::prompt::{PromptMessage, PromptResult};
pub use protocol::types::{CacheScope, Era, Implementation, LogLevel, UnknownLevel};
pub use protocol::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
