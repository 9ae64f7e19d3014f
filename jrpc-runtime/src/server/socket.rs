//! Serves JSON-RPC on Unix and TCP sockets: one two-way [`Peer`](crate::peer::Peer) per connection,
//! under the shared accept loop, connection cap and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpListener;
#[cfg(unix)]
use tokio::net::UnixListener;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::accept::{ConnectionCap, ConnectionPermit, Listener, accept_loop};
use super::io::Io;
use super::shutdown::{Shutdown, ShutdownHandle};
use crate::dispatch::Methods;
use crate::error::ConfigError;
use crate::error::check;
use crate::peer::{Lifetime, Peer, PeerConfig};
use crate::transport::Transport;

/// Serves JSON-RPC on Unix sockets ([`serve_unix`](Self::serve_unix)) or TCP
/// ([`serve_tcp`](Self::serve_tcp)): each connection is a [`Peer`], so both sides call, framed as
/// its [`PeerConfig`] says (newline-delimited by default, or `Content-Length`).
///
/// It shares the network servers' machinery: at most
/// [`max_connections`](SocketServerBuilder::max_connections) at once (new clients wait in the
/// kernel's backlog), and a graceful shutdown through [`ShutdownHandle`]: accepting stops, every
/// connection stops reading, its running calls finish and are answered, then it closes; past the
/// [`drain_timeout`](SocketServerBuilder::drain_timeout) what is left is dropped. Handlers see
/// [`Transport::Unix`] or [`Transport::Tcp`] (and the peer's address over TCP), and their
/// connection's [`Context::peer`](crate::dispatch::Context::peer) to push to or call the client.
///
/// ```no_run
/// use jrpc_runtime::server::SocketServer;
/// use jrpc_runtime::{Caller as _, Client, Methods, RpcError};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut methods = Methods::new();
/// methods.register("add", &["a", "b"], |(a, b): (i64, i64), _| async move { Ok::<_, RpcError>(a + b) })?;
/// let server = SocketServer::builder(methods).build()?;
/// let listener = tokio::net::UnixListener::bind("/tmp/calc.sock")?;
/// tokio::spawn(async move { server.serve_unix(listener).await });
///
/// let client = Client::connect("unix:/tmp/calc.sock").await?;
/// let sum: i64 = client.call("add", [2, 3]).await?;
/// # Ok(()) }
/// ```
///
/// Cloning is cheap; clones are the same server.
#[derive(Clone, Debug)]
pub struct SocketServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    methods: Methods,
    config: PeerConfig,
    shutdown: Arc<Shutdown>,
    cap: ConnectionCap,
}

/// Builds a [`SocketServer`]; [`build`](Self::build) checks the settings.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SocketServerBuilder {
    methods: Methods,
    config: PeerConfig,
    max_connections: usize,
    drain_timeout: Duration,
}

impl SocketServerBuilder {
    /// Sets each connection's settings (default [`PeerConfig::default`]: newline-delimited, the
    /// peer's limits): its framing, limits, call timeout, cancellation notices, overflow. Its
    /// lifetime is the server's: a connection serves while its client sends.
    pub fn peer(mut self, config: PeerConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets how many connections are served at once (default 10 000); at the cap the server waits
    /// for one to close before accepting another.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// Sets how long a shutdown lets running calls finish before it drops the connections left
    /// (default 30 s, the grace period most orchestrators give a process). Zero stops at once.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.drain_timeout = budget;
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `max_connections` when it is zero or above what a semaphore
    /// holds. (A [`PeerConfig`] was checked when it was built.)
    pub fn build(self) -> Result<SocketServer, ConfigError> {
        check::permits("max_connections", self.max_connections)?;
        Ok(SocketServer {
            inner: Arc::new(Inner {
                methods: self.methods,
                config: self.config.with_lifetime(Lifetime::UntilInputEnds),
                shutdown: Shutdown::new(self.drain_timeout),
                cap: ConnectionCap::new(self.max_connections),
            }),
        })
    }
}

impl SocketServer {
    /// Returns a builder serving `methods`, with every setting at its default.
    pub fn builder(methods: Methods) -> SocketServerBuilder {
        SocketServerBuilder {
            methods,
            config: PeerConfig::default(),
            max_connections: 10_000,
            drain_timeout: Duration::from_secs(30),
        }
    }

    /// Returns a handle to shut the server down gracefully (see the type's docs).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle::new(Arc::clone(&self.inner.shutdown))
    }

    /// Accepts connections on a Unix socket and serves each in its own task, until a shutdown
    /// begins; then returns, while the open connections drain. Handlers see
    /// [`Transport::Unix`]. The socket file is the caller's: remove it when done.
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    pub async fn serve_unix(&self, listener: UnixListener) {
        self.serve(listener, Transport::Unix, "Unix socket").await;
    }

    /// Accepts TCP connections and serves each in its own task, until a shutdown begins; then
    /// returns, while the open connections drain. Handlers see [`Transport::Tcp`] and the peer's
    /// address.
    pub async fn serve_tcp(&self, listener: TcpListener) {
        self.serve(listener, Transport::Tcp, "TCP peer").await;
    }

    async fn serve<L: Listener>(&self, listener: L, transport: Transport, what: &'static str) {
        accept_loop(
            listener,
            &self.inner.cap,
            &self.inner.shutdown,
            what,
            |io, peer_addr, permit| {
                tokio::spawn(self.connection(io, transport, peer_addr, Some(permit)));
            },
        )
        .await;
    }

    /// Serves one connection of an accept loop of your own (a socket pair, a TLS stream...) until
    /// the client closes it or a shutdown does; handlers see `transport` and `peer_addr`.
    /// `max_connections` is the accept loop's to enforce.
    pub fn serve_connection(
        &self,
        io: impl Io,
        transport: Transport,
        peer_addr: Option<SocketAddr>,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.connection(io, transport, peer_addr, None)
    }

    fn connection(
        &self,
        io: impl Io,
        transport: Transport,
        peer_addr: Option<SocketAddr>,
        permit: Option<ConnectionPermit>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let inner = Arc::clone(&self.inner);
        async move {
            let Some(counted) = inner.shutdown.admit_connection() else {
                return;
            };
            let mut ctx = inner.config.context().clone().with_transport(transport);
            if let Some(addr) = peer_addr {
                ctx = ctx.with_peer_addr(addr);
            }
            let (read, write) = tokio::io::split(io);
            // A shutdown ends the input: running calls finish and are answered, then it closes.
            let read = CutOff {
                inner: read,
                signal: Box::pin(inner.shutdown.draining()),
                cut: false,
            };
            let config = inner.config.clone().with_context(ctx);
            let (peer, driver) = Peer::connect_split(read, write, inner.methods.clone(), config);
            // Handlers hold handles of their own; this one does not keep the connection open.
            drop(peer);
            tokio::select! {
                ended = driver => if let Err(err) = ended {
                    tracing::debug!(error = %err, "connection ended with an error");
                },
                () = inner.shutdown.stopped() => {
                    tracing::warn!("connection dropped: drain budget spent");
                }
            }
            drop(counted);
            drop(permit);
        }
    }
}

/// Cuts a reading half off: it ends (reads nothing more) once its signal fires.
struct CutOff<R> {
    inner: R,
    signal: Pin<Box<WaitForCancellationFutureOwned>>,
    cut: bool,
}

impl<R: AsyncRead + Unpin> AsyncRead for CutOff<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.cut && self.signal.as_mut().poll(cx).is_ready() {
            self.cut = true;
        }
        if self.cut {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}
