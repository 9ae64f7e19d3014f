//! Provides the accept loop every server runs, over any kind of listener (TCP, Unix): a connection
//! cap, a loop that survives failed accepts, and an end when a shutdown begins.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
#[cfg(unix)]
use tokio::net::UnixListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::io::Io;
use super::shutdown::Shutdown;

/// Abstracts a kind of listener the accept loop takes connections from.
pub(crate) trait Listener: Send {
    /// Names a connection's byte stream.
    type Stream: Io;

    /// Takes the next connection, with the peer's network address where it has one.
    fn accept(&self)
    -> impl Future<Output = io::Result<(Self::Stream, Option<SocketAddr>)>> + Send;

    /// Returns where it listens, for the log line.
    fn local(&self) -> String;
}

impl Listener for TcpListener {
    type Stream = tokio::net::TcpStream;

    async fn accept(&self) -> io::Result<(Self::Stream, Option<SocketAddr>)> {
        let (stream, peer) = TcpListener::accept(self).await?;
        // Answers are small and written whole: send them without waiting for more.
        let _ = stream.set_nodelay(true);
        Ok((stream, Some(peer)))
    }

    fn local(&self) -> String {
        self.local_addr()
            .map_or_else(|_| "an unknown address".to_owned(), |addr| addr.to_string())
    }
}

#[cfg(unix)]
impl Listener for UnixListener {
    type Stream = tokio::net::UnixStream;

    async fn accept(&self) -> io::Result<(Self::Stream, Option<SocketAddr>)> {
        // A Unix peer's address is a path at best (usually none): nothing a `SocketAddr` holds.
        let (stream, _peer) = UnixListener::accept(self).await?;
        Ok((stream, None))
    }

    fn local(&self) -> String {
        match self.local_addr() {
            Ok(addr) => match addr.as_pathname() {
                Some(path) => format!("unix:{}", path.display()),
                None => "an unnamed Unix socket".to_owned(),
            },
            Err(_) => "an unknown Unix socket".to_owned(),
        }
    }
}

/// Holds a connection's place under the server's `max_connections` cap until it closes (as the
/// WebSocket an HTTP connection was upgraded to, too).
pub(crate) type ConnectionPermit = OwnedSemaphorePermit;

/// Caps how many connections a server serves at once.
#[derive(Debug)]
pub(crate) struct ConnectionCap(Arc<Semaphore>);

impl ConnectionCap {
    /// Makes room for `max` connections; `max` was checked to be at most
    /// [`Semaphore::MAX_PERMITS`].
    pub(crate) fn new(max: usize) -> Self {
        Self(Arc::new(Semaphore::new(max)))
    }
}

/// Accepts connections on `listener` and hands each to `serve` with its permit, until a shutdown
/// begins; then returns (dropping the listener), while the open connections drain.
///
/// At the cap it waits for a connection to close before accepting another: new clients wait in
/// the kernel's backlog rather than being refused. A failed accept never ends the loop: a
/// client's reset is skipped, and a lack of resources (`EMFILE` and the like) is logged and
/// retried after 100 ms.
pub(crate) async fn accept_loop<L: Listener>(
    listener: L,
    cap: &ConnectionCap,
    shutdown: &Shutdown,
    what: &'static str,
    mut serve: impl FnMut(L::Stream, Option<SocketAddr>, ConnectionPermit),
) {
    tracing::info!(addr = %listener.local(), "serving {what}");
    let stopping = shutdown.draining();
    tokio::pin!(stopping);
    loop {
        let permit = tokio::select! {
            biased;
            () = &mut stopping => break,
            permit = Arc::clone(&cap.0).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break, // never closed: the semaphore lives as long as the server
            },
        };
        let accepted = tokio::select! {
            biased;
            () = &mut stopping => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(err) if is_per_connection(&err) => continue,
            Err(err) => {
                tracing::error!(error = %err, "accept failed; retrying in 100 ms");
                tokio::select! {
                    () = &mut stopping => break,
                    () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                }
            }
        };
        serve(stream, peer, permit);
    }
    tracing::info!("stopped accepting {what} connections");
}

/// Runs [`accept_loop`], serving each connection with the future `connection` makes of it, in a
/// task of its own that holds the connection's permit until the future ends.
#[cfg_attr(
    not(feature = "ws"),
    allow(dead_code, reason = "the servers without upgrades use it")
)]
pub(crate) async fn serve_each<L: Listener, F>(
    listener: L,
    cap: &ConnectionCap,
    shutdown: &Shutdown,
    what: &'static str,
    connection: impl Fn(L::Stream, Option<SocketAddr>) -> F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    accept_loop(listener, cap, shutdown, what, |stream, peer, permit| {
        let serving = connection(stream, peer);
        tokio::spawn(async move {
            serving.await;
            drop(permit);
        });
    })
    .await;
}

/// Returns whether an error concerns one incoming connection only (it was reset before it was
/// taken).
fn is_per_connection(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}
