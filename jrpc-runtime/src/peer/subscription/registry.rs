//! Keeps the subscriptions of one connection: their lanes by id, the cap, the lanes that wait for
//! their subscribe call's answer, and the lanes for the taker to visit (their producer woke, or
//! notifications wait in them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::hub::{Hub, Reader};
use super::lane::{Lane, Ready, Visitor};
use crate::limits::Watermark;
use crate::peer::handle::{Overflowed, Shared};
use crate::wire::Id;

/// How many notifications the taker moves from one lane (or polls from its producer) before the
/// next lane's turn.
const TURN: usize = 16;

/// Holds the subscriptions of one connection (see the [module docs](self)).
pub(crate) struct Subscriptions {
    live: Mutex<Live>,
    /// The lanes for the taker to visit, in turn.
    pub(super) ready: Arc<Ready>,
    /// Woken when a subscription ends: a loop that lives as long as its subscriptions looks again.
    pub(crate) wake: Notify,
    /// How many lanes wait for their subscribe call's answer: while none does, answers are not
    /// looked at.
    awaiting: AtomicUsize,
    /// Whether a subscription was ever opened here: an event stream then stays one.
    opened: AtomicBool,
    max: usize,
}

#[derive(Default)]
struct Live {
    by_id: HashMap<Id, Entry>,
    /// Lanes whose subscribe call is not answered yet, by the call's id.
    awaiting: Vec<(Id, Arc<Lane>)>,
    /// The first lane of each feed, which reads it alone, by the feed's number.
    alone: Vec<(u64, Arc<Lane>)>,
    /// The hubs that read topic feeds for a connection's lanes once there are two, one a feed.
    hubs: Vec<Arc<Hub>>,
    closed: bool,
}

struct Entry {
    lane: Arc<Lane>,
    /// The unsubscribe method that ends it: another one answers `false`.
    unsubscribe: Arc<str>,
}

/// Says why a subscription could not be added.
pub(crate) enum Refused {
    /// The connection holds `max_subscriptions` already.
    Full(usize),
    /// The connection is closing.
    Closed,
    /// Its id is taken (the provider gave one twice).
    Taken,
}

/// Says what the taker took from the lanes.
#[derive(Default)]
pub(crate) struct Taken {
    /// The bytes moved out.
    pub(crate) moved: usize,
    /// Whether a producer may have more now: the taker comes back without a wake.
    pub(crate) again: bool,
    /// The subscription that must close the connection ([`WhenFull::CloseConnection`](super::WhenFull)),
    /// and its bound.
    pub(crate) close: Option<(Id, usize, usize)>,
    /// Whether the lone lane is to be visited again in this poll of the taker: notifications
    /// wait in it.
    pub(crate) lone_again: bool,
}

impl Taken {
    /// Closes the connection of `shared` when a subscription that closes it when it falls behind
    /// ([`WhenFull::CloseConnection`](super::WhenFull)) did.
    pub(crate) fn overflow(&self, shared: &Shared) {
        if let Some((id, items, bytes)) = &self.close {
            shared.overflow(Overflowed {
                reason: format!(
                    "subscription {id} fell behind its bound ({items} items, {bytes} bytes)"
                ),
                method: None,
                id: None,
            });
        }
    }
}

impl Subscriptions {
    /// Returns an empty registry for at most `max` subscriptions, whose lanes count in `budget`.
    pub(crate) fn new(max: usize, budget: Arc<Watermark>) -> Self {
        Self {
            live: Mutex::default(),
            ready: Arc::new(Ready::new(budget)),
            wake: Notify::new(),
            awaiting: AtomicUsize::new(0),
            opened: AtomicBool::new(false),
            max,
        }
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        // Every change is one step: a panic elsewhere leaves the maps whole.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks there is room for one more subscription.
    pub(crate) fn check_room(&self) -> Result<(), Refused> {
        let live = self.live();
        if live.closed {
            return Err(Refused::Closed);
        }
        if live.by_id.len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        Ok(())
    }

    /// Adds the subscription `id`, opened by the call `request`: its lane opens once that call's
    /// answer is on its way ([`answered`](Self::answered)). A lane fed from a topic's feed comes
    /// with its `reader`, taken when it is added: the first of the connection reads it alone (the
    /// common case: one subscription a connection, no hub between), the next ones together
    /// through the connection's hub of that feed.
    pub(crate) fn add(
        &self,
        id: &Id,
        request: Id,
        lane: &Arc<Lane>,
        unsubscribe: Arc<str>,
        reader: &mut Option<Reader>,
    ) -> Result<(), Refused> {
        let mut live = self.live();
        if live.closed {
            return Err(Refused::Closed);
        }
        if live.by_id.len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        if live.by_id.contains_key(id) {
            return Err(Refused::Taken);
        }
        live.by_id.insert(
            id.clone(),
            Entry {
                lane: Arc::clone(lane),
                unsubscribe,
            },
        );
        live.awaiting.push((request, Arc::clone(lane)));
        self.awaiting.fetch_add(1, Ordering::AcqRel);
        self.opened.store(true, Ordering::Release);
        if let Some(reader) = reader.take() {
            live.alone.retain(|(_, lane)| !lane.is_ended());
            let hub = if let Some(hub) = live.hubs.iter().find(|hub| hub.feed == reader.feed) {
                // The hub reads for it: its own reading is dropped.
                drop(lane.take_producer());
                hub.join(Arc::clone(lane), reader.rx);
                Arc::clone(hub)
            } else if let Some(at) = live.alone.iter().position(|(feed, _)| *feed == reader.feed) {
                // The hub reads through this subscription's own reading, which begins where the
                // subscription does (nothing to catch up), and takes in the one that read alone.
                let (_, first) = live.alone.swap_remove(at);
                let items = lane
                    .take_producer()
                    .unwrap_or_else(|| Box::pin(futures_util::stream::empty()));
                let hub = Arc::new(Hub::new(
                    reader.feed,
                    items,
                    Arc::clone(lane),
                    first,
                    &self.ready,
                ));
                self.ready.slot_hub(&hub);
                live.hubs.push(Arc::clone(&hub));
                hub
            } else {
                live.alone.push((reader.feed, Arc::clone(lane)));
                return Ok(());
            };
            drop(live);
            // Read at once: the feed's receiver is polled, and a lane that joined is caught up.
            self.ready.push_hub(&hub, true);
        }
        Ok(())
    }

    /// Opens the lanes whose subscribe call `answer` (an answer's text, or a batch of them)
    /// answers: their producers may be polled now, and their notifications follow it. Called with
    /// every outgoing text, in order, where the taker's texts join it: a look at a counter while
    /// no subscribe call waits.
    pub(crate) fn answered(&self, answer: &str) {
        if self.awaiting.load(Ordering::Acquire) == 0 {
            return;
        }
        #[derive(Deserialize)]
        struct Answer {
            id: Option<Id>,
        }
        let ids: Vec<Id> = if answer.trim_start().starts_with('[') {
            serde_json::from_str::<Vec<&RawValue>>(answer)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|one| serde_json::from_str::<Answer>(one.get()).ok()?.id)
                .collect()
        } else {
            serde_json::from_str::<Answer>(answer)
                .ok()
                .and_then(|answer| answer.id)
                .into_iter()
                .collect()
        };
        let mut opened = Vec::new();
        {
            let mut live = self.live();
            live.awaiting.retain(|(request, lane)| {
                if ids.contains(request) {
                    opened.push(Arc::clone(lane));
                    false
                } else {
                    true
                }
            });
        }
        self.awaiting.fetch_sub(opened.len(), Ordering::AcqRel);
        for lane in opened {
            lane.open();
            // Never polled yet, its producer cannot wake it: its first visit is queued here.
            self.ready.push(&lane, true);
        }
    }

    /// Returns where the lanes to visit meet, for a taker to hold.
    pub(crate) fn ready(&self) -> &Arc<Ready> {
        &self.ready
    }

    /// Returns whether a lane is to be visited.
    pub(crate) fn has_ready(&self) -> bool {
        self.ready.is_due()
    }

    /// Resolves once a producer woke since the last call (at once if one did), `waker`
    /// registered meanwhile: what a taker that waits for nothing else (the loop) waits on.
    pub(crate) fn poll_woken(&self, cx: &TaskContext<'_>) -> Poll<()> {
        let bell = &self.ready.bell;
        if bell.woken.swap(false, Ordering::AcqRel) {
            return Poll::Ready(());
        }
        bell.register(cx.waker());
        if bell.woken.swap(false, Ordering::AcqRel) {
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Returns the room notifications may take now (see [`Ready::room`]).
    pub(crate) fn room(&self) -> usize {
        self.ready.room()
    }

    /// Visits each lane to be visited once, in turn: moves their notifications to `out` while
    /// fewer than `room` bytes moved (at least one notification, when `room` is not 0), and polls
    /// their producers. With no room, producers are still polled, into their lanes: each lane's
    /// bound and policy apply.
    pub(crate) fn take(&self, room: usize, out: impl FnMut(String)) -> Taken {
        self.take_from(&self.ready, room, None, out)
    }

    /// Does what [`take`](Self::take) does, through `ready` (this registry's, which a taker holds
    /// itself: one cache line fewer to read than the registry's pointer to it).
    pub(crate) fn take_from(
        &self,
        ready: &Ready,
        room: usize,
        lone: Option<&Waker>,
        mut out: impl FnMut(String),
    ) -> Taken {
        let mut taken = Taken::default();
        if let Some(waker) = lone {
            self.visit_lone(ready, waker, room, &mut taken, &mut out);
        }
        // The lanes and hubs rung for, then those queued now: one rung again or pushed back
        // during the visits waits for the next call.
        let mut rung = ready.bell.take_rung();
        while rung != 0 {
            let slot = rung.trailing_zeros();
            rung &= rung - 1;
            match ready.slotted(slot) {
                None => {}
                Some(Visitor::Lane(lane)) => {
                    self.visit_lane(ready, &lane, room, &mut taken, &mut out, false);
                }
                Some(Visitor::Hub(hub)) => {
                    self.visit_hub(ready, &hub, room, &mut taken, &mut out, false)
                }
            }
        }
        let mut visits = if ready.has.load(Ordering::Acquire) {
            ready.visitors().len()
        } else {
            0
        };
        while visits > 0 {
            visits -= 1;
            match ready.pop() {
                None => break,
                Some(Visitor::Lane(lane)) => {
                    self.visit_lane(ready, &lane, room, &mut taken, &mut out, true);
                }
                Some(Visitor::Hub(hub)) => {
                    self.visit_hub(ready, &hub, room, &mut taken, &mut out, true)
                }
            }
        }
        if taken.again {
            // Polled again without a wake: a taker waiting on `poll_woken` comes back at once.
            ready.bell.woken.store(true, Ordering::Release);
        }
        taken
    }

    /// Visits the lone lane (see [`Ready::take_lone`]), its producer polled with `waker`; forgets
    /// it once its subscription is over and nothing waits in it.
    fn visit_lone(
        &self,
        ready: &Ready,
        waker: &Waker,
        room: usize,
        taken: &mut Taken,
        out: &mut dyn FnMut(String),
    ) {
        // Visited under the slots' lock: its `Arc` is not cloned (a line of its own, the counts).
        // What the visit leaves to drop (a producer that ended) goes after the lock.
        let slots = ready.slots();
        let Some(lane) = &slots.lone else {
            return;
        };
        let visit = lane.visit(room.saturating_sub(taken.moved), TURN, Some(waker), out);
        ready.take_room(visit.direct);
        taken.moved += visit.moved;
        taken.again |= visit.again;
        taken.lone_again = visit.requeue;
        if visit.close {
            taken.close = Some((lane.id.clone(), lane.bound_items, lane.bound_bytes));
        }
        let over = if visit.done || visit.spent {
            Some(Arc::clone(lane))
        } else {
            None
        };
        drop(slots);
        if let Some(lane) = over {
            if visit.spent {
                ready.forget_lone(Some(&lane));
            }
            if visit.done {
                self.finished(&lane);
            }
        }
    }

    #[inline]
    fn visit_lane(
        &self,
        ready: &Ready,
        lane: &Arc<Lane>,
        room: usize,
        taken: &mut Taken,
        out: &mut dyn FnMut(String),
        queued: bool,
    ) {
        // Before its producer is polled: a wake from now on queues it again.
        if queued {
            lane.queued.store(false, Ordering::Release);
        }
        // The lone lane is visited at each of the taker's polls, not rung for or queued.
        if lane.is_lone() {
            return;
        }
        let visit = lane.visit(room.saturating_sub(taken.moved), TURN, None, out);
        ready.take_room(visit.direct);
        taken.moved += visit.moved;
        if visit.done {
            self.finished(lane);
        }
        if visit.close {
            taken.close = Some((lane.id.clone(), lane.bound_items, lane.bound_bytes));
        }
        if visit.requeue {
            ready.push(lane, false);
            taken.again |= visit.again;
        }
    }

    fn visit_hub(
        &self,
        ready: &Ready,
        hub: &Arc<Hub>,
        room: usize,
        taken: &mut Taken,
        out: &mut dyn FnMut(String),
        queued: bool,
    ) {
        // Before its feed is read: a wake from now on queues it again.
        if queued {
            hub.queued.store(false, Ordering::Release);
        }
        let visit = hub.visit(room.saturating_sub(taken.moved), TURN, out);
        // All a hub moves went straight out.
        ready.take_room(visit.moved);
        taken.moved += visit.moved;
        for lane in &visit.finished {
            self.finished(lane);
        }
        if let Some(lane) = visit.close {
            taken.close = Some((lane.id.clone(), lane.bound_items, lane.bound_bytes));
        }
        if visit.done {
            self.live().hubs.retain(|live| !Arc::ptr_eq(live, hub));
        } else if visit.again {
            ready.push_hub(hub, false);
            taken.again = true;
        }
    }

    /// Ends subscription `id` when `unsubscribe` is the method that ends it: its producer is
    /// dropped, what waits with it too; returns whether it was live.
    pub(crate) fn remove(&self, id: &Id, unsubscribe: &str) -> bool {
        let entry = {
            let mut live = self.live();
            match live.by_id.get(id) {
                Some(entry) if *entry.unsubscribe == *unsubscribe => live.by_id.remove(id),
                _ => None,
            }
        };
        let Some(entry) = entry else {
            return false;
        };
        entry.lane.end();
        self.ready.forget_lone(Some(&entry.lane));
        // A hub left without lanes drops its receiver now, not at the feed's next item.
        let hubs = self.live().hubs.clone();
        let over: Vec<Arc<Hub>> = hubs.into_iter().filter(|hub| hub.prune()).collect();
        if !over.is_empty() {
            self.live()
                .hubs
                .retain(|live| !over.iter().any(|hub| Arc::ptr_eq(live, hub)));
        }
        true
    }

    /// Forgets the subscription of `lane`, which is over (its producer finished or failed, or it
    /// lagged): what waits in its lane still goes.
    fn finished(&self, lane: &Arc<Lane>) {
        {
            let mut live = self.live();
            // Unless the id went to another subscription since this one was unsubscribed.
            if live
                .by_id
                .get(&lane.id)
                .is_some_and(|entry| Arc::ptr_eq(&entry.lane, lane))
            {
                live.by_id.remove(&lane.id);
            }
        }
        // A loop that lives as long as its subscriptions looks again.
        self.wake.notify_one();
    }

    /// Ends every subscription (the connection closed): producers dropped at once, what waits
    /// dropped with them; none can be added any more.
    pub(crate) fn close(&self) {
        let (entries, awaiting, hubs) = {
            let mut live = self.live();
            live.closed = true;
            let awaiting = std::mem::take(&mut live.awaiting);
            self.awaiting.fetch_sub(awaiting.len(), Ordering::AcqRel);
            let entries: Vec<Entry> = live.by_id.drain().map(|(_, entry)| entry).collect();
            live.alone.clear();
            (entries, awaiting, std::mem::take(&mut live.hubs))
        };
        for entry in entries {
            entry.lane.end();
        }
        drop(awaiting);
        for hub in hubs {
            hub.end();
        }
        let visitors = {
            let mut visitors = self.ready.visitors();
            self.ready.has.store(false, Ordering::Release);
            std::mem::take(&mut *visitors)
        };
        // Their rings too: every lane and hub has ended.
        self.ready.bell.take_rung();
        if let Some(lane) = self.ready.forget_lone(None) {
            lane.end();
        }
        for visitor in visitors {
            // Ended with the rest, unless it was over already with notifications waiting.
            match visitor {
                Visitor::Lane(lane) => lane.end(),
                Visitor::Hub(hub) => hub.end(),
            }
        }
        self.wake.notify_one();
    }

    /// Returns whether a subscription is live, or notifications wait in a lane.
    pub(crate) fn any(&self) -> bool {
        self.has_ready() || self.ready.has_lone() || !self.live().by_id.is_empty()
    }

    /// Returns whether a subscription was ever opened here.
    #[allow(
        dead_code,
        reason = "an event stream that opened a subscription stays one"
    )]
    pub(crate) fn ever_opened(&self) -> bool {
        self.opened.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use futures_util::task::{ArcWake, waker};
    use tokio::sync::mpsc;

    use super::*;
    use crate::peer::subscription::items::{Produced, WhenFull};

    /// Counts the wakes of a taker's task.
    #[derive(Default)]
    struct Task(AtomicUsize);

    impl ArcWake for Task {
        fn wake_by_ref(task: &Arc<Self>) {
            task.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Task {
        fn wakes(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// Adds subscription `n`, answered, reading what is sent on the channel returned.
    fn subscribe(subscriptions: &Subscriptions, n: u32) -> mpsc::UnboundedSender<u32> {
        let (tx, mut rx) = mpsc::unbounded_channel::<u32>();
        let producer = Box::pin(futures_util::stream::poll_fn(move |cx| {
            rx.poll_recv(cx).map(|n| {
                n.map(|n| Produced::Item(RawValue::from_string(n.to_string()).expect("a number")))
            })
        }));
        let head = format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"subscription":{n},"#);
        let ready = subscriptions.ready();
        let lane = Arc::new(Lane::new(
            Id::from(n),
            head,
            (Some(producer), None),
            (16, 1 << 16, WhenFull::DropOldest),
            ready,
            Arc::clone(&ready.budget),
        ));
        let added = subscriptions.add(&Id::from(n), Id::from(n), &lane, "u".into(), &mut None);
        assert!(added.is_ok());
        ready.slot_lane(&lane);
        subscriptions.answered(&format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{n}}}"#));
        tx
    }

    /// Returns the `result` of each notification taken, visiting the lone lane with `task`.
    fn take(subscriptions: &Subscriptions, task: Option<&Arc<Task>>) -> Vec<String> {
        let task = task.map(|task| waker(Arc::clone(task)));
        let mut texts = Vec::new();
        let ready = subscriptions.ready();
        subscriptions.take_from(ready, usize::MAX, task.as_ref(), |text| texts.push(text));
        texts
            .iter()
            .map(|text| {
                let at = text.find(r#""result":"#).expect("a result") + 9;
                text[at..text.len() - 2].to_owned()
            })
            .collect()
    }

    #[test]
    fn a_lone_lane_wakes_the_taker_itself_until_a_second_lane_comes() {
        let subscriptions = Subscriptions::new(8, Arc::new(Watermark::new(1 << 20, None)));
        let ready = Arc::clone(subscriptions.ready());
        ready.take_lone();
        let task = Arc::new(Task::default());
        ready.bell.register(&waker(Arc::clone(&task)));
        let first = subscribe(&subscriptions, 1);
        assert!(ready.has_lone());
        assert!(take(&subscriptions, Some(&task)).is_empty());
        let before = task.wakes();
        first.send(10).expect("open");
        // The producer woke the task itself: nothing rung, nothing queued.
        assert_eq!(task.wakes(), before + 1);
        assert!(!ready.is_due());
        assert_eq!(take(&subscriptions, Some(&task)), ["10"]);
        // A second lane: the first takes a slot, rung once to be polled with its own waker.
        let second = subscribe(&subscriptions, 2);
        assert!(!ready.has_lone());
        assert!(ready.is_due());
        first.send(11).expect("open");
        assert_eq!(take(&subscriptions, None), ["11"]);
        // From now on its wakes ring its slot, as the second's do.
        first.send(12).expect("open");
        second.send(20).expect("open");
        assert!(ready.is_due());
        let mut taken = take(&subscriptions, None);
        taken.sort_unstable();
        assert_eq!(taken, ["12", "20"]);
    }

    #[test]
    fn an_unsubscribed_lone_lane_is_forgotten_with_its_producer() {
        let subscriptions = Subscriptions::new(8, Arc::new(Watermark::new(1 << 20, None)));
        let ready = Arc::clone(subscriptions.ready());
        ready.take_lone();
        let task = Arc::new(Task::default());
        let first = subscribe(&subscriptions, 1);
        assert!(ready.has_lone());
        assert!(take(&subscriptions, Some(&task)).is_empty());
        assert!(subscriptions.any());
        assert!(subscriptions.remove(&Id::from(1), "u"));
        assert!(!ready.has_lone());
        assert!(first.is_closed());
        assert!(!subscriptions.any());
    }
}
