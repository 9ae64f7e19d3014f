//! Holds one subscription's producer and the notifications that wait for its connection, within
//! the subscription's bound, doing what [`WhenFull`] says when it is full.
//!
//! The producer has no task of its own: the lane is its waker, and whoever writes the connection
//! (its loop, or a transport that writes in a task of its own, a WebSocket's pump: the *taker*)
//! polls it when it wakes, and writes each item's notification at once while little is on its way
//! to the other side. So a published item costs one wake-up of the task that writes the socket,
//! as it would without a framework, however many subscriptions of the connection it reaches.
//!
//! Past that (a client that reads slowly), the items polled wait in the lane, each taking its room
//! in the connection's watermark (and so in the server's budget) until the socket has it: the
//! lane's bound and policy apply to them. A lane is visited, a few items at a time, while it
//! has notifications waiting or its producer woke.
//!
//! A wake of the producer rings the lane's slot in its connection's [`Bell`] (one cache line
//! with the taker's waker, for the first 16 lanes and hubs of a connection), which costs the
//! publisher's thread a write to that line and no other; the lanes past those are queued.
//! The connection's first lane, while it is its only one, rings nothing when its taker visits it
//! at each of its polls (a WebSocket's pump): its producer holds the taker's own waker (see
//! `Slots`).
//!
//! A lane that its connection's hub feeds (a topic's feed read once for several subscriptions,
//! see `hub`) has no producer: the hub hands it each item (`Lane::feed`), and the same rules
//! apply to it as to an item polled.
//!
//! | state | the taker's visit |
//! | --- | --- |
//! | not open (its subscribe call not answered yet) | nothing: the producer is not polled, and what a hub fed it waits |
//! | open, notifications waiting | moves them while there is room; then polls the producer |
//! | open, producer polled | each item: straight out while nothing waits and there is room, else into the lane (its bound and policy) |
//! | a `Wait` lane full, or an item held back for room | the producer is not polled until the client reads |
//! | ended (unsubscribed, lagged, failed, finished) | what waits still goes (not when unsubscribed or closed); the producer is dropped |

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context as TaskContext, Poll, Waker};

use futures_util::task::{ArcWake, waker_ref};

use serde_json::value::RawValue;

use super::hub::Hub;
use super::items::{Produced, Producer, WhenFull};
use crate::limits::Watermark;
use crate::wire::{ErrorCode, Id, RpcError};
#[cfg(feature = "ws")]
use crate::woken::HoldsFlags;
use crate::woken::{HOLDER_WOKE, SetFlags};

/// Holds one subscription's producer, and its notifications on their way to the socket.
///
/// Laid out in order, three cache lines: the first holds what the taker's visit reads and writes
/// (the notification's head, whether a notification may go straight out, the state's lock and
/// the state as far as a visit reads it while nothing waits) and what a hub's item reads alone;
/// the second what a wake of the producer reads (the slot, the bell, the connection's queue),
/// which the taker writes only while notifications back up; the third the bounds, the
/// watermark and the id, which only the slower paths read. A visit of a connection's lone lane
/// (a publish to a thousand connections, each in turn out of the cache) and an item its hub feeds
/// each read one line; a wake (often in the publisher's thread, for many lanes in turn) finds its
/// line still in its cache, apart from the lock the taker takes. The room what goes straight out
/// takes in the watermark is taken by the taker's visit's caller ([`Visit::direct`]), who reads the
/// watermark anyway.
#[repr(C, align(64))]
pub(crate) struct Lane {
    /// `{"jsonrpc":"2.0","method":NOTIFICATION,"params":{"subscription":ID,` : what every
    /// notification of the subscription begins with.
    head: Box<str>,
    pub(super) when_full: WhenFull,
    /// Whether a notification may go straight out, as the state said when its lock was last let
    /// go: the lane is open and not ended, and nothing waits in it (see [`Locked`]).
    direct: AtomicBool,
    state: Mutex<State>,
    slot: AtomicU8,
    /// Whether the lane is in its connection's queue of lanes to visit.
    pub(super) queued: AtomicBool,
    /// What a wake of the producer rings, with the lane's slot (see [`Bell`]).
    bell: Arc<Bell>,
    /// Where a wake of the producer puts the lane, for the taker to visit, when it has no slot
    /// in `bell`.
    ready: Weak<Ready>,
    budget: Arc<Watermark>,
    pub(super) bound_items: usize,
    pub(super) bound_bytes: usize,
    /// The subscription's id.
    pub(super) id: Id,
}

/// Holds what a lane's lock guards: what a visit reads while nothing waits (the flags, the
/// producer, the queue) in the lock's cache line; what is held back, the bytes waiting and the
/// guard after it.
#[repr(C)]
struct State {
    /// Whether the subscribe call's answer is on its way: only then may notifications follow it.
    open: bool,
    /// Whether the subscription is over: no more notifications join.
    ended: bool,
    /// Whether the lane waits for room ([`WhenFull::Wait`]): only then is an item held back.
    wait: bool,
    /// `None` once the subscription is over, and while the taker polls it; always for a lane its
    /// connection's hub feeds.
    producer: Option<Producer>,
    texts: Texts,
    /// An item polled that found no room ([`WhenFull::Wait`]): it goes first once there is. Boxed
    /// as it was made (to its length), two words rather than three. Looked at only when `wait`:
    /// it is on the line after the lock's.
    held_back: Option<Box<str>>,
    bytes: usize,
    /// What a lane its hub feeds holds while the subscription lives (its place among the topic's
    /// subscribers).
    guard: Option<Box<dyn Send + Sync>>,
}

impl State {
    /// Returns whether an item is held back for room (only a [`WhenFull::Wait`] lane holds one).
    fn holds_back(&self) -> bool {
        self.wait && self.held_back.is_some()
    }
}

/// Holds the notifications that wait in a lane, in order: boxed, and made with the first (most
/// lanes never hold one: a client that reads keeps up), one word in the lock's line.
#[derive(Default)]
#[allow(
    clippy::box_collection,
    reason = "one word in the lock's line, where a `VecDeque` is four"
)]
struct Texts(Option<Box<VecDeque<String>>>);

impl Texts {
    fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|texts| texts.is_empty())
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |texts| texts.len())
    }

    fn pop_front(&mut self) -> Option<String> {
        self.0.as_mut()?.pop_front()
    }

    fn push_back(&mut self, text: String) {
        self.0.get_or_insert_default().push_back(text);
    }

    fn clear(&mut self) {
        if let Some(texts) = &mut self.0 {
            texts.clear();
        }
    }
}

/// Holds a lane's lock; as it lets go, sets the lane's `direct` flag from the state it leaves.
struct Locked<'a> {
    state: MutexGuard<'a, State>,
    direct: &'a AtomicBool,
}

impl Deref for Locked<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.state
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.state
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let state = &*self.state;
        let direct = state.open && !state.ended && state.texts.is_empty() && !state.holds_back();
        // Written only when it changes: it shares its line with what a wake reads.
        if self.direct.load(Ordering::Relaxed) != direct {
            self.direct.store(direct, Ordering::Release);
        }
    }
}

/// Says what a visit did, for the registry.
#[derive(Default)]
pub(super) struct Visit {
    /// The bytes moved out.
    pub(super) moved: usize,
    /// Of those, the bytes of notifications that went straight out: the caller takes their room
    /// in the connection's watermark, as what waited in the lane took it.
    pub(super) direct: usize,
    /// Whether the lane is to be visited again: notifications wait, or its producer may have more.
    pub(super) requeue: bool,
    /// Whether its producer may have more now (it gave a turn's worth): visit again without a wake.
    pub(super) again: bool,
    /// Whether the subscription is over: the registry forgets it.
    pub(super) done: bool,
    /// Whether the connection must close ([`WhenFull::CloseConnection`]).
    pub(super) close: bool,
    /// Whether the subscription is over and nothing waits: no visit will do anything.
    pub(super) spent: bool,
    /// The producer and guard of a subscription that ended here, dropped with the visit: where
    /// its caller holds no lock (user code runs in their drop).
    left: Option<(Producer, Option<Box<dyn Send + Sync>>)>,
}

/// Says what became of a notification offered to a full lane, or one behind others.
enum Offered {
    Joined,
    /// No room ([`WhenFull::Wait`]): it is held back.
    Full(String),
    /// The subscription lagged: its error notification took the lane's place.
    Lagged,
    /// The connection must close ([`WhenFull::CloseConnection`]).
    Close,
    /// The subscription is over.
    Ended,
}

/// Says what became of an item a hub fed a lane.
pub(super) enum Fed {
    /// Its notification went out, this many bytes.
    Out(usize),
    /// It waits in the lane.
    Queued,
    /// The subscription is over: the hub forgets the lane.
    Ended,
    /// The subscription lagged: its error notification waits in the lane.
    Lagged,
    /// The connection must close ([`WhenFull::CloseConnection`]).
    Close,
}

/// Says how a producer's polling ended.
enum Polled {
    /// It waits: the lane wakes when it has more.
    Pending,
    /// A turn's worth of items: it may have more.
    More,
    /// It held one back for room (or the lane is full): not polled until the client reads.
    Stopped,
    /// It ended.
    Finished,
    Failed(RpcError),
    Lagged,
    Close,
    Ended,
}

impl Lane {
    /// Returns a closed lane for `producer`'s notifications, which begin with `head`; woken, it
    /// joins `ready` (or rings its bell, once [`Ready::slot_lane`] gave it a slot).
    #[allow(
        clippy::too_many_arguments,
        reason = "a lane is made in one place, from a subscription's parts"
    )]
    pub(super) fn new(
        id: Id,
        head: String,
        (producer, guard): (Option<Producer>, Option<Box<dyn Send + Sync>>),
        (bound_items, bound_bytes, when_full): (usize, usize, WhenFull),
        ready: &Arc<Ready>,
        budget: Arc<Watermark>,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                open: false,
                ended: false,
                wait: when_full == WhenFull::Wait,
                producer,
                texts: Texts::default(),
                held_back: None,
                bytes: 0,
                guard,
            }),
            queued: AtomicBool::new(false),
            direct: AtomicBool::new(false),
            ready: Arc::downgrade(ready),
            bell: Arc::clone(&ready.bell),
            slot: AtomicU8::new(NO_SLOT),
            id,
            head: head.into_boxed_str(),
            bound_items,
            bound_bytes,
            when_full,
            budget,
        }
    }

    fn lock(&self) -> Locked<'_> {
        Locked {
            // Every change leaves the state whole: a panic elsewhere cannot break it.
            state: self.state.lock().unwrap_or_else(PoisonError::into_inner),
            direct: &self.direct,
        }
    }

    /// Returns whether an item fed now would go straight out, reading what feeding reads first
    /// (the flag, both ends of the head's text), for a hub to fetch many lanes' lines at once.
    pub(super) fn warm(&self) -> bool {
        let head = self.head.as_bytes();
        self.direct.load(Ordering::Relaxed)
            && head.first() == Some(&b'{')
            && head.last() == Some(&b',')
    }

    /// Returns the notification of `result` (raw JSON): the one copy of the item the socket's
    /// frame needs, around it the subscription's head.
    fn notification(&self, result: &str) -> String {
        let mut text = String::with_capacity(self.head.len() + result.len() + 11);
        text.push_str(&self.head);
        text.push_str("\"result\":");
        text.push_str(result);
        text.push_str("}}");
        text
    }

    /// Returns the error notification that ends the subscription with `err`.
    fn error_notification(&self, err: &RpcError) -> String {
        let err = serde_json::to_string(err).unwrap_or_else(|_| "null".to_owned());
        let mut text = String::with_capacity(self.head.len() + err.len() + 10);
        text.push_str(&self.head);
        text.push_str("\"error\":");
        text.push_str(&err);
        text.push_str("}}");
        text
    }

    /// Returns the producer and guard of a lane that was never added to its registry (its id was
    /// taken).
    pub(super) fn take_parts(&self) -> (Option<Producer>, Option<Box<dyn Send + Sync>>) {
        let mut state = self.lock();
        (state.producer.take(), state.guard.take())
    }

    /// Opens the lane: its subscribe call's answer is on its way. Its producer may be polled now.
    pub(super) fn open(&self) {
        self.lock().open = true;
    }

    /// Ends the subscription: what waits is dropped, its room given back, and the producer with it
    /// (at once, or as soon as the taker's poll of it returns).
    pub(super) fn end(&self) {
        let mut state = self.lock();
        state.ended = true;
        self.clear(&mut state);
        let producer = state.producer.take();
        let guard = state.guard.take();
        drop(state);
        drop((producer, guard));
    }

    /// Returns the lane's producer, for its connection's hub to read, or to drop as the hub reads
    /// for it.
    pub(super) fn take_producer(&self) -> Option<Producer> {
        self.lock().producer.take()
    }

    /// Ends the subscription as a producer that finished does: what waits in the lane still goes.
    pub(super) fn finish(&self) {
        let mut state = self.lock();
        state.ended = true;
        let guard = state.guard.take();
        drop(state);
        drop(guard);
    }

    /// Returns whether the subscription is over.
    pub(super) fn is_ended(&self) -> bool {
        self.lock().ended
    }

    /// Takes `item`, which its hub read: its notification goes straight to `out` while the lane
    /// is open, nothing waits in it and `room` is left (its length returned, for the caller to take
    /// its room in the watermark, as what waits took it), else it joins the lane, within its bound
    /// and by its policy. Only the taker feeds a lane.
    pub(super) fn feed(&self, item: &RawValue, room: bool, out: &mut dyn FnMut(String)) -> Fed {
        // Without the lock while nothing waits (most items): the flag is only read, so a hub
        // feeding many lanes in turn does not wait for each lane's line in a locked operation.
        // Only the taker makes something wait; another task may end the lane meanwhile, and the
        // item then goes out as if fed just before.
        if room && self.direct.load(Ordering::Acquire) {
            let text = self.notification(item.get());
            let len = text.len();
            out(text);
            return Fed::Out(len);
        }
        let mut state = self.lock();
        if state.ended {
            return Fed::Ended;
        }
        let text = self.notification(item.get());
        if room && state.open && state.texts.is_empty() && !state.holds_back() {
            let len = text.len();
            out(text);
            return Fed::Out(len);
        }
        match self.offer(&mut state, text) {
            Offered::Joined => Fed::Queued,
            // A hub feeds no `Wait` lane; were it one, the item would wait first in line.
            Offered::Full(back) => {
                state.held_back = Some(back.into_boxed_str());
                Fed::Queued
            }
            Offered::Lagged => {
                let guard = state.guard.take();
                drop(state);
                drop(guard);
                Fed::Lagged
            }
            Offered::Close => Fed::Close,
            Offered::Ended => Fed::Ended,
        }
    }

    /// Returns whether the lane is its connection's lone lane (see [`Slots`]), which the taker
    /// visits at each of its polls, not when it is rung or queued.
    pub(super) fn is_lone(&self) -> bool {
        self.slot.load(Ordering::Relaxed) == LONE
    }

    /// Moves what waits (up to `turn` notifications, while fewer than `room` bytes moved) to
    /// `out`, then polls the producer (up to the rest of the turn) with `taker`'s waker (a lone
    /// lane's) or else the lane's own: an item goes straight to `out` while nothing waits and
    /// there is room, else into the lane. Only the taker visits.
    pub(super) fn visit(
        self: &Arc<Self>,
        room: usize,
        turn: usize,
        taker: Option<&Waker>,
        out: &mut dyn FnMut(String),
    ) -> Visit {
        let mut visit = Visit::default();
        let mut state = self.lock();
        if !state.open {
            // What its hub fed it before its subscribe call's answer waits for that answer.
            return visit;
        }
        let mut items = 0;
        let mut from_lane = 0;
        while items < turn && visit.moved < room {
            let Some(text) = state.texts.pop_front() else {
                break;
            };
            state.bytes -= text.len();
            from_lane += text.len();
            visit.moved += text.len();
            items += 1;
            out(text);
        }
        if from_lane > 0 {
            self.bell.waiting.fetch_sub(from_lane, Ordering::AcqRel);
        }
        // An item held back for room is offered again before the producer is polled.
        if state.wait
            && let Some(text) = state.held_back.take()
            && let Offered::Full(back) = self.offer(&mut state, text.into_string())
        {
            state.held_back = Some(back.into_boxed_str());
        }
        let full =
            state.wait && (state.held_back.is_some() || state.texts.len() >= self.bound_items);
        let producer = if state.open && !state.ended && !full {
            state.producer.take()
        } else {
            None
        };
        let Some(mut producer) = producer else {
            visit.requeue = !state.texts.is_empty() || state.holds_back();
            visit.spent = state.ended && !visit.requeue;
            return visit;
        };
        // Polled without the lock: a producer may wake its lane from inside its poll.
        let mut lane_empty = state.texts.is_empty();
        drop(state);
        let own = waker_ref(self);
        let mut cx = TaskContext::from_waker(taker.unwrap_or(&own));
        let polled = loop {
            if items >= turn {
                break Polled::More;
            }
            let text = match producer.as_mut().poll_next(&mut cx) {
                Poll::Pending => break Polled::Pending,
                Poll::Ready(None) => break Polled::Finished,
                Poll::Ready(Some(Produced::Failed(err))) => break Polled::Failed(err),
                Poll::Ready(Some(Produced::Item(raw))) => self.notification(raw.get()),
                Poll::Ready(Some(Produced::Shared(raw))) => self.notification(raw.get()),
            };
            items += 1;
            if lane_empty && visit.moved < room {
                visit.direct += text.len();
                visit.moved += text.len();
                out(text);
                continue;
            }
            lane_empty = false;
            let mut state = self.lock();
            match self.offer(&mut state, text) {
                Offered::Joined => {}
                Offered::Full(back) => {
                    state.held_back = Some(back.into_boxed_str());
                    break Polled::Stopped;
                }
                Offered::Lagged => break Polled::Lagged,
                Offered::Close => break Polled::Close,
                Offered::Ended => break Polled::Ended,
            }
            if state.wait && state.texts.len() >= self.bound_items {
                break Polled::Stopped;
            }
        };
        let mut state = self.lock();
        let mut last = None;
        let more = matches!(polled, Polled::More);
        let keep = match polled {
            Polled::Pending | Polled::More | Polled::Stopped => !state.ended,
            Polled::Finished => {
                state.ended = true;
                false
            }
            Polled::Failed(err) => {
                last = Some(self.error_notification(&err));
                false
            }
            Polled::Lagged | Polled::Ended => false,
            Polled::Close => {
                visit.close = true;
                false
            }
        };
        if let Some(last) = last
            && !state.ended
        {
            self.budget.force(last.len());
            self.join(&mut state, last);
            state.ended = true;
        }
        visit.again = keep && more;
        visit.requeue = visit.again || !state.texts.is_empty() || state.holds_back();
        visit.done = !keep;
        visit.spent = !keep && !visit.requeue;
        if keep {
            state.producer = Some(producer);
        } else {
            visit.left = Some((producer, state.guard.take()));
        }
        visit
    }

    /// Offers `text`, a notification, to the lane behind what waits: it joins if the bound and the
    /// watermark have room (or if nothing waits, under every policy but [`WhenFull::Wait`]: one
    /// notification always goes), else the policy decides.
    fn offer(&self, state: &mut State, text: String) -> Offered {
        loop {
            if state.ended {
                return Offered::Ended;
            }
            let bytes = text.len();
            let within = state.texts.len() < self.bound_items
                && (state.texts.is_empty() || state.bytes + bytes <= self.bound_bytes);
            // Past its bound while the connection is not backed up, the producer is only faster
            // than the taker, not the client slower than the producer: it joins, within the
            // watermark.
            if (within || !self.backed_up()) && self.budget.try_take(bytes) {
                self.join(state, text);
                return Offered::Joined;
            }
            match self.when_full {
                WhenFull::Wait => return Offered::Full(text),
                WhenFull::DropOldest => match state.texts.pop_front() {
                    Some(oldest) => {
                        state.bytes -= oldest.len();
                        self.bell.waiting.fetch_sub(oldest.len(), Ordering::AcqRel);
                        self.budget.give_back(oldest.len());
                        tracing::debug!("a subscription's oldest notification dropped for room");
                    }
                    None => {
                        // Nothing of its own waits: the connection is full of others'.
                        self.budget.force(bytes);
                        self.join(state, text);
                        return Offered::Joined;
                    }
                },
                WhenFull::Lag if state.texts.is_empty() && within => {
                    // Within its own bound, behind others: one always goes.
                    self.budget.force(bytes);
                    self.join(state, text);
                    return Offered::Joined;
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
                    self.clear(state);
                    let notice = self.error_notification(&err);
                    self.budget.force(notice.len());
                    self.join(state, notice);
                    state.ended = true;
                    return Offered::Lagged;
                }
                WhenFull::CloseConnection => return Offered::Close,
            }
        }
    }

    /// Returns whether the connection is backed up: what is on its way to the other side is as
    /// much as the taker lets out before notifications wait in their lanes (a quarter of the
    /// watermark), or the watermark is full.
    fn backed_up(&self) -> bool {
        let on_the_way = self
            .budget
            .held()
            .saturating_sub(self.bell.waiting.load(Ordering::Acquire));
        on_the_way >= self.budget.limit() / 4
    }

    fn join(&self, state: &mut State, text: String) {
        state.bytes += text.len();
        self.bell.waiting.fetch_add(text.len(), Ordering::AcqRel);
        state.texts.push_back(text);
    }

    fn clear(&self, state: &mut State) {
        let bytes = std::mem::take(&mut state.bytes);
        state.texts.clear();
        state.held_back = None;
        self.bell.waiting.fetch_sub(bytes, Ordering::AcqRel);
        self.budget.give_back(bytes);
    }
}

impl ArcWake for Lane {
    /// Rings the lane's slot, or puts the lane in its connection's queue, for the taker to poll
    /// its producer.
    fn wake_by_ref(lane: &Arc<Self>) {
        match lane.slot.load(Ordering::Relaxed) {
            NO_SLOT => {
                if let Some(ready) = lane.ready.upgrade() {
                    ready.push(lane, true);
                }
            }
            // Its producer holds the taker's waker, not this one; the taker visits it anyway.
            LONE => lane.bell.wake(),
            slot => lane.bell.ring(slot),
        }
    }
}

/// Marks a lane or hub without a slot in its connection's [`Bell`]: its wakes queue it.
pub(super) const NO_SLOT: u8 = u8::MAX;

/// Marks its connection's lone lane (see [`Slots`]): its producer is polled with the taker's
/// waker, at each of the taker's polls.
const LONE: u8 = u8::MAX - 1;

/// Holds what a producer's wake changes: which lanes and hubs woke (by their slot, for the first
/// [`SLOTS`] of a connection), and the taker to wake; and the bytes its lanes hold. A line of its
/// own, which the wake (often in the publisher's thread) writes and the taker reads: a wake moves
/// this one line to the taker's thread, where a push to the queue of visitors moves several (the
/// queue's lock and buffer, the lane's flag and count, the taker's waker), each a wait of the
/// taker's.
///
/// Keeps the taker's waker in a [`SetFlags`]: a taker with a wake set for its other sources (a
/// WebSocket's pump, [`Notifications::wake_set`](super::Notifications::wake_set)) keeps their flags
/// here too, and learns which woke from the line it reads for the notifications anyway.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct Bell {
    /// The slots woken since the taker last looked, a bit each.
    rung: AtomicU64,
    /// Whether a producer woke since the taker last looked.
    pub(super) woken: AtomicBool,
    /// Holds the taker's waker, and the flags of its wake set when it has one.
    flags: SetFlags,
    /// The bytes waiting in all the lanes of the connection, which the watermark counts too:
    /// here, as every take reads it with the rest.
    pub(super) waiting: AtomicUsize,
}

#[cfg(feature = "ws")]
impl HoldsFlags for Bell {
    fn flags(&self) -> &SetFlags {
        &self.flags
    }
}

impl Bell {
    /// Rings for the lane or hub in `slot`, and wakes the taker.
    pub(super) fn ring(&self, slot: u8) {
        self.rung.fetch_or(1 << slot, Ordering::AcqRel);
        self.wake();
    }

    /// Wakes the taker: a producer woke.
    pub(super) fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.flags.wake(HOLDER_WOKE);
    }

    /// Leaves `waker` to be woken when a producer wakes.
    pub(super) fn register(&self, waker: &Waker) {
        self.flags.register(waker);
    }

    /// Returns the slots rung since the last call.
    pub(super) fn take_rung(&self) -> u64 {
        // A load first: a turn that finds nothing rung leaves the line shared.
        if self.rung.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.rung.swap(0, Ordering::AcqRel)
    }

    /// Returns whether a slot was rung since the taker last looked.
    pub(super) fn is_rung(&self) -> bool {
        self.rung.load(Ordering::Acquire) != 0
    }
}

/// Names a lane or hub by its slot in its connection's [`Bell`].
enum Slotted {
    Lane(Weak<Lane>),
    Hub(Weak<Hub>),
}

impl Default for Slotted {
    /// Returns a free slot: a lane that is gone.
    fn default() -> Self {
        Self::Lane(Weak::new())
    }
}

impl Slotted {
    fn is_gone(&self) -> bool {
        match self {
            Self::Lane(lane) => lane.strong_count() == 0,
            Self::Hub(hub) => hub.strong_count() == 0,
        }
    }
}

/// Names what the taker visits: a lane, or a hub that feeds lanes.
pub(super) enum Visitor {
    Lane(Arc<Lane>),
    Hub(Arc<Hub>),
}

/// Bounds the lanes and hubs of a connection that have a slot in its [`Bell`]: those after are
/// queued as they wake (a connection has few subscriptions, most often one).
const SLOTS: usize = 16;

/// Holds the lanes and hubs for the taker to visit, and the taker's waker.
///
/// Laid out so that what every visit reads (the bell, the watermark, the flags, the slots' lock,
/// the lone lane and the first slot) shares one cache line: a connection's lines are out of the
/// cache by the time a publish to a thousand others comes back to it.
#[repr(C, align(64))]
pub(crate) struct Ready {
    /// What a wake of a lane or hub with a slot rings; the taker's waker.
    pub(super) bell: Arc<Bell>,
    /// The connection's watermark, which what the lanes hold counts in.
    pub(crate) budget: Arc<Watermark>,
    /// Whether `visitors` holds one: what the taker looks at, without the lock.
    pub(super) has: AtomicBool,
    /// Whether `slots` holds a lone lane: what the taker looks at, without the lock.
    lone: AtomicBool,
    /// The lone lane, and the lanes and hubs with a slot in `bell`, by slot.
    slots: Mutex<Slots>,
    visitors: Mutex<VecDeque<Visitor>>,
}

/// Holds the connection's lone lane and the lanes and hubs with a slot in its [`Bell`].
///
/// A taker that visits one lane at each of its polls ([`Ready::take_lone`]: a WebSocket's pump)
/// polls the producer of the connection's first lane with its own waker, while that lane is the
/// only one: a publish then wakes the taker's task as a server without a framework does, its
/// waker written in the task alone, rather than the lane's waker (its counts, its first line and
/// the bell, three lines in the publisher's thread for every connection in turn). A second lane
/// or a hub ends it for the connection: the first lane takes a slot, rung once so that the next
/// visit polls its producer with the lane's own waker, and the connection is as any other.
#[repr(C)]
#[derive(Default)]
pub(super) struct Slots {
    /// The lone lane, which the taker visits at each of its polls.
    pub(super) lone: Option<Arc<Lane>>,
    /// Whether the next lane slotted is to be the lone one: the taker visits one, and none was
    /// slotted yet.
    lone_open: bool,
    by_slot: [Slotted; SLOTS],
}

impl Slots {
    /// Returns a free slot (one whose lane or hub is gone), now `slotted`'s. A ring left from the
    /// one before visits the new one once, for nothing.
    fn claim(&mut self, slotted: Slotted) -> Option<u8> {
        let slot = self.by_slot.iter().position(Slotted::is_gone)?;
        self.by_slot[slot] = slotted;
        u8::try_from(slot).ok()
    }
}

impl Ready {
    /// Returns the lanes' meeting place of a connection whose watermark is `budget`.
    pub(crate) fn new(budget: Arc<Watermark>) -> Self {
        Self {
            bell: Arc::default(),
            budget,
            has: AtomicBool::new(false),
            lone: AtomicBool::new(false),
            slots: Mutex::default(),
            visitors: Mutex::default(),
        }
    }

    /// Returns whether a lane or hub is to be visited (the lone lane aside, which is at every
    /// poll of its taker).
    pub(crate) fn is_due(&self) -> bool {
        self.bell.is_rung() || self.has.load(Ordering::Acquire)
    }

    /// Returns whether the connection has a lone lane (see [`Slots`]).
    pub(crate) fn has_lone(&self) -> bool {
        self.lone.load(Ordering::Acquire)
    }

    /// Returns the bytes waiting in the lanes.
    pub(crate) fn waiting(&self) -> usize {
        self.bell.waiting.load(Ordering::Acquire)
    }

    /// Takes the room of `bytes` of notifications that went straight out in the watermark, as
    /// what waits in the lanes took it, until the socket has them: nothing for none (the server's
    /// budget is a line every connection writes).
    pub(super) fn take_room(&self, bytes: usize) {
        if bytes > 0 {
            self.budget.force(bytes);
        }
    }

    /// Returns the room notifications may take now: a quarter of the watermark, less what is on
    /// its way to the other side (what the watermark holds beyond the lanes' own).
    pub(crate) fn room(&self) -> usize {
        let on_the_way = self.budget.held().saturating_sub(self.waiting());
        (self.budget.limit() / 4).saturating_sub(on_the_way)
    }

    /// Makes the connection's first lane a lone one (see [`Slots`]): the taker promises to visit
    /// it at each of its polls, with the task's waker. Called before any lane is slotted.
    pub(crate) fn take_lone(&self) {
        let mut slots = self.slots();
        slots.lone_open = slots.lone.is_none() && slots.by_slot.iter().all(Slotted::is_gone);
    }

    /// Gives `lane` a slot in the bell, if one is free: its wakes ring it from now on. The first
    /// lane of a connection whose taker visits a lone one becomes it instead.
    pub(super) fn slot_lane(&self, lane: &Arc<Lane>) {
        let mut slots = self.slots();
        if std::mem::take(&mut slots.lone_open) {
            lane.slot.store(LONE, Ordering::Relaxed);
            slots.lone = Some(Arc::clone(lane));
            self.lone.store(true, Ordering::Release);
            return;
        }
        self.end_lone(&mut slots);
        if let Some(slot) = slots.claim(Slotted::Lane(Arc::downgrade(lane))) {
            lane.slot.store(slot, Ordering::Relaxed);
        }
    }

    /// Gives `hub` a slot in the bell, as [`slot_lane`](Self::slot_lane) does a lane.
    pub(super) fn slot_hub(&self, hub: &Arc<Hub>) {
        let mut slots = self.slots();
        self.end_lone(&mut slots);
        if let Some(slot) = slots.claim(Slotted::Hub(Arc::downgrade(hub))) {
            hub.slot.store(slot, Ordering::Relaxed);
        }
    }

    /// Gives the lone lane, if there is one, a slot, rung so that its next visit polls its
    /// producer with its own waker (it held the taker's until then); none is lone from now on.
    fn end_lone(&self, slots: &mut Slots) {
        slots.lone_open = false;
        let Some(lane) = slots.lone.take() else {
            return;
        };
        self.lone.store(false, Ordering::Release);
        match slots.claim(Slotted::Lane(Arc::downgrade(&lane))) {
            Some(slot) => {
                lane.slot.store(slot, Ordering::Relaxed);
                self.bell.ring(slot);
            }
            None => {
                lane.slot.store(NO_SLOT, Ordering::Relaxed);
                self.push(&lane, true);
            }
        }
    }

    /// Forgets the lone lane and returns it (for the caller to drop or end, after the slots'
    /// lock): with `only`, if it is that lane (its subscription is over, nothing waits in it);
    /// with `None`, whichever it is (the connection closed).
    pub(super) fn forget_lone(&self, only: Option<&Arc<Lane>>) -> Option<Arc<Lane>> {
        let mut slots = self.slots();
        let lone = slots.lone.as_ref()?;
        if only.is_some_and(|lane| !Arc::ptr_eq(lone, lane)) {
            return None;
        }
        self.lone.store(false, Ordering::Release);
        slots.lone.take()
    }

    /// Returns the lone lane and the slots, locked.
    pub(super) fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns the lane or hub in `slot`, while it lives.
    pub(super) fn slotted(&self, slot: u32) -> Option<Visitor> {
        let slots = self.slots();
        match slots.by_slot.get(slot as usize)? {
            Slotted::Lane(lane) => lane.upgrade().map(Visitor::Lane),
            Slotted::Hub(hub) => hub.upgrade().map(Visitor::Hub),
        }
    }

    pub(super) fn visitors(&self) -> MutexGuard<'_, VecDeque<Visitor>> {
        self.visitors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `lane` for a visit, unless it is queued already; with `wake`, wakes the taker (a
    /// producer woke: the taker may be waiting for nothing else).
    pub(super) fn push(&self, lane: &Arc<Lane>, wake: bool) {
        self.queue(&lane.queued, || Visitor::Lane(Arc::clone(lane)), wake);
    }

    /// Queues `hub` for a visit, as [`push`](Self::push) does a lane.
    pub(super) fn push_hub(&self, hub: &Arc<Hub>, wake: bool) {
        self.queue(&hub.queued, || Visitor::Hub(Arc::clone(hub)), wake);
    }

    fn queue(&self, queued: &AtomicBool, visitor: impl FnOnce() -> Visitor, wake: bool) {
        if !queued.swap(true, Ordering::AcqRel) {
            let mut visitors = self.visitors();
            visitors.push_back(visitor());
            // Under the lock, as `pop` clears it: never left false with a visitor queued.
            self.has.store(true, Ordering::Release);
        }
        if wake {
            self.bell.wake();
        }
    }

    pub(super) fn pop(&self) -> Option<Visitor> {
        let mut visitors = self.visitors();
        let visitor = visitors.pop_front();
        if visitors.is_empty() {
            self.has.store(false, Ordering::Release);
        }
        visitor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(ready: &Arc<Ready>) -> Lane {
        let head = r#"{"jsonrpc":"2.0","method":"n","params":{"subscription":1,"#.to_owned();
        let budget = Arc::new(Watermark::new(1 << 20, None));
        let bounds = (16, 1 << 16, WhenFull::DropOldest);
        Lane::new(Id::from(1), head, (None, None), bounds, ready, budget)
    }

    fn item(n: u32) -> Box<RawValue> {
        RawValue::from_string(n.to_string()).expect("a number")
    }

    /// Feeds item `n` as a hub does, with `room`: the text when it went straight out, and whether
    /// the lane was found ended.
    fn feed(lane: &Lane, n: u32, room: bool) -> (Option<String>, bool) {
        let mut out = None;
        let fed = lane.feed(&item(n), room, &mut |text| out = Some(text));
        (out, matches!(fed, Fed::Ended))
    }

    #[test]
    fn an_item_goes_straight_out_only_while_nothing_waits_before_it() {
        let ready = Arc::new(Ready::new(Arc::new(Watermark::new(1 << 20, None))));
        let lane = lane(&ready);
        // Not open yet: it waits for the subscribe call's answer.
        assert_eq!(feed(&lane, 0, true), (None, false));
        lane.open();
        let first = lane.lock().texts.pop_front();
        assert!(first.is_some_and(|text| text.ends_with(r#""result":0}}"#)));
        let (out, _) = feed(&lane, 1, true);
        assert!(out.is_some_and(|text| text.ends_with(r#""result":1}}"#)));
        // No room: it waits, and so does the next, room or not, behind it.
        assert_eq!(feed(&lane, 2, false), (None, false));
        assert_eq!(feed(&lane, 3, true), (None, false));
        assert_eq!(lane.lock().texts.len(), 2);
        // Once what waited has gone, straight out again.
        lane.lock().texts.clear();
        let (out, _) = feed(&lane, 4, true);
        assert!(out.is_some());
        // Ended (by another task, say): nothing more.
        lane.end();
        assert_eq!(feed(&lane, 5, true), (None, true));
    }

    #[test]
    fn a_visit_and_a_wake_each_read_one_line_of_a_lane() {
        use std::mem::{offset_of, size_of};
        // The state as far as a visit reads it while nothing waits: behind the lock's own word.
        let lock = offset_of!(Lane, state);
        let state = lock + size_of::<Mutex<State>>() - size_of::<State>();
        let visited = [
            offset_of!(Lane, head) + size_of::<Box<str>>(),
            offset_of!(Lane, when_full) + 1,
            offset_of!(Lane, direct) + 1,
            state + offset_of!(State, open) + 1,
            state + offset_of!(State, ended) + 1,
            state + offset_of!(State, wait) + 1,
            state + offset_of!(State, producer) + size_of::<Option<Producer>>(),
            state + offset_of!(State, texts) + size_of::<Texts>(),
        ];
        assert!(visited.iter().all(|&end| end <= 64), "{visited:?}");
        let woken = [
            offset_of!(Lane, slot),
            offset_of!(Lane, queued),
            offset_of!(Lane, bell),
            offset_of!(Lane, ready) + size_of::<Weak<Ready>>() - 1,
        ];
        assert!(woken.iter().all(|at| (64..128).contains(at)), "{woken:?}");
    }
}
