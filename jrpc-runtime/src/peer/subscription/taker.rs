//! Provides the seam a transport that writes in a task of its own (a WebSocket's pump) takes its
//! connection's subscription notifications through, instead of the connection's loop: one
//! wake-up of the task that writes the socket per item published, rather than one of the loop and
//! another of the writer.
//!
//! The loop's rules hold:
//! - The subscribe call's answer goes first. A lane opens as the writer takes the answer
//!   ([`Notifications::answered`], called with every text the loop hands it, in order), so its
//!   notifications, taken after, go behind it.
//! - A subscription's notifications keep their order: the writer is their only taker (the loop
//!   leaves them alone, [`PeerConfig`](crate::peer::PeerConfig)'s `notifications_by_sink`).
//! - A slow reader: they go out while what is on its way to the other side is under a quarter of
//!   the watermark, as the loop lets them, and wait in their lanes past that.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;

use crate::limits::Watermark;
use crate::peer::handle::{Peer, Shared};

#[cfg(feature = "ws")]
use crate::woken::WakeSet;

#[cfg(feature = "ws")]
use super::lane::Bell;
use super::lane::Ready;

/// Wakes a taker's other sources, their flags on its notifications' bell (see
/// [`Notifications::wake_set`]).
#[cfg(feature = "ws")]
pub(crate) type TakerWakes = WakeSet<Bell>;

/// Takes a connection's subscription notifications for a writer in a task of its own (see the
/// module docs).
pub(crate) struct Notifications {
    shared: Arc<Shared>,
    /// Where the connection's lanes to visit meet, and its watermark (`Shared::budget`), held
    /// here: every take reads them, and a pointer here is one cache line fewer to fetch than the
    /// one in `Shared`.
    ready: Arc<Ready>,
}

#[allow(
    dead_code,
    reason = "a transport that writes in a task of its own takes the notifications"
)]
impl Notifications {
    /// Returns the notifications of `peer`'s connection, whose loop must leave them to the sink.
    /// The taker visits the connection's first subscription, while it is the only one, in each
    /// poll of its task (see [`take`](Self::take)): its producer is polled with the task's own
    /// waker, so that a publish wakes the task with no line between.
    pub(crate) fn new(peer: &Peer) -> Self {
        let ready = Arc::clone(peer.shared.subscriptions.ready());
        ready.take_lone();
        Self {
            shared: Arc::clone(&peer.shared),
            ready,
        }
    }

    /// Returns the connection's watermark: what the writer takes holds its room there until the
    /// socket has it.
    pub(crate) fn budget(&self) -> &Watermark {
        &self.ready.budget
    }

    /// Returns a wake set of `parts` parts for the taker's other sources, their flags kept on the
    /// line each take reads for the notifications: a turn for an item learns which of them woke
    /// without a line of their own. The taker's waker is the set's: the set's turn registers it
    /// (a take registers none).
    #[cfg(feature = "ws")]
    pub(crate) fn wake_set(&self, parts: usize) -> TakerWakes {
        WakeSet::within(Arc::clone(&self.ready.bell), parts)
    }

    /// Opens the lanes of the subscriptions whose subscribe call `text`, a text the writer takes
    /// from the loop, answers. A look at a counter while no subscribe call waits for its answer.
    pub(crate) fn answered(&self, text: &str) {
        self.shared.subscriptions.answered(text);
    }

    /// Moves the notifications ready now to `out` while little is on its way to the other side,
    /// polling the producers that woke (into their lanes when there is no room), and with `lone`
    /// the lone subscription's, with `waker`, the task's: the taker asks for it in the first take
    /// of each poll of its task (a wake of its producer is a wake of the task, which nothing else
    /// tells apart), and `lone` is left set while notifications wait in it. The task that turns
    /// the set from [`wake_set`](Self::wake_set) is woken when another producer has more: the
    /// set's turn, first in each of its polls, registers it where a producer's wake finds it.
    /// Returns whether to come back without a wake: a producer may have more now.
    #[inline]
    pub(crate) fn take(&self, waker: &Waker, lone: &mut bool, out: &mut VecDeque<String>) -> bool {
        let ready = &*self.ready;
        let visit_lone = *lone && ready.has_lone();
        if !visit_lone && !ready.is_due() {
            *lone = false;
            return false;
        }
        let room = ready.room();
        let taken =
            self.shared
                .subscriptions
                .take_from(ready, room, visit_lone.then_some(waker), |text| {
                    out.push_back(text)
                });
        *lone = taken.lone_again;
        taken.overflow(&self.shared);
        taken.again
    }
}
