//! Graceful shutdown: the drain state shared by the endpoint, the accept loop and every
//! connection, and the public handle that starts it.
//!
//! | phase | entered when | new requests | in-flight calls | connections |
//! | --- | --- | --- | --- | --- |
//! | `Serving` | at start | served | run | accepted |
//! | `Draining` | `shutdown()` is called | `503` (WebSockets: close 1001) | run to the end | no new ones; open ones stay, to carry the 503s |
//! | `Closing` | no call is left, or the budget is spent | `503` | — | idle ones close, busy ones after their reply |
//! | `Stopped` | the budget is spent with connections left | — | dropped | dropped |
//!
//! Open keep-alive connections are kept through `Draining` on purpose: a client that sends its
//! next request on one gets a clear `503` with `Connection: close` rather than a reset socket.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// Where the server is in its life; phases only move forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Serving normally.
    Serving,
    /// Refusing new requests with `503` while in-flight calls finish. WebSocket connections
    /// close with 1001 ("going away") on entering it.
    Draining,
    /// Closing HTTP connections once their current reply is written.
    Closing,
    /// The budget is spent: whatever is left is dropped.
    Stopped,
}

/// The shared drain state. Counters are `watch` channels so that `shutdown` can wait for zero
/// without polling.
#[derive(Debug)]
pub(crate) struct Drain {
    phase: watch::Sender<Phase>,
    calls: watch::Sender<usize>,
    connections: watch::Sender<usize>,
    budget: Duration,
}

/// Which counter a [`Tracked`] guard holds a unit of.
#[derive(Clone, Copy, Debug)]
enum Counter {
    Calls,
    Connections,
}

/// One unit of a counter, given back on drop.
#[derive(Debug)]
#[must_use = "the unit is given back when the guard drops"]
pub(crate) struct Tracked {
    drain: Arc<Drain>,
    counter: Counter,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drain
            .counter(self.counter)
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Drain {
    pub(crate) fn new(budget: Duration) -> Arc<Self> {
        Arc::new(Self {
            phase: watch::Sender::new(Phase::Serving),
            calls: watch::Sender::new(0),
            connections: watch::Sender::new(0),
            budget,
        })
    }

    fn counter(&self, counter: Counter) -> &watch::Sender<usize> {
        match counter {
            Counter::Calls => &self.calls,
            Counter::Connections => &self.connections,
        }
    }

    fn track(self: &Arc<Self>, counter: Counter) -> Tracked {
        self.counter(counter).send_modify(|n| *n += 1);
        Tracked {
            drain: Arc::clone(self),
            counter,
        }
    }

    /// The drain budget: how long calls may still run once a shutdown begins.
    #[allow(
        dead_code,
        reason = "read by the WebSocket upgrade, whose calls drain on the same budget"
    )]
    pub(crate) fn budget(&self) -> Duration {
        self.budget
    }

    /// The current phase.
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Whether new requests are served.
    pub(crate) fn is_serving(&self) -> bool {
        self.phase() == Phase::Serving
    }

    /// A receiver of phase changes. Long-lived connections watch it: a WebSocket closes with
    /// 1001 once the phase reaches [`Phase::Draining`], an HTTP connection shuts down gracefully
    /// at [`Phase::Closing`], and anything still open is dropped at [`Phase::Stopped`].
    pub(crate) fn watch(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Counts a call as in flight, or `None` once draining has begun (the caller answers `503`).
    ///
    /// The count goes up before the phase is read, and `shutdown` moves the phase before it
    /// reads the count, so a call is either refused or waited for, never missed.
    pub(crate) fn track_call(self: &Arc<Self>) -> Option<Tracked> {
        let tracked = self.track(Counter::Calls);
        self.is_serving().then_some(tracked)
    }

    /// Counts an open connection (HTTP, or a WebSocket after its upgrade), so that `shutdown`
    /// waits for it to close.
    pub(crate) fn track_connection(self: &Arc<Self>) -> Tracked {
        self.track(Counter::Connections)
    }

    fn advance(&self, to: Phase) {
        self.phase.send_if_modified(|phase| {
            let moved = *phase < to;
            if moved {
                *phase = to;
            }
            moved
        });
    }

    async fn wait_for_zero(&self, counter: Counter) {
        let mut rx = self.counter(counter).subscribe();
        // The sender lives in `self`, so the channel cannot close while this borrows it.
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    async fn shutdown(&self) -> Drained {
        let deadline = crate::time::after(self.budget);
        self.advance(Phase::Draining);
        tracing::info!(budget = ?self.budget, "draining");
        let calls_done = tokio::time::timeout_at(deadline, self.wait_for_zero(Counter::Calls))
            .await
            .is_ok();
        self.advance(Phase::Closing);
        let connections_done =
            tokio::time::timeout_at(deadline, self.wait_for_zero(Counter::Connections))
                .await
                .is_ok();
        if calls_done && connections_done {
            tracing::info!("drained");
            return Drained::Complete;
        }
        let calls = *self.calls.borrow();
        let connections = *self.connections.borrow();
        tracing::warn!(
            calls,
            connections,
            "drain budget spent; dropping what is left"
        );
        self.advance(Phase::Stopped);
        // Dropping a connection is immediate; this only lets the tasks run to notice it.
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            self.wait_for_zero(Counter::Connections),
        )
        .await;
        Drained::BudgetSpent { calls, connections }
    }
}

/// How a shutdown ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Drained {
    /// Every in-flight call finished and every connection closed within the budget.
    Complete,
    /// The budget ran out; what was still running was dropped.
    BudgetSpent {
        /// Calls still in flight when the budget ran out.
        calls: usize,
        /// Connections still open when the budget ran out.
        connections: usize,
    },
}

/// Starts and watches a graceful shutdown; cheap to clone, and every clone drives the same
/// server.
///
/// Get one from [`HttpServer::shutdown_handle`](super::HttpServer::shutdown_handle) or
/// [`RpcService::shutdown_handle`](super::RpcService::shutdown_handle).
#[derive(Clone, Debug)]
pub struct ShutdownHandle {
    drain: Arc<Drain>,
}

impl ShutdownHandle {
    pub(crate) fn new(drain: Arc<Drain>) -> Self {
        Self { drain }
    }

    /// Shuts the server down gracefully and returns once it is done:
    ///
    /// 1. stops accepting connections, and answers every new request `503` with a JSON-RPC error
    ///    envelope (`-32000`) and `Connection: close`, including requests on open keep-alive
    ///    connections; WebSocket connections are told to close with 1001;
    /// 2. waits for in-flight calls to finish;
    /// 3. closes the connections as their last reply is written, and waits for them;
    /// 4. if the drain budget ([`drain_timeout`](super::HttpServerBuilder::drain_timeout)) runs
    ///    out during 2 or 3, drops what is left.
    ///
    /// Calling it again, or from several clones, is harmless: each call waits for the same drain.
    /// For an [`RpcService`](super::RpcService) mounted in another server, steps 1 and 2 apply;
    /// closing connections is that server's job (axum's `with_graceful_shutdown`, for one).
    pub async fn shutdown(&self) -> Drained {
        self.drain.shutdown().await
    }

    /// Whether a shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        !self.drain.is_serving()
    }

    /// Waits until a shutdown begins (from any clone); useful to stop other work alongside.
    pub async fn shutting_down(&self) {
        let mut rx = self.drain.watch();
        let _ = rx.wait_for(|phase| *phase != Phase::Serving).await;
    }

    /// How many calls are in flight now.
    pub fn in_flight(&self) -> usize {
        *self.drain.calls.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_is_either_refused_or_waited_for() {
        let drain = Drain::new(Duration::from_secs(5));
        let call = drain.track_call().expect("serving");
        let handle = ShutdownHandle::new(Arc::clone(&drain));
        let shutdown = tokio::spawn({
            let handle = handle.clone();
            async move { handle.shutdown().await }
        });
        handle.shutting_down().await;
        assert!(
            drain.track_call().is_none(),
            "new calls are refused while draining"
        );
        assert_eq!(handle.in_flight(), 1);
        drop(call);
        assert_eq!(shutdown.await.ok(), Some(Drained::Complete));
        assert_eq!(drain.phase(), Phase::Closing);
    }

    #[tokio::test]
    async fn a_spent_budget_drops_what_is_left() {
        let drain = Drain::new(Duration::from_millis(10));
        let _call = drain.track_call();
        let outcome = ShutdownHandle::new(Arc::clone(&drain)).shutdown().await;
        assert_eq!(
            outcome,
            Drained::BudgetSpent {
                calls: 1,
                connections: 0
            }
        );
        assert_eq!(drain.phase(), Phase::Stopped);
    }
}
