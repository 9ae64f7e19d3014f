//! The connection's loop: one task owns a connection; handles talk to it over a bounded channel.
//!
//! [`Peer`](super::Peer) handles and finished calls send [`Command`]s; the loop waits on, in this priority (first ready wins):
//!
//! | # | source | what it does |
//! | --- | --- | --- |
//! | 1 | an overflow signal | closes the connection (a full queue under [`Overflow::Close`](super::Overflow::Close)) |
//! | 2 | the writer, while messages wait | hands them to the stream as the other side reads them; a failed write closes the connection |
//! | 3 | commands from handles and finished calls | queues calls, notifications and answers in the order they came; forgets given-up calls. Paused while [`queue`](super::PeerConfigBuilder::queue) messages wait to be written |
//! | 4 | the running notification handler | when it ends, reading resumes |
//! | 5 | the next incoming message | only while no notification handler runs (and while fewer than twice the queue wait) |
//! | 6 | the drain deadline after end of input | cancels what still runs |
//!
//! A slow reader on the other side never stops this side from reading: a write waits in its own
//! branch while the loop goes on. Two sides that write to each other faster than they read thus
//! cannot both stop, each waiting for the other to read. Backpressure reaches handles and
//! handlers through the bounded command channel instead.
//!
//! Incoming messages are taken in arrival order: a notification handler finishes before the next
//! message is read; a call starts in turn and runs in its own task; an answer wakes its caller in
//! turn. So a notification handler must not await a call on its own connection: the answer would
//! never be read. Spawn such a call (`tokio::spawn`) or make the method a call.
//!
//! A call is first polled once by the loop itself: one that finishes without waiting (most do) is
//! answered without a task switch, which is where a connection's throughput goes. The price is
//! that a handler computing for long before its first `.await` holds up its connection for that
//! long; move such work to `tokio::task::spawn_blocking`.
//!
//! At end of input no answer can arrive any more: pending outgoing calls fail with
//! [`ClientError::Closed`], while incoming calls still running get [`drain_timeout`](super::PeerConfigBuilder::drain_timeout) to finish
//! and be answered (so `printf '...' | server` prints its answers), then are cancelled. A failed
//! write means the other side is gone: everything still running is cancelled at once.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, ready};

use futures_util::{Sink, SinkExt as _, Stream, StreamExt as _};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle, JoinSet};

use super::handle::Shared;
use super::{Cancellation, Overflow, PeerConfig};
use crate::framing::Frame;
use crate::wire::{Incoming, OwnedRequest, Rejection, Request, incoming, write};
use crate::{ClientError, Context, ErrorCode, Id, Methods, RpcError};

/// Where an outgoing call's answer goes.
type Reply = oneshot::Sender<Result<Box<RawValue>, ClientError>>;

pub(super) enum Command {
    Call {
        id: i64,
        method: String,
        text: String,
        reply: Reply,
    },
    Notify {
        text: String,
    },
    /// A call given up (timed out or dropped) before its answer came.
    Forget {
        id: i64,
    },
    /// An incoming call's answer (`None` for a batch of notifications). Answers share the queue
    /// with the handler's own pushes, so a handler's notifications go out before its answer.
    Answer {
        slot: u64,
        text: Option<String>,
    },
}

pub(super) type Reader<RE> = Pin<Box<dyn Stream<Item = Result<Frame, RE>> + Send>>;
pub(super) type Writer<WE> = Pin<Box<dyn Sink<String, Error = WE> + Send>>;

pub(super) struct Connection {
    methods: Methods,
    ctx: Context,
    config: PeerConfig,
    shared: Arc<Shared>,
    /// Outgoing calls waiting for their answer.
    pending: HashMap<i64, (String, Reply)>,
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
}

/// The notification handler running; aborted if the loop is dropped before it ends.
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
            running: HashMap::new(),
            next_slot: 0,
            tasks: JoinSet::new(),
            weak,
            outbox: VecDeque::new(),
            unflushed: false,
        }
    }

    pub(super) async fn run<RE, WE>(
        mut self,
        mut reader: Reader<RE>,
        mut writer: Writer<WE>,
        mut commands: mpsc::Receiver<Command>,
        keepalive: Option<mpsc::Sender<Command>>,
    ) -> std::io::Result<()>
    where
        RE: fmt::Display + Send + 'static,
        WE: fmt::Display + Send + 'static,
    {
        let answer_tx = self.weak.clone();
        let mut notification: Option<Running> = None;
        let mut reading = true;
        let mut handles_open = true;
        let mut drain_until: Option<tokio::time::Instant> = None;
        let shared = Arc::clone(&self.shared);
        // Commands stop being taken while this much waits to be written, so that handlers and
        // handles feel the backpressure; reading goes on (to twice as much, for the answers that
        // reading itself writes), so that two sides writing to each other never both stop reading.
        let (command_room, read_room) = (self.config.queue, self.config.queue.saturating_mul(2));
        let watch_overflow = self.config.overflow == Overflow::Close;
        let outcome: Result<(), String> = loop {
            let idle = !self.unflushed;
            if !reading && self.running.is_empty() && notification.is_none() && idle {
                break Ok(());
            }
            // Every handle is gone (a child process no one calls any more): nothing can be sent
            // from here on, not even the answers of calls still running.
            if !handles_open && keepalive.is_none() && idle {
                break Ok(());
            }
            let outbox = self.outbox.len();
            tokio::select! {
                biased;
                () = shared.overflowed.notified(), if watch_overflow => break Err("the outgoing queue overflowed".into()),
                written = poll_fn(|cx| flush(cx, &mut writer, &mut self.outbox)), if self.unflushed => match written {
                    Ok(()) => self.unflushed = false,
                    Err(err) => break Err(format!("write failed: {err}")),
                },
                command = commands.recv(), if handles_open && outbox < command_room => match command {
                    None => handles_open = false,
                    Some(command) => {
                        self.command(command, reading);
                        // Take what else waits, so that one flush carries many messages.
                        while self.outbox.len() < command_room {
                            let Ok(command) = commands.try_recv() else { break };
                            self.command(command, reading);
                        }
                    }
                },
                () = join(&mut notification), if notification.is_some() => {
                    notification = None;
                }
                frame = reader.next(), if reading && notification.is_none() && outbox < read_room => match frame {
                    None => {
                        reading = false;
                        drain_until = Some(crate::time::after(self.config.drain_timeout));
                        self.fail_pending();
                    }
                    Some(Err(err)) => break Err(format!("unreadable input: {err}")),
                    Some(Ok(frame)) => notification = self.incoming(frame, &answer_tx),
                },
                () = sleep_until(drain_until), if drain_until.is_some() => {
                    tracing::debug!(running = self.running.len(), "drain time is over; cancelling");
                    break Ok(());
                }
            }
        };
        // Refuse new commands before failing what is pending, so that a caller told `Closed`
        // finds the handle closed too.
        commands.close();
        drop(keepalive);
        drop(notification);
        self.tasks.abort_all();
        self.fail_pending();
        // Closing flushes first: only close a sink that has nothing left, or it could wait for a
        // reader that is gone or stuck. Dropping it closes the stream all the same.
        if !self.unflushed {
            let _ = writer.close().await;
        }
        outcome.map_err(|why| {
            tracing::warn!(reason = %why, "connection closed");
            std::io::Error::other(why)
        })
    }

    fn fail_pending(&mut self) {
        for (_, (method, reply)) in self.pending.drain() {
            let _ = reply.send(Err(ClientError::Closed { method }));
        }
    }

    /// Queues a text to be written.
    fn send(&mut self, text: String) {
        self.outbox.push_back(text);
        self.unflushed = true;
    }

    /// Queues an answer a writer built.
    fn send_bytes(&mut self, bytes: Vec<u8>) {
        self.send(write::text(bytes));
    }

    fn command(&mut self, command: Command, reading: bool) {
        match command {
            Command::Call {
                id,
                method,
                text,
                reply,
            } => {
                if !reading {
                    let _ = reply.send(Err(ClientError::Closed { method }));
                    return;
                }
                self.pending.insert(id, (method, reply));
                self.send(text);
            }
            Command::Notify { text } => self.send(text),
            Command::Answer { slot, text } => {
                // A cancelled call's late answer is dropped: it was answered already, or must not be.
                if let (Some(_), Some(text)) = (self.running.remove(&slot), text) {
                    self.send(text);
                }
            }
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
    fn incoming(&mut self, frame: Frame, answers: &mpsc::WeakSender<Command>) -> Option<Running> {
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
                self.spawn_call(None, Job::Batch(text), answers);
            }
            return None;
        }
        match incoming::parse(&text) {
            Incoming::Request(req) => match req.id {
                Some(raw_id) => {
                    if !self.refused_busy(Some(raw_id)) {
                        let id = Id::from_json(raw_id.get());
                        self.spawn_call(id, Job::Request(req.to_owned()), answers);
                    }
                    None
                }
                None if self.config.cancellation.is_notice(&req.method) => {
                    self.cancel(req.params);
                    None
                }
                None => Some(self.notification(&req)),
            },
            Incoming::Response(res) => {
                match res.read() {
                    Ok((id, outcome)) => {
                        let result = outcome.map(ToOwned::to_owned).map_err(ClientError::Failed);
                        self.wake(&id, result);
                    }
                    Err(why) => tracing::warn!(%why, "ignored a malformed answer"),
                }
                None
            }
            Incoming::Rejected(rejection) => {
                self.send_bytes(rejection.answer());
                None
            }
        }
    }

    /// Runs a notification's handler in a task of its own, which the loop waits for before it
    /// reads on.
    fn notification(&mut self, req: &Request<'_>) -> Running {
        let req = req.to_owned();
        let (methods, ctx) = (self.methods.clone(), self.ctx.clone());
        Running(tokio::spawn(async move {
            // A notification is never answered, whatever the handler does.
            methods.handle_request(req.as_request(), &ctx).await;
        }))
    }

    /// Answers `-32000` at once, and says so, when [`max_in_flight`](super::PeerConfigBuilder::max_in_flight)
    /// calls (or batches) are running; `raw_id` is the call's id, `None` for a batch.
    fn refused_busy(&mut self, raw_id: Option<&RawValue>) -> bool {
        let max = self.config.max_in_flight;
        if self.running.len() < max {
            return false;
        }
        let err = RpcError::new(ErrorCode::SERVER_ERROR, "Server busy")
            .with_data(&format!("more than {max} calls in flight"));
        self.send_bytes(write::error_bytes(&err, &raw_id));
        true
    }

    fn spawn_call(&mut self, id: Option<Id>, job: Job, answers: &mpsc::WeakSender<Command>) {
        // A JoinSet keeps every finished task until it is joined: reap them, or a long-lived
        // connection grows with every call it ever answered.
        while self.tasks.try_join_next().is_some() {}
        let slot = self.next_slot;
        self.next_slot += 1;
        let (methods, ctx) = (self.methods.clone(), self.ctx.clone());
        let mut call: Pin<Box<dyn Future<Output = Option<String>> + Send>> = Box::pin(async move {
            match job {
                Job::Request(req) => methods.handle_request(req.as_request(), &ctx).await,
                Job::Batch(text) => methods.handle_in(&text, &ctx).await,
            }
        });
        // Most handlers finish without waiting: polling once here answers them without a task
        // switch. Their answer still goes through the command queue, behind whatever the handler
        // pushed. One that waits goes on in its own task, polled again there with a real waker.
        let mut noop = TaskContext::from_waker(std::task::Waker::noop());
        if let Poll::Ready(text) = call.as_mut().poll(&mut noop) {
            let answer = Command::Answer { slot, text };
            match answers.upgrade().map(|tx| tx.try_send(answer)) {
                Some(Ok(())) => {
                    self.running.insert(slot, (id, None));
                    return;
                }
                Some(Err(mpsc::error::TrySendError::Full(answer))) => {
                    // The queue is full: a task waits for room, in turn.
                    let answers = answers.clone();
                    let task = self.tasks.spawn(async move {
                        if let Some(tx) = answers.upgrade() {
                            let _ = tx.send(answer).await;
                        }
                    });
                    self.running.insert(slot, (id, Some(task)));
                    return;
                }
                // The loop is ending: nobody will read the answer.
                Some(Err(mpsc::error::TrySendError::Closed(_))) | None => return,
            }
        }
        let answers = answers.clone();
        let task = self.tasks.spawn(async move {
            let text = call.await;
            if let Some(answers) = answers.upgrade() {
                let _ = answers.send(Command::Answer { slot, text }).await;
            }
        });
        self.running.insert(slot, (id, Some(task)));
    }

    fn wake(&mut self, id: &Id, result: Result<Box<RawValue>, ClientError>) {
        match id.as_i64().and_then(|id| self.pending.remove(&id)) {
            Some((_, reply)) => {
                let _ = reply.send(result);
            }
            None => tracing::debug!(%id, "answer to no pending call"),
        }
    }

    /// Honours a cancellation notice: aborts the call's handler.
    fn cancel(&mut self, params: Option<&RawValue>) {
        let Some(id) = Cancellation::target(params) else {
            return;
        };
        let slot = self
            .running
            .iter()
            .find(|(_, (running, _))| running.as_ref() == Some(&id))
            .map(|(slot, _)| *slot);
        let Some((_, task)) = slot.and_then(|slot| self.running.remove(&slot)) else {
            return;
        };
        if let Some(task) = task {
            task.abort();
        }
        if let Some(answer) = self.config.cancellation.answer(&id) {
            self.send(answer);
        }
    }
}

/// What a call task runs: one request, read already, or a batch, read by the dispatcher.
enum Job {
    Request(OwnedRequest),
    Batch(String),
}

/// Moves queued texts into the sink as it takes them, then flushes: ready once all is written, or
/// on the first failure. Safe to drop when pending and to call again: a text is taken from the
/// outbox only when the sink has accepted it.
fn flush<WE>(
    cx: &mut TaskContext<'_>,
    writer: &mut Writer<WE>,
    outbox: &mut VecDeque<String>,
) -> Poll<Result<(), WE>> {
    while !outbox.is_empty() {
        ready!(writer.as_mut().poll_ready(cx))?;
        if let Some(text) = outbox.pop_front() {
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
