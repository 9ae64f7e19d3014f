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

use crate::limits::Watermark;
use crate::peer::Notifications;

/// Holds what waits to be written: the peer's next text, a ping, whether a flush is owed.
#[derive(Default)]
pub(super) struct Outbox {
    /// The run of texts being written.
    run: std::vec::IntoIter<String>,
    /// Answers the pump made itself, to write after the run.
    answers: VecDeque<String>,
    /// Subscriptions' notifications taken, to write after those.
    notes: VecDeque<String>,
    next: Option<Message>,
    pub(super) ping: bool,
    unflushed: bool,
    /// Bytes of the peer's texts taken since the last flush: their room in the budget is given
    /// back once the flush has handed them to the socket.
    taken: usize,
    /// A run was taken (or a ping queued): flush once nothing more waits.
    flush: bool,
    /// The most bytes written between two flushes since tungstenite was made: what its write
    /// buffer keeps.
    most: usize,
    /// The peer's loop has dropped its writer.
    ended: bool,
}

impl Outbox {
    /// Returns whether nothing waits to be written or flushed.
    pub(super) fn settled(&self) -> bool {
        self.next.is_none()
            && !self.unflushed
            && !self.ping
            && self.run.as_slice().is_empty()
            && self.answers.is_empty()
            && self.notes.is_empty()
    }

    /// Returns the most bytes written between two flushes since tungstenite was made (see
    /// [`renewed`](Self::renewed)).
    pub(super) fn most(&self) -> usize {
        self.most
    }

    /// Notes that tungstenite was made anew, its write buffer empty.
    pub(super) fn renewed(&mut self) {
        self.most = 0;
    }

    /// Returns where the pump's own answers go, while nothing waits to be written or flushed;
    /// `None` while something does, so that they wait for the socket as the peer's loop's do.
    pub(super) fn answers(&mut self) -> Option<&mut VecDeque<String>> {
        let idle = self.next.is_none()
            && !self.unflushed
            && self.run.as_slice().is_empty()
            && self.notes.is_empty();
        (idle && self.answers.is_empty()).then_some(&mut self.answers)
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
        budget: &Watermark,
        notifications: &Notifications,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Result<(), WsError>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        loop {
            if self.next.is_none() {
                if self.ping {
                    self.ping = false;
                    self.flush = true;
                    self.next = Some(Message::Ping(Bytes::new()));
                } else if let Some(text) = self.run.next() {
                    self.taken += text.len();
                    self.next = Some(Message::Text(text.into()));
                } else if let Some(text) = self.answers.pop_front() {
                    self.taken += text.len();
                    self.flush = true;
                    self.next = Some(Message::Text(text.into()));
                } else if let Some(text) = self.notes.pop_front() {
                    self.taken += text.len();
                    self.next = Some(Message::Text(text.into()));
                } else if !self.ended {
                    match take_run() {
                        Poll::Ready(Some(run)) => {
                            // A subscription's lane opens as its subscribe call's answer comes.
                            for text in &run {
                                notifications.answered(text);
                            }
                            // Take what else waits first: it goes out in the same write.
                            self.run = run.into_iter();
                            self.flush = true;
                            continue;
                        }
                        Poll::Ready(None) => self.ended = true,
                        Poll::Pending => {
                            // The loop has nothing more: the notifications ready go out, in
                            // the same write.
                            self.take_notes(notifications, cx);
                            if !self.notes.is_empty() {
                                self.flush = true;
                                continue;
                            }
                        }
                    }
                }
            }
            if let Some(message) = self.next.take() {
                match ws.poll_ready_unpin(cx) {
                    Poll::Ready(Ok(())) => {
                        ws.start_send_unpin(message)?;
                        self.unflushed = true;
                        continue;
                    }
                    Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                    Poll::Pending => {
                        self.next = Some(message);
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
                self.most = self.most.max(self.taken);
                budget.give_back(std::mem::take(&mut self.taken));
                // The room given back may be what notifications waiting in their lanes wait
                // for: nothing else wakes this task for them.
                self.take_notes(notifications, cx);
                if !self.notes.is_empty() {
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
        if !self.ended && notifications.take(cx, &mut self.notes) {
            // A producer may have more: come back after the others' turn.
            cx.waker().wake_by_ref();
        }
    }
}
