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
    pub(crate) fn new(peer: &Peer) -> Self {
        Self {
            shared: Arc::clone(&peer.shared),
            ready: Arc::clone(peer.shared.subscriptions.ready()),
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
    /// polling the producers that woke (into their lanes when there is no room). The task that
    /// turns the set from [`wake_set`](Self::wake_set) is woken when a producer has more: the set's
    /// turn, first in each of its polls, registers it where a producer's wake finds it. Returns
    /// whether to come back without a wake: a producer may have more now.
    #[inline]
    pub(crate) fn take(&self, out: &mut VecDeque<String>) -> bool {
        let ready = &*self.ready;
        if !ready.is_due() {
            return false;
        }
        let room = ready.room();
        let taken = self
            .shared
            .subscriptions
            .take_from(ready, room, |text| out.push_back(text));
        taken.overflow(&self.shared);
        taken.again
    }
}
