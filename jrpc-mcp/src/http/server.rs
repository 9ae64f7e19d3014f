//! Defines the MCP server: the runtime's HTTP server with the MCP endpoint at its path (and the
//! protected resource's metadata at its own), `404` elsewhere.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use jrpc_runtime::http::{EndpointService, HttpServer};
use jrpc_runtime::server::{Io, ShutdownHandle};
use tokio::net::TcpListener;

use super::config::McpServerBuilder;
use super::endpoint::McpEndpoint;
use crate::data::Mcp;

/// Serves the endpoint as a tower service, to mount at a path of another router.
pub type McpService = EndpointService<McpEndpoint>;

/// Serves MCP over Streamable HTTP: the endpoint at its path (default `/mcp`), `404`
/// elsewhere, keep-alive connections, limits, and a graceful shutdown: an
/// [`HttpServer`] that serves the [`McpEndpoint`] alone. See the [crate docs](crate) for the
/// rules it follows.
///
/// Cloning is cheap; clones are the same server.
///
/// ```
/// use jrpc_mcp::McpServer;
/// use jrpc_runtime::server::Drained;
/// use jrpc_runtime::{Methods, RpcError};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut methods = Methods::new();
/// methods.register("ping", &[], |(): (), _ctx| async move {
///     Ok::<_, RpcError>(serde_json::json!({}))
/// })?;
/// let server = McpServer::builder(methods).build()?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let shutdown = server.shutdown_handle();
/// let serving = tokio::spawn(async move { server.serve(listener).await });
/// assert_eq!(shutdown.shutdown().await, Drained::Complete);
/// serving.await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct McpServer {
    http: HttpServer,
    endpoint: Arc<McpEndpoint>,
}

impl McpServer {
    /// Returns a builder serving `mcp` (an [`Mcp`] server, or a method table served as it is:
    /// see [`Mcp::raw`]), with every setting at its default.
    pub fn builder(mcp: impl Into<Mcp>) -> McpServerBuilder {
        McpServerBuilder::new(mcp.into())
    }

    pub(crate) fn new(http: HttpServer, endpoint: Arc<McpEndpoint>) -> Self {
        Self { http, endpoint }
    }

    /// Returns the endpoint alone as a service, to mount in another router; it shares this
    /// server's sessions, table, limits and shutdown.
    pub fn service(&self) -> McpService {
        self.http.service_for(Arc::clone(&self.endpoint))
    }

    /// Returns the endpoint the server serves.
    pub fn endpoint(&self) -> &McpEndpoint {
        &self.endpoint
    }

    /// Returns the HTTP server underneath.
    pub fn http(&self) -> &HttpServer {
        &self.http
    }

    /// Returns a handle to shut the server down gracefully: sessions end, requests running may
    /// finish within the drain budget.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.http.shutdown_handle()
    }

    /// Serves one connection until the client closes it, it times out, or a shutdown closes it;
    /// for an accept loop of your own (over TLS, a Unix socket...).
    pub fn serve_connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.http.serve_connection(io, peer_addr)
    }

    /// Accepts connections on `listener` and serves each in its own task (as
    /// [`serve_connection`](Self::serve_connection)), until a shutdown begins; at
    /// `max_connections` it waits for one to close before accepting another.
    pub async fn serve(&self, listener: TcpListener) {
        self.http.serve(listener).await;
    }
}
