//! The byte budget one server shares among all its connections.
//!
//! It counts what the server holds for its clients: request bodies being read (HTTP), and
//! answers and pushes not yet written (HTTP answers until hyper has written them, what waits in
//! a WebSocket's or an SSE answer's connection). When it is full, new bodies wait (their socket
//! is not read) and connections stop reading messages, until bytes are given back: nothing is
//! refused for it, and nothing is buffered without bound. What is already running finishes, so
//! the server holds at most the budget plus the answers of the calls that were running when it
//! filled.
//!
//! Here is what a peer's connection does with it: count, give back, wait for room. The servers
//! that have one add their own ways: `server::budget` makes it, `http::budget` holds a body's
//! and an answer's bytes, and the WebSocket's reader polls it for room.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use tokio::sync::Notify;

/// The bytes a server holds for its clients, against its limit.
///
/// Its fields are the crate's, for the servers above that make it and take from it their own
/// ways (see the module docs).
#[derive(Debug)]
pub(crate) struct ServerBudget {
    pub(crate) limit: usize,
    pub(crate) held: AtomicUsize,
    /// Woken when bytes are given back, while someone waits.
    pub(crate) freed: Notify,
    /// How many wait for bytes: only then does giving back wake anyone (a lock, which every
    /// request would otherwise take).
    pub(crate) waiting: AtomicUsize,
    /// Tasks polling for room: a WebSocket's pump.
    pub(crate) wakers: Mutex<Vec<Waker>>,
}

impl ServerBudget {
    /// The bytes held now.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Whether the budget is spent: reading waits.
    pub(crate) fn is_full(&self) -> bool {
        self.held() >= self.limit
    }

    /// Counts `bytes` whatever is held: what exists already (an answer made).
    pub(crate) fn force(&self, bytes: usize) {
        self.held.fetch_add(bytes, Ordering::SeqCst);
    }

    /// Gives back `bytes`, written or dropped.
    pub(crate) fn give_back(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        // Sequentially consistent with `wait`: a waiter counted after this load sees the bytes
        // given back when it looks.
        self.held.fetch_sub(bytes, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.freed.notify_waiters();
            let wakers = std::mem::take(&mut *self.wakers());
            self.waiting.fetch_sub(wakers.len(), Ordering::SeqCst);
            for waker in wakers {
                waker.wake();
            }
        }
    }

    /// The tasks that poll for room, to be woken when bytes are given back.
    pub(crate) fn wakers(&self) -> MutexGuard<'_, Vec<Waker>> {
        self.wakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves once bytes are given back, or at once if `ready` holds.
    pub(crate) async fn given_back(&self, ready: impl Fn() -> bool) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = Waiting(&self.waiting);
        let freed = self.freed.notified();
        tokio::pin!(freed);
        // Registered before looking, so that bytes given back in between are not missed.
        freed.as_mut().enable();
        if ready() {
            return;
        }
        freed.await;
    }
}

/// One waiter counted in [`ServerBudget::waiting`], until dropped.
pub(crate) struct Waiting<'a>(pub(crate) &'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
