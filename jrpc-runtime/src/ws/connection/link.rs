//! Links a connection's pump and its peer's loop: two lanes of at most [`RUNS`] runs
//! each, under a lock, with the wakers of the side waiting; and the peer's loop's ends of them,
//! its input ([`Reader`]) and its sink ([`Writer`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker, ready};

use futures_util::task::AtomicWaker;

use crate::framing::Frame;
use crate::limits::ServerBudget;
use crate::peer::Input;

/// Caps the messages that cross in one go, either way: a run of messages read (or written)
/// together crosses with one wake-up of the other task.
pub(super) const RUN: usize = 32;

/// Caps the runs each lane between the pump and the peer's loop holds.
const RUNS: usize = 2;

/// Holds what the pump and the peer's loop share: the runs crossing each way, and the bytes of
/// those handed to the peer's loop and not yet taken.
///
/// In place of two tokio channels: each allocates its shared state and its first block of 32
/// slots when made, about 1.3 KiB an idle connection holds; both ways here are one allocation.
pub(super) struct Link {
    /// Runs of messages read (and calls started), to the peer's loop.
    pub(super) inbound: Lane<Input>,
    /// Runs of texts written, to the pump.
    pub(super) outbound: Lane<String>,
    /// The bytes of the messages handed to the peer's loop and not yet taken by it.
    pub(super) bytes: AtomicUsize,
    /// The pump, waiting while a message would pass the room.
    pub(super) taken: AtomicWaker,
    /// The server's byte budget, which counts the messages handed across until taken.
    pub(super) server: Option<Arc<ServerBudget>>,
}

impl Link {
    pub(super) fn new(server: Option<Arc<ServerBudget>>) -> Arc<Self> {
        Arc::new(Self {
            inbound: Lane::default(),
            outbound: Lane::default(),
            bytes: AtomicUsize::new(0),
            taken: AtomicWaker::new(),
            server,
        })
    }

    pub(super) fn inbound(&self) -> &Lane<Input> {
        &self.inbound
    }

    pub(super) fn outbound(&self) -> &Lane<String> {
        &self.outbound
    }
}

impl Drop for Link {
    /// Gives back to the server's budget what was handed across and never taken (the connection
    /// ended).
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server.give_back(*self.bytes.get_mut());
        }
    }
}

/// Carries runs one way across: at most [`RUNS`] runs, from one sender to one taker.
pub(super) struct Lane<T> {
    state: Mutex<LaneState<T>>,
}

impl<T> Default for Lane<T> {
    fn default() -> Self {
        Self {
            state: Mutex::new(LaneState {
                runs: std::array::from_fn(|_| None),
                head: 0,
                len: 0,
                sent_all: false,
                gone: false,
                taker: None,
                sender: None,
            }),
        }
    }
}

pub(super) struct LaneState<T> {
    /// A ring of the runs waiting, oldest at `head`.
    runs: [Option<Vec<T>>; RUNS],
    head: usize,
    len: usize,
    /// The sender has ended: the taker sees the end once it has taken what waits.
    sent_all: bool,
    /// The taker has ended: nothing more can be sent.
    gone: bool,
    /// The taker, waiting for a run.
    taker: Option<Waker>,
    /// The sender, waiting for room.
    sender: Option<Waker>,
}

/// Says that the taker of a lane has ended.
#[derive(Debug)]
pub(super) struct Gone;

/// Keeps `cx`'s waker in `stored`, to be woken when the other side moves; a clone only when the
/// one kept would not wake the same task.
fn store_waker(stored: &mut Option<Waker>, cx: &TaskContext<'_>) {
    if !stored
        .as_ref()
        .is_some_and(|waker| waker.will_wake(cx.waker()))
    {
        *stored = Some(cx.waker().clone());
    }
}

impl<T> Lane<T> {
    fn lock(&self) -> MutexGuard<'_, LaneState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Polls for room: ready once a run may be sent, or the taker has ended.
    pub(super) fn poll_room(&self, cx: &TaskContext<'_>) -> Poll<Result<(), Gone>> {
        let mut state = self.lock();
        if state.gone {
            return Poll::Ready(Err(Gone));
        }
        if state.len < RUNS {
            return Poll::Ready(Ok(()));
        }
        store_waker(&mut state.sender, cx);
        Poll::Pending
    }

    /// Sends `run`, for which [`poll_room`](Self::poll_room) found room (the one sender is the
    /// only one to fill it); `Err` gives it back if the taker has ended or there is no room.
    pub(super) fn send(&self, run: Vec<T>) -> Result<(), Vec<T>> {
        let mut state = self.lock();
        debug_assert!(!state.sent_all, "a run sent after the sender ended");
        if state.gone || state.len == RUNS {
            return Err(run);
        }
        let at = (state.head + state.len) % RUNS;
        state.runs[at] = Some(run);
        state.len += 1;
        let taker = state.taker.take();
        drop(state);
        if let Some(taker) = taker {
            taker.wake();
        }
        Ok(())
    }

    /// Polls for the next run; `None` once the sender has ended and all is taken.
    pub(super) fn poll_take(&self, cx: &TaskContext<'_>) -> Poll<Option<Vec<T>>> {
        let mut state = self.lock();
        if state.len > 0 {
            let at = state.head;
            let run = state.runs[at].take();
            state.head = (at + 1) % RUNS;
            state.len -= 1;
            let sender = state.sender.take();
            drop(state);
            if let Some(sender) = sender {
                sender.wake();
            }
            return Poll::Ready(run);
        }
        if state.sent_all {
            return Poll::Ready(None);
        }
        store_waker(&mut state.taker, cx);
        Poll::Pending
    }

    /// Returns whether the taker found the lane empty and waits: it has taken, and dealt with,
    /// everything sent before.
    pub(super) fn taker_waits(&self) -> bool {
        self.lock().taker.is_some()
    }

    /// Ends the sending: the taker sees the end after what waits.
    fn end_sending(&self) {
        let mut state = self.lock();
        state.sent_all = true;
        let taker = state.taker.take();
        drop(state);
        if let Some(taker) = taker {
            taker.wake();
        }
    }

    /// Ends the taking: what waits is dropped, and the sender finds no more room.
    fn end_taking(&self) {
        let mut state = self.lock();
        state.gone = true;
        state.len = 0;
        let runs = std::mem::replace(&mut state.runs, std::array::from_fn(|_| None));
        let sender = state.sender.take();
        drop(state);
        drop(runs);
        if let Some(sender) = sender {
            sender.wake();
        }
    }
}

/// Holds the sending end of a lane: the lane's end when dropped.
pub(super) struct Sending<T: 'static> {
    pub(super) link: Arc<Link>,
    lane: fn(&Link) -> &Lane<T>,
}

impl<T> Sending<T> {
    pub(super) fn lane(&self) -> &Lane<T> {
        (self.lane)(&self.link)
    }
}

impl<T> Drop for Sending<T> {
    fn drop(&mut self) {
        self.lane().end_sending();
    }
}

/// Holds the taking end of a lane: the lane's end when dropped.
pub(super) struct Taking<T: 'static> {
    pub(super) link: Arc<Link>,
    lane: fn(&Link) -> &Lane<T>,
}

impl<T> Taking<T> {
    pub(super) fn lane(&self) -> &Lane<T> {
        (self.lane)(&self.link)
    }
}

impl<T> Drop for Taking<T> {
    fn drop(&mut self) {
        self.lane().end_taking();
        // A pump waiting for the peer's loop to take bytes would otherwise wait for the loop's
        // end to be seen some other way.
        self.link.taken.wake();
    }
}

/// Returns the two ends of `lane` of `link`.
pub(super) fn ends<T>(link: &Arc<Link>, lane: fn(&Link) -> &Lane<T>) -> (Sending<T>, Taking<T>) {
    (
        Sending {
            link: Arc::clone(link),
            lane,
        },
        Taking {
            link: Arc::clone(link),
            lane,
        },
    )
}

/// Acts as the peer's loop's sink: the texts it writes until it flushes cross to the pump as one
/// run, which leaves in one write.
pub(super) struct Writer {
    pub(super) tx: Sending<String>,
    pub(super) run: Vec<String>,
}

impl futures_util::Sink<String> for Writer {
    type Error = PumpGone;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<(), PumpGone>> {
        if self.run.len() < RUN {
            return Poll::Ready(Ok(()));
        }
        self.poll_flush(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, text: String) -> Result<(), PumpGone> {
        self.run.push(text);
        Ok(())
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Result<(), PumpGone>> {
        if !self.run.is_empty() {
            ready!(self.tx.lane().poll_room(cx)).map_err(|_| PumpGone)?;
            let run = std::mem::take(&mut self.run);
            self.tx.lane().send(run).map_err(|_| PumpGone)?;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Result<(), PumpGone>> {
        ready!(self.as_mut().poll_flush(cx))?;
        self.tx.lane().end_sending();
        Poll::Ready(Ok(()))
    }
}

/// Reports the writer's error once the pump is gone (the socket closed).
#[derive(Debug)]
pub(super) struct PumpGone;

impl std::fmt::Display for PumpGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the WebSocket is closed")
    }
}

/// Acts as the peer's loop's input: the runs of messages the pump handed across, one at a time.
pub(super) struct Reader {
    pub(super) frames: Taking<Input>,
    pub(super) run: std::vec::IntoIter<Input>,
}

impl futures_util::Stream for Reader {
    type Item = Result<Input, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(frame) = self.run.next() {
                if let Input::Frame(Frame::Message(text)) = &frame {
                    let link = &self.frames.link;
                    link.bytes.fetch_sub(text.len(), Ordering::AcqRel);
                    if let Some(server) = &link.server {
                        server.give_back(text.len());
                    }
                    link.taken.wake();
                }
                return Poll::Ready(Some(Ok(frame)));
            }
            match ready!(self.frames.lane().poll_take(cx)) {
                Some(run) => self.run = run.into_iter(),
                None => return Poll::Ready(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use super::*;

    #[test]
    fn a_lane_holds_at_most_its_runs_and_ends_after_them() {
        let cx = TaskContext::from_waker(Waker::noop());
        let link = Link::new(None);
        let (tx, rx) = ends(&link, Link::outbound);
        for text in ["a", "b"] {
            assert!(matches!(tx.lane().poll_room(&cx), Poll::Ready(Ok(()))));
            assert!(tx.lane().send(vec![text.to_owned()]).is_ok());
        }
        assert!(tx.lane().poll_room(&cx).is_pending());
        assert!(tx.lane().send(vec!["c".to_owned()]).is_err());
        assert!(matches!(rx.lane().poll_take(&cx), Poll::Ready(Some(run)) if run == ["a"]));
        assert!(matches!(tx.lane().poll_room(&cx), Poll::Ready(Ok(()))));
        // The sender's end: what waits is still taken, then the end.
        drop(tx);
        assert!(matches!(rx.lane().poll_take(&cx), Poll::Ready(Some(run)) if run == ["b"]));
        assert!(matches!(rx.lane().poll_take(&cx), Poll::Ready(None)));
    }

    #[test]
    fn a_lane_whose_taker_ended_takes_nothing_more() {
        let cx = TaskContext::from_waker(Waker::noop());
        let link = Link::new(None);
        let (tx, rx) = ends(&link, Link::inbound);
        assert!(
            tx.lane()
                .send(vec![Input::Frame(Frame::Message("{}".into()))])
                .is_ok()
        );
        assert!(rx.lane().poll_take(&cx).is_ready());
        assert!(
            tx.lane()
                .send(vec![Input::Frame(Frame::Message("{}".into()))])
                .is_ok()
        );
        drop(rx);
        assert!(matches!(tx.lane().poll_room(&cx), Poll::Ready(Err(Gone))));
        assert!(
            tx.lane()
                .send(vec![Input::Frame(Frame::Message("{}".into()))])
                .is_err()
        );
        // What waited was dropped with the taker's end.
        assert_eq!(link.inbound.lock().len, 0);
    }

    #[tokio::test]
    async fn a_lane_wakes_its_taker_and_its_sender() {
        let link = Link::new(None);
        let (tx, rx) = ends(&link, Link::outbound);
        let taker = tokio::spawn(async move {
            let mut taken = Vec::new();
            while let Some(run) = poll_fn(|cx| rx.lane().poll_take(cx)).await {
                taken.extend(run);
            }
            taken
        });
        for n in 0..100 {
            poll_fn(|cx| tx.lane().poll_room(cx)).await.unwrap();
            tx.lane().send(vec![n.to_string()]).unwrap();
        }
        drop(tx);
        let taken = taker.await.unwrap();
        let sent: Vec<String> = (0..100).map(|n| n.to_string()).collect();
        assert_eq!(taken, sent);
    }
}
