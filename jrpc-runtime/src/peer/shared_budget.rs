//! The byte budget one server shares among all its connections.
//!
//! It counts what the server holds for its clients: request bodies being read (HTTP), and
//! answers and pushes not yet written (HTTP answers until hyper has written them, what waits in
//! a WebSocket's or an SSE answer's connection). When it is full, new bodies wait (their socket
//! is not read) and connections stop reading messages, until bytes are given back: nothing is
//! refused for it, and nothing is buffered without bound. What is already running finishes, so
//! the server holds at most the budget plus the answers of the calls that were running when it
//! filled.

#![cfg_attr(
    not(all(feature = "http", feature = "ws")),
    allow(dead_code, reason = "each server uses its part")
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};

use tokio::sync::Notify;

/// A quarter of the machine's memory, at least 64 MiB and at most 1 GiB; 1 GiB where the memory
/// cannot be read.
pub(crate) fn default_budget() -> usize {
    const MIN: usize = 64 << 20;
    const MAX: usize = 1 << 30;
    total_memory().map_or(MAX, |total| (total / 4).clamp(MIN, MAX))
}

/// The machine's memory in bytes, from `/proc/meminfo` (Linux).
fn total_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: usize = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The bytes a server holds for its clients, against its limit.
#[derive(Debug)]
pub(crate) struct ServerBudget {
    limit: usize,
    held: AtomicUsize,
    /// Woken when bytes are given back, while someone waits.
    freed: Notify,
    /// How many wait for bytes: only then does giving back wake anyone (a lock, which every
    /// request would otherwise take).
    waiting: AtomicUsize,
    /// Tasks polling for room ([`poll_room`](Self::poll_room)): a WebSocket's pump.
    wakers: Mutex<Vec<Waker>>,
}

impl ServerBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
            freed: Notify::new(),
            waiting: AtomicUsize::new(0),
            wakers: Mutex::new(Vec::new()),
        })
    }

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

    fn wakers(&self) -> MutexGuard<'_, Vec<Waker>> {
        self.wakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ready while the budget is not full; else this task is woken when bytes are given back.
    pub(crate) fn poll_room(&self, cx: &TaskContext<'_>) -> Poll<()> {
        self.poll_until(cx, || !self.is_full())
    }

    /// Takes `bytes` if they fit, or if nothing is held (as [`take`](Self::take) does); else
    /// this task is woken when bytes are given back. The caller gives them back.
    pub(crate) fn poll_take(&self, bytes: usize, cx: &TaskContext<'_>) -> Poll<()> {
        self.poll_until(cx, || self.try_take(bytes))
    }

    /// Ready once `ready` holds; else this task is woken when bytes are given back.
    fn poll_until(&self, cx: &TaskContext<'_>, ready: impl Fn() -> bool) -> Poll<()> {
        if ready() {
            return Poll::Ready(());
        }
        self.wakers().push(cx.waker().clone());
        self.waiting.fetch_add(1, Ordering::SeqCst);
        // Looked at again once counted: bytes given back in between are not missed (the waker
        // left behind is woken for nothing, once).
        if ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Waits until `ready` holds, looked at each time bytes are given back.
    async fn wait(&self, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = Waiting(&self.waiting);
        loop {
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

    /// Takes `bytes` if they fit, or if nothing is held (one body larger than the budget goes
    /// alone).
    fn try_take(&self, bytes: usize) -> bool {
        let mut held = self.held();
        loop {
            if held != 0 && held.saturating_add(bytes) > self.limit {
                return false;
            }
            match self.held.compare_exchange_weak(
                held,
                held + bytes,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
    }

    /// Waits until `bytes` fit, then holds them until the [`Held`] is dropped.
    pub(crate) async fn take(self: &Arc<Self>, bytes: usize) -> Held {
        self.wait(|| self.try_take(bytes)).await;
        self.held_for(bytes)
    }

    /// Waits until the budget is not full (at once if it is not).
    #[cfg_attr(not(test), allow(dead_code, reason = "the tests wait for room"))]
    pub(crate) async fn room(&self) {
        self.wait(|| !self.is_full()).await;
    }

    /// Counts `bytes` (whatever is held) until the [`Held`] is dropped.
    pub(crate) fn hold(self: &Arc<Self>, bytes: usize) -> Held {
        self.force(bytes);
        self.held_for(bytes)
    }

    fn held_for(self: &Arc<Self>, bytes: usize) -> Held {
        Held {
            budget: Arc::clone(self),
            bytes,
        }
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
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Bytes held in a [`ServerBudget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<ServerBudget>,
    bytes: usize,
}

impl Held {
    /// The bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counts `bytes` more (a chunked body's next frame), whatever is held.
    pub(crate) fn grow(&mut self, bytes: usize) {
        self.budget.force(bytes);
        self.bytes += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_budget_makes_takers_wait_until_bytes_are_given_back() {
        let budget = ServerBudget::new(100);
        let first = budget.take(80).await;
        let waiting = tokio::spawn({
            let budget = Arc::clone(&budget);
            async move { budget.take(50).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        let second = waiting.await.unwrap();
        assert_eq!(budget.held(), 50);
        drop(second);
        // Alone, more than the budget goes.
        let whole = budget.take(500).await;
        assert!(budget.is_full());
        drop(whole);
        assert_eq!(budget.held(), 0);
        budget.room().await;
    }

    #[test]
    fn the_default_is_between_64_mib_and_1_gib() {
        let budget = default_budget();
        assert!((64 << 20..=1 << 30).contains(&budget), "{budget}");
    }
}
