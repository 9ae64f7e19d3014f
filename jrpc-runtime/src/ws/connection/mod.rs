//! Serves one WebSocket as a [`Peer`]: the pump between the socket and the peer's loop.
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
//! where it reads it (the peer's feed), and writes the answer with the others it made, without a
//! wake-up of the peer's loop either way. It does so only while the loop has dealt with all it
//! was handed and waits for more, and nothing written before (by the loop, a handle or the pump)
//! waits for the socket; once it hands a message over, or a handler sent something while it ran
//! (its answer then goes behind that, through the loop), the rest of what it read goes over too.
//! So messages keep their order: a notification handler that waits still holds up what follows
//! it, and what a handler sends goes out before its answer and before the answers that follow.
//! A call whose handler waits crosses started, and runs in a task of its own as any call that
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
//! buffer counts too. On a server, incoming messages count in its byte budget from their first
//! byte: the socket under tungstenite is [`Metered`], which takes a frame's room before it reads
//! its payload (and waits, not reading, while there is none), until the pump has answered the
//! message or handed it across.
//!
//! The pump waits on, in this priority (first ready wins):
//!
//! | # | source | what it does |
//! | --- | --- | --- |
//! | 1 | the stop signal (drain budget spent) | drops the connection at once |
//! | 2 | the peer's loop failing (its queue overflowed) | drops the connection at once |
//! | 3 | the closing signal (shutdown begun) | stops reading, so the peer drains; then closes 1001 |
//! | 4 | the peer's outgoing texts (and a due ping) | writes them, pings first; flushes when the peer's loop flushes (so what it wrote in one go leaves in one write); ends when the peer's loop has ended and all is flushed |
//! | 5 | the socket, and room in the peer's input | hands over the message waiting, then reads a run: text: answered here (see above), or to the peer (or kept until it has room); pongs and pings: the client is alive; binary: a message when UTF-8 (close 1007 if not), or close 1003 when refused; close: answer it |
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
//! only a message the peer cannot take yet stops it (and the clock), as does a wait for room in
//! the server's budget (the clock restarts when it ends). A client that does not read
//! is cut by the write deadline ([`write_timeout`](super::WsSettings::write_timeout)), or closed
//! with 1008 once what waits for it passes the byte budget.
//!
//! | file | what |
//! | --- | --- |
//! | `link` | the two lanes between the pump and the peer's loop, and the loop's ends of them ([`Reader`](link::Reader), [`Writer`](link::Writer)) |
//! | `inlet` | the pump's reading side: messages off the socket, answered here or handed across |
//! | `meter` | the socket under tungstenite, which counts incoming frames in the server's budget as they arrive |
//! | `outbox` | the pump's writing side: the peer's texts, the pump's own answers and pings, to the socket |
//! | `pump` | the pump's loop, and the close it ends with |

mod inlet;
mod link;
mod meter;
mod outbox;
mod pump;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use self::inlet::Inlet;
use self::link::{Link, Reader, Writer, ends};
pub(crate) use self::meter::{Meter, Metered};
use self::pump::Pump;
use crate::dispatch::{Context, Methods};
use crate::peer::{Feed, Notifications, Peer, PeerConfig};

/// Names a signal future: shutdown begun, or the drain budget spent.
pub(crate) type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Holds the checked settings one connection runs with.
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
    /// What a binary frame is.
    pub(crate) binary: BinaryFrames,
}

/// Starts serving `ws`: returns the connection's handle and the pump to spawn.
///
/// `ctx` is the context handlers see (transport, peer address, headers, extensions); whether the
/// connection ends with its last handle (a client) or only with the socket (a server) is in
/// `settings`. `meter` counts the socket's incoming bytes in the server's budget (the socket is
/// [`Metered`] with it); a client has none. `keep` is held until the pump ends (the server's count
/// of the connection, a caller's guard): in its future, not a wrapper's around it, whose state
/// every turn would read a line apart.
#[allow(
    clippy::too_many_arguments,
    reason = "a connection starts in one place for each side, from the parts its server holds"
)]
pub(crate) fn start<S, K>(
    ws: WebSocketStream<S>,
    methods: Methods,
    ctx: Context,
    settings: &Settings,
    closing: Signal,
    stop: Signal,
    meter: Option<Arc<Meter>>,
    keep: K,
) -> (Peer, impl Future<Output = ()> + Send + 'static + use<S, K>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    K: Send + 'static,
{
    let link = Link::new(settings.peer.server_budget.clone());
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
    let inline_methods = methods.clone();
    let (peer, driver, loop_ctx) = Peer::start_inputs(reader, writer, methods, config);
    let inline = Feed::new(inline_methods, loop_ctx, &peer, in_flight, notice);
    let inlet = Inlet {
        frames: Some(frames_tx),
        pending: None,
        held: None,
        inline: Some(inline),
        link,
        meter,
        room: settings.peer.max_message_size(),
        max_message_size: settings.ws.max_message_size,
        binary: settings.binary,
    };
    let pump = Pump::new(inlet, out_rx, Notifications::new(&peer), settings);
    (peer, pump.run(ws, driver, closing, stop, keep))
}

/// Says what a binary frame from the other side is (see [`WsSettings::binary_frames`](super::WsSettings::binary_frames)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BinaryFrames {
    /// A message like a text frame when it is UTF-8 (close 1007 when it is not); answered in a
    /// text frame (the default).
    #[default]
    Accept,
    /// Close 1003 (unsupported data), as RFC 6455 suggests for data a side does not take.
    Refuse,
}

/// Says what ends a connection's pump, and so which close frame (if any) it sends.
#[derive(Debug)]
pub(super) enum End {
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
