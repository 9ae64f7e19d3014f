//! Queues one subscription's notifications between its producer and its connection's loop,
//! within the subscription's bound, doing what [`WhenFull`] says when it is full.
//!
//! Each notification takes its room in the connection's watermark (and so in the server's
//! budget) when it joins the lane, and keeps it until the socket has it. The loop moves
//! notifications from the lanes that have some to its outbox, a few of each lane in turn, while
//! what is on its way to the socket is small ([`Subscriptions::take`](super::Subscriptions)):
//! a client that reads slowly leaves the notifications waiting in their lanes, each within its
//! own bound, while answers to its calls go straight out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::items::WhenFull;
use crate::limits::Watermark;
use crate::wire::{ErrorCode, RpcError};

/// Holds one subscription's notifications on their way to the loop.
pub(crate) struct Lane {
    state: Mutex<State>,
    /// Woken when the loop takes notifications: a producer waiting for room ([`WhenFull::Wait`]).
    room: Notify,
    /// Woken when the lane opens (or ends): its producer is not polled before.
    opened: Notify,
    /// `{"jsonrpc":"2.0","method":NOTIFICATION,"params":{"subscription":ID,` : what every
    /// notification of the subscription begins with.
    head: Box<str>,
    pub(super) bound_items: usize,
    pub(super) bound_bytes: usize,
    pub(super) when_full: WhenFull,
    budget: Arc<Watermark>,
    /// The bytes waiting in all the lanes of the connection.
    waiting: Arc<AtomicUsize>,
}

#[derive(Default)]
struct State {
    texts: VecDeque<String>,
    bytes: usize,
    /// Whether the subscribe call's answer is queued: only then may notifications follow it.
    open: bool,
    /// Whether the lane is in its connection's queue of lanes with notifications.
    queued: bool,
    /// Whether the subscription is over: no more notifications join.
    ended: bool,
}

/// Says what became of a notification offered to a lane.
pub(crate) enum Offered {
    /// It joined; `true` when the lane must be queued for the loop.
    Joined(bool),
    /// The lane is full and waits for room ([`WhenFull::Wait`]): offer it again once
    /// [`Lane::room`] says.
    Full(String),
    /// The subscription lagged: its error notification took the lane's place; `true` when the
    /// lane must be queued.
    Lagged(bool),
    /// The connection must close ([`WhenFull::CloseConnection`]).
    Close,
    /// The subscription is over.
    Ended,
}

impl Lane {
    /// Returns an empty lane for notifications that begin with `head`.
    pub(super) fn new(
        head: String,
        bound_items: usize,
        bound_bytes: usize,
        when_full: WhenFull,
        budget: Arc<Watermark>,
        waiting: Arc<AtomicUsize>,
    ) -> Self {
        Self {
            state: Mutex::default(),
            room: Notify::new(),
            opened: Notify::new(),
            head: head.into_boxed_str(),
            bound_items,
            bound_bytes,
            when_full,
            budget,
            waiting,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change leaves the state whole: a panic elsewhere cannot break it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns the notification of `result` (raw JSON).
    pub(crate) fn notification(&self, result: &str) -> String {
        let mut text = String::with_capacity(self.head.len() + result.len() + 12);
        text.push_str(&self.head);
        text.push_str("\"result\":");
        text.push_str(result);
        text.push_str("}}");
        text
    }

    /// Returns the error notification that ends the subscription with `err`.
    pub(crate) fn error_notification(&self, err: &RpcError) -> String {
        let err = serde_json::to_string(err).unwrap_or_else(|_| "null".to_owned());
        let mut text = String::with_capacity(self.head.len() + err.len() + 12);
        text.push_str(&self.head);
        text.push_str("\"error\":");
        text.push_str(&err);
        text.push_str("}}");
        text
    }

    /// Offers `text`, a notification: it joins if the bound and the watermark have room (or if
    /// nothing waits, under every policy but [`WhenFull::Wait`]: one notification always goes),
    /// else the policy decides.
    pub(crate) fn offer(&self, text: String) -> Offered {
        let mut state = self.lock();
        loop {
            if state.ended {
                return Offered::Ended;
            }
            let bytes = text.len();
            let within = state.texts.len() < self.bound_items
                && (state.texts.is_empty() || state.bytes + bytes <= self.bound_bytes);
            // Past its bound while the connection is not backed up, the producer is only faster
            // than the loop, not the client slower than the producer: it joins, within the
            // watermark.
            if (within || !self.backed_up()) && self.budget.try_take(bytes) {
                return Offered::Joined(self.join(&mut state, text));
            }
            match self.when_full {
                WhenFull::Wait => return Offered::Full(text),
                WhenFull::DropOldest => match state.texts.pop_front() {
                    Some(oldest) => {
                        state.bytes -= oldest.len();
                        self.waiting.fetch_sub(oldest.len(), Ordering::AcqRel);
                        self.budget.give_back(oldest.len());
                        tracing::debug!("a subscription's oldest notification dropped for room");
                    }
                    None => {
                        // Nothing of its own waits: the connection is full of others'.
                        self.budget.force(bytes);
                        return Offered::Joined(self.join(&mut state, text));
                    }
                },
                WhenFull::Lag if state.texts.is_empty() && within => {
                    // Within its own bound, behind others: one always goes.
                    self.budget.force(bytes);
                    return Offered::Joined(self.join(&mut state, text));
                }
                WhenFull::Lag => {
                    let err = RpcError::new(ErrorCode::new(-32005), "Subscription lagged")
                        .with_data(&serde_json::json!({
                            "items": self.bound_items,
                            "bytes": self.bound_bytes,
                        }));
                    tracing::warn!(
                        items = self.bound_items,
                        bytes = self.bound_bytes,
                        "a subscription lagged: ended with an error notification"
                    );
                    self.clear(&mut state);
                    let notice = self.error_notification(&err);
                    self.budget.force(notice.len());
                    let queue = self.join(&mut state, notice);
                    state.ended = true;
                    return Offered::Lagged(queue);
                }
                WhenFull::CloseConnection => return Offered::Close,
            }
        }
    }

    /// Returns whether the connection is backed up: what is on its way to the other side is as
    /// much as the loop lets out before notifications wait in their lanes (a quarter of the
    /// watermark), or the watermark is full.
    fn backed_up(&self) -> bool {
        let on_the_way = self
            .budget
            .held()
            .saturating_sub(self.waiting.load(Ordering::Acquire));
        on_the_way >= self.budget.limit() / 4
    }

    /// Ends the subscription with `last`, its error notification, after what waits.
    pub(crate) fn fail(&self, last: String) -> bool {
        let mut state = self.lock();
        if state.ended {
            return false;
        }
        self.budget.force(last.len());
        let queue = self.join(&mut state, last);
        state.ended = true;
        queue
    }

    /// Ends the subscription: what waits is dropped, its room given back.
    pub(crate) fn end(&self) {
        let mut state = self.lock();
        state.ended = true;
        self.clear(&mut state);
        drop(state);
        self.room.notify_waiters();
        self.opened.notify_waiters();
    }

    /// Ends the subscription after what waits (its producer finished).
    pub(crate) fn finish(&self) {
        self.lock().ended = true;
    }

    /// Opens the lane: its subscribe call's answer is queued. Returns whether it must be queued
    /// for the loop.
    pub(super) fn open(&self) -> bool {
        let mut state = self.lock();
        state.open = true;
        let queue = Self::needs_queue(&mut state);
        drop(state);
        self.opened.notify_waiters();
        queue
    }

    /// Resolves once the lane is open (its subscribe call's answer is queued) or ended: what the
    /// pump waits for before it polls the producer, so that a fast producer does not fill the
    /// lane before anything can leave it.
    pub(crate) async fn opening(&self) {
        loop {
            let opened = self.opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            {
                let state = self.lock();
                if state.open || state.ended {
                    return;
                }
            }
            opened.await;
        }
    }

    /// Resolves once the loop took notifications (or the subscription ended): room to offer
    /// again. Made before the offer, so that room made in between is not missed.
    pub(crate) fn room(&self) -> tokio::sync::futures::Notified<'_> {
        self.room.notified()
    }

    /// Moves up to `most` notifications to `out`; returns their bytes, and whether the lane
    /// still has some.
    pub(super) fn take(&self, most: usize, out: &mut impl FnMut(String)) -> (usize, bool) {
        let mut state = self.lock();
        let mut moved = 0;
        for _ in 0..most {
            let Some(text) = state.texts.pop_front() else {
                break;
            };
            state.bytes -= text.len();
            moved += text.len();
            out(text);
        }
        self.waiting.fetch_sub(moved, Ordering::AcqRel);
        let more = !state.texts.is_empty();
        state.queued = more;
        drop(state);
        if moved > 0 {
            self.room.notify_waiters();
        }
        (moved, more)
    }

    fn join(&self, state: &mut State, text: String) -> bool {
        state.bytes += text.len();
        self.waiting.fetch_add(text.len(), Ordering::AcqRel);
        state.texts.push_back(text);
        Self::needs_queue(state)
    }

    fn needs_queue(state: &mut State) -> bool {
        let queue = state.open && !state.queued && !state.texts.is_empty();
        if queue {
            state.queued = true;
        }
        queue
    }

    fn clear(&self, state: &mut State) {
        let bytes = std::mem::take(&mut state.bytes);
        state.texts.clear();
        self.waiting.fetch_sub(bytes, Ordering::AcqRel);
        self.budget.give_back(bytes);
    }
}
