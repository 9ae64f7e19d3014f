//! MCP, the Model Context Protocol: both protocol eras on one server, chosen per request.
//!
//! | era | revisions | what marks a request | state |
//! | --- | --- | --- | --- |
//! | legacy | 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 | no revision in `params._meta` | begun by `initialize`: a session over HTTP, the connection over stdio |
//! | modern | 2026-07-28 | `params._meta["io.modelcontextprotocol/protocolVersion"]` | none: each request carries its revision and the client's capabilities |
//!
//! With `http`, [`McpServer`] serves MCP's Streamable HTTP: sessions, SSE answers, the GET
//! stream, origin and protocol-version checks, resumability, and a stateless mode.

#[allow(dead_code, reason = "the data layer, built on it, comes next")]
mod protocol;

#[cfg(feature = "http")]
mod http;

#[cfg(feature = "http")]
pub use http::{McpServer, McpServerBuilder, McpService, McpSession};
pub use protocol::types::{CacheScope, Era, Implementation, LogLevel, UnknownLevel};
pub use protocol::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
