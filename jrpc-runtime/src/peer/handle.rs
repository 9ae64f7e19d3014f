//! Provides the handle on a connection: [`Peer`], a [`Caller`] of the other side, and the
//! constructors that start a connection's loop.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures_util::{FutureExt as _, Sink, SinkExt as _, Stream, TryStreamExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::cancel::Cancellation;
use super::config::{Framing, Lifetime, Overflow, PeerConfig};
use super::connection::{Command, Connection, Input, OutgoingCall};
use super::subscription::{EndCell, Opening, Subscriber, Subscription, Subscriptions};
use super::told::Told;
use crate::caller::Caller;
use crate::dispatch::{Context, Methods, TraceContext};
use crate::error::ClientError;
use crate::framing::{ContentLength, Frame, FrameError, Lines};
use crate::limits::{Room, Watermark, WriteDeadline};
use crate::transport::Transport;
use crate::wire::Id;
use crate::wire::write;

/// Holds what handles and the loop share.
pub(crate) struct Shared {
    /// The id of the next outgoing call (shared by connections that number their calls together).
    pub(super) next_id: Arc<AtomicI64>,
    overflow: Overflow,
    /// What the connection runs over, for the client's `call` span.
    transport: Transport,
    /// Whether it speaks MCP's notices ([`Cancellation::Mcp`]): its calls then carry the trace
    /// being served in `params._meta`.
    meta_trace: bool,
    /// Signalled when a text found no room: a push under [`Overflow::Close`], or an answer.
    pub(super) overflowed: Notify,
    /// Why, and for which message; the first reason is kept.
    overflow_reason: Mutex<Option<Overflowed>>,
    /// The room outgoing texts take (see `budget`).
    pub(crate) budget: Arc<Watermark>,
    /// The largest answer sent: a larger one is replaced by an error answer to its call.
    pub(super) max_message_size: usize,
    /// Incoming calls whose handlers are running: what `max_in_flight` caps. A call whose
    /// answer only waits to be written is not counted.
    pub(crate) handling: AtomicUsize,
    /// Messages handles have begun to send: a call answered where it was read (by the
    /// WebSocket's reader) whose handler sent one meanwhile queues its answer behind it.
    pub(crate) pushes: AtomicU64,
    /// Whether the loop waits for a notification handler (what it reads meanwhile is answers
    /// only): a reader of its own must not answer the next call before it ends.
    pub(crate) notifying: AtomicBool,
    /// The incoming requests told when cancelled, by id or key.
    pub(crate) told: Arc<Told>,
    /// The subscriptions the connection serves.
    pub(crate) subscriptions: Subscriptions,
    /// How many items of each subscription this side opened may wait to be read.
    subscription_buffer: usize,
    /// Tells this connection from every other in the process.
    connection: u64,
    /// What runs when the loop ends ([`Peer::on_close`]); `None` once it has run.
    on_close: Mutex<Option<Vec<CloseHook>>>,
    /// Cancelled when the loop ends: what [`Peer::closed`] waits for.
    closed: CancellationToken,
}

/// Describes a message that found no room, closing its connection.
pub(super) struct Overflowed {
    /// What happened, for the connection's error and the log.
    pub(super) reason: String,
    /// The method of the message (an answered call's, a push's), when it has one.
    pub(super) method: Option<String>,
    /// The answered call's id.
    pub(super) id: Option<Id>,
}

impl Shared {
    /// Records why the connection must close, and wakes its loop to close it.
    pub(super) fn overflow(&self, why: Overflowed) {
        if let Ok(mut reason) = self.overflow_reason.lock() {
            reason.get_or_insert(why);
        }
        self.overflowed.notify_one();
    }

    /// Returns the reason recorded by [`overflow`](Self::overflow).
    pub(super) fn overflow_reason(&self) -> Option<Overflowed> {
        self.overflow_reason.lock().ok()?.take()
    }

    /// Returns why a text of `bytes` found no room.
    pub(super) fn no_room(&self, what: &str, bytes: usize) -> String {
        format!(
            "the peer does not read: {what} of {bytes} bytes finds {} of the {} bytes it may hold taken (`max_buffered`)",
            self.budget.held(),
            self.budget.limit()
        )
    }
}

/// Names work tied to a connection's life: a registry forgetting it, say.
type CloseHook = Box<dyn FnOnce() + Send>;

/// Ends the connection's subscriptions and runs the close hooks when the loop ends, however it
/// ends (returns, or is dropped or aborted: a WebSocket's pump aborts it once the socket is gone).
struct RunOnClose(Arc<Shared>);

impl Drop for RunOnClose {
    fn drop(&mut self) {
        // Their producers wait for items that may be rare: they go now, not at their next item.
        self.0.subscriptions.close();
        self.0.closed.cancel();
        let hooks = self
            .0
            .on_close
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for hook in hooks.into_iter().flatten() {
            hook();
        }
    }
}

/// Calls or notifies the other side of an open connection: a handle, cheap to clone.
///
/// Handles are [`Caller`]s, so every generated stub works over them, and
/// [`Caller::call`]/[`Caller::notify`] send with typed params. Inside a handler,
/// [`Context::peer`] gives the connection's own handle.
///
/// ```
/// use jrpc_runtime::{Caller as _, Methods, Peer, PeerConfig, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (a, b) = tokio::io::duplex(1024);
/// let mut methods = Methods::new();
/// methods.register("double", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(2 * x) }).unwrap();
/// let (_server, server_loop) = Peer::connect(a, methods, PeerConfig::default());
/// tokio::spawn(server_loop);
/// let (client, client_loop) = Peer::connect(b, Methods::new(), PeerConfig::default());
/// tokio::spawn(client_loop);
/// let four: i64 = client.call("double", [2]).await.unwrap();
/// assert_eq!(four, 4);
/// # });
/// ```
#[derive(Clone)]
pub struct Peer {
    pub(crate) tx: Sender,
    pub(crate) shared: Arc<Shared>,
    timeout: Option<Duration>,
}

/// Sends commands to the loop: handlers hold weak senders, so a connection whose users dropped
/// every handle can end.
#[derive(Clone)]
pub(crate) enum Sender {
    Strong(mpsc::Sender<Command>),
    Weak(mpsc::WeakSender<Command>),
}

impl Sender {
    /// Returns a weak sender on the same queue.
    pub(crate) fn weak(&self) -> mpsc::WeakSender<Command> {
        match self {
            Self::Strong(tx) => tx.downgrade(),
            Self::Weak(tx) => tx.clone(),
        }
    }

    fn get(&self) -> Option<mpsc::Sender<Command>> {
        match self {
            Self::Strong(tx) => Some(tx.clone()),
            Self::Weak(tx) => tx.upgrade(),
        }
    }
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("timeout", &self.timeout)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Runs the loop of a connection: spawn it (or await it). It ends `Ok` when input ended and what
/// ran has drained, or when every handle is gone under [`Lifetime::UntilUnused`]; `Err` when the
/// connection broke (an unreadable header, a failed write, a write that waited
/// [`write_timeout`](crate::peer::PeerConfigBuilder::write_timeout)), when the other side did not read
/// what it asked for (past [`max_buffered`](crate::peer::PeerConfigBuilder::max_buffered): kind
/// [`QuotaExceeded`](std::io::ErrorKind::QuotaExceeded)), or when the drain time ran out with
/// calls unanswered (kind [`TimedOut`](std::io::ErrorKind::TimedOut)): a server exits non-zero
/// then.
pub struct Driver(Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>);

impl Future for Driver {
    type Output = std::io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Driver")
    }
}

/// Holds the connection's own handle in its handlers' contexts ([`Context::peer`] finds it); its
/// field is this module's, so that no one else can put one there.
#[derive(Clone)]
pub(crate) struct ConnectionPeer(Peer);

impl ConnectionPeer {
    /// Returns the handle.
    pub(crate) fn peer(&self) -> &Peer {
        &self.0
    }
}

impl Peer {
    /// Serves `methods` over a byte stream, framed as `config` says, and returns a handle to call
    /// the other side, and the loop to spawn.
    pub fn connect<T>(io: T, methods: Methods, config: PeerConfig) -> (Peer, Driver)
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(io);
        Self::connect_split(read, write, methods, config)
    }

    /// Does what [`connect`](Self::connect) does, over separate reading and writing halves (stdin
    /// and stdout, a child's pipes).
    pub fn connect_split<R, W>(
        read: R,
        write: W,
        methods: Methods,
        config: PeerConfig,
    ) -> (Peer, Driver)
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let max = config.max_message_size;
        let write = WriteDeadline::new(write, config.write_timeout);
        match config.framing {
            Framing::Lines => Self::start(
                FramedRead::new(read, Lines::new(max)),
                FramedWrite::new(write, Lines::new(max))
                    .with(|text: String| std::future::ready(Ok::<_, FrameError>(one_line(text)))),
                methods,
                config,
            ),
            Framing::ContentLength => Self::start(
                FramedRead::new(read, ContentLength::new(max)),
                FramedWrite::new(write, ContentLength::new(max)),
                methods,
                config,
            ),
        }
    }

    /// Starts a connection over any stream of frames and sink of texts (a WebSocket, a test
    /// double); `config`'s framing is not used.
    pub fn start<R, W, RE, WE>(
        reader: R,
        writer: W,
        methods: Methods,
        config: PeerConfig,
    ) -> (Peer, Driver)
    where
        R: Stream<Item = Result<Frame, RE>> + Send + 'static,
        W: Sink<String, Error = WE> + Send + 'static,
        RE: fmt::Display + Send + 'static,
        WE: fmt::Display + Send + 'static,
    {
        let (peer, driver, _) =
            Self::start_inputs(reader.map_ok(Input::Frame), writer, methods, config);
        (peer, driver)
    }

    /// Does what [`start`](Self::start) does, over a stream of inputs, some of them calls the
    /// transport began itself; with the context the loop serves with, which such calls are
    /// started in.
    pub(crate) fn start_inputs<R, W, RE, WE>(
        reader: R,
        writer: W,
        methods: Methods,
        mut config: PeerConfig,
    ) -> (Peer, Driver, Context)
    where
        R: Stream<Item = Result<Input, RE>> + Send + 'static,
        W: Sink<String, Error = WE> + Send + 'static,
        RE: fmt::Display + Send + 'static,
        WE: fmt::Display + Send + 'static,
    {
        static CONNECTIONS: AtomicU64 = AtomicU64::new(1);
        let (tx, rx) = mpsc::channel(config.queue);
        let budget = Arc::new(Watermark::new(
            config.max_buffered,
            config.server_budget.clone(),
        ));
        let shared = Arc::new(Shared {
            next_id: config
                .ids
                .clone()
                .unwrap_or_else(|| Arc::new(AtomicI64::new(1))),
            overflow: config.overflow,
            transport: config.context.transport(),
            meta_trace: config.cancellation == Cancellation::Mcp,
            overflowed: Notify::new(),
            overflow_reason: Mutex::new(None),
            budget: Arc::clone(&budget),
            max_message_size: config.max_message_size,
            handling: AtomicUsize::new(0),
            pushes: AtomicU64::new(0),
            notifying: AtomicBool::new(false),
            told: Arc::default(),
            subscriptions: Subscriptions::new(config.max_subscriptions(), budget),
            subscription_buffer: config.subscription_buffer,
            closed: CancellationToken::new(),
            connection: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            on_close: Mutex::new(Some(Vec::new())),
        });
        let handle = Peer {
            tx: Sender::Weak(tx.downgrade()),
            shared: Arc::clone(&shared),
            timeout: config.call_timeout,
        };
        // Moved out and back rather than cloned: a clone would be a second copy of the context
        // (its headers, its extensions) kept as long as the connection.
        let ctx = handle
            .own_context(config.context)
            .with_answer_limit(config.max_message_size);
        config.context = ctx.clone();
        // A server keeps its own strong sender so that handlers can push after the caller dropped
        // the handle it was given; a client lets the loop end with its last handle.
        let keepalive = (config.lifetime == Lifetime::UntilInputEnds).then(|| tx.clone());
        let closed = RunOnClose(Arc::clone(&shared));
        let conn = Connection::new(methods, ctx.clone(), config, shared, tx.downgrade());
        let run = conn.run(Box::pin(reader), Box::pin(writer), rx, keepalive);
        // `map`, not an `async` block awaiting `run`: the block would hold the loop's future
        // twice (the capture, and the future awaited).
        let driver = Driver(Box::pin(run.map(move |ended| {
            drop(closed);
            ended
        })));
        (
            Peer {
                tx: Sender::Strong(tx),
                ..handle
            },
            driver,
            ctx,
        )
    }

    /// Returns this handle with another per-call timeout (`None` waits forever).
    #[must_use]
    pub fn with_timeout(&self, limit: Option<Duration>) -> Peer {
        Peer {
            timeout: limit,
            ..self.clone()
        }
    }

    /// Returns whether the connection's loop has ended.
    pub fn is_closed(&self) -> bool {
        self.tx.get().is_none_or(|tx| tx.is_closed())
    }

    /// Cancels the incoming request `id` of this connection, as a cancel notice naming it does:
    /// a request that asked to be told
    /// ([`Context::told_when_cancelled`](crate::Context::told_when_cancelled)) is told, and
    /// answers; another is dropped (and, for LSP and ACP, answered `-32800`). What a handler does
    /// for another request of its connection.
    pub async fn cancel_request(&self, id: &Id) {
        if self.shared.told.tell_id(id) {
            return;
        }
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(Command::Cancel { id: id.clone() }).await;
        }
    }

    /// Tells the incoming requests of this connection registered under `key`
    /// ([`Context::cancellable_by_key`](crate::Context::cancellable_by_key): a session, say)
    /// that they are cancelled; returns how many. Each answers as it sees fit (ACP's prompt turn
    /// with `stopReason: "cancelled"`).
    pub fn cancel_key(&self, key: &str) -> usize {
        self.shared.told.tell_key(key)
    }

    /// Returns `ctx` with this connection's handle as its [`Context::peer`], held weakly: the
    /// context of the connection's own handlers, and of requests a transport dispatches itself
    /// while the connection carries what their handlers send (an HTTP request answered as an event
    /// stream).
    pub(crate) fn own_context(&self, ctx: Context) -> Context {
        ctx.with_extension(ConnectionPeer(Peer {
            tx: Sender::Weak(self.tx.weak()),
            ..self.clone()
        }))
    }

    /// Queues `text`, a message written elsewhere, behind everything sent so far: a push (a
    /// notification, `answer` false) takes its room in the budget as [`notify`](Caller::notify) does; an answer
    /// (one a transport's dispatch made) is counted, never refused for room, and waits only for
    /// room in a full queue.
    ///
    /// # Errors
    ///
    /// [`ClientError::Closed`] when the connection is closed; for a push, as a notification's
    /// (under [`Overflow::Close`], the text found no room).
    pub(crate) async fn send_text(
        &self,
        what: &str,
        text: String,
        answer: bool,
    ) -> Result<(), ClientError> {
        let bytes = text.len();
        if !answer {
            return self.send(what, Command::Notify { text }, bytes).await;
        }
        let closed = || ClientError::Closed {
            method: what.to_owned(),
        };
        let tx = self.tx.get().ok_or_else(closed)?;
        self.shared.pushes.fetch_add(1, Ordering::AcqRel);
        self.shared.budget.force(bytes);
        // Given back if the text is dropped on the way.
        let room = Room::taken(&self.shared.budget, bytes);
        tx.send(Command::Notify { text })
            .await
            .map_err(|_| closed())?;
        room.keep();
        Ok(())
    }

    /// Returns a number that tells this connection from every other in the process (its handles
    /// share it): what a registry of connections keys them by.
    pub fn connection_id(&self) -> u64 {
        self.shared.connection
    }

    /// Resolves once the connection's loop has ended (the other side went away, the input ended,
    /// the connection was closed or dropped): what work a handler started for its client waits
    /// on, to stop when the client goes. At once if it has ended.
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        self.shared.closed.clone().cancelled_owned()
    }

    /// Runs `hook` once, when the connection's loop ends (returns, or is dropped); at once if it
    /// has ended. What a registry of connections uses to forget one that closed.
    pub(crate) fn on_close(&self, hook: impl FnOnce() + Send + 'static) {
        let mut hooks = self
            .shared
            .on_close
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match hooks.as_mut() {
            Some(hooks) => hooks.push(Box::new(hook)),
            None => {
                drop(hooks);
                hook();
            }
        }
    }

    /// Queues `command`, whose text is `bytes` long, taking room for it in the budget first.
    async fn send(&self, method: &str, command: Command, bytes: usize) -> Result<(), ClientError> {
        let closed = || ClientError::Closed {
            method: method.to_owned(),
        };
        let tx = self.tx.get().ok_or_else(closed)?;
        self.shared.pushes.fetch_add(1, Ordering::AcqRel);
        let budget = &self.shared.budget;
        match self.shared.overflow {
            Overflow::Wait => {
                // Room is given back as the other side reads; a closed connection gives none.
                let taken = tokio::select! {
                    taken = budget.take(bytes) => taken,
                    () = tx.closed() => return Err(closed()),
                };
                if !taken {
                    return Err(ClientError::TooLong {
                        limit: budget.limit(),
                        got: bytes,
                    });
                }
                // Given back if the call is given up (its timeout) while it waits for the queue.
                let room = Room::taken(budget, bytes);
                tx.send(command).await.map_err(|_| closed())?;
                room.keep();
                Ok(())
            }
            Overflow::Close => {
                let reason = if budget.try_take(bytes) {
                    match tx.try_send(command) {
                        Ok(()) => return Ok(()),
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            budget.give_back(bytes);
                            "the outgoing queue overflowed (`queue`)".to_owned()
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => {
                            budget.give_back(bytes);
                            return Err(closed());
                        }
                    }
                } else {
                    self.shared.no_room(&format!("`{method}`"), bytes)
                };
                self.shared.overflow(Overflowed {
                    reason,
                    method: Some(method.to_owned()),
                    id: None,
                });
                Err(closed())
            }
        }
    }
}

/// Returns `text` as a message for line framing. In JSON text a raw line end can only be white
/// space (within a string it is escaped), so a result, params or error data written over several
/// lines (a `RawValue` kept as the application wrote it) go out on one line, meaning the same,
/// rather than be refused by [`Lines`], which would end the connection.
pub(crate) fn one_line(text: String) -> String {
    if text.contains('\n') {
        text.replace('\n', " ")
    } else {
        text
    }
}

/// Tells the loop when a call is given up before its answer, however that happens.
struct ForgetOnDrop<'a> {
    peer: &'a Peer,
    id: i64,
    armed: bool,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed
            && let Some(tx) = self.peer.tx.get()
        {
            // A full queue only loses the cancel notice; the answer is dropped when it comes.
            let _ = tx.try_send(Command::Forget { id: self.id });
        }
    }
}

impl Caller for Peer {
    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let text = write::call_text(None::<&Id>, method, params.as_deref());
        self.send_text(method, text, false).await
    }

    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let call = self.call(id, method, params, None);
        crate::caller::traced(method, &id, self.shared.transport, call).await
    }
}

impl Subscriber for Peer {
    fn subscribe<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        notification: &str,
        unsubscribe: &str,
    ) -> impl Future<Output = Result<Subscription<T>, ClientError>> + Send {
        let params = crate::caller::encode_params(&params);
        async move {
            let (items, rx) = mpsc::channel(self.shared.subscription_buffer);
            let end = Arc::new(EndCell::default());
            let opening = Opening {
                notification: Arc::from(notification),
                items,
                end: Arc::clone(&end),
                resubscribed: None,
            };
            let sub = self.open_subscription(method, params?, opening).await?;
            Ok(Subscription::new(sub, rx, end, self.clone(), unsubscribe))
        }
    }
}

impl Peer {
    /// Calls the subscribe `method`; the route `opening` holds opens as its answer is read,
    /// before the next message. Returns the subscription's id.
    pub(crate) async fn open_subscription(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        opening: Opening,
    ) -> Result<Id, ClientError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let call = self.call(id, method, params, Some(opening));
        let raw = crate::caller::traced(method, &id, self.shared.transport, call).await?;
        crate::caller::decode_result(&raw)
    }

    /// Returns how many items of each subscription this side opens may wait to be read.
    #[allow(
        dead_code,
        reason = "a reconnecting client (the WebSocket's) subscribes again through it"
    )]
    pub(crate) fn subscription_buffer(&self) -> usize {
        self.shared.subscription_buffer
    }

    /// Returns how long this handle's calls wait for their answer (`None`: forever).
    #[allow(dead_code, reason = "a reconnecting client (the WebSocket's) keeps it")]
    pub(crate) fn call_timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

impl Peer {
    async fn call(
        &self,
        id: i64,
        method: &str,
        params: Option<Box<RawValue>>,
        opens: Option<Opening>,
    ) -> Result<Box<RawValue>, ClientError> {
        let params = match self
            .shared
            .meta_trace
            .then(TraceContext::outgoing)
            .flatten()
        {
            Some(trace) => trace.meta_in(params),
            None => params,
        };
        let text = write::call_text(Some(&id), method, params.as_deref());
        let bytes = text.len();
        let (reply, answer) = oneshot::channel();
        // The limit covers the whole call: waiting for room in a full queue (the other side not
        // reading) as well as waiting for the answer.
        let deadline = self.timeout.map(|limit| (crate::time::after(limit), limit));
        let timed_out = |limit| ClientError::TimedOut {
            method: method.to_owned(),
            limit,
        };
        let send = self.send(
            method,
            Command::Call(Box::new(OutgoingCall {
                id,
                method: method.to_owned(),
                text,
                reply,
                opens,
            })),
            bytes,
        );
        match deadline {
            None => send.await?,
            Some((at, limit)) => tokio::time::timeout_at(at, send)
                .await
                .map_err(|_| timed_out(limit))??,
        }
        let mut guard = ForgetOnDrop {
            peer: self,
            id,
            armed: true,
        };
        let result = match deadline {
            None => answer.await,
            Some((at, limit)) => tokio::time::timeout_at(at, answer)
                .await
                .map_err(|_| timed_out(limit))?,
        };
        guard.armed = false;
        result.unwrap_or_else(|_| {
            Err(ClientError::Closed {
                method: method.to_owned(),
            })
        })
    }
}
