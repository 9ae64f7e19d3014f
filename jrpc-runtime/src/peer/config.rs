//! The settings of a [`Peer`](super::Peer) connection, and the builder that checks them.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use super::Cancellation;
use crate::dispatch::Context;
use crate::error::ConfigError;
use crate::error::check;
use crate::transport::Transport;

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

/// What [`Caller::call`](crate::Caller::call) and [`notify`](crate::Caller::notify) on a
/// [`Peer`](super::Peer) do when the outgoing queue is full, or its byte budget
/// ([`max_buffered`](PeerConfigBuilder::max_buffered)) is spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// Wait for room (backpressure on the sender). A message larger than the whole budget fails
    /// with [`ClientError::TooLong`](crate::ClientError::TooLong).
    #[default]
    Wait,
    /// Close the connection: for servers pushing to clients that may stop reading.
    Close,
}

/// When a connection's loop may end before its input does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifetime {
    /// It serves while input lasts, whether or not handles remain: a server, whose handlers
    /// hold handles of their own to push with.
    #[default]
    UntilInputEnds,
    /// It also ends when the last [`Peer`](super::Peer) handle is dropped: a client (of a child
    /// process, of a socket) that nobody can call through any more.
    UntilUnused,
}

/// The checked settings of a [`Peer`](super::Peer) connection; build one with
/// [`PeerConfig::builder`], or take the [`Default`].
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::{Cancellation, Framing, PeerConfig};
///
/// let config = PeerConfig::builder()
///     .framing(Framing::ContentLength)
///     .call_timeout(Some(Duration::from_secs(5)))
///     .cancellation(Cancellation::Lsp)
///     .max_in_flight(16)
///     .max_buffered(64 * 1024 * 1024)
///     .write_timeout(Some(Duration::from_secs(10)))
///     .build()?;
/// # drop(config);
/// # Ok::<(), jrpc_runtime::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct PeerConfig {
    pub(super) framing: Framing,
    pub(super) call_timeout: Option<Duration>,
    pub(super) max_in_flight: usize,
    pub(super) queue: usize,
    pub(super) max_message_size: usize,
    pub(super) max_buffered: usize,
    pub(super) write_timeout: Option<Duration>,
    /// Whether the sink gives back the budget's room itself, once a text has left the process
    /// (a WebSocket's pump, which knows when the socket took it), rather than the loop on flush.
    pub(super) sink_gives_back: bool,
    pub(crate) cancellation: Cancellation,
    pub(super) drain_timeout: Duration,
    pub(super) overflow: Overflow,
    pub(super) lifetime: Lifetime,
    pub(super) context: Context,
    /// Where outgoing call ids come from: the connection's own counter, or one shared by the
    /// connections whose answers arrive through one router (an HTTP endpoint's event streams).
    pub(super) ids: Option<Arc<AtomicI64>>,
}

impl Default for PeerConfig {
    /// Every setting at the default its [`PeerConfigBuilder`] method gives.
    fn default() -> Self {
        Self {
            framing: Framing::Lines,
            call_timeout: Some(Duration::from_secs(60)),
            max_in_flight: 128,
            queue: 1024,
            max_message_size: crate::framing::DEFAULT_MAX_LEN,
            max_buffered: 4 * crate::framing::DEFAULT_MAX_LEN,
            write_timeout: Some(Duration::from_secs(30)),
            sink_gives_back: false,
            cancellation: Cancellation::Off,
            drain_timeout: Duration::from_secs(10),
            overflow: Overflow::Wait,
            lifetime: Lifetime::UntilInputEnds,
            context: Context::new(Transport::Stream),
            ids: None,
        }
    }
}

impl PeerConfig {
    /// A builder with every setting at its default.
    pub fn builder() -> PeerConfigBuilder {
        PeerConfigBuilder {
            config: Self::default(),
        }
    }

    /// This configuration with handlers' contexts built on `ctx` (its transport, the peer's
    /// address, extensions such as the authenticated user) instead of a bare
    /// [`Transport::Stream`] one. Any context is valid, so this needs no builder: a server
    /// makes one per connection from a shared configuration.
    #[must_use]
    pub fn with_context(mut self, ctx: Context) -> Self {
        self.context = ctx;
        self
    }

    /// This configuration with another framing: any framing is valid, so this needs no builder
    /// (one set of limits serves a `Content-Length` connection and a line one alike).
    #[must_use]
    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// The cap on incoming calls in flight.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// How many outgoing messages may wait to be written.
    pub fn queue(&self) -> usize {
        self.queue
    }

    /// The largest incoming message, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// The most bytes the connection holds for its peer.
    pub fn max_buffered(&self) -> usize {
        self.max_buffered
    }

    /// How long a write may wait for the peer to take a byte.
    pub fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout
    }

    /// The transport handlers see.
    pub fn transport(&self) -> Transport {
        self.context.transport()
    }

    /// The context handlers' contexts are built on.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// This configuration with the context's transport replaced: what stdio sets.
    pub(crate) fn on_transport(mut self, transport: Transport) -> Self {
        self.context = self.context.with_transport(transport);
        self
    }

    /// This configuration with another lifetime: what clients set.
    pub(crate) fn with_lifetime(mut self, lifetime: Lifetime) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// This configuration numbering its outgoing calls from `ids`, shared with other
    /// connections, so that an id names one call among all of theirs.
    #[cfg(feature = "http")]
    pub(crate) fn with_ids(mut self, ids: Arc<AtomicI64>) -> Self {
        self.ids = Some(ids);
        self
    }

    /// This configuration for a sink that gives back the budget's room itself (see
    /// [`Peer::budget`](super::Peer::budget)) and keeps its own write deadline.
    #[cfg(any(feature = "http", feature = "ws"))]
    pub(crate) fn sink_gives_back(mut self) -> Self {
        self.sink_gives_back = true;
        self.write_timeout = None;
        self
    }
}

/// Builds a [`PeerConfig`]; [`build`](Self::build) checks every value and names the first one
/// out of range.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct PeerConfigBuilder {
    config: PeerConfig,
}

impl PeerConfigBuilder {
    /// How messages are framed on a byte stream (default [`Framing::Lines`]). Only the
    /// constructors over bytes ([`Peer::connect`](super::Peer::connect),
    /// [`Peer::connect_split`](super::Peer::connect_split)) frame; [`Peer::start`](super::Peer::start)
    /// is handed whole messages.
    pub fn framing(mut self, framing: Framing) -> Self {
        self.config.framing = framing;
        self
    }

    /// How long an outgoing call may take, from queueing it to its answer (default 60 s);
    /// `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.config.call_timeout = limit;
        self
    }

    /// How many incoming calls may run at once (default 128; a batch counts as one); past it a
    /// call or a batch is answered `-32000` at once (a batch with one error, id `null`).
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.config.max_in_flight = calls;
        self
    }

    /// How many outgoing messages may wait to be written (default 1 024). While this many wait,
    /// handles and handlers feel backpressure (or, under [`Overflow::Close`], the connection
    /// closes); reading goes on up to twice as many, for the answers reading itself writes.
    pub fn queue(mut self, messages: usize) -> Self {
        self.config.queue = messages;
        self
    }

    /// The largest incoming message, in bytes, for the framings this crate builds (default
    /// 4 MiB). A larger one is skipped and answered `-32600`, id `null`; the connection goes on.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.config.max_message_size = bytes;
        self
    }

    /// The most bytes the connection holds for its peer (default 16 MiB, four messages of the
    /// default size): the message being read (counted at
    /// [`max_message_size`](Self::max_message_size)) and every outgoing text not yet written
    /// (answers, notifications and calls, queued or finished and waiting for room). It must be
    /// at least twice `max_message_size`, room for one message each way.
    ///
    /// Reading pauses while half of what is left for outgoing texts is taken, so a peer that
    /// reads never comes near it. Past it the connection closes with an error: an answer that
    /// does not fit, or a push under [`Overflow::Close`], means a peer that does not read what
    /// it asked for; under [`Overflow::Wait`] a push or call waits for room instead.
    pub fn max_buffered(mut self, bytes: usize) -> Self {
        self.config.max_buffered = bytes;
        self
    }

    /// How long a write may wait for the other side to take a byte (default 30 s); past it the
    /// connection closes with an error, as if the other side were gone. `None` waits forever.
    /// Only the constructors over bytes ([`Peer::connect`](super::Peer::connect),
    /// [`Peer::connect_split`](super::Peer::connect_split)) watch it.
    pub fn write_timeout(mut self, limit: Option<Duration>) -> Self {
        self.config.write_timeout = limit;
        self
    }

    /// Which cancellation notices to send and honour (default [`Cancellation::Off`]).
    pub fn cancellation(mut self, cancellation: Cancellation) -> Self {
        self.config.cancellation = cancellation;
        self
    }

    /// How long incoming calls may still run after the end of input (default 10 s); zero
    /// cancels them at once.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.config.drain_timeout = budget;
        self
    }

    /// What a full outgoing queue does (default [`Overflow::Wait`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.config.overflow = overflow;
        self
    }

    /// When the loop may end before its input does (default [`Lifetime::UntilInputEnds`]).
    pub fn lifetime(mut self, lifetime: Lifetime) -> Self {
        self.config.lifetime = lifetime;
        self
    }

    /// The context handlers' contexts are built on (default: a bare one on
    /// [`Transport::Stream`]); see [`PeerConfig::with_context`].
    pub fn context(mut self, ctx: Context) -> Self {
        self.config.context = ctx;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting out of range: a zero `max_in_flight` or
    /// `max_message_size`; a `queue` of zero or above
    /// [`Semaphore::MAX_PERMITS`](tokio::sync::Semaphore::MAX_PERMITS) (the most a Tokio channel
    /// holds); a `max_buffered` below twice `max_message_size`; a zero `call_timeout` or
    /// `write_timeout` (use `None` for no limit).
    pub fn build(self) -> Result<PeerConfig, ConfigError> {
        let config = &self.config;
        check::at_least_one("max_in_flight", config.max_in_flight)?;
        check::permits("queue", config.queue)?;
        check::at_least_one("max_message_size", config.max_message_size)?;
        check::budget("max_buffered", config.max_buffered, config.max_message_size)?;
        check::optional_limit("call_timeout", config.call_timeout)?;
        check::optional_limit("write_timeout", config.write_timeout)?;
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(builder: PeerConfigBuilder) -> &'static str {
        builder.build().map(drop).unwrap_err().key()
    }

    #[test]
    fn each_bad_setting_is_named() {
        let b = PeerConfig::builder;
        assert_eq!(key_of(b().max_in_flight(0)), "max_in_flight");
        assert_eq!(key_of(b().queue(0)), "queue");
        assert_eq!(key_of(b().queue(usize::MAX)), "queue");
        assert_eq!(key_of(b().max_message_size(0)), "max_message_size");
        assert_eq!(key_of(b().max_buffered((8 << 20) - 1)), "max_buffered");
        assert_eq!(
            key_of(b().max_message_size(1000).max_buffered(1999)),
            "max_buffered"
        );
        assert_eq!(
            key_of(b().write_timeout(Some(Duration::ZERO))),
            "write_timeout"
        );
        assert_eq!(
            key_of(b().call_timeout(Some(Duration::ZERO))),
            "call_timeout"
        );
        let config = b()
            .call_timeout(None)
            .drain_timeout(Duration::ZERO)
            .queue(1)
            .max_message_size(1000)
            .max_buffered(2000)
            .write_timeout(None)
            .build()
            .unwrap();
        assert_eq!(config.max_in_flight(), 128);
        assert_eq!(config.max_buffered(), 2000);
        assert_eq!(PeerConfig::default().max_buffered(), 16 << 20);
        assert!(PeerConfig::builder().build().is_ok());
    }
}
