//! Keeps the subscriptions of one connection: their lanes by id, the cap, the lanes that wait for
//! their subscribe call's answer, and the lanes that have notifications for the loop.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::lane::Lane;
use crate::wire::Id;

/// How many notifications the loop takes from one lane before the next lane's turn.
const TURN: usize = 16;

/// Holds the subscriptions of one connection (see the [module docs](self)).
pub(crate) struct Subscriptions {
    live: Mutex<Live>,
    /// The lanes with notifications for the loop, in turn.
    ready: Mutex<VecDeque<Arc<Lane>>>,
    /// Whether `ready` holds a lane: what the loop looks at, without the lock.
    has_ready: AtomicBool,
    /// Woken when a lane joins `ready`.
    pub(crate) wake: Notify,
    /// The bytes waiting in the lanes, which the watermark counts too.
    pub(super) waiting: Arc<AtomicUsize>,
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
    closed: bool,
}

struct Entry {
    lane: Arc<Lane>,
    /// The unsubscribe method that ends it: another one answers `false`.
    unsubscribe: Arc<str>,
    producer: Option<AbortHandle>,
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

impl Subscriptions {
    /// Returns an empty registry for at most `max` subscriptions.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            live: Mutex::default(),
            ready: Mutex::default(),
            has_ready: AtomicBool::new(false),
            wake: Notify::new(),
            waiting: Arc::default(),
            awaiting: AtomicUsize::new(0),
            opened: AtomicBool::new(false),
            max,
        }
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        // Every change is one step: a panic elsewhere leaves the maps whole.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ready_lanes(&self) -> MutexGuard<'_, VecDeque<Arc<Lane>>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
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
    /// answer is queued ([`answered`](Self::answered)).
    pub(crate) fn add(
        &self,
        id: &Id,
        request: Id,
        lane: &Arc<Lane>,
        unsubscribe: Arc<str>,
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
                producer: None,
            },
        );
        live.awaiting.push((request, Arc::clone(lane)));
        self.awaiting.fetch_add(1, Ordering::AcqRel);
        self.opened.store(true, Ordering::Release);
        Ok(())
    }

    /// Keeps the handle of subscription `id`'s producer, to drop it when the subscription ends.
    pub(crate) fn set_producer(&self, id: &Id, producer: AbortHandle) {
        match self.live().by_id.get_mut(id) {
            Some(entry) => entry.producer = Some(producer),
            // Ended already (unsubscribed, or the connection closed).
            None => producer.abort(),
        }
    }

    /// Opens the lanes whose subscribe call `answer` (an answer's text, or a batch of them)
    /// answers: their notifications may follow it now.
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
            if lane.open() {
                self.queue(lane);
            }
        }
    }

    /// Queues `lane`, which has notifications, for the loop.
    pub(crate) fn queue(&self, lane: Arc<Lane>) {
        self.ready_lanes().push_back(lane);
        self.has_ready.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Returns whether a lane has notifications for the loop.
    pub(crate) fn has_ready(&self) -> bool {
        self.has_ready.load(Ordering::Acquire)
    }

    /// Returns the bytes waiting in the lanes.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Moves notifications from the lanes to `out`, a few of each in turn, until `room` bytes
    /// moved (at least one notification) or none waits.
    pub(crate) fn take(&self, room: usize, mut out: impl FnMut(String)) {
        let mut moved = 0;
        while moved < room.max(1) {
            let Some(lane) = self.ready_lanes().pop_front() else {
                break;
            };
            let (bytes, more) = lane.take(TURN, &mut out);
            moved += bytes;
            if more {
                self.ready_lanes().push_back(lane);
            }
        }
        let empty = self.ready_lanes().is_empty();
        self.has_ready.store(!empty, Ordering::Release);
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
        end(entry);
        true
    }

    /// Forgets subscription `id`, whose producer finished: what waits in its lane still goes.
    pub(crate) fn finished(&self, id: &Id) {
        self.live().by_id.remove(id);
        // A loop that lives as long as its subscriptions looks again.
        self.wake.notify_one();
    }

    /// Ends every subscription (the connection closed): producers dropped at once, what waits
    /// dropped with them; none can be added any more.
    pub(crate) fn close(&self) {
        let entries: Vec<Entry> = {
            let mut live = self.live();
            live.closed = true;
            let awaiting = std::mem::take(&mut live.awaiting).len();
            self.awaiting.fetch_sub(awaiting, Ordering::AcqRel);
            live.by_id.drain().map(|(_, entry)| entry).collect()
        };
        for entry in entries {
            end(entry);
        }
        self.ready_lanes().clear();
        self.has_ready.store(false, Ordering::Release);
        self.wake.notify_one();
    }
}

impl Subscriptions {
    /// Returns whether a subscription is live, or notifications wait in a lane.
    pub(crate) fn any(&self) -> bool {
        self.has_ready() || !self.live().by_id.is_empty()
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

/// Ends a subscription taken out of the registry.
fn end(entry: Entry) {
    if let Some(producer) = entry.producer {
        producer.abort();
    }
    entry.lane.end();
}
