//! Holds the settings of a [`Peer`](super::Peer) connection, and the builder that checks them.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use super::Cancellation;
use crate::dispatch::Context;
use crate::error::ConfigError;
use crate::limits::ServerBudget;
use crate::limits::{Limits, limit_setters};
use crate::transport::Transport;

/// Says how messages are framed on a byte stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Framing {
    /// One message a line (MCP, ACP).
    #[default]
    Lines,
    /// `Content-Length` headers (the LSP base protocol).
    ContentLength,
}

/// Says what [`Caller::call`](crate::caller::Caller::call) and
/// [`notify`](crate::caller::Caller::notify) on a [`Peer`](super::Peer) do when the outgoing queue
/// is full, or its byte budget ([`max_buffered`](PeerConfigBuilder::max_buffered)) is spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// Wait for room (backpressure on the sender). A message larger than the whole budget fails
    /// with [`ClientError::TooLong`](crate::error::ClientError::TooLong).
    #[default]
    Wait,
    /// Close the connection: for servers pushing to clients that may stop reading.
    Close,
}

/// Says when a connection's loop may end before its input does.
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

/// Holds the checked settings of a [`Peer`](super::Peer) connection; build one with
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
    pub(super) max_subscriptions: usize,
    pub(super) subscription_buffer: usize,
    pub(super) queue: usize,
    pub(super) max_message_size: usize,
    pub(super) max_buffered: usize,
    pub(crate) write_timeout: Option<Duration>,
    /// Whether the sink gives back the budget's room itself, once a text has left the process
    /// (a WebSocket's pump, which knows when the socket took it), rather than the loop on flush.
    pub(crate) sink_gives_back: bool,
    /// Whether the sink takes the subscriptions' notifications itself (a WebSocket's pump, which
    /// writes in a task of its own): it polls their producers and opens their lanes as it
    /// writes the subscribe calls' answers ([`Notifications`](super::Notifications)), and the
    /// loop leaves them alone.
    pub(crate) notifications_by_sink: bool,
    pub(crate) cancellation: Cancellation,
    pub(super) drain_timeout: Duration,
    pub(super) overflow: Overflow,
    pub(super) lifetime: Lifetime,
    pub(super) context: Context,
    /// Where outgoing call ids come from: the connection's own counter, or one shared by the
    /// connections whose answers arrive through one router (an HTTP endpoint's event streams).
    pub(crate) ids: Option<Arc<AtomicI64>>,
    /// The byte budget of the server the connection belongs to, which counts its bytes too.
    pub(crate) server_budget: Option<Arc<ServerBudget>>,
    /// Whether the connection's subscriptions outlive its input (an event stream's, whose input
    /// ends with its request): the loop then ends when they do.
    pub(crate) subscriptions_outlive_input: bool,
}

impl Default for PeerConfig {
    /// Returns every setting at the default its [`PeerConfigBuilder`] method gives.
    fn default() -> Self {
        Self {
            framing: Framing::Lines,
            call_timeout: LIMITS.get_call_timeout(),
            max_in_flight: LIMITS.get_max_in_flight(),
            max_subscriptions: LIMITS.get_max_subscriptions(),
            subscription_buffer: SUBSCRIPTION_BUFFER,
            queue: LIMITS.get_queue(),
            max_message_size: LIMITS.get_max_message_size(),
            max_buffered: PEER_WATERMARK,
            write_timeout: LIMITS.get_write_timeout(),
            sink_gives_back: false,
            notifications_by_sink: false,
            cancellation: Cancellation::Off,
            drain_timeout: Duration::from_secs(10),
            overflow: Overflow::Wait,
            lifetime: Lifetime::UntilInputEnds,
            context: Context::new(Transport::Stream),
            ids: None,
            server_budget: None,
            subscriptions_outlive_input: false,
        }
    }
}

/// Holds the limits at their defaults.
const LIMITS: Limits = Limits::DEFAULT;

/// Sets a peer's default watermark, 16 MiB, above the servers' 256 KiB: both sides of a peer call,
/// and outgoing calls count against the watermark too, so two sides that call each other hard
/// must not both stop reading while the other's calls wait.
const PEER_WATERMARK: usize = 16 * 1024 * 1024;

/// Defaults the items each subscription this side opened may hold unread to 1 024.
const SUBSCRIPTION_BUFFER: usize = 1024;

impl PeerConfig {
    /// Returns a builder with every setting at its default.
    pub fn builder() -> PeerConfigBuilder {
        PeerConfigBuilder {
            config: Self::default(),
            limits: Limits::DEFAULT,
        }
    }

    /// Returns this configuration with handlers' contexts built on `ctx` (its transport, the peer's
    /// address, extensions such as the authenticated user) instead of a bare
    /// [`Transport::Stream`] one. Any context is valid, so this needs no builder: a server
    /// makes one per connection from a shared configuration.
    #[must_use]
    pub fn with_context(mut self, ctx: Context) -> Self {
        self.context = ctx;
        self
    }

    /// Returns this configuration with another framing: any framing is valid, so this needs no
    /// builder (one set of limits serves a `Content-Length` connection and a line one alike).
    #[must_use]
    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Returns the cap on incoming calls in flight.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Returns the cap on subscriptions the connection holds at once.
    pub fn max_subscriptions(&self) -> usize {
        self.max_subscriptions
    }

    /// Returns how many outgoing messages may wait to be written.
    pub fn queue(&self) -> usize {
        self.queue
    }

    /// Returns the largest incoming message, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Returns the most bytes the connection holds for its peer.
    pub fn max_buffered(&self) -> usize {
        self.max_buffered
    }

    /// Returns how long a write may wait for the peer to take a byte.
    pub fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout
    }

    /// Returns the transport handlers see.
    pub fn transport(&self) -> Transport {
        self.context.transport()
    }

    /// Returns the context handlers' contexts are built on.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// Returns this configuration with the context's transport replaced: what stdio sets.
    pub(crate) fn on_transport(mut self, transport: Transport) -> Self {
        self.context = self.context.with_transport(transport);
        self
    }

    /// Returns this configuration with another lifetime: what clients set.
    pub(crate) fn with_lifetime(mut self, lifetime: Lifetime) -> Self {
        self.lifetime = lifetime;
        self
    }
}

/// Builds a [`PeerConfig`]; [`build`](Self::build) checks every value and names the first one
/// out of range.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct PeerConfigBuilder {
    config: PeerConfig,
    limits: Limits,
}

impl PeerConfigBuilder {
    /// Sets how messages are framed on a byte stream (default [`Framing::Lines`]). Only the
    /// constructors over bytes ([`Peer::connect`](super::Peer::connect),
    /// [`Peer::connect_split`](super::Peer::connect_split)) frame; [`Peer::start`](super::Peer::start)
    /// is handed whole messages.
    pub fn framing(mut self, framing: Framing) -> Self {
        self.config.framing = framing;
        self
    }

    limit_setters!(limits);

    /// Sets how many items of each subscription this side opened may wait to be read from its
    /// [`Subscription`](crate::Subscription) stream (default 1 024, at least one); past it the
    /// subscription ends as lagged ([`Ended::Lagged`](crate::subscription::Ended::Lagged)) and is unsubscribed.
    pub fn subscription_buffer(mut self, items: usize) -> Self {
        self.config.subscription_buffer = items.max(1);
        self
    }

    /// Sets which cancellation notices to send and honour (default [`Cancellation::Off`]).
    pub fn cancellation(mut self, cancellation: Cancellation) -> Self {
        self.config.cancellation = cancellation;
        self
    }

    /// Sets how long incoming calls may still run after the end of input (default 10 s); zero
    /// cancels them at once.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.config.drain_timeout = budget;
        self
    }

    /// Sets what a full outgoing queue does (default [`Overflow::Wait`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.config.overflow = overflow;
        self
    }

    /// Sets when the loop may end before its input does (default [`Lifetime::UntilInputEnds`]).
    pub fn lifetime(mut self, lifetime: Lifetime) -> Self {
        self.config.lifetime = lifetime;
        self
    }

    /// Sets the context handlers' contexts are built on (default: a bare one on
    /// [`Transport::Stream`]); see [`PeerConfig::with_context`].
    pub fn context(mut self, ctx: Context) -> Self {
        self.config.context = ctx;
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting out of range: a zero `max_in_flight`,
    /// `max_message_size` or `max_buffered`; a `queue` of zero or above
    /// [`Semaphore::MAX_PERMITS`](tokio::sync::Semaphore::MAX_PERMITS) (the most a Tokio channel
    /// holds); a zero `call_timeout` or `write_timeout` (use `None` for no limit).
    pub fn build(self) -> Result<PeerConfig, ConfigError> {
        let limits = self.limits;
        limits.check()?;
        let mut config = self.config;
        config.max_in_flight = limits.get_max_in_flight();
        config.max_subscriptions = limits.get_max_subscriptions();
        config.queue = limits.get_queue();
        config.max_message_size = limits.get_max_message_size();
        config.max_buffered = limits.max_buffered_or(PEER_WATERMARK);
        config.call_timeout = limits.get_call_timeout();
        config.write_timeout = limits.get_write_timeout();
        Ok(config)
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
        assert_eq!(key_of(b().max_buffered(0)), "max_buffered");
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
        assert_eq!(PeerConfig::default().max_message_size(), 10 << 20);
        assert!(PeerConfig::builder().build().is_ok());
    }
}
