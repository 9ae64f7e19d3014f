//! Implements MCP's Streamable HTTP transport, both eras on one endpoint: the legacy one's
//! sessions, SSE answers, GET stream and resumability, and the modern one's stateless POSTs
//! (`modern`). Built on the HTTP layer's SSE answers and event log and the server pieces. Its
//! rules, for users, are in the guide's MCP chapter (`docs/mcp.md`, "Over HTTP").

mod config;
mod endpoint;
mod keep_alive;
mod modern;
mod protected;
mod replica;
mod server;
mod session;

pub use config::McpServerBuilder;
pub use endpoint::McpEndpoint;
pub use protected::ProtectedResource;
pub use server::{McpServer, McpService};
pub use session::McpSession;
