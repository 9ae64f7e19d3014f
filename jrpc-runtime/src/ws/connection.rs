//! One WebSocket served as a [`Peer`]: the pump between the socket and the peer's loop.
//!
//! The peer's loop reads frames from one lane of a shared link and writes texts into the other;
//! a pump task owns the socket and moves messages between the two, so that it alone decides
//! about control frames (pings, the close handshake) and close codes. The peer's loop runs in a
//! task of its own, so that a connection's reading, handling and writing overlap. The link (two
//! lanes of at most two runs each, under a lock, with the wakers of the side waiting) stands in
//! for two tokio channels, which would cost an idle connection about 3 KiB more: each allocates
//! a block of 32 slots when it is made.
//!
//! A call whose handler finishes in its first poll (most do) never crosses: the pump answers it
//! where it reads it ([`Direct`]), and writes the answer with the others it made, without a
//! wake-up of the peer's loop either way. It does so only while the loop has dealt with all it
//! was handed and waits for more, and nothing written before (by the loop, a handle or the pump)
//! waits for the socket; once it hands a message over, or a handler sent something while it ran
//! (its answer then goes behind that, through the loop), the rest of what it read goes over too.
//! So messages keep their order: a notification handler that waits still holds up what follows
//! it, and what a handler sends goes out before its answer and before the answers that follow.
//! A call whose handler waits crosses begun, and runs in a task of its own as any call that
//! waits.
//!
//! Messages cross in runs: the pump reads what the socket has (up to 32 messages) and hands it
//! all across before it waits again, and the peer's loop writes all its answers before it
//! flushes, so that the two tasks wake each other once per run rather than once per message.
//! What crosses stays bounded. The messages handed to the peer's loop and not yet taken hold at
//! most its `max_message_size` in bytes together (or one message, however large), and one more,
//! read while they did not fit, waits in the pump, which reads the socket no further. Outgoing
//! texts keep their room in the peer's byte budget until the socket has taken them: the pump
//! gives it back after each flush, so what waits in the hand-off and in tungstenite's write
//! buffer counts too.
//!
//! The pump waits on, in this priority (first ready wins):
//!
//! | # | source | what it does |
//! | --- | --- | --- |
//! | 1 | the stop signal (drain budget spent) | drops the connection at once |
//! | 2 | the peer's loop failing (its queue overflowed) | drops the connection at once |
//! | 3 | the closing signal (shutdown begun) | stops reading, so the peer drains; then closes 1001 |
//! | 4 | the peer's outgoing texts (and a due ping) | writes them, pings first; flushes when the peer's loop flushes (so what it wrote in one go leaves in one write); ends when the peer's loop has ended and all is flushed |
//! | 5 | the socket, and room in the peer's input | hands over the message waiting, then reads a run: text: answered here (see above), or to the peer (or kept until it has room); pongs and pings: the client is alive; binary: close 1003; close: answer it |
//! | 6 | the ping timer | queues a ping |
//! | 7 | the idle deadline, while the socket is read | close 1000 |
//!
//! Rows 4 and 5 are one branch, writing first then reading: the pump owns the socket whole (it is
//! not split in two halves behind a lock), so one poll can do both.
//!
//! A busy peer (a notification handler running, or its reading paused because the client does
//! not read its answers) stops the reading of messages, never the writing: a handler that pushes
//! while its connection waits cannot deadlock. The socket is still read up to one message, so
//! pongs keep coming in and the idle clock and the pings keep running while the peer is paused;
//! only a message the peer cannot take yet stops it (and the clock). A client that does not read
//! is cut by the write deadline ([`write_timeout`](super::WsSettings::write_timeout)), or closed
//! with 1008 once what waits for it passes the byte budget.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker, ready};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Interval, MissedTickBehavior};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Message, Utf8Bytes};

use super::direct::{Direct, Read};
use crate::dispatch::{Context, Methods};
use crate::framing::Frame;
use crate::peer::Driver;
use crate::peer::budget::Budget;
use crate::peer::connection::Input;
use crate::peer::{Peer, PeerConfig};
use crate::woken::Woken;

/// A signal future: shutdown begun, or the drain budget spent.
pub(crate) type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The checked settings one connection runs with.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) ws: WebSocketConfig,
    /// The peer's settings: its limits, and a server's or a client's overflow and lifetime.
    pub(crate) peer: PeerConfig,
    pub(crate) ping_interval: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) close_timeout: Duration,
    /// How long a write may wait for the client to take a byte; watched by the socket's
    /// [`WriteDeadline`](crate::peer::WriteDeadline), which the server wraps it in.
    pub(crate) write_timeout: Option<Duration>,
}

/// What the socket's branch of the pump's loop did.
enum Io {
    /// The outbox wrote: the peer's loop has ended and all is flushed, or a write failed.
    Written(Result<(), WsError>),
    /// The inlet moved messages across, or found the connection's end.
    Read(Result<(), End>),
}

/// What ends a connection's pump, and so which close frame (if any) it sends.
#[derive(Debug)]
enum End {
    /// The drain budget is spent: dropped without a word.
    Stopped,
    /// The peer's loop ended and everything it wrote is flushed.
    PeerEnded,
    /// What waits for the client passed the peer's budget or queue: close 1008.
    Overflowed(String),
    /// The client took no byte for the write timeout: dropped.
    WriteTimedOut(String),
    /// A binary frame: close 1003.
    Binary,
    /// A message over the size cap: close 1009.
    TooBig(String),
    /// An outgoing message over the size cap: close 1011.
    TooBigToSend,
    /// A text frame that is not UTF-8: close 1007.
    NotUtf8,
    /// A protocol violation: close 1002.
    Protocol(String),
    /// Nothing came in for the idle timeout: close 1000.
    Idle,
    /// The other side sent a close frame: tungstenite queued the answer; flush it.
    ClosedByOther,
    /// The socket ended or failed: nothing can be sent any more.
    Gone(String),
}

/// Starts serving `ws`: returns the connection's handle and the pump to spawn.
///
/// `ctx` is the context handlers see (transport, peer address, headers, extensions); whether the
/// connection ends with its last handle (a client) or only with the socket (a server) is in
/// `settings`.
pub(crate) fn start<S>(
    ws: WebSocketStream<S>,
    methods: Methods,
    ctx: Context,
    settings: &Settings,
    closing: Signal,
    stop: Signal,
) -> (Peer, impl Future<Output = ()> + Send + 'static + use<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let link = Link::new();
    let (frames_tx, frames_rx) = ends(&link, Link::inbound);
    let (out_tx, out_rx) = ends(&link, Link::outbound);
    let reader = Reader {
        frames: frames_rx,
        run: Vec::new().into_iter(),
    };
    let writer = Writer {
        tx: out_tx,
        run: Vec::new(),
    };
    let config = settings.peer.clone().with_context(ctx);
    let (in_flight, notice) = (config.max_in_flight(), config.cancellation.method());
    let direct_methods = methods.clone();
    let (peer, driver, loop_ctx) = Peer::start_inputs(reader, writer, methods, config);
    let direct = Direct::new(direct_methods, loop_ctx, &peer, in_flight, notice);
    let pump = Pump {
        inlet: Inlet {
            frames: Some(frames_tx),
            pending: None,
            direct: Some(direct),
            link,
            room: settings.peer.max_message_size(),
            max_message_size: settings.ws.max_message_size,
        },
        out: out_rx,
        outbox: Outbox::default(),
        budget: Arc::clone(&peer.shared.budget),
        ping_interval: settings.ping_interval,
        idle_timeout: settings.idle_timeout,
        close_timeout: settings.close_timeout,
        max_message_size: settings.ws.max_message_size,
    };
    (peer, pump.run(ws, driver, closing, stop))
}

/// The peer's loop's sink: the texts it writes until it flushes cross to the pump as one run,
/// which leaves in one write.
struct Writer {
    tx: Sending<String>,
    run: Vec<String>,
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

/// The writer's error once the pump is gone (the socket closed).
#[derive(Debug)]
struct PumpGone;

impl std::fmt::Display for PumpGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the WebSocket is closed")
    }
}

struct Pump {
    inlet: Inlet,
    /// Runs of texts from the peer's loop.
    out: Taking<String>,
    outbox: Outbox,
    /// The peer's byte budget: the room of what the socket took is given back here.
    budget: Arc<Budget>,
    ping_interval: Option<Duration>,
    idle_timeout: Option<Duration>,
    close_timeout: Duration,
    max_message_size: Option<usize>,
}

impl Pump {
    /// The pump's loop, then the close it ends with. A block using its captures in place: an
    /// `async fn` would hold its arguments twice (as arguments, and as the locals they move
    /// into), and this future sits in every open connection.
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` would hold its arguments twice"
    )]
    fn run<S>(
        mut self,
        mut ws: WebSocketStream<S>,
        driver: Driver,
        closing: Signal,
        stop: Signal,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        async move {
            let mut driver = tokio::spawn(driver);
            let (mut closing, mut stop) = (Woken::new(closing), Woken::new(stop));
            let mut draining = false;
            let mut peer_done = false;
            let mut ping = self.ping_interval.map(|period| {
                let mut ticks = tokio::time::interval_at(crate::time::after(period), period);
                ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
                ticks
            });
            let idle = tokio::time::sleep(self.idle_timeout.unwrap_or(Duration::ZERO));
            tokio::pin!(idle);
            let end = loop {
                tokio::select! {
                    biased;
                    () = &mut stop => break End::Stopped,
                    ended = &mut driver, if !peer_done => match ended {
                        // What waits for the client passed the budget or the queue.
                        Ok(Err(err)) if err.kind() == std::io::ErrorKind::QuotaExceeded => {
                            break End::Overflowed(err.to_string())
                        }
                        // The outbox reports the end once all that was written is flushed.
                        _ => peer_done = true,
                    },
                    () = &mut closing, if !draining => {
                        // Ending the peer's input lets running calls finish and be answered.
                        draining = true;
                        self.inlet.close();
                    }
                    // One branch polls both ways, writing first: they share the socket.
                    io = poll_fn(|cx| {
                        let written = self.outbox.poll(&mut ws, &self.out, &self.budget, cx);
                        if let Poll::Ready(written) = written {
                            return Poll::Ready(Io::Written(written));
                        }
                        let answers = self.outbox.answers();
                        if self.inlet.is_open() && let Poll::Ready(read) = self.inlet.poll(&mut ws, answers, cx) {
                            return Poll::Ready(Io::Read(read));
                        }
                        Poll::Pending
                    }) => match io {
                        Io::Written(Ok(())) => break End::PeerEnded,
                        // Nothing was queued: the socket is fine, but the message is lost.
                        Io::Written(Err(WsError::WriteBufferFull(_))) => break End::TooBigToSend,
                        Io::Written(Err(WsError::Io(err))) if err.kind() == std::io::ErrorKind::TimedOut => {
                            break End::WriteTimedOut(err.to_string())
                        }
                        Io::Written(Err(err)) => break End::Gone(format!("write failed: {err}")),
                        Io::Read(Ok(())) => {
                            if let Some(idle_timeout) = self.idle_timeout {
                                idle.as_mut().reset(crate::time::after(idle_timeout));
                            }
                        }
                        Io::Read(Err(end)) => break end,
                    },
                    () = tick(ping.as_mut()) => self.outbox.ping = true,
                    () = &mut idle, if self.idle_timeout.is_some() && self.inlet.reads() => break End::Idle,
                }
            };
            self.inlet.close();
            let (code, reason): (CloseCode, String) = match end {
                End::Stopped => {
                    driver.abort();
                    tracing::debug!("WebSocket dropped: the drain budget is spent");
                    return;
                }
                End::Overflowed(why) => {
                    tracing::warn!(reason = %why, "closing WebSocket: the client does not read");
                    // What was queued goes at once; only the close frame is left to send.
                    driver.abort();
                    (
                        CloseCode::Policy,
                        "the client does not read: more waits for it than the server holds (`max_buffered`)".into(),
                    )
                }
                End::WriteTimedOut(why) => {
                    driver.abort();
                    tracing::warn!(reason = %why, "WebSocket dropped: the client does not read");
                    return;
                }
                End::PeerEnded if draining => {
                    (CloseCode::Away, "the server is shutting down".into())
                }
                End::PeerEnded => (CloseCode::Normal, String::new()),
                End::Binary => (
                    CloseCode::Unsupported,
                    "binary frames are not accepted; send JSON-RPC messages as text".into(),
                ),
                End::TooBig(why) => (CloseCode::Size, why),
                End::TooBigToSend => {
                    let limit = self.max_message_size.unwrap_or(usize::MAX);
                    let why = format!("an outgoing message exceeds the limit of {limit} bytes");
                    tracing::warn!(%why, "closing WebSocket");
                    (CloseCode::Error, why)
                }
                End::NotUtf8 => (CloseCode::Invalid, "text frame is not UTF-8".into()),
                End::Protocol(why) => (CloseCode::Protocol, why),
                End::Idle => (CloseCode::Normal, "idle timeout".into()),
                End::ClosedByOther => {
                    driver.abort();
                    // The sink's close flushes the answer tungstenite queued (`WebSocketStream::close`
                    // would try a second close frame, and fail). Boxed, as below: the closing steps
                    // stay out of a live connection's future.
                    let _ = Box::pin(tokio::time::timeout(
                        self.close_timeout,
                        futures_util::SinkExt::close(&mut ws),
                    ))
                    .await;
                    return;
                }
                End::Gone(why) => {
                    driver.abort();
                    tracing::debug!(reason = %why, "WebSocket ended");
                    return;
                }
            };
            driver.abort();
            tracing::debug!(code = u16::from(code), %reason, "closing WebSocket");
            // Boxed: the closing handshake's future would otherwise take room in every open
            // connection's.
            Box::pin(close(ws, code, reason, self.close_timeout)).await;
        }
    }
}

/// Messages that cross at most in one go, either way: a run of messages read (or written)
/// together crosses with one wake-up of the other task.
const RUN: usize = 32;

/// Runs each lane between the pump and the peer's loop holds.
const RUNS: usize = 2;

/// What the pump and the peer's loop share: the runs crossing each way, and the bytes of those
/// handed to the peer's loop and not yet taken.
///
/// In place of two tokio channels: each allocates its shared state and its first block of 32
/// slots when made, about 1.3 KiB an idle connection holds; both ways here are one allocation.
struct Link {
    /// Runs of messages read (and calls begun), to the peer's loop.
    inbound: Lane<Input>,
    /// Runs of texts written, to the pump.
    outbound: Lane<String>,
    /// The bytes of the messages handed to the peer's loop and not yet taken by it.
    bytes: AtomicUsize,
    /// The pump, waiting while a message would pass the room.
    taken: AtomicWaker,
}

impl Link {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            inbound: Lane::default(),
            outbound: Lane::default(),
            bytes: AtomicUsize::new(0),
            taken: AtomicWaker::new(),
        })
    }

    fn inbound(&self) -> &Lane<Input> {
        &self.inbound
    }

    fn outbound(&self) -> &Lane<String> {
        &self.outbound
    }
}

/// One way across: at most [`RUNS`] runs, from one sender to one taker.
struct Lane<T> {
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

struct LaneState<T> {
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

/// The taker of a lane has ended.
#[derive(Debug)]
struct Gone;

fn park(slot: &mut Option<Waker>, cx: &TaskContext<'_>) {
    if !slot
        .as_ref()
        .is_some_and(|waker| waker.will_wake(cx.waker()))
    {
        *slot = Some(cx.waker().clone());
    }
}

impl<T> Lane<T> {
    fn lock(&self) -> MutexGuard<'_, LaneState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ready once a run may be sent, or the taker has ended.
    fn poll_room(&self, cx: &TaskContext<'_>) -> Poll<Result<(), Gone>> {
        let mut state = self.lock();
        if state.gone {
            return Poll::Ready(Err(Gone));
        }
        if state.len < RUNS {
            return Poll::Ready(Ok(()));
        }
        park(&mut state.sender, cx);
        Poll::Pending
    }

    /// Sends `run`, for which [`poll_room`](Self::poll_room) found room (the one sender is the
    /// only one to fill it); `Err` gives it back if the taker has ended or there is no room.
    fn send(&self, run: Vec<T>) -> Result<(), Vec<T>> {
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

    /// The next run; `None` once the sender has ended and all is taken.
    fn poll_take(&self, cx: &TaskContext<'_>) -> Poll<Option<Vec<T>>> {
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
        park(&mut state.taker, cx);
        Poll::Pending
    }

    /// Whether the taker found the lane empty and waits: it has taken, and dealt with,
    /// everything sent before.
    fn taker_waits(&self) -> bool {
        self.lock().taker.is_some()
    }

    /// The sender ends: the taker sees the end after what waits.
    fn end_sending(&self) {
        let mut state = self.lock();
        state.sent_all = true;
        let taker = state.taker.take();
        drop(state);
        if let Some(taker) = taker {
            taker.wake();
        }
    }

    /// The taker ends: what waits is dropped, and the sender finds no more room.
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

/// The sending end of a lane: the lane's end when dropped.
struct Sending<T: 'static> {
    link: Arc<Link>,
    lane: fn(&Link) -> &Lane<T>,
}

impl<T> Sending<T> {
    fn lane(&self) -> &Lane<T> {
        (self.lane)(&self.link)
    }
}

impl<T> Drop for Sending<T> {
    fn drop(&mut self) {
        self.lane().end_sending();
    }
}

/// The taking end of a lane: the lane's end when dropped.
struct Taking<T: 'static> {
    link: Arc<Link>,
    lane: fn(&Link) -> &Lane<T>,
}

impl<T> Taking<T> {
    fn lane(&self) -> &Lane<T> {
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

/// The two ends of `lane` of `link`.
fn ends<T>(link: &Arc<Link>, lane: fn(&Link) -> &Lane<T>) -> (Sending<T>, Taking<T>) {
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

/// The peer's loop's input: the runs of messages the pump handed across, one at a time.
struct Reader {
    frames: Taking<Input>,
    run: std::vec::IntoIter<Input>,
}

impl futures_util::Stream for Reader {
    type Item = Result<Input, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(frame) = self.run.next() {
                if let Input::Frame(Frame::Message(text)) = &frame {
                    let link = &self.frames.link;
                    link.bytes.fetch_sub(text.len(), Ordering::AcqRel);
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

/// The pump's reading side: messages off the socket and across to the peer's loop.
///
/// What waits for the peer is bounded as before runs crossed together: the messages handed
/// across and not taken hold at most `room` bytes together (or one message, however large),
/// and one more, read while they did not fit, waits here; the socket is not read past it. A
/// call begun here crosses beside them, uncounted: at most one is on its way, since nothing is
/// answered here again until the loop has taken it.
struct Inlet {
    /// Runs of frames to the peer's loop; `None` once reading stopped (shutdown, or the loop
    /// ended).
    frames: Option<Sending<Input>>,
    /// A message read while the peer had no room for it.
    pending: Option<String>,
    /// What answers calls here, while the peer's loop waits for more; `None` hands every
    /// message over.
    direct: Option<Direct>,
    link: Arc<Link>,
    /// The peer's room for a message being read: its `max_message_size`.
    room: usize,
    max_message_size: Option<usize>,
}

impl Inlet {
    /// Whether the peer still takes messages.
    fn is_open(&self) -> bool {
        self.frames.is_some()
    }

    /// Whether the socket is being read: the peer takes messages and none waits for room.
    fn reads(&self) -> bool {
        self.frames.is_some() && self.pending.is_none()
    }

    /// Stops reading: what waits is dropped, and the peer's loop sees the end of its input.
    fn close(&mut self) {
        self.pending = None;
        self.frames = None;
    }

    /// Reads what the socket has, up to [`RUN`] messages: answers the calls that finish at once
    /// into `answers` while the peer's loop waits for more and the outbox has room for them
    /// (`Some`), and hands the rest across as one run. Ready once something moved (`Ok`), or
    /// when the connection must end.
    fn poll<S>(
        &mut self,
        ws: &mut WebSocketStream<S>,
        answers: Option<&mut VecDeque<String>>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Result<(), End>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(frames) = self.frames.as_ref() else {
            return Poll::Pending;
        };
        match frames.lane().poll_room(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(_)) => {
                // The peer's loop ended; the outbox reports it once flushed.
                self.close();
                return Poll::Ready(Ok(()));
            }
            Poll::Pending => return Poll::Pending,
        }
        // Answered here only while the loop has dealt with all it was handed: so in order.
        let mut direct = self.direct.as_ref().zip(answers).filter(|(direct, _)| {
            self.pending.is_none() && frames.lane().taker_waits() && direct.caught_up()
        });
        let mut run = Vec::new();
        let mut read = false;
        let mut answered = 0;
        let end = loop {
            if let Some(text) = self.pending.take() {
                if !self.fits(text.len(), cx) {
                    self.pending = Some(text);
                    break None;
                }
                self.link.bytes.fetch_add(text.len(), Ordering::AcqRel);
                run.push(Input::Frame(Frame::Message(text)));
            }
            if run.len() + answered == RUN {
                break None;
            }
            let Poll::Ready(message) = ws.poll_next_unpin(cx) else {
                break None;
            };
            read = true;
            let text = match self.received(message) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(end) => break Some(end),
            };
            // Past the in-flight cap or half the budget, the loop waits, or refuses.
            if let Some((answering, answers)) = direct.as_mut().filter(|(d, _)| d.open()) {
                match answering.read(text.as_str()) {
                    Read::Answered(answer) => {
                        answers.push_back(answer);
                        answered += 1;
                        continue;
                    }
                    Read::Done => {
                        answered += 1;
                        continue;
                    }
                    Read::Queued => {
                        // What its handler sent goes first: what follows goes behind it.
                        answered += 1;
                        direct = None;
                        continue;
                    }
                    Read::Started(call) => {
                        // What follows waits behind it.
                        run.push(call);
                        direct = None;
                        continue;
                    }
                    Read::Other => {}
                }
            }
            direct = None;
            self.pending = Some(text.as_str().to_owned());
        };
        if let Some(end) = end {
            return Poll::Ready(Err(end));
        }
        // A message that waited for room also counts: the idle clock stood while it waited.
        let moved = read || !run.is_empty();
        if !run.is_empty()
            && let Some(frames) = self.frames.as_ref()
            && frames.lane().send(run).is_err()
        {
            self.close();
        }
        if moved {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    /// Whether a message of `bytes` may join those waiting for the peer; if not, this task is
    /// woken when the peer takes one.
    fn fits(&self, bytes: usize, cx: &mut TaskContext<'_>) -> bool {
        let fits = |waiting: usize| waiting == 0 || waiting.saturating_add(bytes) <= self.room;
        if fits(self.link.bytes.load(Ordering::Acquire)) {
            return true;
        }
        // Registered before the count is read again: a message taken in between is not missed.
        self.link.taken.register(cx.waker());
        fits(self.link.bytes.load(Ordering::Acquire))
    }

    /// Takes one message off the socket: a text for the peer, nothing (control frames), or the
    /// end of the connection.
    fn received(
        &self,
        message: Option<Result<Message, WsError>>,
    ) -> Result<Option<Utf8Bytes>, End> {
        match message {
            None => Err(End::Gone("the socket ended".into())),
            Some(Ok(Message::Text(text))) => Ok(Some(text)),
            Some(Ok(Message::Binary(_))) => Err(End::Binary),
            // tungstenite answers pings itself; a pong only shows the other side is alive.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Ok(None),
            Some(Ok(Message::Close(_))) => Err(End::ClosedByOther),
            Some(Err(WsError::Capacity(err))) => {
                let limit = self.max_message_size.unwrap_or(usize::MAX);
                tracing::warn!(%err, "WebSocket message over the cap");
                Err(End::TooBig(format!(
                    "message exceeds the limit of {limit} bytes"
                )))
            }
            Some(Err(WsError::Utf8(_))) => Err(End::NotUtf8),
            Some(Err(WsError::Protocol(err))) => Err(End::Protocol(err.to_string())),
            Some(Err(err)) => Err(End::Gone(format!("read failed: {err}"))),
        }
    }
}

/// Sends a close frame, then waits (within `limit`) for the other side's answer, so that the
/// frame is read before the socket goes.
async fn close<S>(mut ws: WebSocketStream<S>, code: CloseCode, reason: String, limit: Duration)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let deadline = crate::time::after(limit);
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let sent = tokio::time::timeout_at(deadline, ws.send(Message::Close(Some(frame)))).await;
    if !matches!(sent, Ok(Ok(()))) {
        return;
    }
    let _ = tokio::time::timeout_at(deadline, async {
        while let Some(Ok(message)) = ws.next().await {
            if message.is_close() {
                break;
            }
        }
    })
    .await;
}

async fn tick(ping: Option<&mut Interval>) {
    match ping {
        Some(ticks) => {
            ticks.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// What waits to be written: the peer's next text, a ping, whether a flush is owed.
#[derive(Default)]
struct Outbox {
    /// The run of texts being written.
    run: std::vec::IntoIter<String>,
    /// Answers the pump made itself, to write after the run.
    answers: VecDeque<String>,
    next: Option<Message>,
    ping: bool,
    unflushed: bool,
    /// Bytes of the peer's texts taken since the last flush: their room in the budget is given
    /// back once the flush has handed them to the socket.
    taken: usize,
    /// A run was taken (or a ping queued): flush once nothing more waits.
    flush: bool,
    /// The peer's loop has dropped its writer.
    ended: bool,
}

impl Outbox {
    /// Where the pump's own answers go, while nothing waits to be written or flushed; `None`
    /// while something does, so that they wait for the socket as the peer's loop's do.
    fn answers(&mut self) -> Option<&mut VecDeque<String>> {
        let idle = self.next.is_none() && !self.unflushed && self.run.as_slice().is_empty();
        (idle && self.answers.is_empty()).then_some(&mut self.answers)
    }

    /// Moves texts from the peer to the socket, a ping first when one is due; flushes when no
    /// more is waiting. Ready (`Ok`) once the peer's loop has ended and all is flushed.
    ///
    /// All state lives in `self`, so the future built on this may be dropped at any await.
    fn poll<S>(
        &mut self,
        ws: &mut WebSocketStream<S>,
        out: &Taking<String>,
        budget: &Budget,
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
                } else if !self.ended {
                    match out.lane().poll_take(cx) {
                        Poll::Ready(Some(run)) => {
                            // Take what else waits first: it goes out in the same write.
                            self.run = run.into_iter();
                            self.flush = true;
                            continue;
                        }
                        Poll::Ready(None) => self.ended = true,
                        Poll::Pending => {}
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
                        return Poll::Pending;
                    }
                }
            }
            if self.unflushed && (self.flush || self.ended) {
                ready!(ws.poll_flush_unpin(cx))?;
                self.unflushed = false;
                self.flush = false;
                budget.give_back(std::mem::take(&mut self.taken));
            }
            return if self.ended {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::protocol::Role;

    type Duplex = WebSocketStream<tokio::io::DuplexStream>;

    /// The inlet, the socket it reads, the peer's end, and the client (kept, so that the
    /// server side does not see the socket end).
    type Test = (Inlet, Duplex, Reader, Duplex);

    /// A server-side socket whose client has sent `texts`, and the inlet reading it.
    async fn inlet_after(texts: &[&str], room: usize) -> Test {
        let (server, client) = tokio::io::duplex(1 << 16);
        let mut client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        for text in texts {
            client.feed(Message::text(*text)).await.unwrap();
        }
        client.flush().await.unwrap();
        let server = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
        let link = Link::new();
        let (frames_tx, frames_rx) = ends(&link, Link::inbound);
        let reader = Reader {
            frames: frames_rx,
            run: Vec::new().into_iter(),
        };
        let inlet = Inlet {
            frames: Some(frames_tx),
            pending: None,
            direct: None,
            link,
            room,
            max_message_size: None,
        };
        (inlet, server, reader, client)
    }

    fn text(input: Option<Result<Input, Infallible>>) -> String {
        match input {
            Some(Ok(Input::Frame(Frame::Message(text)))) => text,
            Some(Ok(Input::Frame(other))) => panic!("expected a message, got {other:?}"),
            Some(Ok(Input::Started(_))) => panic!("expected a message, got a call begun"),
            None => panic!("expected a message, got the end"),
        }
    }

    #[tokio::test]
    async fn what_waits_for_the_peer_holds_at_most_its_room() {
        let texts = [
            "a".repeat(100),
            "b".repeat(100),
            "c".repeat(100),
            "d".repeat(100),
        ];
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (mut inlet, mut source, mut reader, _open) = inlet_after(&texts, 250).await;
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        // Two fit in 250 bytes; the third waits in the pump, and the socket is read no further.
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 200);
        assert_eq!(inlet.pending.as_deref(), Some(texts[2]));
        assert!(!inlet.reads());
        assert_eq!(text(reader.next().await), texts[0]);
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 100);
        // Room for one more: the waiting message goes, and the next is read.
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 200);
        assert_eq!(inlet.pending.as_deref(), Some(texts[3]));
        for expected in &texts[1..3] {
            assert_eq!(text(reader.next().await), *expected);
        }
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_lane_holds_at_most_its_runs_and_ends_after_them() {
        let cx = TaskContext::from_waker(Waker::noop());
        let link = Link::new();
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
        let link = Link::new();
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
        let link = Link::new();
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

    #[tokio::test]
    async fn one_message_larger_than_the_room_still_crosses_alone() {
        let big = "x".repeat(300);
        let (mut inlet, mut source, mut reader, _open) = inlet_after(&[&big, "{}"], 250).await;
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        assert_eq!(inlet.link.bytes.load(Ordering::Acquire), 300);
        assert_eq!(inlet.pending.as_deref(), Some("{}"));
        assert_eq!(text(reader.next().await), big);
        let read = poll_fn(|cx| inlet.poll(&mut source, None, cx)).await;
        assert!(read.is_ok());
        assert_eq!(text(reader.next().await), "{}");
    }
}
