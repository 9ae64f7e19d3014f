//! Reads a topic's feed once for the subscriptions of one connection that read it together: one
//! receiver, one wake-up of the taker and one poll per published item, however many of them it
//! feeds. Each subscription keeps its own lane, bound and policy.
//!
//! The first subscription of a connection to a feed reads it alone, with no hub between (the
//! common case: one subscription a connection). The second makes the connection's hub of the
//! feed, which reads through the second's own reading and takes the first in; later ones join it.
//! A lane that waits for room ([`WhenFull::Wait`](super::WhenFull)) reads its feed alone, as a
//! hub cannot wait for one of its lanes.
//!
//! The first lane is taken in at the hub's first visit, where its own reading stops: the hub
//! reads its feed to the end, the lane's reading is read to the end (all of it new to the lane)
//! and dropped, and the hub reads its feed to the end again. Both readings are of one channel, so
//! the second time the hub reads past where the lane's stopped: of what it reads then, the lane
//! gets what follows the item its own reading read last. When its own reading read nothing more,
//! it had read everything published before the hub's first reading ended, as the hub had: the
//! lane gets all of it.
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
    /// The lane that read the feed alone before the hub was made, until the hub takes it in.
    first: Option<Arc<Lane>>,
    /// The item read last.
    last: Option<Arc<RawValue>>,
}

/// Says what a visit of a hub did, for the registry.
#[derive(Default)]
pub(super) struct Visit {
    /// The bytes moved out, all of notifications that went straight out: the caller takes their
    /// room in the connection's watermark, as what waits in a lane took it.
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
    /// Returns a hub that reads the feed numbered `feed` through `items` for `lane`, for `first`
    /// (which read it alone until now), and for lanes that join later; woken, it joins `ready` (or
    /// rings its bell, once it has a slot).
    pub(super) fn new(
        feed: u64,
        items: Producer,
        lane: Arc<Lane>,
        first: Arc<Lane>,
        ready: &Arc<Ready>,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                items: Some(items),
                lanes: vec![lane],
                joining: Vec::new(),
                first: Some(first),
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
        if state.first.as_ref().is_some_and(|first| first.is_ended()) {
            state.first = None;
        }
        let over = state.lanes.is_empty() && state.joining.is_empty() && state.first.is_none();
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
        let first = state.first.take();
        drop(state);
        drop((items, lanes, joining, first));
    }

    /// Reads the feed (up to `turn` items, all there are while a lane joins), feeding each item to
    /// every lane; their notifications go straight to `out` while fewer than `room` bytes moved.
    /// Then takes in the first lane and adds the lanes that joined. Only the taker visits.
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
        let joining = !state.joining.is_empty() || state.first.is_some();
        let waker = waker_ref(self);
        let mut cx = TaskContext::from_waker(&waker);
        let mut read = 0;
        let mut ended = loop {
            if read >= turn && !joining {
                visit.again = true;
                break false;
            }
            let item = match items.poll_next_unpin(&mut cx) {
                Poll::Pending => break false,
                Poll::Ready(next) => match next.and_then(shared) {
                    Some(item) => item,
                    None => break true,
                },
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
        if !ended && let Some(first) = state.first.take() {
            ended = take_in(
                &mut state, first, &mut items, &mut cx, room, &mut visit, ready, out,
            );
        }
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

/// Takes `first`, which read the feed alone, into the hub whose feed `items` was just read to the
/// end: reads what the lane's own reading holds and drops it, then reads `items` to the end again
/// (see the module docs). Returns whether the feed ended.
#[allow(
    clippy::too_many_arguments,
    reason = "a visit's parts, passed apart so that the state stays borrowed once"
)]
fn take_in(
    state: &mut State,
    first: Arc<Lane>,
    items: &mut Producer,
    cx: &mut TaskContext<'_>,
    room: usize,
    visit: &mut Visit,
    ready: &Weak<Ready>,
    out: &mut dyn FnMut(String),
) -> bool {
    // None once its subscription has ended.
    let Some(mut own) = first.take_producer() else {
        return false;
    };
    let mut stays = true;
    let mut seen = None;
    while stays
        && let Poll::Ready(Some(item)) = own.poll_next_unpin(cx).map(|next| next.and_then(shared))
    {
        stays = feed(&first, &item, room, visit, ready, out);
        seen = Some(item);
    }
    // Dropped before the hub reads again: from here on, the lane reads through the hub.
    drop(own);
    let mut later = Vec::new();
    let ended = loop {
        match items.poll_next_unpin(cx) {
            Poll::Pending => break false,
            Poll::Ready(next) => match next.and_then(shared) {
                Some(item) => later.push(item),
                None => break true,
            },
        }
    };
    // What the lane's own reading read last, if the hub read it now; what follows is new to it.
    let from = seen
        .and_then(|seen| later.iter().position(|item| Arc::ptr_eq(item, &seen)))
        .map_or(0, |at| at + 1);
    for (at, item) in later.iter().enumerate() {
        state
            .lanes
            .retain(|lane| feed(lane, item, room, visit, ready, out));
        if stays && at >= from {
            stays = feed(&first, item, room, visit, ready, out);
        }
    }
    if let Some(item) = later.pop() {
        state.last = Some(item);
    }
    if stays {
        state.lanes.push(first);
    }
    ended
}

/// Returns the item a feed's reading produced; `None` for its end (a feed does not fail; were it
/// to, its subscriptions end as when it ends).
fn shared(produced: Produced) -> Option<Arc<RawValue>> {
    match produced {
        Produced::Item(item) => Some(Arc::from(item)),
        Produced::Shared(item) => Some(item),
        Produced::Failed(_) => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Watermark;
    use crate::peer::subscription::items::WhenFull;
    use crate::wire::Id;

    type Feed = broadcast::Sender<Arc<RawValue>>;

    fn item(n: u32) -> Arc<RawValue> {
        Arc::from(RawValue::from_string(n.to_string()).expect("a number"))
    }

    /// Returns subscription `id`'s open lane, reading `producer`.
    fn lane(id: u32, producer: Producer, ready: &Arc<Ready>) -> Arc<Lane> {
        let head = format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"subscription":{id},"#);
        let budget = Arc::new(Watermark::new(1 << 20, None));
        let bounds = (16, 1 << 16, WhenFull::DropOldest);
        let lane = Lane::new(
            Id::from(id),
            head,
            (Some(producer), None),
            bounds,
            ready,
            budget,
        );
        lane.open();
        Arc::new(lane)
    }

    /// Returns a reading of `feed` that, the first time it finds nothing after `racing` was
    /// filled, publishes those items first: a publisher racing the taker.
    fn reading(feed: &Feed, racing: &Arc<Mutex<Vec<u32>>>) -> Producer {
        let (mut rx, feed, racing) = (feed.subscribe(), feed.clone(), Arc::clone(racing));
        Box::pin(futures_util::stream::poll_fn(move |_| {
            loop {
                match rx.try_recv() {
                    Ok(item) => return Poll::Ready(Some(Produced::Shared(item))),
                    Err(broadcast::error::TryRecvError::Empty) => {
                        let mut racing = racing.lock().expect("not poisoned");
                        if racing.is_empty() {
                            return Poll::Pending;
                        }
                        for n in racing.drain(..) {
                            feed.send(item(n)).expect("a reading is open");
                        }
                    }
                    Err(_) => return Poll::Ready(None),
                }
            }
        }))
    }

    /// Returns the items of `texts`, the notifications that went out, as (subscription, item).
    fn sent(texts: Vec<String>) -> Vec<(u32, u32)> {
        texts
            .iter()
            .map(|text| {
                let number = |key: &str| {
                    let at = text.find(key).expect("a field") + key.len();
                    let digits = text[at..].split(|c: char| !c.is_ascii_digit()).next();
                    digits
                        .and_then(|digits| digits.parse().ok())
                        .expect("a number")
                };
                (number(r#""subscription":"#), number(r#""result":"#))
            })
            .collect()
    }

    /// Returns the hub the second lane makes, taking the first in.
    fn hub_taking_in(first: &Arc<Lane>, second: Arc<Lane>, ready: &Arc<Ready>) -> Arc<Hub> {
        let items = second.take_producer().expect("its reading");
        Arc::new(Hub::new(7, items, second, Arc::clone(first), ready))
    }

    /// Returns what a visit of `hub` sent, in order of subscription, then item.
    fn visit_hub(hub: &Arc<Hub>) -> Vec<(u32, u32)> {
        let mut texts = Vec::new();
        let visit = hub.visit(usize::MAX, 64, &mut |text| texts.push(text));
        assert!(!visit.done);
        let mut sent = sent(texts);
        sent.sort_unstable();
        sent
    }

    /// Checks that the first lane's own reading is gone, and that the hub reads for both.
    fn reads_for_both(feed: &Feed, hub: &Arc<Hub>) {
        assert_eq!(feed.receiver_count(), 1);
        feed.send(item(4)).expect("open");
        assert_eq!(visit_hub(hub), [(1, 4), (2, 4)]);
    }

    /// Returns what a visit of `lane` sent.
    fn visit_lane(lane: &Arc<Lane>) -> Vec<(u32, u32)> {
        let mut texts = Vec::new();
        lane.visit(usize::MAX, 64, None, &mut |text| texts.push(text));
        sent(texts)
    }

    #[test]
    fn the_first_lane_taken_in_behind_the_hub_misses_nothing_and_repeats_nothing() {
        let ready = Arc::new(Ready::new(Arc::new(Watermark::new(1 << 20, None))));
        let feed: Feed = broadcast::channel(16).0;
        let racing = Arc::new(Mutex::new(Vec::new()));
        let first = lane(1, reading(&feed, &racing), &ready);
        feed.send(item(1)).expect("open");
        let second = lane(2, reading(&feed, &Arc::default()), &ready);
        feed.send(item(2)).expect("open");
        let hub = hub_taking_in(&first, second, &ready);
        // Published as the first lane's own reading is read out, after the hub's first reading:
        // the hub reads it again.
        racing.lock().expect("not poisoned").push(3);
        assert_eq!(visit_hub(&hub), [(1, 1), (1, 2), (1, 3), (2, 2), (2, 3)]);
        reads_for_both(&feed, &hub);
    }

    #[test]
    fn the_first_lane_taken_in_ahead_of_the_hub_misses_nothing_and_repeats_nothing() {
        let ready = Arc::new(Ready::new(Arc::new(Watermark::new(1 << 20, None))));
        let feed: Feed = broadcast::channel(16).0;
        let racing = Arc::new(Mutex::new(Vec::new()));
        let first = lane(1, reading(&feed, &racing), &ready);
        feed.send(item(1)).expect("open");
        assert_eq!(visit_lane(&first), [(1, 1)]);
        let second = lane(2, reading(&feed, &Arc::default()), &ready);
        feed.send(item(2)).expect("open");
        // Read alone past where the hub's reading begins.
        assert_eq!(visit_lane(&first), [(1, 2)]);
        let hub = hub_taking_in(&first, second, &ready);
        racing.lock().expect("not poisoned").push(3);
        assert_eq!(visit_hub(&hub), [(1, 3), (2, 2), (2, 3)]);
        reads_for_both(&feed, &hub);
    }
}
