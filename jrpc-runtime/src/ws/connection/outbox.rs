//! Runs the pump's writing side: the peer's texts, the pump's own answers and pings, and the
//! subscriptions' notifications, to the socket.
//!
//! The notifications are taken here rather than by the peer's loop ([`Notifications`]): a
//! published item wakes this task alone, which polls the producers that woke and writes their
//! notifications in one flush. They are taken once the loop has handed over nothing more (each
//! text it hands over may be a subscribe call's answer, which opens its lane), and while the
//! socket waits, so that a client that reads slowly meets each subscription's bound and policy.

use std::collections::VecDeque;
use std::task::{Context as TaskContext, Poll};

use futures_util::SinkExt as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::{Bytes, Message};

use crate::peer::Notifications;

/// Sets how much may be written at once before tungstenite is made anew. Its buffers keep the size
/// of the largest frame read, and of the most written between two flushes, for as long as they
/// live: they are made anew once it holds nothing after its read buffer grew (that growth counts in
/// the server's budget), or after more than this was written at once.
const RENEW_WRITTEN: usize = 64 * 1024;

/// Holds what waits to be written: the texts in their order, a ping, whether a flush is owed.
///
/// 48 bytes, its fields in their order (`repr(C)`): a turn for a notification reads them all, in
/// every open connection's task in turn.
#[repr(C)]
#[derive(Default)]
pub(super) struct Outbox {
    /// The texts to write, in order: the peer's run, then the pump's own answers (made only
    /// while nothing waits), then the subscriptions' notifications taken. The first stays here
    /// until the socket takes it.
    queue: VecDeque<String>,
    /// Bytes of the texts written since the last flush: their room in the budget is given back
    /// once the flush has handed them to the socket.
    taken: usize,
    /// Whether tungstenite's buffers grew since it was made (see [`RENEW_WRITTEN`]): it is to be
    /// made anew once it holds nothing.
    renew: bool,
    pub(super) ping: bool,
    unflushed: bool,
    /// Texts (or a ping) were taken: flush once nothing more waits.
    flush: bool,
    /// The peer's loop has dropped its writer.
    ended: bool,
    /// The connection's lone subscription is to be visited at the next take ([`Notifications`]):
    /// from the first turn of each of the task's polls until a take visited it with nothing left
    /// waiting in it.
    lone_due: bool,
    /// The next turn goes on with the task's poll (the one before ended with an event, and
    /// nothing was awaited since): it leaves `lone_due` as it is.
    carried: bool,
}

impl Outbox {
    /// Notes that a turn of the pump begins: the first of a poll of its task visits the lone
    /// subscription, whose producer holds the task's waker and may have woken it.
    pub(super) fn turn_begins(&mut self) {
        if !std::mem::take(&mut self.carried) {
            self.lone_due = true;
        }
    }

    /// Notes that the next turn goes on with this poll of the task (an event of the turn before
    /// was handled, nothing awaited): a wake since the lone subscription's visit polls the task
    /// again, so that turn need not visit it.
    pub(super) fn carry_on(&mut self) {
        self.carried = true;
    }

    /// Notes that the pump awaited something else: the next turn may begin a poll of the task.
    pub(super) fn awaited(&mut self) {
        self.carried = false;
    }

    /// Returns whether nothing waits to be written or flushed.
    pub(super) fn settled(&self) -> bool {
        !self.unflushed && !self.ping && self.queue.is_empty()
    }

    /// Returns whether tungstenite's buffers grew since it was made: a large frame was read, or
    /// more than [`RENEW_WRITTEN`] written at once.
    pub(super) fn renewal_wanted(&self) -> bool {
        self.renew
    }

    /// Notes that tungstenite's read buffer grew.
    pub(super) fn grew(&mut self) {
        self.renew = true;
    }

    /// Notes that tungstenite was made anew, its buffers small.
    pub(super) fn renewed(&mut self) {
        self.renew = false;
    }

    /// Returns where the pump's own answers go, while nothing waits to be written or flushed;
    /// `None` while something does, so that they wait for the socket as the peer's loop's do.
    pub(super) fn answers(&mut self) -> Option<&mut VecDeque<String>> {
        (!self.unflushed && self.queue.is_empty()).then_some(&mut self.queue)
    }

    /// Moves texts from the peer (each run `take_run` takes from the peer's loop), and
    /// notifications, to the socket, a ping first when one is due; flushes when no more is
    /// waiting. Ready (`Ok`) once the peer's loop has ended and all
    /// is flushed.
    ///
    /// All state lives in `self`, so the future built on this may be dropped at any await.
    pub(super) fn poll<S>(
        &mut self,
        ws: &mut WebSocketStream<S>,
        mut take_run: impl FnMut() -> Poll<Option<Vec<String>>>,
        notifications: &Notifications,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Result<(), WsError>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        loop {
            if !self.ping && self.queue.is_empty() && !self.ended {
                match take_run() {
                    Poll::Ready(Some(run)) => {
                        // A subscription's lane opens as its subscribe call's answer comes.
                        for text in &run {
                            notifications.answered(text);
                        }
                        // Take what else waits first: it goes out in the same write.
                        self.queue.extend(run);
                        self.flush = true;
                        continue;
                    }
                    Poll::Ready(None) => self.ended = true,
                    Poll::Pending => {
                        // The loop has nothing more: the notifications ready go out, in the
                        // same write.
                        self.take_notes(notifications, cx);
                        if !self.queue.is_empty() {
                            self.flush = true;
                            continue;
                        }
                    }
                }
            }
            if self.ping || !self.queue.is_empty() {
                match ws.poll_ready_unpin(cx) {
                    Poll::Ready(Ok(())) => {
                        let message = if std::mem::take(&mut self.ping) {
                            self.flush = true;
                            Message::Ping(Bytes::new())
                        } else {
                            let Some(text) = self.queue.pop_front() else {
                                continue;
                            };
                            self.taken += text.len();
                            self.flush = true;
                            Message::Text(text.into())
                        };
                        ws.start_send_unpin(message)?;
                        self.unflushed = true;
                        continue;
                    }
                    Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                    Poll::Pending => {
                        // While the socket waits, producers are still polled: into their lanes
                        // once what is on its way is enough.
                        self.take_notes(notifications, cx);
                        return Poll::Pending;
                    }
                }
            }
            if self.unflushed && (self.flush || self.ended) {
                match ws.poll_flush_unpin(cx) {
                    Poll::Ready(flushed) => flushed?,
                    Poll::Pending => {
                        self.take_notes(notifications, cx);
                        return Poll::Pending;
                    }
                }
                self.unflushed = false;
                self.flush = false;
                self.renew |= self.taken > RENEW_WRITTEN;
                notifications
                    .budget()
                    .give_back(std::mem::take(&mut self.taken));
                // The room given back may be what notifications waiting in their lanes wait
                // for: nothing else wakes this task for them.
                self.take_notes(notifications, cx);
                if !self.queue.is_empty() {
                    self.flush = true;
                    continue;
                }
            }
            return if self.ended {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            };
        }
    }

    /// Takes the subscriptions' notifications ready (while the loop is running: once it has
    /// ended, its subscriptions have too).
    fn take_notes(&mut self, notifications: &Notifications, cx: &mut TaskContext<'_>) {
        if !self.ended && notifications.take(cx.waker(), &mut self.lone_due, &mut self.queue) {
            // A producer may have more: come back after the others' turn.
            cx.waker().wake_by_ref();
        }
    }
}
