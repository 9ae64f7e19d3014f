//! The two-way connection: both sides call.
//!
//! One task owns a connection and runs its loop; [`Peer`] handles talk to it over a bounded
//! channel. The loop waits on, in this priority (first ready wins):
//!
//! | # | source | what it does |
//! | --- | --- | --- |
//! | 1 | an overflow signal | closes the connection (a full queue under [`Overflow::Close`]) |
//! | 2 | the writer, while messages wait | hands them to the stream as the other side reads them; a failed write closes the connection |
//! | 3 | commands from handles and finished calls | queues calls, notifications and answers in the order they came; forgets given-up calls. Paused while [`PeerConfig::queue`] messages wait to be written |
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
//! [`ClientError::Closed`], while incoming calls still running get [`PeerConfig::drain`] to finish
//! and be answered (so `printf '...' | server` prints its answers), then are cancelled. A failed
//! write means the other side is gone: everything still running is cancelled at once.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context as TaskContext, Poll, ready};
use std::time::Duration;

use futures_util::{Sink, SinkExt as _, Stream, StreamExt as _};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle, JoinSet};
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::framing::{ContentLength, DEFAULT_MAX_LEN, Frame, FrameError, Lines};
use crate::message::call_text;
use crate::methods::error_bytes;
use crate::{Caller, ClientError, Context, Id, Message, Methods, RpcError, Transport};

/// Which cancellation notices a connection speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancellation {
    /// None: a given-up call is forgotten silently, and no notice is honoured.
    #[default]
    Off,
    /// LSP: `$/cancelRequest {"id": ..}`; a cancelled incoming call is answered `-32800`.
    Lsp,
    /// MCP: `notifications/cancelled {"requestId": .., "reason": ..}`; a cancelled incoming call
    /// is not answered.
    Mcp,
}

impl Cancellation {
    fn method(self) -> Option<&'static str> {
        match self {
            Self::Off => None,
            Self::Lsp => Some("$/cancelRequest"),
            Self::Mcp => Some("notifications/cancelled"),
        }
    }
}

/// What [`Peer::notify`] and [`Peer::call`] do when the outgoing queue is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// Wait for room (backpressure on the sender).
    #[default]
    Wait,
    /// Close the connection: for servers pushing to clients that may stop reading.
    Close,
}

/// How messages are framed on a byte stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Framing {
    /// One message a line (MCP, ACP).
    #[default]
    Lines,
    /// `Content-Length` headers (the LSP base protocol).
    ContentLength,
}

/// Settings of a [`Peer`] connection.
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::{Cancellation, PeerConfig};
///
/// let config = PeerConfig::default()
///     .call_timeout(Some(Duration::from_secs(5)))
///     .cancellation(Cancellation::Lsp)
///     .max_in_flight(16);
/// assert_eq!(config.get_max_in_flight(), 16);
/// ```
#[derive(Clone, Debug)]
pub struct PeerConfig {
    call_timeout: Option<Duration>,
    max_in_flight: usize,
    queue: usize,
    max_message_len: usize,
    cancellation: Cancellation,
    drain: Duration,
    overflow: Overflow,
    transport: Transport,
}

impl Default for PeerConfig {
    /// 60 s per outgoing call, 128 incoming calls in flight, a queue of 1 024 outgoing messages,
    /// 4 MiB messages, no cancellation notices, 10 s of drain at end of input, backpressure on
    /// a full queue.
    fn default() -> Self {
        Self {
            call_timeout: Some(Duration::from_secs(60)),
            max_in_flight: 128,
            queue: 1024,
            max_message_len: DEFAULT_MAX_LEN,
            cancellation: Cancellation::Off,
            drain: Duration::from_secs(10),
            overflow: Overflow::Wait,
            transport: Transport::Stream,
        }
    }
}

impl PeerConfig {
    /// How long an outgoing call may take, from queueing it to its answer; `None` waits forever.
    #[must_use]
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }

    /// How many incoming calls may run at once (at least 1; a batch counts as one); past it a call
    /// or a batch is answered `-32000` at once (a batch with one error, id `null`).
    #[must_use]
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// How many outgoing messages may wait to be written (at least 1, at most
    /// [`Semaphore::MAX_PERMITS`](tokio::sync::Semaphore::MAX_PERMITS), the most a Tokio channel
    /// holds).
    #[must_use]
    pub fn queue(mut self, len: usize) -> Self {
        self.queue = len.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self
    }

    /// The largest incoming message, in bytes, for the framings this crate builds.
    #[must_use]
    pub fn max_message_len(mut self, len: usize) -> Self {
        self.max_message_len = len;
        self
    }

    /// Which cancellation notices to send and honour.
    #[must_use]
    pub fn cancellation(mut self, cancellation: Cancellation) -> Self {
        self.cancellation = cancellation;
        self
    }

    /// How long incoming calls may still run after the end of input.
    #[must_use]
    pub fn drain(mut self, limit: Duration) -> Self {
        self.drain = limit;
        self
    }

    /// What a full outgoing queue does.
    #[must_use]
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// The transport handlers see in their [`Context`].
    #[must_use]
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// The cap on incoming calls in flight.
    pub fn get_max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// The largest incoming message.
    pub fn get_max_message_len(&self) -> usize {
        self.max_message_len
    }
}

/// Where an outgoing call's answer goes.
type Reply = oneshot::Sender<Result<Box<RawValue>, ClientError>>;

enum Command {
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

struct Shared {
    next_id: AtomicI64,
    overflow: Overflow,
    overflowed: Notify,
}

/// A handle on an open connection, to call or notify the other side; cheap to clone.
///
/// Handles are [`Caller`]s, so every generated stub works over them. Inside a handler,
/// [`Context::peer`] gives the connection's own handle.
///
/// ```
/// use jrpc_runtime::{Methods, Peer, PeerConfig, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (a, b) = tokio::io::duplex(1024);
/// let mut methods = Methods::new();
/// methods.register("double", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(2 * x) }).unwrap();
/// let (_server, server_loop) = Peer::connect(a, Default::default(), methods, PeerConfig::default());
/// tokio::spawn(server_loop);
/// let (client, client_loop) = Peer::connect(b, Default::default(), Methods::new(), PeerConfig::default());
/// tokio::spawn(client_loop);
/// let four: i64 = client.call("double", [2]).await.unwrap();
/// assert_eq!(four, 4);
/// # });
/// ```
#[derive(Clone)]
pub struct Peer {
    tx: Sender,
    shared: Arc<Shared>,
    timeout: Option<Duration>,
}

/// Handlers hold weak senders, so a connection whose users dropped every handle can end.
#[derive(Clone)]
enum Sender {
    Strong(mpsc::Sender<Command>),
    Weak(mpsc::WeakSender<Command>),
}

impl Sender {
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

/// The loop of a connection: spawn it (or await it). It ends `Ok` when input ended and what ran
/// has drained, or when every handle is gone where nothing else is to be served; `Err` when the
/// connection broke (an unreadable header, a failed write).
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

impl Peer {
    /// Serves `methods` over a byte stream and returns a handle to call the other side, and the
    /// loop to spawn.
    pub fn connect<T>(
        io: T,
        framing: Framing,
        methods: Methods,
        config: PeerConfig,
    ) -> (Peer, Driver)
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(io);
        Self::connect_split(read, write, framing, methods, config)
    }

    /// Like [`connect`](Self::connect), over separate reading and writing halves (stdin and
    /// stdout, a child's pipes).
    pub fn connect_split<R, W>(
        read: R,
        write: W,
        framing: Framing,
        methods: Methods,
        config: PeerConfig,
    ) -> (Peer, Driver)
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        Self::connect_split_with(read, write, framing, methods, config, false)
    }

    /// [`connect_split`](Self::connect_split), ending with the last handle if
    /// `close_when_unused` (a child process no one calls any more).
    pub(crate) fn connect_split_with<R, W>(
        read: R,
        write: W,
        framing: Framing,
        methods: Methods,
        config: PeerConfig,
        close_when_unused: bool,
    ) -> (Peer, Driver)
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let max = config.max_message_len;
        match framing {
            Framing::Lines => Self::start_with(
                FramedRead::new(read, Lines::new(max)),
                FramedWrite::new(write, Lines::new(max))
                    .with(|text: String| std::future::ready(Ok::<_, FrameError>(one_line(text)))),
                methods,
                config,
                close_when_unused,
            ),
            Framing::ContentLength => Self::start_with(
                FramedRead::new(read, ContentLength::new(max)),
                FramedWrite::new(write, ContentLength::new(max)),
                methods,
                config,
                close_when_unused,
            ),
        }
    }

    /// Starts a connection over any stream of frames and sink of texts (a WebSocket, a test
    /// double). The loop keeps serving while input lasts, whether or not handles remain.
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
        Self::start_with(reader, writer, methods, config, false)
    }

    pub(crate) fn start_with<R, W, RE, WE>(
        reader: R,
        writer: W,
        methods: Methods,
        config: PeerConfig,
        close_when_unused: bool,
    ) -> (Peer, Driver)
    where
        R: Stream<Item = Result<Frame, RE>> + Send + 'static,
        W: Sink<String, Error = WE> + Send + 'static,
        RE: fmt::Display + Send + 'static,
        WE: fmt::Display + Send + 'static,
    {
        let base = Context::new(config.transport);
        Self::start_in(reader, writer, methods, config, base, close_when_unused)
    }

    /// Like [`start_with`](Self::start_with), with handlers' contexts built on `base` (peer
    /// address, upgrade headers, extensions) rather than a bare one; `config.transport` is not
    /// read: `base` carries the transport.
    pub(crate) fn start_in<R, W, RE, WE>(
        reader: R,
        writer: W,
        methods: Methods,
        config: PeerConfig,
        base: Context,
        close_when_unused: bool,
    ) -> (Peer, Driver)
    where
        R: Stream<Item = Result<Frame, RE>> + Send + 'static,
        W: Sink<String, Error = WE> + Send + 'static,
        RE: fmt::Display + Send + 'static,
        WE: fmt::Display + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(config.queue);
        let shared = Arc::new(Shared {
            next_id: AtomicI64::new(1),
            overflow: config.overflow,
            overflowed: Notify::new(),
        });
        let handle = Peer {
            tx: Sender::Weak(tx.downgrade()),
            shared: Arc::clone(&shared),
            timeout: config.call_timeout,
        };
        let ctx = base.with_peer(handle.clone());
        // A server keeps its own strong sender so that handlers can push after the caller dropped
        // the handle it was given; a client lets the loop end with its last handle.
        let keepalive = (!close_when_unused).then(|| tx.clone());
        let conn = Connection {
            methods,
            ctx,
            config,
            shared: Arc::clone(&shared),
            pending: HashMap::new(),
            running: HashMap::new(),
            next_slot: 0,
            tasks: JoinSet::new(),
            weak: tx.downgrade(),
            outbox: VecDeque::new(),
            unflushed: false,
        };
        let driver = Driver(Box::pin(conn.run(
            Box::pin(reader),
            Box::pin(writer),
            rx,
            keepalive,
        )));
        (
            Peer {
                tx: Sender::Strong(tx),
                ..handle
            },
            driver,
        )
    }

    /// This handle with another per-call timeout (`None` waits forever).
    #[must_use]
    pub fn with_timeout(&self, limit: Option<Duration>) -> Peer {
        Peer {
            timeout: limit,
            ..self.clone()
        }
    }

    /// Whether the connection's loop has ended.
    pub fn is_closed(&self) -> bool {
        self.tx.get().is_none_or(|tx| tx.is_closed())
    }

    /// Calls `method` on the other side and decodes its result. `params` that encode as `null`
    /// (such as `()`) are left out.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] with the other side's error, [`ClientError::TimedOut`],
    /// [`ClientError::Closed`], or [`ClientError::Malformed`] when the result does not decode.
    pub async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<R, ClientError> {
        let raw = self.call_raw(method, encode_params(&params)?).await?;
        crate::__private::decode_result(&raw)
    }

    /// Sends a notification to the other side.
    ///
    /// # Errors
    ///
    /// [`ClientError::Closed`] when the connection has ended.
    pub async fn notify(&self, method: &str, params: impl Serialize) -> Result<(), ClientError> {
        self.notify_raw(method, encode_params(&params)?).await
    }

    async fn send(&self, method: &str, command: Command) -> Result<(), ClientError> {
        let closed = || ClientError::Closed {
            method: method.to_owned(),
        };
        let tx = self.tx.get().ok_or_else(closed)?;
        match self.shared.overflow {
            Overflow::Wait => tx.send(command).await.map_err(|_| closed()),
            Overflow::Close => match tx.try_send(command) {
                Ok(()) => Ok(()),
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.shared.overflowed.notify_one();
                    Err(closed())
                }
                Err(mpsc::error::TrySendError::Closed(_)) => Err(closed()),
            },
        }
    }
}

/// Encodes the params of [`Peer::call`] and the like: `None` for params that encode as `null`
/// (such as `()`), which are left out of the request.
pub(crate) fn encode_params(params: &impl Serialize) -> Result<Option<Box<RawValue>>, ClientError> {
    let raw = serde_json::value::to_raw_value(params)
        .map_err(|err| ClientError::Encode(format!("params: {err}")))?;
    Ok((raw.get() != "null").then_some(raw))
}

/// A message for line framing. In JSON text a raw line end can only be white space (within a
/// string it is escaped), so a result, params or error data written over several lines (a
/// `RawValue` kept as the application wrote it) go out on one line, meaning the same, rather than
/// be refused by [`Lines`], which would end the connection.
fn one_line(text: String) -> String {
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
        if self.armed {
            if let Some(tx) = self.peer.tx.get() {
                // A full queue only loses the cancel notice; the answer is dropped when it comes.
                let _ = tx.try_send(Command::Forget { id: self.id });
            }
        }
    }
}

impl Caller for Peer {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let text = call_text(Some(&Id::from(id)), method, params.as_deref());
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
            Command::Call {
                id,
                method: method.to_owned(),
                text,
                reply,
            },
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

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let text = call_text(None, method, params.as_deref());
        self.send(method, Command::Notify { text }).await
    }
}

/// The members the loop reads to tell calls, notifications and answers apart.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    error: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    params: Option<&'a RawValue>,
}

/// The params of both cancellation notices: LSP's `id`, MCP's `requestId`.
#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "requestId")]
    request_id: Option<&'a RawValue>,
}

type Reader<RE> = Pin<Box<dyn Stream<Item = Result<Frame, RE>> + Send>>;
type Writer<WE> = Pin<Box<dyn Sink<String, Error = WE> + Send>>;

struct Connection {
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
    async fn run<RE, WE>(
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
                        drain_until = Some(crate::time::after(self.config.drain));
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

    /// Queues an answer the dispatcher built.
    fn send_bytes(&mut self, bytes: Vec<u8>) {
        if let Ok(text) = String::from_utf8(bytes) {
            self.send(text);
        }
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
                match self.config.cancellation {
                    Cancellation::Off => {}
                    Cancellation::Lsp => self.send(format!(
                        r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{id}}}}}"#
                    )),
                    Cancellation::Mcp => self.send(format!(
                        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"the caller gave up"}}}}"#
                    )),
                }
            }
        }
    }

    /// Takes one incoming frame; returns the notification handler to wait for, if one started.
    fn incoming(&mut self, frame: Frame, answers: &mpsc::WeakSender<Command>) -> Option<Running> {
        let text = match frame {
            Frame::Message(text) => text,
            Frame::TooLong { limit, got } => {
                let reason = format!("message of {got} bytes exceeds the limit of {limit} bytes");
                tracing::warn!(%reason, "message skipped");
                self.send_bytes(error_bytes(
                    &RpcError::invalid_request().with_data(&reason),
                    None,
                ));
                return None;
            }
            _ => {
                self.send_bytes(error_bytes(&RpcError::parse_error(), None));
                return None;
            }
        };
        if crate::request::is_batch(&text) {
            // A batch is calls too: past the cap it is refused whole, with one answer.
            if !self.refused_busy(None) {
                self.spawn_call(None, text, answers);
            }
            return None;
        }
        let Ok(probe) = serde_json::from_str::<Probe<'_>>(&text) else {
            self.reject(&text);
            return None;
        };
        match (probe.method, probe.id) {
            (Some(_), Some(raw_id)) => {
                if self.refused_busy(Some(raw_id)) {
                    return None;
                }
                let id = Id::from_json(raw_id.get());
                self.spawn_call(id, text, answers);
                None
            }
            (Some(method), None) => {
                let cancel = self.config.cancellation.method();
                if cancel.is_some_and(|cancel| {
                    method.get().get(1..method.get().len() - 1) == Some(cancel)
                }) {
                    self.cancel(probe.params);
                    return None;
                }
                let (methods, ctx) = (self.methods.clone(), self.ctx.clone());
                let answers = answers.clone();
                Some(Running(tokio::spawn(async move {
                    // A notification is never answered; what is answered here is an invalid
                    // object without an id (`-32600`, id null).
                    if let Some(text) = methods.handle_in(&text, &ctx).await {
                        if let Some(tx) = answers.upgrade() {
                            let _ = tx.send(Command::Notify { text }).await;
                        }
                    }
                })))
            }
            (None, _) if probe.result.is_some() || probe.error.is_some() => {
                self.answered(&text);
                None
            }
            (None, _) => {
                self.reject(&text);
                None
            }
        }
    }

    /// Answers, without running anything, a message the probe could not take as a request: not
    /// JSON, not an object, a member written twice, or no `method`. The dispatcher ignores
    /// `result` and `error`, so it would run a request that repeats one of them, and here, in
    /// the loop's own task, where a handler that waits stops the connection: such an object is
    /// answered `-32600` like any other with a repeated member.
    fn reject(&mut self, text: &str) {
        let answer = match crate::request::parse(text) {
            Err(rejection) => crate::methods::rejected(&rejection),
            Ok(req) => error_bytes(&RpcError::invalid_request(), req.id),
        };
        self.send_bytes(answer);
    }

    /// Answers `-32000` at once, and says so, when [`PeerConfig::max_in_flight`] calls (or
    /// batches) are running; `raw_id` is the call's id, `None` for a batch.
    fn refused_busy(&mut self, raw_id: Option<&RawValue>) -> bool {
        let max = self.config.max_in_flight;
        if self.running.len() < max {
            return false;
        }
        let err = RpcError::new(crate::ErrorCode::SERVER_ERROR, "Server busy")
            .with_data(&format!("more than {max} calls in flight"));
        self.send_bytes(error_bytes(&err, raw_id));
        true
    }

    fn spawn_call(&mut self, id: Option<Id>, text: String, answers: &mpsc::WeakSender<Command>) {
        // A JoinSet keeps every finished task until it is joined: reap them, or a long-lived
        // connection grows with every call it ever answered.
        while self.tasks.try_join_next().is_some() {}
        let slot = self.next_slot;
        self.next_slot += 1;
        let (methods, ctx) = (self.methods.clone(), self.ctx.clone());
        let mut call: Pin<Box<dyn Future<Output = Option<String>> + Send>> =
            Box::pin(async move { methods.handle_in(&text, &ctx).await });
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

    /// An answer from the other side wakes its caller.
    fn answered(&mut self, text: &str) {
        match Message::parse(text) {
            Ok(Message::Response { id, result }) => self.wake(&id, Ok(result)),
            Ok(Message::ErrorResponse { id, error }) => {
                self.wake(&id, Err(ClientError::Failed(error)))
            }
            Ok(_) | Err(_) => tracing::warn!("ignored a malformed answer"),
        }
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
        let id = params
            .and_then(|p| serde_json::from_str::<CancelParams<'_>>(p.get()).ok())
            .and_then(|p| p.id.or(p.request_id))
            .and_then(|raw| Id::from_json(raw.get()));
        let Some(id) = id else { return };
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
        if self.config.cancellation == Cancellation::Lsp {
            let err = RpcError::new(crate::ErrorCode::REQUEST_CANCELLED, "Request cancelled");
            let raw = serde_json::value::to_raw_value(&id).ok();
            self.send_bytes(error_bytes(&err, raw.as_deref()));
        }
    }
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
