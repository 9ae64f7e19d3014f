//! Shuts servers down gracefully: the drain state every server, endpoint and connection shares, and
//! the public handle that starts it.
//!
//! | phase | entered when | new requests | in-flight calls | connections |
//! | --- | --- | --- | --- | --- |
//! | serving | at start | served | run | accepted |
//! | draining | `shutdown()` is called | `503` (WebSockets: close 1001) | run to the end | no new ones; open ones stay, to carry the 503s |
//! | closing | no call is left, or the budget is spent | `503` | — | idle ones close, busy ones after their reply |
//! | stopped | the budget is spent with connections left | — | dropped | dropped |
//!
//! Each phase is a [`CancellationToken`], cancelled on entering it; calls and connections are
//! counted by a [`TaskTracker`] each, whose tokens the requests and connections hold. Open
//! keep-alive connections are kept through draining on purpose: a client that sends its next
//! request on one gets a clear `503` with `Connection: close` rather than a reset socket.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// Holds the shared drain state.
#[derive(Debug)]
pub(crate) struct Shutdown {
    /// Cleared as draining begins: what every request reads (the token's own state is behind a
    /// lock).
    serving: AtomicBool,
    draining: CancellationToken,
    closing: CancellationToken,
    stopped: CancellationToken,
    calls: TaskTracker,
    connections: TaskTracker,
    budget: Duration,
}

/// Counts one call or connection; the count is given back on drop.
pub(crate) type Tracked = TaskTrackerToken;

#[cfg_attr(
    not(all(feature = "http", feature = "ws")),
    allow(dead_code, reason = "each server uses its part")
)]
impl Shutdown {
    pub(crate) fn new(budget: Duration) -> Arc<Self> {
        Arc::new(Self {
            serving: AtomicBool::new(true),
            draining: CancellationToken::new(),
            closing: CancellationToken::new(),
            stopped: CancellationToken::new(),
            calls: TaskTracker::new(),
            connections: TaskTracker::new(),
            budget,
        })
    }

    /// Returns the drain budget: how long calls and connections may go on once a shutdown begins.
    pub(crate) fn budget(&self) -> Duration {
        self.budget
    }

    /// Returns whether new requests are served.
    pub(crate) fn is_serving(&self) -> bool {
        self.serving.load(Ordering::SeqCst)
    }

    /// Resolves when a shutdown begins: stop accepting, close WebSockets with 1001.
    pub(crate) fn draining(&self) -> WaitForCancellationFutureOwned {
        self.draining.clone().cancelled_owned()
    }

    /// Resolves when no call is left (or the budget is spent): close HTTP connections once
    /// their reply is written.
    pub(crate) fn closing(&self) -> WaitForCancellationFutureOwned {
        self.closing.clone().cancelled_owned()
    }

    /// Resolves when the budget is spent: drop whatever is left.
    pub(crate) fn stopped(&self) -> WaitForCancellationFutureOwned {
        self.stopped.clone().cancelled_owned()
    }

    /// Counts a call as in flight, or `None` once draining has begun (the caller answers `503`).
    ///
    /// The count goes up before the phase is read, and `shutdown` moves the phase before it
    /// waits for the count, so a call is either refused or waited for, never missed.
    pub(crate) fn track_call(&self) -> Option<Tracked> {
        let tracked = self.calls.token();
        // Ordered with `run`'s fence: the count is seen there, or the phase here.
        fence(Ordering::SeqCst);
        self.is_serving().then_some(tracked)
    }

    /// Counts an open connection (HTTP, or a WebSocket), so that `shutdown` waits for it to close.
    pub(crate) fn track_connection(&self) -> Tracked {
        self.connections.token()
    }

    /// Counts a new connection, or `None` once draining has begun (it is refused), by the same
    /// rule as [`track_call`](Self::track_call).
    pub(crate) fn admit_connection(&self) -> Option<Tracked> {
        let tracked = self.connections.token();
        fence(Ordering::SeqCst);
        self.is_serving().then_some(tracked)
    }

    async fn run(&self) -> Drained {
        let deadline = crate::time::after(self.budget);
        self.serving.store(false, Ordering::SeqCst);
        // Ordered with `track_call`'s fence: a call counted before it is waited for below.
        fence(Ordering::SeqCst);
        self.draining.cancel();
        tracing::info!(budget = ?self.budget, "draining");
        self.calls.close();
        let calls_done = tokio::time::timeout_at(deadline, self.calls.wait())
            .await
            .is_ok();
        self.closing.cancel();
        self.connections.close();
        let connections_done = tokio::time::timeout_at(deadline, self.connections.wait())
            .await
            .is_ok();
        if calls_done && connections_done {
            tracing::info!("drained");
            return Drained::Complete;
        }
        let (calls, connections) = (self.calls.len(), self.connections.len());
        tracing::warn!(
            calls,
            connections,
            "drain budget spent; dropping what is left"
        );
        self.stopped.cancel();
        // Dropping a connection is immediate; this only lets the tasks run to notice it.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.connections.wait()).await;
        Drained::BudgetSpent { calls, connections }
    }
}

/// Says how a shutdown ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Drained {
    /// Every in-flight call finished and every connection closed within the budget.
    Complete,
    /// The budget ran out; what was still running was dropped.
    BudgetSpent {
        /// HTTP calls still in flight when the budget ran out (a WebSocket's calls are counted
        /// with its connection).
        calls: usize,
        /// Connections still open when the budget ran out.
        connections: usize,
    },
}

/// Starts and watches a graceful shutdown of a server: the same type for
/// `http::HttpServer`, `ws::WsServer` and the HTTP
/// endpoint alone. Cheap to clone; every clone drives the same server.
#[derive(Clone, Debug)]
pub struct ShutdownHandle {
    shutdown: Arc<Shutdown>,
}

impl ShutdownHandle {
    pub(crate) fn new(shutdown: Arc<Shutdown>) -> Self {
        Self { shutdown }
    }

    /// Returns the drain state this handle drives, for a server that shares it.
    #[cfg(feature = "ws")]
    pub(crate) fn state(&self) -> &Arc<Shutdown> {
        &self.shutdown
    }

    /// Shuts the server down gracefully and returns once it is done:
    ///
    /// 1. stops accepting connections, and answers every new HTTP request `503` with a JSON-RPC
    ///    error envelope (`-32000`) and `Connection: close`, including requests on open
    ///    keep-alive connections; WebSocket connections stop reading, let their running calls
    ///    finish and be answered, then close with 1001;
    /// 2. waits for in-flight HTTP calls to finish;
    /// 3. closes the HTTP connections as their last reply is written, and waits for every
    ///    connection to close;
    /// 4. if the drain budget (the server's `drain_timeout`) runs out during 2 or 3, drops what
    ///    is left.
    ///
    /// Calling it again, or from several clones, is harmless: each call waits for the same drain.
    /// For an `http::RpcService` mounted in another server, steps 1 and 2
    /// apply; closing connections is that server's job (axum's `with_graceful_shutdown`, for
    /// one).
    pub async fn shutdown(&self) -> Drained {
        self.shutdown.run().await
    }

    /// Returns whether a shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        !self.shutdown.is_serving()
    }

    /// Waits until a shutdown begins (from any clone); useful to stop other work alongside.
    pub async fn shutting_down(&self) {
        self.shutdown.draining().await;
    }

    /// Returns how many HTTP calls are in flight now.
    pub fn in_flight(&self) -> usize {
        self.shutdown.calls.len()
    }

    /// Returns how many connections are open now (HTTP, and WebSocket).
    pub fn connections(&self) -> usize {
        self.shutdown.connections.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_is_either_refused_or_waited_for() {
        let shutdown = Shutdown::new(Duration::from_secs(5));
        let call = shutdown.track_call().expect("serving");
        let handle = ShutdownHandle::new(Arc::clone(&shutdown));
        let draining = tokio::spawn({
            let handle = handle.clone();
            async move { handle.shutdown().await }
        });
        handle.shutting_down().await;
        assert!(
            shutdown.track_call().is_none(),
            "new calls are refused while draining"
        );
        assert_eq!(handle.in_flight(), 1);
        drop(call);
        assert_eq!(draining.await.ok(), Some(Drained::Complete));
        assert!(shutdown.closing.is_cancelled());
        assert!(!shutdown.stopped.is_cancelled());
    }

    #[tokio::test]
    async fn a_spent_budget_drops_what_is_left() {
        let shutdown = Shutdown::new(Duration::from_millis(10));
        let _call = shutdown.track_call();
        let outcome = ShutdownHandle::new(Arc::clone(&shutdown)).shutdown().await;
        assert_eq!(
            outcome,
            Drained::BudgetSpent {
                calls: 1,
                connections: 0
            }
        );
        assert!(shutdown.stopped.is_cancelled());
    }
}
