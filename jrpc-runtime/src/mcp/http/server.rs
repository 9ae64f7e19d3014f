//! The MCP server: the accept loop, one hyper connection per client, and the routing of a
//! request to the endpoint or `404`.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use ::http::{Request, Response};
use futures_util::future::Either;
use hyper::body::Incoming;
use tokio::net::TcpListener;

use super::config::{McpServerBuilder, Settings};
use super::endpoint::McpService;
use super::protected::Metadata;
use crate::http::reply::{self, ResponseBody};
use crate::http::{Endpoint, Ends, Protocols, drive};
use crate::mcp::data::Mcp;
use crate::server::{ConnectionCap, Io, ShutdownHandle, serve_each};

/// An MCP server over Streamable HTTP: the endpoint at its path (default `/mcp`), `404`
/// elsewhere, keep-alive connections, limits, and a graceful shutdown. See the
/// [module docs](crate::mcp) for the rules it follows.
///
/// Cloning is cheap; clones are the same server.
///
/// ```
/// use jrpc_runtime::mcp::McpServer;
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
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    endpoint: McpService,
    settings: Settings,
    protocols: Arc<Protocols>,
    cap: ConnectionCap,
}

impl McpServer {
    /// A builder serving `mcp` (an [`Mcp`] server, or a method table served as it is: see
    /// [`Mcp::raw`]), with every setting at its default.
    pub fn builder(mcp: impl Into<Mcp>) -> McpServerBuilder {
        McpServerBuilder::new(mcp.into())
    }

    pub(crate) fn new(endpoint: McpService, settings: Settings, cap: ConnectionCap) -> Self {
        let inner = Inner {
            protocols: Arc::new(Protocols::new(
                settings.header_read_timeout,
                settings.free_idle_after,
            )),
            endpoint,
            settings,
            cap,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The endpoint alone, to mount in another router; it shares this server's sessions, table
    /// and shutdown.
    pub fn service(&self) -> McpService {
        self.inner.endpoint.clone()
    }

    /// A handle to shut the server down gracefully: sessions end, requests running may finish
    /// within the drain budget.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(self.inner.endpoint.shutdown()))
    }

    /// Serves one connection until the client closes it, it times out, or a shutdown closes it;
    /// for an accept loop of your own (over TLS, a Unix socket...).
    pub fn serve_connection(
        &self,
        io: impl Io,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let mcp = &self.inner.endpoint;
        let router = Router {
            endpoint: peer_addr
                .map_or_else(|| mcp.clone(), |addr| mcp.clone().with_peer_addr(addr)),
            path: self.inner.settings.path.clone(),
            metadata: self.inner.settings.metadata.clone(),
        };
        let counted = mcp.shutdown().track_connection();
        let write_timeout = self.inner.settings.write_timeout;
        let shutdown = Arc::clone(mcp.shutdown());
        drive(
            &self.inner.protocols,
            io,
            router,
            write_timeout,
            shutdown,
            counted,
        )
    }

    /// Accepts connections on `listener` and serves each in its own task (as
    /// [`serve_connection`](Self::serve_connection)), until a shutdown begins; at
    /// `max_connections` it waits for one to close before accepting another.
    pub async fn serve(&self, listener: TcpListener) {
        let connection = |stream, peer| self.serve_connection(stream, peer);
        let cap = &self.inner.cap;
        serve_each(
            listener,
            cap,
            self.inner.endpoint.shutdown(),
            "MCP",
            connection,
        )
        .await;
    }
}

/// The per-connection service: the endpoint at its path, the protected resource's metadata at
/// its own (when served), `404` elsewhere.
#[derive(Clone)]
struct Router {
    endpoint: McpService,
    path: Box<str>,
    metadata: Option<Arc<Metadata>>,
}

impl Endpoint for Router {
    fn respond(
        &self,
        req: Request<Incoming>,
        ends: Option<Ends>,
    ) -> impl Future<Output = Result<Response<ResponseBody>, Infallible>> + Send + 'static + use<>
    {
        if req.uri().path() == &*self.path {
            // Boxed: an MCP request's future is large, and moved whole when it is not.
            return Either::Left(Box::pin(self.endpoint.respond(req, ends, None)));
        }
        let found = (self.metadata.as_ref())
            .and_then(|metadata| metadata.reply(req.method(), req.uri().path()));
        let res = found.unwrap_or_else(|| reply::not_found(req.uri().path()));
        let res = crate::http::body::unread_reply(&req, res);
        Either::Right(std::future::ready(Ok(Ends::answered(ends, res))))
    }
}
