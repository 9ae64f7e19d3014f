//! Runs the connection's loop: one task owns a connection; handles talk to it over a bounded
//! channel.
//!
//! [`Peer`](super::Peer) handles and finished calls send [`Command`]s; the loop waits on, in this priority (first ready wins):
//!
//! | # | source | what it does |
//! | --- | --- | --- |
//! | 1 | an overflow signal | closes the connection with an error: a text found no room (a full queue or a spent budget under [`Overflow::Close`](super::Overflow::Close), or an answer that does not fit the [`max_buffered`](super::PeerConfigBuilder::max_buffered) budget); the observer sees it as [`Outcome::Overflowed`](crate::dispatch::Outcome::Overflowed) |
//! | 2 | the writer, while messages wait | hands them to the stream as the other side reads them, then gives their room in the budget back; a failed write (or one that waited [`write_timeout`](super::PeerConfigBuilder::write_timeout) for the other side to take a byte) closes the connection |
//! | 3 | commands from handles and finished calls | queues calls, notifications and answers in the order they came; forgets given-up calls. Paused while [`queue`](super::PeerConfigBuilder::queue) messages wait to be written |
//! | 4 | the running notification handler | when it ends, the messages read meanwhile are taken, in order |
//! | 5 | the next incoming message | only while fewer than `queue` messages wait for a notification handler, fewer than twice the queue wait to be written, and less than half the budget's room for outgoing texts is taken; while a notification handler runs, an answer to a call made since it started wakes its caller, anything else waits |
//! | 6 | room given back, while reading (or a subscription's lane) waits for it | reading resumes |
//! | 7 | a subscription's lane with notifications | woken; before each turn, notifications move from the lanes while less than a quarter of the budget is on its way out |
//! | 8 | the drain deadline after end of input | cancels what still runs, and ends the loop with an error |
//!
//! Every outgoing text takes its room in the budget before it is queued: an answer when its
//! handler finishes (so finished answers waiting for room count too), a push or a call when a
//! handle sends it. The [`max_in_flight`](super::PeerConfigBuilder::max_in_flight) cap counts
//! handlers still running, never answers waiting to be written: a peer that reads late is never
//! told busy for calls that finish at once.
//!
//! A slow reader on the other side never stops this side from reading: a write waits in its own
//! branch while the loop goes on. Two sides that write to each other faster than they read thus
//! cannot both stop, each waiting for the other to read. Backpressure reaches handles and
//! handlers through the bounded command channel instead.
//!
//! Incoming messages are taken in arrival order: a notification handler finishes before the next
//! message is taken; a call starts in turn and runs in its own task; an answer wakes its caller in
//! turn. While a notification handler runs, reading goes on: the answers to the calls made since
//! it started wake their callers (it may await one), and everything else waits for it, in order,
//! up to `queue` messages.
//!
//! A call is first polled once by the loop itself: one that finishes without waiting (most do) is
//! answered without a task switch, a copy of the request or a box for it, which is where a
//! connection's throughput goes. A transport that reads in a task of its own (a WebSocket's
//! pump) answers such calls itself, by the same rules (`ws/inline_dispatch.rs`); those that
//! wait reach the loop started ([`Input::Waiting`]). (While a subscriber records the request's
//! DEBUG span, that first poll runs in the span too, so that logging changes neither which calls
//! count against the cap nor where their answers are written.) The price is
//! that a handler computing for long before its first `.await` holds up its connection for that
//! long; move such work to `tokio::task::spawn_blocking`.
//!
//! At end of input no answer can arrive any more: pending outgoing calls fail with
//! [`ClientError::Closed`], while incoming calls still running get [`drain_timeout`](super::PeerConfigBuilder::drain_timeout) to finish
//! and be answered (so `printf '...' | server` prints its answers), then are cancelled, and the
//! loop ends with an error saying how many were. A failed write means the other side is gone:
//! everything still running is cancelled at once.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{Future, poll_fn};
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll, ready};

use futures_util::{Sink, SinkExt as _, Stream, StreamExt as _};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle, JoinSet};

use super::answer::admit;
use super::cancel::Cancellation;
use super::config::PeerConfig;
use super::handle::Shared;
use super::subscription::{Opening, Routes};
use crate::dispatch::{Context, Methods};
use crate::dispatch::{FirstPoll, Handed, Started};
use crate::error::ClientError;
use crate::framing::Frame;
use crate::limits::{Held, Room, ServerBudget};
use crate::wire::{ErrorCode, Id, RpcError};
use crate::wire::{Incoming, Rejection, incoming, write};
use crate::woken::Woken;

/// Names where an outgoing call's answer goes.
type Reply = oneshot::Sender<Result<Box<RawValue>, ClientError>>;

pub(crate) enum Command {
    /// Boxed: every slot of the command channel is as large as its largest variant, and the
    /// channel allocates its first block of slots with the connection, idle or not.
    Call(Box<OutgoingCall>),
    Notify {
        text: String,
    },
    /// A call given up (timed out or dropped) before its answer came.
    Forget {
        id: i64,
    },
    /// An incoming call to cancel, as a cancel notice would: a handler cancelling another.
    Cancel {
        id: Id,
    },
    /// An incoming call's answer (`None` for a batch of notifications). Answers share the queue
    /// with the handler's own pushes, so a handler's notifications go out before its answer.
    Answer {
        slot: u64,
        text: Option<String>,
    },
}

/// Holds an outgoing call, for the loop to write and to wait for its answer.
pub(crate) struct OutgoingCall {
    pub(super) id: i64,
    pub(super) method: String,
    pub(super) text: String,
    pub(super) reply: Reply,
    /// What a subscribe call opens once answered.
    pub(super) opens: Option<Opening>,
}

/// Holds an outgoing call waiting for its answer.
struct Pending {
    method: String,
    reply: Reply,
    opens: Option<Opening>,
}

impl Command {
    /// Returns the bytes of the text it carries, which took room in the budget.
    fn bytes(&self) -> usize {
        match self {
            Self::Call(call) => call.text.len(),
            Self::Notify { text } => text.len(),
            Self::Answer { text, .. } => text.as_ref().map_or(0, String::len),
            Self::Forget { .. } | Self::Cancel { .. } => 0,
        }
    }
}

/// Holds what the loop reads: a frame, or a call the transport began already (a reader in a task of
/// its own answers calls that finish at once itself, and hands over those that wait).
pub(crate) enum Input {
    Frame(Frame),
    /// A call whose handler did not finish in the poll that began it: it goes on in a task of
    /// its own, as any call that waits.
    Waiting(Waiting),
}

/// Turns a call a transport began where it read it, its handler waiting, into an [`Input`].
impl From<(Started<'static>, Option<tracing::Span>)> for Input {
    fn from((started, span): (Started<'static>, Option<tracing::Span>)) -> Self {
        Self::Waiting(Waiting { started, span })
    }
}

/// Holds a call started and polled once where it was read, its handler waiting.
pub(crate) struct Waiting {
    pub(super) started: Started<'static>,
    pub(super) span: Option<tracing::Span>,
}

pub(super) type Reader<RE> = Pin<Box<dyn Stream<Item = Result<Input, RE>> + Send>>;
pub(super) type Writer<WE> = Pin<Box<dyn Sink<String, Error = WE> + Send>>;

pub(super) struct Connection {
    methods: Methods,
    ctx: Context,
    config: PeerConfig,
    shared: Arc<Shared>,
    /// Outgoing calls waiting for their answer.
    pending: HashMap<i64, Pending>,
    /// The subscriptions this side opened, by notification and id.
    routes: Routes,
    /// Incoming calls running, by slot: their id (for cancellation) and task (`None` for a call
    /// that finished when first polled and whose answer is queued).
    running: HashMap<u64, (Option<Id>, Option<AbortHandle>)>,
    next_slot: u64,
    tasks: JoinSet<()>,
    /// Where running calls send their answers.
    weak: mpsc::WeakSender<Command>,
    /// Texts to write, in order; the sink takes them as fast as the other side reads.
    outbox: VecDeque<String>,
    /// Whether the outbox or the sink holds something not yet flushed.
    unflushed: bool,
    /// Bytes handed to the sink since its last flush: their room is given back when it ends.
    in_sink: usize,
    /// The first id of the calls made since the running notification handler started: their
    /// answers are read while it runs (it may await one); earlier calls' answers wait for it, so
    /// that the pushes read before them are handled first.
    calls_from: i64,
}

/// Holds the messages read while a notification handler runs that wait for it to end, in order:
/// at most `queue` of them and about `max_message_size` bytes, counted in the server's budget.
#[derive(Default)]
struct Deferred {
    inputs: VecDeque<(Input, usize, Option<Held>)>,
    bytes: usize,
}

impl Deferred {
    fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Returns whether another message may be read and held.
    fn has_room(&self, messages: usize, bytes: usize) -> bool {
        self.inputs.len() < messages && self.bytes < bytes
    }

    fn hold(&mut self, input: Input, server: Option<&Arc<ServerBudget>>) {
        let bytes = match &input {
            Input::Frame(Frame::Message(text)) => text.len(),
            _ => 0,
        };
        self.bytes += bytes;
        let held = server.map(|server| server.hold(bytes));
        self.inputs.push_back((input, bytes, held));
    }

    fn take(&mut self) -> Option<Input> {
        let (input, bytes, _held) = self.inputs.pop_front()?;
        self.bytes -= bytes;
        Some(input)
    }
}

/// Holds the notification handler running; aborted if the loop is dropped before it ends.
struct Running(JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Connection {
    pub(super) fn new(
        methods: Methods,
        ctx: Context,
        config: PeerConfig,
        shared: Arc<Shared>,
        weak: mpsc::WeakSender<Command>,
    ) -> Self {
        Self {
            methods,
            ctx,
            config,
            shared,
            pending: HashMap::new(),
            routes: Routes::default(),
            running: HashMap::new(),
            next_slot: 0,
            tasks: JoinSet::new(),
            weak,
            outbox: VecDeque::new(),
            unflushed: false,
            in_sink: 0,
            calls_from: 0,
        }
    }

    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` would hold its arguments twice"
    )]
    pub(super) fn run<RE, WE>(
        mut self,
        mut reader: Reader<RE>,
        mut writer: Writer<WE>,
        mut commands: mpsc::Receiver<Command>,
        keepalive: Option<mpsc::Sender<Command>>,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static
    where
        RE: fmt::Display + Send + 'static,
        WE: fmt::Display + Send + 'static,
    {
        // A block using its captures in place: an `async fn` keeps its arguments twice (as
        // arguments, and as the locals they move into), and this future sits in every open
        // connection.
        async move {
            let answer_tx = self.weak.clone();
            let mut notification: Option<Running> = None;
            // Messages read while a notification handler runs that are not answers: they wait
            // for the handler to end, in order (up to `queue` of them: reading then pauses).
            let mut held = Deferred::default();
            let mut reading = true;
            let mut handles_open = true;
            let mut drain_until: Option<tokio::time::Instant> = None;
            let shared = Arc::clone(&self.shared);
            let takes_notifications = !self.config.notifications_by_sink;
            // Commands stop being taken while this much waits to be written, so that handlers and
            // handles feel the backpressure; reading goes on (to twice as much, for the answers that
            // reading itself writes), so that two sides writing to each other never both stop reading.
            let (command_room, read_room) =
                (self.config.queue, self.config.queue.saturating_mul(2));
            // Reading makes answers: it pauses while half the budget is taken, keeping the other half
            // for the answers of calls already running.
            let budget = Arc::clone(&shared.budget);
            let mut overflowed = Woken::new(shared.overflowed.notified());
            // An error's kind tells the layer above what happened: `QuotaExceeded` for a peer that
            // does not read (its budget or queue overflowed), `TimedOut` for a drain that ran out.
            let outcome: Result<(), (ErrorKind, String)> = loop {
                let idle = !self.unflushed;
                let outlived =
                    self.config.subscriptions_outlive_input && shared.subscriptions.any();
                if !reading
                    && self.running.is_empty()
                    && notification.is_none()
                    && idle
                    && !outlived
                {
                    // A handle may have queued a message between the polls of one select (the
                    // commands found empty, then the input found ended): it still goes out.
                    // New ones are refused first, so that a caller failed here (a call that can
                    // have no answer now) finds the handle closed too.
                    commands.close();
                    match commands.try_recv() {
                        Ok(command) => {
                            self.commands(command, &mut commands, command_room, reading);
                            continue;
                        }
                        _ => break Ok(()),
                    }
                }
                // Every handle is gone (a child process no one calls any more): nothing can be sent
                // from here on, not even the answers of calls still running.
                if !handles_open && keepalive.is_none() && idle {
                    break Ok(());
                }
                // Subscriptions' notifications (unless the sink takes them itself: a WebSocket's
                // pump) go straight out while little is on its way to the other side; past that
                // (a slow reader) they wait in their lanes, each within its own bound, while
                // answers go straight out. Producers are polled here, either way.
                let lanes = takes_notifications && shared.subscriptions.has_ready();
                let mut lanes_wait = false;
                if lanes {
                    let room = if self.outbox.len() < command_room {
                        shared.subscriptions.room()
                    } else {
                        0
                    };
                    let outbox = &mut self.outbox;
                    let taken = shared
                        .subscriptions
                        .take(room, |text| outbox.push_back(text));
                    if taken.moved > 0 {
                        self.unflushed = true;
                    }
                    taken.overflow(&shared);
                    lanes_wait = shared.subscriptions.has_ready();
                }
                let outbox = self.outbox.len();
                let room_to_read = budget.may_read();
                let notifying = notification.is_some() || !held.is_empty();
                let room_to_hold = held.has_room(command_room, self.config.max_message_size);
                if shared.notifying.load(Ordering::Relaxed) != notifying {
                    shared.notifying.store(notifying, Ordering::Release);
                }
                tokio::select! {
                    biased;
                    () = &mut overflowed => break Err((ErrorKind::QuotaExceeded, self.overflowed())),
                    written = poll_fn(|cx| flush(cx, &mut writer, &mut self.outbox, &mut self.in_sink)), if self.unflushed => match written {
                        Ok(()) => self.flushed(),
                        Err(err) => break Err((ErrorKind::Other, format!("write failed: {err}"))),
                    },
                    command = commands.recv(), if handles_open && outbox < command_room => match command {
                        None => handles_open = false,
                        Some(command) => self.commands(command, &mut commands, command_room, reading),
                    },
                    () = join(&mut notification), if notification.is_some() => {
                        notification = None;
                        while notification.is_none() && let Some(input) = held.take() {
                            notification = self.input(input, &answer_tx, &commands);
                        }
                    }
                    frame = reader.next(), if reading && room_to_hold && outbox < read_room && room_to_read => match frame {
                        None => {
                            reading = false;
                            drain_until = Some(crate::time::after(self.config.drain_timeout));
                            self.fail_pending();
                            if self.config.subscriptions_outlive_input {
                                // Its subscriptions keep it: the drain budget is for calls.
                                if self.running.is_empty() {
                                    drain_until = None;
                                }
                            } else {
                                // The other side is gone: nothing its subscriptions make can
                                // reach it.
                                shared.subscriptions.close();
                            }
                        }
                        Some(Err(err)) => break Err((ErrorKind::Other, format!("unreadable input: {err}"))),
                        // While a notification handler runs, only answers are taken (it may await
                        // one); anything else waits for it to end.
                        Some(Ok(input)) if notification.is_some() => {
                            if let Some(input) = self.answer_or_hold(input) {
                                held.hold(input, self.config.server_budget.as_ref());
                            }
                        }
                        Some(Ok(input)) => notification = self.input(input, &answer_tx, &commands),
                    },
                    () = budget.given_back(), if reading && !room_to_read => {}
                    () = budget.resumed(), if lanes_wait => {}
                    () = poll_fn(|cx| shared.subscriptions.poll_woken(cx)), if takes_notifications => {}
                    // A subscription ended: one that outlives the input may be the last.
                    () = shared.subscriptions.wake.notified(), if !reading => {}
                    () = sleep_until(drain_until), if drain_until.is_some() => {
                        // The drain time is the calls': with none running, what they wrote is on
                        // its way (a flush waiting for the writer, within `write_timeout`), and
                        // goes out.
                        if !self.running.is_empty() || notification.is_some() {
                            break Err(self.drain_ran_out());
                        }
                        drain_until = None;
                    }
                }
            };
            self.stop(&mut commands, keepalive, notification);
            // Closing flushes first: only close a sink that has nothing left, or it could wait for a
            // reader that is gone or stuck. Dropping it closes the stream all the same.
            if !self.unflushed {
                let _ = writer.close().await;
            }
            outcome.map_err(|(kind, why)| {
                tracing::warn!(reason = %why, "connection closed");
                std::io::Error::new(kind, why)
            })
        }
    }

    /// Stops what runs once the loop ended: new commands refused before what is pending fails (so
    /// that a caller told `Closed` finds the handle closed too), the running calls aborted.
    fn stop(
        &mut self,
        commands: &mut mpsc::Receiver<Command>,
        keepalive: Option<mpsc::Sender<Command>>,
        notification: Option<Running>,
    ) {
        commands.close();
        drop(keepalive);
        drop(notification);
        self.tasks.abort_all();
        self.fail_pending();
        self.shared.subscriptions.close();
    }

    /// Notes that what the sink took is written: its room goes back, unless the sink gives it back
    /// itself.
    fn flushed(&mut self) {
        self.unflushed = false;
        if !self.config.sink_gives_back {
            self.shared
                .budget
                .give_back(std::mem::take(&mut self.in_sink));
        }
    }

    /// Takes `command`, and what else waits (up to `room` queued), so that one flush carries
    /// many messages.
    fn commands(
        &mut self,
        command: Command,
        commands: &mut mpsc::Receiver<Command>,
        room: usize,
        reading: bool,
    ) {
        self.command(command, reading);
        while self.outbox.len() < room {
            let Ok(command) = commands.try_recv() else {
                break;
            };
            self.command(command, reading);
        }
    }

    /// Takes what was read: a message, or a call the transport began.
    fn input(
        &mut self,
        input: Input,
        answers: &mpsc::WeakSender<Command>,
        commands: &mpsc::Receiver<Command>,
    ) -> Option<Running> {
        match input {
            Input::Frame(frame) => self.incoming(frame, answers, commands),
            Input::Waiting(waiting) => self.run_waiting(waiting, answers),
        }
    }

    /// Takes `input`, read while a notification handler runs, when it answers a call made since
    /// the handler started (which wakes its caller: the handler may be awaiting it); else returns
    /// it, to be taken once the handler ends.
    fn answer_or_hold(&mut self, input: Input) -> Option<Input> {
        if let Input::Frame(Frame::Message(text)) = &input
            && let Incoming::Response(res) = incoming::parse(text)
            && res
                .id()
                .and_then(|id| id.as_i64())
                .is_some_and(|id| id >= self.calls_from)
        {
            self.take_answer(&res);
            return None;
        }
        Some(input)
    }

    /// Wakes the caller an answer is for: with its result or error, or, for an answer that is
    /// malformed, with why (at once, rather than at its timeout).
    fn take_answer(&mut self, res: &incoming::Response<'_>) {
        match res.read() {
            Ok((id, outcome)) => {
                let result = outcome.map(ToOwned::to_owned).map_err(ClientError::from);
                self.wake(&id, result);
            }
            Err(why) => match res.id() {
                Some(id) => self.wake(&id, Err(ClientError::Malformed(why))),
                None => tracing::warn!(%why, "ignored a malformed answer to no call"),
            },
        }
    }

    /// Runs a call the transport began: a call goes on in a task of its own; a notification is what
    /// the loop now waits for.
    fn run_waiting(
        &mut self,
        waiting: Waiting,
        answer_tx: &mpsc::WeakSender<Command>,
    ) -> Option<Running> {
        let Waiting { started, span } = waiting;
        if started.id().is_some() {
            self.spawn_call(started, span, answer_tx);
            return None;
        }
        Some(self.notification(started, span))
    }

    /// Returns the connection's error when the drain time ran out.
    #[cold]
    fn drain_ran_out(&self) -> (ErrorKind, String) {
        let (calls, bytes) = (self.running.len(), self.shared.budget.held());
        let why = format!(
            "the drain time ({:?}) ran out with {calls} calls unanswered and {bytes} bytes unwritten; they were dropped",
            self.config.drain_timeout
        );
        (ErrorKind::TimedOut, why)
    }

    /// Logs why a text found no room and tells the observer; returns the connection's error.
    #[cold]
    fn overflowed(&self) -> String {
        let Some(why) = self.shared.overflow_reason() else {
            return "the outgoing queue overflowed (`queue`)".into();
        };
        tracing::warn!(reason = %why.reason, method = why.method.as_deref(), id = ?why.id, "closing: the peer does not read");
        self.methods.observe_overflow(
            why.method.as_deref().unwrap_or_default(),
            why.id.as_ref(),
            self.ctx.transport(),
        );
        why.reason
    }

    fn fail_pending(&mut self) {
        for (_, pending) in self.pending.drain() {
            let _ = pending.reply.send(Err(ClientError::Closed {
                method: pending.method,
            }));
        }
        // No notification can arrive any more either.
        self.routes.close();
    }

    /// Opens the subscriptions' lanes whose subscribe call `text` answers, as it is queued; unless
    /// the sink takes the notifications, and opens them as it writes the answer.
    fn opens(&self, text: &str) {
        if !self.config.notifications_by_sink {
            self.shared.subscriptions.answered(text);
        }
    }

    /// Queues a text that has taken its room in the budget.
    fn queue(&mut self, text: String) {
        self.outbox.push_back(text);
        self.unflushed = true;
    }

    /// Queues a text the loop writes itself, counting it in the budget.
    fn send(&mut self, text: String) {
        self.shared.budget.force(text.len());
        self.queue(text);
    }

    /// Queues an answer a writer built.
    fn send_bytes(&mut self, bytes: Vec<u8>) {
        self.send(write::text(bytes));
    }

    fn command(&mut self, command: Command, reading: bool) {
        match command {
            Command::Call(call) => {
                let OutgoingCall {
                    id,
                    method,
                    text,
                    reply,
                    opens,
                } = *call;
                if !reading {
                    self.shared.budget.give_back(text.len());
                    let _ = reply.send(Err(ClientError::Closed { method }));
                    return;
                }
                self.pending.insert(
                    id,
                    Pending {
                        method,
                        reply,
                        opens,
                    },
                );
                self.queue(text);
            }
            Command::Notify { text } => {
                // An answer queued behind its handler's pushes comes this way too.
                self.opens(&text);
                self.queue(text);
            }
            Command::Answer { slot, text } => {
                // A cancelled call's late answer is dropped: it was answered already, or must not be.
                match (self.running.remove(&slot), text) {
                    (Some(_), Some(text)) => {
                        // A subscription's notifications may follow its answer from now on.
                        self.opens(&text);
                        self.queue(text);
                    }
                    (None, Some(text)) => self.shared.budget.give_back(text.len()),
                    (_, None) => {}
                }
            }
            Command::Cancel { id } => self.cancel_id(&id),
            Command::Forget { id } => {
                if self.pending.remove(&id).is_none() {
                    return;
                }
                if let Some(notice) = self.config.cancellation.notice(id) {
                    self.send(notice);
                }
            }
        }
    }

    /// Takes one incoming frame, read once: a call starts in a task of its own, a notification
    /// handler is returned for the loop to wait for, an answer wakes its caller, anything else
    /// is answered at once without running anything.
    fn incoming(
        &mut self,
        frame: Frame,
        answers: &mpsc::WeakSender<Command>,
        commands: &mpsc::Receiver<Command>,
    ) -> Option<Running> {
        let text = match frame {
            Frame::Message(text) => text,
            Frame::TooLong { limit, got } => {
                let reason = format!("message of {got} bytes exceeds the limit of {limit} bytes");
                tracing::warn!(%reason, "message skipped");
                let err = RpcError::invalid_request().with_data(&reason);
                self.send_bytes(write::error_bytes(&err, &None::<&Id>));
                return None;
            }
            _ => {
                self.send_bytes(Rejection::Unparsable.answer());
                return None;
            }
        };
        if incoming::is_batch(&text) {
            // A batch is calls too: past the cap it is refused whole, with one answer.
            if !self.refused_busy(None) {
                self.run_batch(text, answers, commands);
            }
            return None;
        }
        // A request for a method of the table is read with its params in one pass; anything
        // else, and the cancellation notice, is read as usual below. Past the in-flight cap
        // nothing is started: the usual read refuses a call before anything runs.
        let notice = self.config.cancellation.method();
        if !self.busy()
            && let Some(started) = self.methods.start_body(&text, &self.ctx, notice)
        {
            if started.id().is_some() {
                self.run_call(started, answers, commands);
                return None;
            }
            return Some(self.notification(started, None));
        }
        let parsed = match incoming::parse(&text) {
            Incoming::Rejected(rejection) => match self.methods.reconsider(rejection) {
                Ok(req) => Incoming::Request(req),
                Err(rejection) => Incoming::Rejected(rejection),
            },
            parsed => parsed,
        };
        match parsed {
            Incoming::Request(req) => match req.id {
                Some(raw_id) => {
                    if !self.refused_busy(Some(raw_id)) {
                        let started = self.methods.start(req, &self.ctx);
                        self.run_call(started, answers, commands);
                    }
                    None
                }
                None if self.config.cancellation.is_notice(&req.method) => {
                    self.cancel(req.params);
                    None
                }
                None if !self.routes.is_empty() && self.routes.take(&req.method, req.params) => {
                    None
                }
                None => {
                    let started = self.methods.start(req, &self.ctx);
                    Some(self.notification(started, None))
                }
            },
            Incoming::Response(res) => {
                self.take_answer(&res);
                None
            }
            Incoming::Rejected(rejection) => {
                self.send_bytes(rejection.answer());
                None
            }
        }
    }

    /// Runs a notification's handler in a task of its own (in `span`, if made already), which
    /// the loop waits for before it reads on.
    fn notification(&mut self, started: Started<'_>, span: Option<tracing::Span>) -> Running {
        self.calls_from = self.shared.next_id.load(Ordering::Relaxed);
        let started = started.into_owned();
        let handed = Handed::new(started, span, self.methods.clone(), self.ctx.clone());
        Running(tokio::spawn(async move {
            // A notification is never answered, whatever the handler does.
            handed.run().await;
        }))
    }

    /// Answers `-32000` at once, and says so, when [`max_in_flight`](super::PeerConfigBuilder::max_in_flight)
    /// handlers of calls (or batches) are running; `raw_id` is the call's id, `None` for a batch.
    fn refused_busy(&mut self, raw_id: Option<&RawValue>) -> bool {
        if !self.busy() {
            return false;
        }
        let max = self.config.max_in_flight;
        let err = RpcError::new(ErrorCode::SERVER_ERROR, "Server busy")
            .with_data(&format!("more than {max} calls in flight"));
        self.send_bytes(write::error_bytes(&err, &raw_id));
        true
    }

    /// Returns whether [`max_in_flight`](super::PeerConfigBuilder::max_in_flight) handlers of calls
    /// (or batches) are running.
    fn busy(&self) -> bool {
        self.shared.handling.load(Ordering::Acquire) >= self.config.max_in_flight
    }

    /// Joins the call tasks that ended. A JoinSet keeps every finished task until it is joined:
    /// reaped before each spawn, a long-lived connection does not grow with every call it ever
    /// answered.
    fn reap(&mut self) {
        while self.tasks.try_join_next().is_some() {}
    }

    /// Runs a call read from a message: answered at once when its handler finishes in its
    /// first poll (most do), without a task, a copy of the request or a box for it; otherwise
    /// it goes on in a task of its own.
    fn run_call(
        &mut self,
        started: Started<'_>,
        answers: &mpsc::WeakSender<Command>,
        commands: &mpsc::Receiver<Command>,
    ) {
        let (id, method) = (started.id().cloned(), started.method());
        let (started, span) = match self.methods.run_once(started, &self.ctx) {
            FirstPoll::Answered(text) => {
                let slot = self.next_slot;
                self.next_slot += 1;
                let text = text.map(write::text);
                self.answered(slot, id, text, Some(&method), answers, commands);
                return;
            }
            FirstPoll::Waiting(started, span) => (started.into_owned(), span),
        };
        self.spawn_call(started, span, answers);
    }

    /// Runs a call whose handler waits in a task of its own, counted in flight while it runs.
    fn spawn_call(
        &mut self,
        started: Started<'static>,
        span: Option<tracing::Span>,
        answers: &mpsc::WeakSender<Command>,
    ) {
        let slot = self.next_slot;
        self.next_slot += 1;
        let (id, method) = (started.id().cloned(), started.method());
        self.reap();
        // Ended as cancelled even if its task is aborted before it first runs.
        let handed = Handed::new(started, span, self.methods.clone(), self.ctx.clone());
        // Counted in flight while it runs, however it ends (answered, cancelled).
        let handling = Handling::new(&self.shared);
        let answers = answers.clone();
        let shared = Arc::clone(&self.shared);
        let answer_id = id.clone();
        let method: Box<str> = method.into();
        let task = self.tasks.spawn(async move {
            let _handling = handling;
            let text = handed.run().await;
            let text = text.map(write::text);
            let Ok(text) = admit(&shared, text, Some(&method), answer_id.as_ref()) else {
                return;
            };
            deliver(&shared, &answers, slot, text).await;
        });
        self.running.insert(slot, (id, Some(task)));
    }

    /// Runs a batch in a task of its own, after one poll here: most batches of calls that
    /// finish at once are answered without the task switch.
    fn run_batch(
        &mut self,
        text: String,
        answers: &mpsc::WeakSender<Command>,
        commands: &mpsc::Receiver<Command>,
    ) {
        self.reap();
        let slot = self.next_slot;
        self.next_slot += 1;
        let (methods, ctx) = (self.methods.clone(), self.ctx.clone());
        let handling = Handling::new(&self.shared);
        let mut call: Pin<Box<dyn Future<Output = Option<String>> + Send>> = Box::pin(async move {
            // Counted in flight while this runs, however it ends (answered, cancelled).
            let _handling = handling;
            methods.handle_in(&text, &ctx).await
        });
        // Polled once here with no waker: one that waits goes on in its own task, polled
        // again there with a real waker.
        let mut noop = TaskContext::from_waker(std::task::Waker::noop());
        if let Poll::Ready(text) = call.as_mut().poll(&mut noop) {
            self.answered(slot, None, text, None, answers, commands);
            return;
        }
        let answers = answers.clone();
        let shared = Arc::clone(&self.shared);
        let task = self.tasks.spawn(async move {
            let text = call.await;
            let Ok(text) = admit(&shared, text, None, None) else {
                return;
            };
            deliver(&shared, &answers, slot, text).await;
        });
        self.running.insert(slot, (None, Some(task)));
    }

    /// Queues the answer of a call (`method`, `None` for a batch) that finished when first
    /// polled. Its answer still goes behind whatever the handler pushed.
    fn answered(
        &mut self,
        slot: u64,
        id: Option<Id>,
        text: Option<String>,
        method: Option<&str>,
        answers: &mpsc::WeakSender<Command>,
        commands: &mpsc::Receiver<Command>,
    ) {
        let Ok(text) = admit(&self.shared, text, method, id.as_ref()) else {
            return;
        };
        // Whatever the handler pushed is in the command queue by now: while that is empty,
        // the answer goes straight to the outbox, in its order.
        if commands.is_empty() {
            if let Some(text) = text {
                self.opens(&text);
                self.queue(text);
            }
            return;
        }
        let answer = Command::Answer { slot, text };
        match answers.upgrade().map(|tx| tx.try_send(answer)) {
            Some(Ok(())) => {
                self.running.insert(slot, (id, None));
            }
            Some(Err(mpsc::error::TrySendError::Full(answer))) => {
                // The queue is full: a task waits for room, in turn.
                self.reap();
                let answers = answers.clone();
                let room = Room::taken(&self.shared.budget, answer.bytes());
                let task = self.tasks.spawn(async move {
                    if let Some(tx) = answers.upgrade()
                        && tx.send(answer).await.is_ok()
                    {
                        room.keep();
                    }
                });
                self.running.insert(slot, (id, Some(task)));
            }
            // The loop is ending: nobody will read the answer.
            Some(Err(mpsc::error::TrySendError::Closed(_))) | None => {}
        }
    }

    fn wake(&mut self, id: &Id, result: Result<Box<RawValue>, ClientError>) {
        match id.as_i64().and_then(|id| self.pending.remove(&id)) {
            Some(Pending {
                reply,
                opens: Some(opening),
                ..
            }) => {
                // A subscription's notifications may come right behind its answer: its route
                // opens before anything else is read.
                let _ = reply.send(result.and_then(|result| self.routes.open(opening, result)));
            }
            Some(Pending { reply, .. }) => {
                let _ = reply.send(result);
            }
            None => tracing::debug!(%id, "answer to no pending call"),
        }
    }

    /// Honours a cancellation notice.
    fn cancel(&mut self, params: Option<&RawValue>) {
        if let Some(id) = Cancellation::target(params) {
            self.cancel_id(&id);
        }
    }

    /// Cancels incoming call `id`: tells it when it asked to be, else aborts its handler (and
    /// answers it, as the connection's notices say).
    fn cancel_id(&mut self, id: &Id) {
        if self.shared.told.tell_id(id) {
            return;
        }
        let slot = self
            .running
            .iter()
            .find(|(_, (running, _))| running.as_ref() == Some(id))
            .map(|(slot, _)| *slot);
        let Some((_, task)) = slot.and_then(|slot| self.running.remove(&slot)) else {
            return;
        };
        if let Some(task) = task {
            task.abort();
        }
        if let Some(answer) = self.config.cancellation.answer(id) {
            self.send(answer);
        }
    }
}

/// Sends a call's answer, which took its room in the budget, to the loop; the room is given
/// back if the call is cancelled while the answer waits for the queue.
async fn deliver(
    shared: &Shared,
    answers: &mpsc::WeakSender<Command>,
    slot: u64,
    text: Option<String>,
) {
    let room = Room::taken(&shared.budget, text.as_ref().map_or(0, String::len));
    if let Some(answers) = answers.upgrade()
        && answers.send(Command::Answer { slot, text }).await.is_ok()
    {
        room.keep();
    }
}

/// Counts an incoming call's handler as running, until dropped.
struct Handling(Arc<Shared>);

impl Handling {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.handling.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(shared))
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Moves queued texts into the sink as it takes them, then flushes: ready once all is written, or
/// on the first failure. Safe to drop when pending and to call again: a text is taken from the
/// outbox only when the sink has accepted it.
fn flush<WE>(
    cx: &mut TaskContext<'_>,
    writer: &mut Writer<WE>,
    outbox: &mut VecDeque<String>,
    in_sink: &mut usize,
) -> Poll<Result<(), WE>> {
    while !outbox.is_empty() {
        ready!(writer.as_mut().poll_ready(cx))?;
        if let Some(text) = outbox.pop_front() {
            *in_sink += text.len();
            writer.as_mut().start_send(text)?;
        }
    }
    writer.as_mut().poll_flush(cx)
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

async fn join(task: &mut Option<Running>) {
    match task {
        // A panic cannot reach here: the dispatcher contains handler panics.
        Some(task) => {
            let _ = (&mut task.0).await;
        }
        None => std::future::pending().await,
    }
}
