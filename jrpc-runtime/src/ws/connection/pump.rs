//! Runs the pump's loop: what it waits on, in which order, and the close it ends with.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Interval, MissedTickBehavior, Sleep};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

use super::inlet::Inlet;
use super::link::Taking;
use super::outbox::Outbox;
use super::{End, Settings, Signal};
use crate::peer::{Driver, Notifications, TakerWakes};

/// Numbers the sources of the pump's loop, each a part of its wake set ([`TakerWakes`]).
const STOP: usize = 0;
const DRIVER: usize = 1;
const CLOSING: usize = 2;
const INLET: usize = 3;
const PING: usize = 4;
const IDLE: usize = 5;
const LINK: usize = 6;
const PARTS: usize = 7;

/// Says which source of the pump's loop was ready, in its order of priority.
enum Event {
    /// The drain budget is spent.
    Stopped,
    /// The peer's loop ended (or failed).
    PeerEnded(Result<std::io::Result<()>, tokio::task::JoinError>),
    /// A shutdown has begun.
    Closing,
    /// The socket's branch did something.
    Socket(SocketEvent),
    /// A ping is due.
    Ping,
    /// The idle deadline passed.
    Idle,
}

/// Says what the socket's branch of the pump's loop did.
enum SocketEvent {
    /// The outbox wrote: the peer's loop has ended and all is flushed, or a write failed.
    Written(Result<(), WsError>),
    /// The inlet moved messages across, or found the connection's end.
    Read(Result<(), End>),
}

/// Says what is left to do on the socket once the pump's loop has ended.
enum Farewell {
    /// Nothing: the socket is dropped.
    Drop,
    /// The client sent a close frame: flush the answer tungstenite queued.
    Answer,
    /// Send this close frame, and wait for the client's answer.
    Close(CloseCode, String),
}

/// Moves messages between the socket and the peer's loop (see the module docs).
///
/// Laid out in order (`repr(C)`), what a turn reads in two lines: a wake-up for a subscription's
/// item (in every open connection's task in turn, whose lines are out of the cache by then) reads
/// the wakes, the notifications, the outbox and the link's end, 128 bytes, and nothing else unless
/// its source woke. Where tokio places a task's future (24 bytes before a line's end), the fields
/// before them fill that line.
#[repr(C)]
pub(super) struct Pump {
    /// A shutdown has begun: the peer's input is closed, and its calls run to their answers.
    draining: bool,
    /// The peer's loop ended (or failed): the outbox reports the end once all is flushed.
    peer_done: bool,
    ping_interval: Option<Duration>,
    /// Which sources of the loop woke, each polled only then.
    wakes: TakerWakes,
    /// The subscriptions' notifications, which the pump takes itself.
    notifications: Notifications,
    outbox: Outbox,
    /// Runs of texts from the peer's loop.
    out: Taking<String>,
    inlet: Inlet,
    idle_timeout: Option<Duration>,
    close_timeout: Duration,
    max_message_size: Option<usize>,
    /// The sources polled only once they woke, made as the loop begins (`None` before): here
    /// rather than beside the pump, so that the loop's step captures two references.
    sources: Option<Sources>,
}

/// Holds the sources of the pump's loop polled only once they woke: the peer's loop, the
/// shutdown's signals, the pings' and the idle clocks.
struct Sources {
    driver: tokio::task::JoinHandle<std::io::Result<()>>,
    closing: Signal,
    stop: Signal,
    ping: Option<Interval>,
    /// Boxed: a timer entry is some hundred bytes, and most turns do not look at it.
    idle: Pin<Box<Sleep>>,
}

impl Pump {
    /// Returns the pump of a connection: `inlet` reads its socket, `out` and `notifications` are
    /// what its peer's loop writes.
    pub(super) fn new(
        inlet: Inlet,
        out: Taking<String>,
        notifications: Notifications,
        settings: &Settings,
    ) -> Self {
        Self {
            outbox: Outbox::default(),
            draining: false,
            peer_done: false,
            wakes: notifications.wake_set(PARTS),
            notifications,
            out,
            inlet,
            ping_interval: settings.ping_interval,
            idle_timeout: settings.idle_timeout,
            close_timeout: settings.close_timeout,
            max_message_size: settings.ws.max_message_size,
            sources: None,
        }
    }

    /// Runs the pump's loop, then the close it ends with; drops `keep` last. A block using its
    /// captures in place: an `async fn` would hold its arguments twice (as arguments, and as the
    /// locals they move into), and this future sits in every open connection.
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` would hold its arguments twice"
    )]
    pub(super) fn run<S, K>(
        mut self,
        mut ws: WebSocketStream<S>,
        driver: Driver,
        closing: Signal,
        stop: Signal,
        keep: K,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        K: Send + 'static,
    {
        async move {
            let sources = self.sources.insert(Sources {
                driver: tokio::spawn(driver),
                closing,
                stop,
                ping: self.ping_interval.map(pings),
                idle: Box::pin(tokio::time::sleep(
                    self.idle_timeout.unwrap_or(Duration::ZERO),
                )),
            });
            // What this connection does not have is never polled.
            if sources.ping.is_none() {
                self.wakes.leave_out(PING);
            }
            if self.idle_timeout.is_none() {
                self.wakes.leave_out(IDLE);
            }
            let end = loop {
                if self.renewal_due() {
                    // Boxed: the new tungstenite's making holds a whole socket while it runs, and
                    // would otherwise take that room (some 1.5 KB) in every open connection's
                    // task, which a turn never reads.
                    ws = Box::pin(self.renew(ws)).await;
                    self.outbox.awaited();
                    // Its waker is registered with the new tungstenite at the next read.
                    self.wakes.rearm(INLET);
                }
                let event = poll_fn(|cx| self.turn(&mut ws, cx)).await;
                self.outbox.carry_on();
                match event {
                    Event::Stopped => break End::Stopped,
                    Event::PeerEnded(ended) => match ended {
                        // What waits for the client passed the budget or the queue.
                        Ok(Err(err)) if err.kind() == std::io::ErrorKind::QuotaExceeded => {
                            break End::Overflowed(err.to_string());
                        }
                        // The outbox reports the end once all that was written is flushed.
                        _ => self.peer_done = true,
                    },
                    Event::Closing => {
                        // Ending the peer's input lets running calls finish and be answered.
                        self.draining = true;
                        self.inlet.close();
                    }
                    Event::Socket(io) => match io.ended() {
                        Some(end) => break end,
                        None => {
                            if let Some(idle_timeout) = self.idle_timeout
                                && let Some(sources) = &mut self.sources
                            {
                                sources
                                    .idle
                                    .as_mut()
                                    .reset(crate::time::after(idle_timeout));
                                self.wakes.rearm(IDLE);
                            }
                        }
                    },
                    Event::Ping => self.outbox.ping = true,
                    // Unless the socket began to wait for the server's budget meanwhile: its
                    // clock stands until the wait ends.
                    Event::Idle => {
                        if self.inlet.reads() {
                            break End::Idle;
                        }
                    }
                }
            };
            self.inlet.close();
            let farewell = self.farewell(end);
            // What was queued goes at once; at most the close frame is left to send.
            if let Some(sources) = &self.sources {
                sources.driver.abort();
            }
            match farewell {
                Farewell::Drop => {}
                Farewell::Answer => {
                    // The sink's close flushes the answer tungstenite queued (`WebSocketStream::close`
                    // would try a second close frame, and fail). Boxed, as below: the closing steps
                    // stay out of a live connection's future.
                    let _ = Box::pin(tokio::time::timeout(
                        self.close_timeout,
                        futures_util::SinkExt::close(&mut ws),
                    ))
                    .await;
                }
                Farewell::Close(code, reason) => {
                    tracing::debug!(code = u16::from(code), %reason, "closing WebSocket");
                    // Boxed: the closing handshake's future would otherwise take room in every
                    // open connection's.
                    Box::pin(close(ws, code, reason, self.close_timeout)).await;
                }
            }
            drop(keep);
        }
    }

    /// Returns the first source of the loop that is ready, in their order of priority. Each is
    /// polled only once it woke (most turns, on a connection that subscribed, are for an item:
    /// they run the outbox alone), and its bit is looked at before what it reads.
    fn turn<S>(&mut self, ws: &mut WebSocketStream<S>, cx: &mut TaskContext<'_>) -> Poll<Event>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let wakes = &mut self.wakes;
        wakes.turn(cx);
        self.outbox.turn_begins();
        if wakes
            .poll(STOP, |cx| {
                poll_source(&mut self.sources, |s| s.stop.poll_unpin(cx))
            })
            .is_ready()
        {
            return Poll::Ready(Event::Stopped);
        }
        if wakes.is_pending(DRIVER)
            && !self.peer_done
            && let Poll::Ready(ended) = wakes.poll(DRIVER, |cx| {
                poll_source(&mut self.sources, |s| s.driver.poll_unpin(cx))
            })
        {
            return Poll::Ready(Event::PeerEnded(ended));
        }
        if wakes.is_pending(CLOSING)
            && !self.draining
            && wakes
                .poll(CLOSING, |cx| {
                    poll_source(&mut self.sources, |s| s.closing.poll_unpin(cx))
                })
                .is_ready()
        {
            return Poll::Ready(Event::Closing);
        }
        // Both ways in one step, writing first: they share the socket.
        let out = &self.out;
        // The peer's loop's texts, looked for only once it sent some.
        let take_run = || {
            let run = wakes.poll(LINK, |cx| out.lane().poll_take(cx));
            if matches!(run, Poll::Ready(Some(_))) {
                wakes.rearm(LINK);
            }
            run
        };
        let written = self.outbox.poll(ws, take_run, &self.notifications, cx);
        if let Poll::Ready(written) = written {
            return Poll::Ready(Event::Socket(SocketEvent::Written(written)));
        }
        if self.wakes.is_pending(INLET) && self.inlet.is_open() {
            let answers = self.outbox.answers();
            let inlet = &mut self.inlet;
            let read = self.wakes.poll(INLET, |cx| inlet.poll(ws, answers, cx));
            if self.inlet.grown() {
                self.outbox.grew();
            }
            if let Poll::Ready(read) = read {
                // It read a run, and may have more (the socket does not wake it again for what
                // it has already).
                self.wakes.rearm(INLET);
                return Poll::Ready(Event::Socket(SocketEvent::Read(read)));
            }
        }
        // All is written and read: go round, to give tungstenite fresh buffers.
        if self.renewal_due() && matches!(ws.poll_flush_unpin(cx), Poll::Ready(Ok(()))) {
            return Poll::Ready(Event::Socket(SocketEvent::Read(Ok(()))));
        }
        if self.wakes.is_pending(PING)
            && let Some(ticks) = self.sources.as_mut().and_then(|s| s.ping.as_mut())
            && self.wakes.poll(PING, |cx| ticks.poll_tick(cx)).is_ready()
        {
            // The next tick's wait begins at its first poll.
            self.wakes.rearm(PING);
            return Poll::Ready(Event::Ping);
        }
        // Whether the socket is read asks the meter, a line apart: last.
        if self.wakes.is_pending(IDLE)
            && self.idle_timeout.is_some()
            && self.inlet.reads()
            && self
                .wakes
                .poll(IDLE, |cx| {
                    poll_source(&mut self.sources, |s| s.idle.as_mut().poll(cx))
                })
                .is_ready()
        {
            return Poll::Ready(Event::Idle);
        }
        Poll::Pending
    }

    /// Returns whether tungstenite's buffers are to be made anew: a large message came or went (its
    /// buffers keep the size of the largest), and now it holds nothing, either way.
    fn renewal_due(&self) -> bool {
        // The outbox's flag first: the rest are lines apart from a turn's.
        self.outbox.renewal_wanted()
            && !self.draining
            && self.outbox.settled()
            && self.inlet.is_open()
            && self.inlet.meter.as_ref().is_some_and(|meter| meter.idle())
    }

    /// Returns `ws` made anew over the same socket, with fresh (small) buffers, once what it queued
    /// itself (a pong) is flushed; as it was, if that has to wait.
    async fn renew<S>(&mut self, mut ws: WebSocketStream<S>) -> WebSocketStream<S>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if !matches!(ws.flush().now_or_never(), Some(Ok(()))) {
            return ws;
        }
        let config = *ws.get_config();
        let ws =
            WebSocketStream::from_raw_socket(ws.into_inner(), Role::Server, Some(config)).await;
        if let Some(meter) = &self.inlet.meter {
            meter.renewed();
        }
        self.outbox.renewed();
        ws
    }

    /// Returns what the connection's `end` leaves to send (logged where it concerns the operator).
    fn farewell(&self, end: End) -> Farewell {
        let (code, reason): (CloseCode, String) = match end {
            End::Stopped => {
                tracing::debug!("WebSocket dropped: the drain budget is spent");
                return Farewell::Drop;
            }
            End::Overflowed(why) => {
                tracing::warn!(reason = %why, "closing WebSocket: the client does not read");
                (
                    CloseCode::Policy,
                    "the client does not read: more waits for it than the server holds (`max_buffered`)".into(),
                )
            }
            End::WriteTimedOut(why) => {
                tracing::warn!(reason = %why, "WebSocket dropped: the client does not read");
                return Farewell::Drop;
            }
            End::PeerEnded if self.draining => {
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
            End::ClosedByOther => return Farewell::Answer,
            End::Gone(why) => {
                tracing::debug!(reason = %why, "WebSocket ended");
                return Farewell::Drop;
            }
        };
        Farewell::Close(code, reason)
    }
}

impl SocketEvent {
    /// Returns the connection's end this says, if any: `None` when messages moved and it goes on.
    fn ended(self) -> Option<End> {
        match self {
            Self::Written(Ok(())) => Some(End::PeerEnded),
            // Nothing was queued: the socket is fine, but the message is lost.
            Self::Written(Err(WsError::WriteBufferFull(_))) => Some(End::TooBigToSend),
            Self::Written(Err(WsError::Io(err))) if err.kind() == std::io::ErrorKind::TimedOut => {
                Some(End::WriteTimedOut(err.to_string()))
            }
            Self::Written(Err(err)) => Some(End::Gone(format!("write failed: {err}"))),
            Self::Read(Ok(())) => None,
            Self::Read(Err(end)) => Some(end),
        }
    }
}

/// Polls the source `part` picks, once the loop has made them; `Pending` before (never asked).
fn poll_source<T>(
    sources: &mut Option<Sources>,
    part: impl FnOnce(&mut Sources) -> Poll<T>,
) -> Poll<T> {
    sources.as_mut().map_or(Poll::Pending, part)
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

/// Returns the pings' clock: every `period`, the first one `period` from now; a tick missed (the
/// loop was busy) is not made up for.
fn pings(period: Duration) -> Interval {
    let mut ticks = tokio::time::interval_at(crate::time::after(period), period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticks
}
