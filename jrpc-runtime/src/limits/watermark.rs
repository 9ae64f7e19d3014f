//! Counts what a connection holds for its peer, in bytes: its watermark.
//!
//! Every outgoing text is counted in the connection's [`Watermark`] before it is queued (an
//! answer when its handler finishes, a push or a call when a handle sends it) and given back
//! once it has left the process: written and flushed to the stream, or (on a WebSocket) to the
//! socket. Its limit is `max_buffered`: the loop reads while less than half of it is taken, so a
//! peer that does not read stops being read, rather than being refused.
//!
//! | who | past the watermark |
//! | --- | --- |
//! | a finished answer | counted, never refused: the answer exists already, and reading has paused |
//! | a push or call under `Overflow::Close` | the connection closes: its peer does not keep up |
//! | a push or call under `Overflow::Wait` | it waits for room |
//! | the loop's own replies (refusals, `-32000`) | counted, never refused: they are small |
//!
//! A text larger than the whole watermark is taken alone, once nothing else is held.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::server::{ServerBudget, take_within};

/// Counts the room a connection's outgoing texts take, in bytes, against `max_buffered`.
///
/// Laid out in order (`repr(C)`) on a line of its own: what every text written reads and writes
/// (the count, the limit, the waiting handles, the server's budget, the loop's `resume`) on the
/// first; the waiting handles' `room`, which only they read, after it.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Watermark {
    limit: usize,
    held: AtomicUsize,
    /// How many handles wait for room: only then does giving back wake `room` (a lock, which
    /// every write would otherwise take).
    waiting: AtomicUsize,
    /// The budget of the server the connection belongs to, which counts its bytes too.
    server: Option<Arc<ServerBudget>>,
    /// Woken (with a stored permit) when room is given back: the loop, to resume reading.
    resume: Notify,
    /// Woken when room is given back: handles waiting for room.
    room: Notify,
}

impl Watermark {
    /// Returns room for `limit` bytes, counted in `server`'s budget too.
    pub(crate) fn new(limit: usize, server: Option<Arc<ServerBudget>>) -> Self {
        Self {
            limit,
            held: AtomicUsize::new(0),
            room: Notify::new(),
            waiting: AtomicUsize::new(0),
            resume: Notify::new(),
            server,
        }
    }

    /// Returns whether the connection may read more: less than half its watermark is taken (the
    /// rest is for the answers of calls running), and its server's budget is not full.
    pub(crate) fn may_read(&self) -> bool {
        self.held() <= self.limit / 2 && !self.server.as_ref().is_some_and(|s| s.is_full())
    }

    /// Returns the room in all, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Returns the bytes taken now.
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
        // Counted before the first look (sequentially consistent with `give_back`): room given
        // back after a look finds a waiter to wake, and room given back before it is seen.
        let _counted = Waiting::count(&self.waiting);
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

    /// Resolves after room was given back here (at once if some was since the last call).
    pub(crate) async fn resumed(&self) {
        self.resume.notified().await;
    }

    /// Gives back the room of `bytes` that left the process (or were dropped).
    pub(crate) fn give_back(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.held.fetch_sub(bytes, Ordering::SeqCst);
        if let Some(server) = &self.server {
            server.give_back(bytes);
        }
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.room.notify_waiters();
        }
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

impl Drop for Watermark {
    /// Gives back to the server's budget what the connection still held when it ended (texts
    /// never written).
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server.give_back(*self.held.get_mut());
        }
    }
}

/// Holds room taken in a budget for a text on its way to the loop: given back if the text is
/// dropped on the way (a call given up while it waits for the queue, a cancelled call's answer),
/// unless [`keep`](Room::keep) says the loop has it.
#[derive(Debug)]
pub(crate) struct Room {
    budget: Arc<Watermark>,
    bytes: usize,
}

impl Room {
    /// Wraps the room of `bytes` already taken in `budget`.
    pub(crate) fn taken(budget: &Arc<Watermark>, bytes: usize) -> Self {
        Self {
            budget: Arc::clone(budget),
            bytes,
        }
    }

    /// Says the text reached the loop, which gives the room back once it is written.
    pub(crate) fn keep(mut self) {
        self.bytes = 0;
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// Counts a handle waiting for room in a [`Watermark`], for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicUsize) -> Self {
        waiting.fetch_add(1, Ordering::SeqCst);
        Self(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_taken_and_given_back() {
        let budget = Watermark::new(10, None);
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
        let budget = std::sync::Arc::new(Watermark::new(10, None));
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
}
