//! A method that never answers and reports what happens to it, for the cancellation matrix: it
//! tells the test that it started, that its future was dropped, and that the
//! [`Context::cancelled`] future it handed to a task of its own resolved; the table's observer
//! keeps each request's outcome.

use std::sync::{Arc, Mutex};

use jrpc_runtime::{Caller as _, Context, Methods, Outcome, RpcError, TraceContext};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

/// What the `hang` handlers of one table report.
pub struct Hang {
    started: mpsc::UnboundedReceiver<Started>,
    dropped: mpsc::UnboundedReceiver<()>,
    cancelled: mpsc::UnboundedReceiver<()>,
    outcomes: Arc<Mutex<Vec<(String, Outcome)>>>,
    /// How many `hang` requests the observer has seen end as cancelled, for a test to wait on.
    cancelled_observed: watch::Receiver<usize>,
}

/// A `hang` call as its handler saw it when it started.
#[derive(Debug)]
pub struct Started {
    /// Its params (`null` when it had none).
    pub params: Value,
    /// The caller's trace, where the request carried one.
    pub trace: Option<TraceContext>,
}

/// Signals when dropped: a guard a handler or a layer holds, to report its future's drop.
pub struct Dropped(pub mpsc::UnboundedSender<()>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// Adds `hang` (params: anything) to `methods`, and an observer of every request's outcome.
///
/// `hang` hands `ctx.cancelled()` to a task of its own (which reports when it resolves), sends
/// the notification `tick` on its connection first when its params are `{"push": true}` (so that
/// an SSE answer starts), reports that it started, and then waits forever, holding a guard that
/// reports its drop.
pub fn hang(methods: &mut Methods) -> Hang {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    methods
        .register_raw("hang", move |params: jrpc_runtime::Params, ctx: Context| {
            let (started_tx, dropped_tx, cancelled_tx) =
                (started_tx.clone(), dropped_tx.clone(), cancelled_tx.clone());
            async move {
                let stop = ctx.cancelled();
                tokio::spawn(async move {
                    stop.await;
                    let _ = cancelled_tx.send(());
                });
                let _dropped = Dropped(dropped_tx);
                let params = params
                    .get()
                    .map_or(Value::Null, |raw| serde_json::from_str(raw).unwrap());
                if params["push"] == true
                    && let Some(peer) = ctx.peer()
                {
                    peer.notify("tick", ()).await.unwrap();
                }
                let trace = ctx.trace().cloned();
                let _ = started_tx.send(Started { params, trace });
                std::future::pending::<()>().await;
                Ok::<(), RpcError>(())
            }
        })
        .unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&outcomes);
    let (count, cancelled_observed) = watch::channel(0);
    methods.observe(move |seen| {
        sink.lock()
            .unwrap()
            .push((seen.method.to_owned(), seen.outcome));
        if seen.method == "hang" && seen.outcome == Outcome::Cancelled {
            count.send_modify(|n| *n += 1);
        }
    });
    Hang {
        started,
        dropped,
        cancelled,
        outcomes,
        cancelled_observed,
    }
}

impl Hang {
    /// Waits until a `hang` handler starts; what it saw.
    pub async fn started(&mut self) -> Started {
        crate::bounded(self.started.recv())
            .await
            .expect("the table is gone")
    }

    /// Waits until a `hang` handler starts while `pending` (the call that runs it, say) is polled
    /// too; panics if `pending` ends first.
    pub async fn started_while<F: Future + Unpin>(&mut self, pending: &mut F) -> Started {
        tokio::select! {
            _ = pending => panic!("the call ended before its `hang` handler started"),
            started = self.started() => started,
        }
    }

    /// Waits until a `hang` handler's future is dropped, and its `cancelled()` resolved in its
    /// task.
    pub async fn dropped(&mut self) {
        crate::bounded(self.dropped.recv())
            .await
            .expect("the table is gone");
        crate::bounded(self.cancelled.recv())
            .await
            .expect("the table is gone");
    }

    /// [`dropped`](Self::dropped); then the request's outcome is `cancelled`: the observer heard
    /// before the drop.
    pub async fn cancelled(&mut self) {
        self.dropped().await;
        let outcomes = self.outcomes.lock().unwrap();
        assert!(
            outcomes
                .iter()
                .any(|(method, outcome)| method == "hang" && *outcome == Outcome::Cancelled),
            "no `hang` observed as cancelled: {outcomes:?}"
        );
    }

    /// How many `hang` requests the observer saw end as cancelled.
    pub fn cancelled_count(&self) -> usize {
        let outcomes = self.outcomes.lock().unwrap();
        outcomes
            .iter()
            .filter(|(method, outcome)| method == "hang" && *outcome == Outcome::Cancelled)
            .count()
    }

    /// Waits until the observer has seen `count` `hang` requests end as cancelled: for a call
    /// cancelled before its handler ran, which reports nothing itself.
    pub async fn wait_cancelled_observed(&mut self, count: usize) {
        crate::bounded(self.cancelled_observed.wait_for(|seen| *seen >= count))
            .await
            .expect("the table is gone");
    }

    /// Whether a `hang` handler's future was dropped (without waiting).
    pub fn any_dropped(&mut self) -> bool {
        self.dropped.try_recv().is_ok()
    }
}
