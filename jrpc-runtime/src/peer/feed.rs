//! Provides the peer's feed: the seam a transport that reads in a task of its own (a WebSocket's
//! pump) drives the connection's loop through, instead of copying its rules. A call whose handler
//! finishes in its first poll is answered where it is read, without crossing to the loop and back
//! (a wake-up of another task each way); everything else goes to the loop as [`Input`].
//!
//! The loop's rules hold for what is answered here:
//! - Order. The reader answers here only while the loop has dealt with everything handed to it
//!   before and waits for more (so no notification handler runs), and nothing sent before waits
//!   to be written ([`caught_up`](Feed::caught_up): every outgoing text holds its room in the
//!   byte budget until the socket has it); once it hands a message over, the rest of what it
//!   read goes over too. The reader knows what it handed over; [`Feed`] does not.
//! - A handler's pushes go out before its answer, and before what follows. When a handle began
//!   to send anything while the handler ran, its answer is queued behind, through the loop's
//!   command queue ([`Read::Queued`]), and the reader hands over what it reads next.
//! - The in-flight cap and the budget. Past the cap, or while half the budget is taken (when the
//!   loop stops reading too), nothing is answered here: the loop refuses, or waits. An answer
//!   takes its room in the budget as the loop's do.
//! - A handler that waits goes to the loop started ([`Input::Waiting`]), and runs there as any
//!   call that waits: in a task of its own, counted in flight, cancellable. A notification's
//!   holds up the reading until it ends.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use super::answer::admit;
use super::connection::{Command, Input};
use super::handle::{Peer, Shared};
use crate::dispatch::{Context, FirstPoll, Methods};
use crate::limits::Room;
use crate::wire::write;

/// Feeds a connection's loop from a reader in a task of its own, answering where they are read
/// the calls that finish at once (see the module docs).
#[allow(
    dead_code,
    reason = "a transport that reads in a task of its own feeds the loop"
)]
pub(crate) struct Feed {
    methods: Methods,
    /// The connection's context, the loop's own.
    ctx: Context,
    shared: Arc<Shared>,
    /// The loop's command queue, for an answer that goes behind its handler's pushes.
    commands: mpsc::WeakSender<Command>,
    max_in_flight: usize,
    /// The cancellation notice's method, which only the loop honours.
    notice: Option<&'static str>,
}

/// Says what [`Feed::read`] did with a message.
#[allow(
    dead_code,
    reason = "a transport that reads in a task of its own feeds the loop"
)]
pub(crate) enum Read {
    /// Answered: the text to write, which took its room in the budget.
    Answered(String),
    /// Nothing to write: a notification handled (that sent nothing), or an answer that found no
    /// room (the connection is closing).
    Done,
    /// Handled, and something was sent while its handler ran: its answer, if any, is queued
    /// behind that, through the loop; what follows must go through the loop too.
    Queued,
    /// Its handler waits: the call, for the loop.
    Waiting(Input),
    /// Not read here (a batch, an answer, a method not in the table, the cancellation notice):
    /// the text goes to the loop as it is.
    Other,
}

#[allow(
    dead_code,
    reason = "a transport that reads in a task of its own feeds the loop"
)]
impl Feed {
    /// Returns the feed of the connection of `peer`, whose calls start on the loop's `ctx`,
    /// under the connection's in-flight cap and past its cancellation notice's method (which
    /// only the loop honours).
    pub(crate) fn new(
        methods: Methods,
        ctx: Context,
        peer: &Peer,
        max_in_flight: usize,
        notice: Option<&'static str>,
    ) -> Self {
        Self {
            methods,
            ctx,
            shared: Arc::clone(&peer.shared),
            commands: peer.tx.weak(),
            max_in_flight,
            notice,
        }
    }

    /// Returns whether nothing sent before waits to be written (in the loop's queue, on the way to the
    /// reader, or in the reader's own buffers): every outgoing text holds its room in the byte
    /// budget until the socket has it. What is answered here then goes out in order.
    pub(crate) fn caught_up(&self) -> bool {
        self.shared.budget.held() == 0
    }

    /// Returns whether the connection lets calls be answered here now: under the in-flight cap, with
    /// less than half the budget taken.
    pub(crate) fn open(&self) -> bool {
        self.shared.handling.load(Ordering::Acquire) < self.max_in_flight
            && self.shared.budget.may_read()
            && !self.shared.notifying.load(Ordering::Acquire)
    }

    /// Reads `text` and answers it here if it is a request for a method of the table whose
    /// handler finishes in its first poll.
    pub(crate) fn read(&self, text: &str) -> Read {
        let pushes = self.shared.pushes.load(Ordering::Acquire);
        let Some(started) = self.methods.start_body(text, &self.ctx, self.notice) else {
            return Read::Other;
        };
        let (id, method) = (started.id().cloned(), started.method());
        let answer = match self.methods.run_once(started, &self.ctx) {
            FirstPoll::Answered(answer) => answer.map(write::text),
            FirstPoll::Waiting(started, span) => {
                return Read::Waiting(Input::from((started.into_owned(), span)));
            }
        };
        let pushed = self.shared.pushes.load(Ordering::Acquire) != pushes;
        let Ok(answer) = admit(&self.shared, answer, Some(&method), id.as_ref()) else {
            return Read::Done;
        };
        match (answer, pushed) {
            (Some(answer), false) => Read::Answered(answer),
            (Some(answer), true) => {
                self.queue(answer);
                Read::Queued
            }
            (None, true) => Read::Queued,
            (None, false) => Read::Done,
        }
    }

    /// Queues an answer, which took its room, behind what its handler sent.
    fn queue(&self, text: String) {
        let room = Room::taken(&self.shared.budget, text.len());
        let command = Command::Notify { text };
        match self.commands.upgrade().map(|tx| tx.try_send(command)) {
            Some(Ok(())) => room.keep(),
            Some(Err(mpsc::error::TrySendError::Full(command))) => {
                // The queue is full: a task waits for room, in turn, holding the queue only
                // weakly (as the loop's own such tasks do), so no handle is made up meanwhile.
                let commands = self.commands.clone();
                tokio::spawn(async move {
                    if let Some(tx) = commands.upgrade()
                        && tx.send(command).await.is_ok()
                    {
                        room.keep();
                    }
                });
            }
            // The loop is ending: the room goes back as `room` drops.
            Some(Err(mpsc::error::TrySendError::Closed(_))) | None => {}
        }
    }
}
