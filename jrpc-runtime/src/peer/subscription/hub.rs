//! Reads a topic's feed once for the subscriptions of one connection that read it together: one
//! receiver, one wake-up of the taker and one poll per published item, however many of them it
//! feeds. Each subscription keeps its own lane, bound and policy.
//!
//! The first subscription of a connection to a feed reads it alone, with no hub between (the
//! common case: one subscription a connection). The second makes the connection's hub of the
//! feed, which reads through the second's own reading; later ones join it. A lane that waits for
//! room ([`WhenFull::Wait`](super::WhenFull)) reads its feed alone, as a hub cannot wait for one
//! of its lanes.
//!
//! A subscription that joins a hub already reading brings a receiver made where its own reading
//! would have begun: what that receiver holds up to the item the hub read last, the hub read
//! before the subscription joined, and it goes to the subscription's lane first; what comes
//! after, the hub reads for it. The hub reads its feed to the end before it looks, so that the
//! item it read last is the newest it could: nothing published after the subscription's handler
//! asked for the feed is missed, nothing published before is sent.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context as TaskContext, Poll};

use futures_util::StreamExt as _;
use futures_util::task::{ArcWake, waker_ref};
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use super::items::{Produced, Producer};
use super::lane::{Bell, Fed, Lane, NO_SLOT, Ready};

/// Holds what a subscription brings to its connection's hub of a feed: which feed, and a receiver
/// of it made where the subscription's own reading of it begins.
pub(crate) struct Reader {
    /// The feed's number, unique to its channel.
    pub(crate) feed: u64,
    pub(crate) rx: broadcast::Receiver<Arc<RawValue>>,
}

/// Reads one feed for the lanes of one connection (see the module docs).
///
/// Laid out as a [`Lane`] is: what a wake reads first, apart from what the taker writes.
#[repr(C, align(64))]
pub(crate) struct Hub {
    /// What a wake of the feed rings, with the hub's slot.
    bell: Arc<Bell>,
    /// Where a wake of the feed puts the hub, for the taker to visit, when it has no slot in
    /// `bell`.
    ready: Weak<Ready>,
    pub(super) slot: AtomicU8,
    /// The feed's number.
    pub(super) feed: u64,
    /// Whether the hub is in its connection's queue to visit.
    pub(super) queued: AtomicBool,
    state: Mutex<State>,
}

struct State {
    /// The feed, as the subscription that made the hub read it; `None` once the hub is over.
    items: Option<Producer>,
    lanes: Vec<Arc<Lane>>,
    /// Lanes that joined since the last visit, with the receivers their handlers made.
    joining: Vec<(Arc<Lane>, broadcast::Receiver<Arc<RawValue>>)>,
    /// The item read last.
    last: Option<Arc<RawValue>>,
}

/// Says what a visit of a hub did, for the registry.
#[derive(Default)]
pub(super) struct Visit {
    /// The bytes moved out.
    pub(super) moved: usize,
    /// Whether the feed may have more now (a turn's worth was read): visit again without a wake.
    pub(super) again: bool,
    /// The lanes whose subscriptions ended here (lagged, or the feed ended): the registry forgets
    /// them.
    pub(super) finished: Vec<Arc<Lane>>,
    /// A lane whose subscription must close the connection ([`WhenFull::CloseConnection`](super::WhenFull)).
    pub(super) close: Option<Arc<Lane>>,
    /// Whether the hub is over (no lane left, or the feed ended): the registry forgets it.
    pub(super) done: bool,
}

impl Hub {
    /// Returns a hub that reads the feed numbered `feed` through `items` for `lane`, and lanes
    /// that join later; woken, it joins `ready` (or rings its bell, once it has a slot).
    pub(super) fn new(feed: u64, items: Producer, lane: Arc<Lane>, ready: &Arc<Ready>) -> Self {
        Self {
            state: Mutex::new(State {
                items: Some(items),
                lanes: vec![lane],
                joining: Vec::new(),
                last: None,
            }),
            queued: AtomicBool::new(false),
            ready: Arc::downgrade(ready),
            bell: Arc::clone(&ready.bell),
            slot: AtomicU8::new(NO_SLOT),
            feed,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change leaves the state whole: a panic elsewhere cannot break it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `lane`, with the receiver its handler made, at the next visit.
    pub(super) fn join(&self, lane: Arc<Lane>, rx: broadcast::Receiver<Arc<RawValue>>) {
        self.lock().joining.push((lane, rx));
    }

    /// Forgets the lanes whose subscriptions are over; returns whether none is left.
    pub(super) fn prune(&self) -> bool {
        let mut state = self.lock();
        state.lanes.retain(|lane| !lane.is_ended());
        state.joining.retain(|(lane, _)| !lane.is_ended());
        let over = state.lanes.is_empty() && state.joining.is_empty();
        if over {
            state.items = None;
        }
        over
    }

    /// Ends the hub (its connection closed): the feed's receiver is dropped, the lanes forgotten.
    pub(super) fn end(&self) {
        let mut state = self.lock();
        let items = state.items.take();
        let lanes = std::mem::take(&mut state.lanes);
        let joining = std::mem::take(&mut state.joining);
        drop(state);
        drop((items, lanes, joining));
    }

    /// Reads the feed (up to `turn` items, all there are while a lane joins), feeding each item to
    /// every lane; their notifications go straight to `out` while fewer than `room` bytes moved.
    /// Then adds the lanes that joined. Only the taker visits.
    pub(super) fn visit(
        self: &Arc<Self>,
        room: usize,
        turn: usize,
        out: &mut dyn FnMut(String),
    ) -> Visit {
        let mut visit = Visit::default();
        let mut state = self.lock();
        let Some(mut items) = state.items.take() else {
            visit.done = true;
            return visit;
        };
        let ready = &self.ready;
        let joining = !state.joining.is_empty();
        let waker = waker_ref(self);
        let mut cx = TaskContext::from_waker(&waker);
        let mut read = 0;
        let ended = loop {
            if read >= turn && !joining {
                visit.again = true;
                break false;
            }
            let item: Arc<RawValue> = match items.poll_next_unpin(&mut cx) {
                Poll::Pending => break false,
                // A feed does not fail; were it to, its subscriptions end as when it ends.
                Poll::Ready(None | Some(Produced::Failed(_))) => break true,
                Poll::Ready(Some(Produced::Item(item))) => Arc::from(item),
                Poll::Ready(Some(Produced::Shared(item))) => item,
            };
            read += 1;
            if read == 1 {
                // What feeding reads of each lane, asked for all of them before the first is fed:
                // the lines come together, where one lane after another each would be waited for.
                std::hint::black_box(state.lanes.iter().filter(|lane| lane.warm()).count());
            }
            state
                .lanes
                .retain(|lane| feed(lane, &item, room, &mut visit, ready, out));
            state.last = Some(item);
        };
        for (lane, mut rx) in std::mem::take(&mut state.joining) {
            let mut early = Vec::new();
            loop {
                match rx.try_recv() {
                    Ok(item) => early.push(item),
                    // Fallen behind the feed before it joined: its oldest are gone, as they
                    // would be from a reading of its own.
                    Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                    Err(_) => break,
                }
            }
            // What the hub read before the lane joined; after it, the hub reads for the lane.
            let before = state.last.as_ref().and_then(|last| {
                early
                    .iter()
                    .position(|item| Arc::ptr_eq(item, last))
                    .map(|at| at + 1)
            });
            early.truncate(before.unwrap_or(0));
            if early
                .iter()
                .all(|item| feed(&lane, item, room, &mut visit, ready, out))
            {
                state.lanes.push(lane);
            }
        }
        if ended {
            // The feed is gone: each subscription ends after what waits in its lane.
            for lane in std::mem::take(&mut state.lanes) {
                lane.finish();
                if let Some(ready) = ready.upgrade() {
                    ready.push(&lane, false);
                }
                visit.finished.push(lane);
            }
        }
        visit.done = ended || state.lanes.is_empty();
        if !visit.done {
            state.items = Some(items);
        }
        visit
    }
}

/// Feeds `item` to `lane`, counting what went out in `visit`; returns whether the lane stays in
/// the hub.
fn feed(
    lane: &Arc<Lane>,
    item: &RawValue,
    room: usize,
    visit: &mut Visit,
    ready: &Weak<Ready>,
    out: &mut dyn FnMut(String),
) -> bool {
    match lane.feed(item, visit.moved < room, out) {
        Fed::Out(bytes) => {
            visit.moved += bytes;
            true
        }
        Fed::Queued => {
            if let Some(ready) = ready.upgrade() {
                ready.push(lane, false);
            }
            true
        }
        Fed::Ended => false,
        Fed::Lagged => {
            // Its error notification waits in its lane.
            if let Some(ready) = ready.upgrade() {
                ready.push(lane, false);
            }
            visit.finished.push(Arc::clone(lane));
            false
        }
        Fed::Close => {
            visit.close = Some(Arc::clone(lane));
            true
        }
    }
}

impl ArcWake for Hub {
    /// Rings the hub's slot, or puts the hub in its connection's queue, for the taker to read its
    /// feed.
    fn wake_by_ref(hub: &Arc<Self>) {
        let slot = hub.slot.load(Ordering::Relaxed);
        if slot != NO_SLOT {
            hub.bell.ring(slot);
        } else if let Some(ready) = hub.ready.upgrade() {
            ready.push_hub(hub, true);
        }
    }
}
