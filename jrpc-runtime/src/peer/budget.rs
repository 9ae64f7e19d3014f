//! What a connection holds for its peer, in bytes, and the write deadline on a byte stream.
//!
//! Every outgoing text is counted in the connection's [`Budget`] before it is queued (an answer
//! when its handler finishes, a push or a call when a handle sends it) and given back once it
//! has left the process: written and flushed to the stream, or (on a WebSocket) to the socket.
//! The budget's limit is the watermark `max_buffered`: the loop reads while less than half of it
//! is taken, so a peer that does not read stops being read, rather than being refused.
//!
//! | who | past the watermark |
//! | --- | --- |
//! | a finished answer | counted, never refused: the answer exists already, and reading has paused |
//! | a push or call under [`Overflow::Close`](super::Overflow::Close) | the connection closes: its peer does not keep up |
//! | a push or call under [`Overflow::Wait`](super::Overflow::Wait) | it waits for room |
//! | the loop's own replies (refusals, `-32000`) | counted, never refused: they are small |
//!
//! A text larger than the whole watermark is taken alone, once nothing else is held.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::sync::Notify;
use tokio::time::Sleep;

use crate::peer::shared_budget::ServerBudget;

/// The room a connection's outgoing texts take, in bytes.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    held: AtomicUsize,
    /// Woken when room is given back: handles waiting for room.
    room: Notify,
    /// Woken (with a stored permit) when room is given back: the loop, to resume reading.
    resume: Notify,
    /// The budget of the server the connection belongs to, which counts its bytes too.
    server: Option<Arc<ServerBudget>>,
}

impl Budget {
    /// Room for `limit` bytes, counted in `server`'s budget too.
    pub(crate) fn new(limit: usize, server: Option<Arc<ServerBudget>>) -> Self {
        Self {
            limit,
            held: AtomicUsize::new(0),
            room: Notify::new(),
            resume: Notify::new(),
            server,
        }
    }

    /// Whether the connection may read more: less than half its watermark is taken (the rest
    /// is for the answers of calls running), and its server's budget is not full.
    pub(crate) fn may_read(&self) -> bool {
        self.held() <= self.limit / 2 && !self.server.as_ref().is_some_and(|s| s.is_full())
    }

    /// The room in all, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes taken now.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Takes room for `bytes`, if there is that much, or if nothing is held: one message larger
    /// than the watermark goes alone.
    pub(crate) fn try_take(&self, bytes: usize) -> bool {
        if !take_within(&self.held, self.limit, bytes) {
            return false;
        }
        if let Some(server) = &self.server {
            server.force(bytes);
        }
        true
    }

    /// Counts `bytes` whether or not there is room: answers, and the loop's own small replies.
    pub(crate) fn force(&self, bytes: usize) {
        self.held.fetch_add(bytes, Ordering::AcqRel);
        if let Some(server) = &self.server {
            server.force(bytes);
        }
    }

    /// Waits for room for `bytes` (for a message larger than all the room, until nothing else
    /// is held); always `true` once it has it.
    pub(crate) async fn take(&self, bytes: usize) -> bool {
        loop {
            let freed = self.room.notified();
            tokio::pin!(freed);
            // Registered before looking, so that room given back in between is not missed.
            freed.as_mut().enable();
            if self.try_take(bytes) {
                return true;
            }
            freed.await;
        }
    }

    /// Gives back the room of `bytes` that left the process (or were dropped).
    pub(crate) fn give_back(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.held.fetch_sub(bytes, Ordering::AcqRel);
        if let Some(server) = &self.server {
            server.give_back(bytes);
        }
        self.room.notify_waiters();
        self.resume.notify_one();
    }

    /// Resolves after room was given back here (at once if some was since the last call), or in
    /// the server's budget, or at once if the connection [may read](Self::may_read).
    pub(crate) async fn given_back(&self) {
        let Some(server) = &self.server else {
            return self.resume.notified().await;
        };
        tokio::select! {
            () = self.resume.notified() => {}
            () = server.given_back(|| self.may_read()) => {}
        }
    }
}

impl Drop for Budget {
    /// What the connection still held when it ended (texts never written) leaves the server's
    /// budget with it.
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server.give_back(*self.held.get_mut());
        }
    }
}

/// Room taken in a budget for a text on its way to the loop: given back if the text is dropped
/// on the way (a call given up while it waits for the queue, a cancelled call's answer), unless
/// [`keep`](Room::keep) says the loop has it.
#[derive(Debug)]
pub(crate) struct Room {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Room {
    /// Room of `bytes` already taken in `budget`.
    pub(crate) fn taken(budget: &Arc<Budget>, bytes: usize) -> Self {
        Self {
            budget: Arc::clone(budget),
            bytes,
        }
    }

    /// The text reached the loop, which gives the room back once it is written.
    pub(crate) fn keep(mut self) {
        self.bytes = 0;
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// A writer that fails with [`io::ErrorKind::TimedOut`] once a write (or flush) has waited
/// `limit` without the other side taking a byte: a peer that stopped reading is cut instead of
/// holding what waits for it forever. Progress of any size restarts the clock.
pub(crate) struct WriteDeadline<W> {
    inner: Pin<Box<W>>,
    limit: Option<Duration>,
    /// The clock of the current stall, made on the first one.
    stall: Option<Pin<Box<Sleep>>>,
    stalled: bool,
}

impl<W: AsyncWrite> WriteDeadline<W> {
    /// `inner`, cut after `limit` without progress (`None`: never).
    pub(crate) fn new(inner: W, limit: Option<Duration>) -> Self {
        Self {
            inner: Box::pin(inner),
            limit,
            stall: None,
            stalled: false,
        }
    }

    /// What a poll of the inner writer means for the clock: progress stops it, waiting starts it
    /// (or finds it run out).
    fn watch<T>(
        &mut self,
        cx: &mut TaskContext<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let Some(limit) = self.limit else {
            return polled;
        };
        if polled.is_ready() {
            self.stalled = false;
            return polled;
        }
        let stall = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if !self.stalled {
            self.stalled = true;
            stall.as_mut().reset(crate::time::after(limit));
        }
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the peer took no byte for {limit:?} (`write_timeout`)"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<W: AsyncWrite> AsyncWrite for WriteDeadline<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = this.inner.as_mut().poll_write(cx, buf);
        this.watch(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = this.inner.as_mut().poll_write_vectored(cx, bufs);
        this.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = this.inner.as_mut().poll_flush(cx);
        this.watch(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = this.inner.as_mut().poll_shutdown(cx);
        this.watch(cx, polled)
    }
}

impl<R: tokio::io::AsyncRead> tokio::io::AsyncRead for WriteDeadline<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().inner.as_mut().poll_read(cx, buf)
    }
}

/// Adds `bytes` to `held` if the sum stays within `limit`, or if `held` is 0 (one message
/// larger than the limit goes alone): the rule of both a connection's budget and the server's.
/// Sequentially consistent, which the server budget's waiters need.
pub(crate) fn take_within(held: &AtomicUsize, limit: usize, bytes: usize) -> bool {
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
    fn room_is_taken_and_given_back() {
        let budget = Budget::new(10, None);
        assert!(budget.try_take(6));
        assert!(!budget.try_take(5));
        budget.force(5);
        assert_eq!(budget.held(), 11);
        budget.give_back(11);
        assert!(budget.try_take(10));
        assert_eq!(budget.held(), 10);
        budget.give_back(10);
        // Alone, a message larger than the watermark is taken whole.
        assert!(budget.try_take(25));
        assert!(!budget.try_take(1));
    }

    #[tokio::test]
    async fn a_waiting_taker_gets_room_given_back() {
        let budget = std::sync::Arc::new(Budget::new(10, None));
        assert!(budget.take(11).await);
        budget.give_back(11);
        assert!(budget.try_take(8));
        let waiter = tokio::spawn({
            let budget = std::sync::Arc::clone(&budget);
            async move { budget.take(5).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        budget.give_back(8);
        assert!(waiter.await.unwrap());
        budget.given_back().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_that_makes_no_progress_fails_after_the_limit() {
        use tokio::io::AsyncWriteExt as _;
        let (writer, mut reader) = tokio::io::duplex(8);
        let mut writer = WriteDeadline::new(writer, Some(Duration::from_secs(30)));
        // Progress keeps it alive: the reader takes what is written.
        let mut buf = [0; 8];
        writer.write_all(b"12345678").await.unwrap();
        tokio::io::AsyncReadExt::read_exact(&mut reader, &mut buf)
            .await
            .unwrap();
        // Then nothing is read: the write waits, and fails once the limit has passed.
        writer.write_all(b"12345678").await.unwrap();
        let err = writer.write_all(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("write_timeout"), "{err}");
    }
}
