//! Keeps the byte budget one server shares among all its connections.
//!
//! It counts what the server holds for its clients: request bodies being read (HTTP), and
//! answers and pushes not yet written (HTTP answers until hyper has written them, what waits in
//! a WebSocket's or an SSE answer's connection). When it is full, new bodies wait (their socket
//! is not read) and connections stop reading messages, until bytes are given back: nothing is
//! refused for it, and nothing is buffered without bound. What is already running finishes, so
//! the server holds at most the budget plus the answers of the calls that were running when it
//! filled.
//!
//! | who | how it takes |
//! | --- | --- |
//! | an HTTP body, before it is read | [`take`](ServerBudget::take): waits until its announced length fits, then [`Held::grow`] as more arrives |
//! | an answer made, a push queued | [`hold`](ServerBudget::hold) (or a connection's [`Watermark`](super::Watermark), which counts here too): whatever is held, since it exists already |
//! | a WebSocket's reader | [`poll_room`](ServerBudget::poll_room), [`poll_take`](ServerBudget::poll_take): polled from the socket's reader |
//! | a peer's loop | [`given_back`](ServerBudget::given_back): reads again once bytes come back |

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};

use tokio::sync::Notify;

/// Counts the bytes a server holds for its clients, against its limit: shared by every connection
/// of one server (an `HttpServer` and its WebSocket path, a `WsServer`, the SSE answers of an
/// endpoint).
///
/// A protocol's HTTP endpoint takes its bodies' bytes from it through
/// [`EndpointRequest::read_post`](crate::http::EndpointRequest::read_post); what it takes here
/// directly ([`take`](Self::take), [`hold`](Self::hold)) is given back when the [`Held`] drops.
///
/// ```
/// use jrpc_runtime::limits::ServerBudget;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let budget = ServerBudget::new(1000);
/// let body = budget.take(800).await;
/// assert_eq!(budget.held(), 800);
/// assert!(budget.try_take(300).is_none());
/// drop(body);
/// assert_eq!(budget.held(), 0);
/// # });
/// ```
#[derive(Debug)]
pub struct ServerBudget {
    limit: usize,
    held: AtomicUsize,
    /// Woken when bytes are given back, while someone waits.
    freed: Notify,
    /// How many wait for bytes: only then does giving back wake anyone (a lock, which every
    /// request would otherwise take).
    waiting: AtomicUsize,
    /// Tasks polling for room: a WebSocket's reader.
    wakers: Mutex<Vec<Waker>>,
}

impl ServerBudget {
    /// Returns a budget of `limit` bytes, nothing held.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
            freed: Notify::new(),
            waiting: AtomicUsize::new(0),
            wakers: Mutex::new(Vec::new()),
        })
    }

    /// Returns the size servers give their budget unless told otherwise: a quarter of the
    /// machine's memory, at least 64 MiB and at most 1 GiB (1 GiB where the memory cannot be
    /// read).
    pub fn default_limit() -> usize {
        const MIN: usize = 64 << 20;
        const MAX: usize = 1 << 30;
        total_memory().map_or(MAX, |total| (total / 4).clamp(MIN, MAX))
    }

    /// Returns the budget's limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Returns the bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Returns whether the budget is spent: reading waits.
    pub fn is_full(&self) -> bool {
        self.held() >= self.limit
    }

    /// Takes `bytes` if they fit, or if nothing is held (one message larger than the budget goes
    /// alone); `None` when they do not fit now.
    #[inline]
    pub fn try_take(self: &Arc<Self>, bytes: usize) -> Option<Held> {
        self.try_count(bytes).then(|| self.held_for(bytes))
    }

    /// Waits until `bytes` fit (or nothing else is held), then holds them until the [`Held`] is
    /// dropped.
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Held {
        if !self.try_count(bytes) {
            self.watch(|| self.try_count(bytes), false).await;
        }
        self.held_for(bytes)
    }

    /// Counts `bytes` whatever is held (what exists already: an answer made) until the
    /// [`Held`] is dropped.
    pub fn hold(self: &Arc<Self>, bytes: usize) -> Held {
        self.force(bytes);
        self.held_for(bytes)
    }

    /// Waits until the budget is not full (at once if it is not).
    pub async fn room(&self) {
        if self.is_full() {
            self.watch(|| !self.is_full(), false).await;
        }
    }

    /// Counts `bytes` if they fit, or if nothing is held; the caller gives them back.
    #[inline]
    pub(crate) fn try_count(&self, bytes: usize) -> bool {
        take_within(&self.held, self.limit, bytes)
    }

    /// Counts `bytes` whatever is held; the caller gives them back.
    pub(crate) fn force(&self, bytes: usize) {
        self.held.fetch_add(bytes, Ordering::SeqCst);
    }

    /// Wraps `bytes` counted already, given back when the [`Held`] is dropped.
    pub(crate) fn held_for(self: &Arc<Self>, bytes: usize) -> Held {
        Held {
            budget: Arc::clone(self),
            bytes,
        }
    }

    /// Gives back `bytes`, written or dropped, and wakes who waits for them.
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

    /// Resolves once bytes are given back, or at once if `ready` holds: one look, for a loop
    /// that looks again itself.
    pub(crate) async fn given_back(&self, ready: impl Fn() -> bool) {
        self.watch(ready, true).await;
    }

    /// Looks at `ready` each time bytes are given back, until it holds (or, `once`, after the
    /// first time), counted among the waiters meanwhile.
    async fn watch(&self, ready: impl Fn() -> bool, once: bool) {
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
            if once {
                return;
            }
        }
    }

    /// Returns ready while the budget is not full; else this task is woken when bytes are given
    /// back.
    #[cfg_attr(
        not(feature = "ws"),
        allow(dead_code, reason = "a WebSocket's reader polls")
    )]
    pub(crate) fn poll_room(&self, cx: &TaskContext<'_>) -> Poll<()> {
        self.poll_until(cx, || !self.is_full())
    }

    /// Counts `bytes` if they fit, or if nothing is held (as [`try_take`](Self::try_take)
    /// does); else this task is woken when bytes are given back. The caller gives them back.
    #[cfg_attr(
        not(feature = "ws"),
        allow(dead_code, reason = "a WebSocket's reader polls")
    )]
    pub(crate) fn poll_take(&self, bytes: usize, cx: &TaskContext<'_>) -> Poll<()> {
        self.poll_until(cx, || self.try_count(bytes))
    }

    /// Returns ready once `ready` holds; else this task is woken when bytes are given back.
    #[cfg_attr(
        not(feature = "ws"),
        allow(dead_code, reason = "a WebSocket's reader polls")
    )]
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

    /// Locks the tasks that poll for room, to be woken when bytes are given back.
    fn wakers(&self) -> MutexGuard<'_, Vec<Waker>> {
        self.wakers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One waiter counted in [`ServerBudget::waiting`], until dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Holds bytes in a [`ServerBudget`], given back when dropped.
#[derive(Debug)]
#[must_use = "the bytes are given back when this is dropped"]
pub struct Held {
    budget: Arc<ServerBudget>,
    bytes: usize,
}

impl Held {
    /// Returns the bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counts `bytes` more (a chunked body's next frame), whatever is held.
    pub fn grow(&mut self, bytes: usize) {
        self.budget.force(bytes);
        self.bytes += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// Reads the machine's memory in bytes from `/proc/meminfo` (Linux).
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

/// Adds `bytes` to `held` if the sum stays within `limit`, or if `held` is 0 (one message
/// larger than the limit goes alone): the rule of both a connection's watermark and the
/// server's budget. Sequentially consistent, which the server budget's waiters need.
pub(super) fn take_within(held: &AtomicUsize, limit: usize, bytes: usize) -> bool {
    let mut now = held.load(Ordering::SeqCst);
    loop {
        if now != 0 && now.saturating_add(bytes) > limit {
            return false;
        }
        match held.compare_exchange_weak(now, now + bytes, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return true,
            Err(seen) => now = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_between_64_mib_and_1_gib() {
        let budget = ServerBudget::default_limit();
        assert!((64 << 20..=1 << 30).contains(&budget), "{budget}");
    }

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
}
