//! WebSocket settings: their defaults, the server's builder, and the checks `build` makes.

use std::time::Duration;

use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::connection::Settings;
use super::server::WsServer;
use super::topics::Topics;
use crate::http::ConfigError;
use crate::{Methods, Overflow};

/// Default [`max_in_flight`](WsServerBuilder::max_in_flight): 64 calls per connection.
///
/// One client rarely has more than a handful of calls outstanding; 64 leaves room for bursts
/// while one connection cannot keep more than 64 handlers busy. Past it a call is answered
/// `-32000` at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// Default [`queue`](WsServerBuilder::queue): 256 outgoing messages per connection.
///
/// A client 256 messages behind is not reading; the connection is closed rather than letting
/// its backlog grow. The bound on what one connection holds is this many messages, plus
/// tungstenite's write buffer (at most [`write_buffer_size`](WsServerBuilder::write_buffer_size)
/// plus one message).
pub const DEFAULT_QUEUE: usize = 256;

/// Default [`max_message_size`](WsServerBuilder::max_message_size): 4 MiB, as the stream
/// framings ([`DEFAULT_MAX_LEN`](crate::framing::DEFAULT_MAX_LEN)).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = crate::framing::DEFAULT_MAX_LEN;

/// Default [`read_buffer_size`](WsServerBuilder::read_buffer_size) and
/// [`write_buffer_size`](WsServerBuilder::write_buffer_size): 4 KiB.
///
/// tungstenite's own default is 128 KiB each, and the read buffer is allocated up front: 256 KiB
/// for an idle connection. JSON-RPC messages are mostly well under 4 KiB; a larger one grows the
/// buffer as it arrives (up to [`max_message_size`](WsServerBuilder::max_message_size)).
pub const DEFAULT_BUFFER_SIZE: usize = 4 * 1024;

/// Default [`ping_interval`](WsServerBuilder::ping_interval): 30 s, below the 60 s idle cut of
/// common proxies and load balancers, so that a quiet connection stays open through them.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);

/// Default [`idle_timeout`](WsServerBuilder::idle_timeout): 75 s, two ping intervals and some
/// slack: a client that answered none of two pings is gone.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(75);

/// Default [`close_timeout`](WsServerBuilder::close_timeout): 5 s to send a close frame and read
/// the answer before the socket is dropped anyway.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Default [`call_timeout`](WsServerBuilder::call_timeout) of calls from the server to a client:
/// 60 s, as [`PeerConfig`](crate::PeerConfig)'s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The settings of each WebSocket connection: limits and keepalive. One value configures a
/// [`WsServer`] ([`WsServerBuilder::settings`], or the builder's setters of the same names) or the
/// WebSocket path of an [`HttpServer`](crate::http::HttpServer)
/// ([`HttpServerBuilder::websocket`](crate::http::HttpServerBuilder::websocket)); the server's
/// `build` checks it and names a bad setting by its method here.
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::http::HttpServer;
/// use jrpc_runtime::ws::WsSettings;
///
/// let settings = WsSettings::new()
///     .max_in_flight(16)
///     .ping_interval(Some(Duration::from_secs(20)))
///     .idle_timeout(Some(Duration::from_secs(45)));
/// let server = HttpServer::builder(Methods::new()).websocket(settings).build();
/// assert!(server.is_ok());
/// ```
#[derive(Clone, Debug)]
#[must_use = "settings do nothing until a server builder takes them"]
pub struct WsSettings {
    max_in_flight: usize,
    queue: usize,
    max_message_size: usize,
    read_buffer_size: usize,
    write_buffer_size: usize,
    ping_interval: Option<Duration>,
    idle_timeout: Option<Duration>,
    call_timeout: Option<Duration>,
    close_timeout: Duration,
}

impl Default for WsSettings {
    fn default() -> Self {
        Self {
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            queue: DEFAULT_QUEUE,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            read_buffer_size: DEFAULT_BUFFER_SIZE,
            write_buffer_size: DEFAULT_BUFFER_SIZE,
            ping_interval: Some(DEFAULT_PING_INTERVAL),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            call_timeout: Some(DEFAULT_CALL_TIMEOUT),
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
        }
    }
}

impl WsSettings {
    /// Every setting at its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many calls of one connection may run at once (default [`DEFAULT_MAX_IN_FLIGHT`]);
    /// past it a call is answered `-32000` at once.
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = calls;
        self
    }

    /// How many outgoing messages (answers, notifications, calls) may wait to be written on one
    /// connection (default [`DEFAULT_QUEUE`]). When a push finds the queue full, the client is
    /// not reading: the connection is dropped.
    pub fn queue(mut self, messages: usize) -> Self {
        self.queue = messages;
        self
    }

    /// The largest message, in bytes, either way (default [`DEFAULT_MAX_MESSAGE_SIZE`]). A larger
    /// incoming message closes the connection with 1009; a larger outgoing one may not fit the
    /// write buffer, and then closes it with 1011.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// The read buffer each connection allocates up front (default [`DEFAULT_BUFFER_SIZE`]).
    pub fn read_buffer_size(mut self, bytes: usize) -> Self {
        self.read_buffer_size = bytes;
        self
    }

    /// How much tungstenite gathers before writing to the socket (default
    /// [`DEFAULT_BUFFER_SIZE`]); the write buffer never holds more than this plus one message.
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = bytes;
        self
    }

    /// How often to ping each connection (default [`DEFAULT_PING_INTERVAL`]); `None` sends no
    /// pings.
    pub fn ping_interval(mut self, every: Option<Duration>) -> Self {
        self.ping_interval = every;
        self
    }

    /// How long a connection may send nothing at all, pongs included, before it is closed with
    /// 1000 (default [`DEFAULT_IDLE_TIMEOUT`]); `None` keeps idle connections open.
    pub fn idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.idle_timeout = limit;
        self
    }

    /// How long a call from a handler to its client ([`Context::peer`](crate::Context::peer))
    /// waits for the answer (default [`DEFAULT_CALL_TIMEOUT`]); `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }

    /// How long to wait for the client's answer to a close frame (default
    /// [`DEFAULT_CLOSE_TIMEOUT`]).
    pub fn close_timeout(mut self, limit: Duration) -> Self {
        self.close_timeout = limit;
        self
    }

    /// Checks the settings (each rule says why) and turns them into a connection's, whose calls
    /// may run for `drain` once a shutdown begins.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range, as
    /// [`WsServerBuilder::build`] lists them.
    pub(crate) fn check(&self, drain: Duration) -> Result<Settings, ConfigError> {
        let at_least_one = |key, value: usize| {
            if value == 0 {
                Err(ConfigError::new(key, "must be at least 1"))
            } else {
                Ok(())
            }
        };
        // Zero would refuse every call, every message, every byte: a mistake, never a policy.
        at_least_one("max_in_flight", self.max_in_flight)?;
        at_least_one("queue", self.queue)?;
        at_least_one("max_message_size", self.max_message_size)?;
        // tungstenite reads into this buffer's capacity; with none it would see the end of input.
        at_least_one("read_buffer_size", self.read_buffer_size)?;
        for (key, limit) in [
            ("ping_interval", self.ping_interval),
            ("idle_timeout", self.idle_timeout),
            ("call_timeout", self.call_timeout),
        ] {
            // A zero period would spin; `None` is the way to turn each off.
            if limit.is_some_and(|limit| limit.is_zero()) {
                return Err(ConfigError::new(
                    key,
                    "must be above zero; use `None` to turn it off",
                ));
            }
        }
        if self.close_timeout.is_zero() {
            return Err(ConfigError::new("close_timeout", "must be above zero"));
        }
        if let (Some(ping), Some(idle)) = (self.ping_interval, self.idle_timeout) {
            // A client answers pings; only silence past a ping or two means it is gone.
            if idle <= ping {
                return Err(ConfigError::new(
                    "idle_timeout",
                    format!("must be longer than `ping_interval` ({ping:?})"),
                ));
            }
        }
        // The write buffer holds at most `write_buffer_size` plus one frame (its header is at most
        // 14 bytes); the cap makes a larger outgoing message an error rather than a silent growth.
        let max_write = self
            .write_buffer_size
            .saturating_add(self.max_message_size)
            .saturating_add(14);
        let ws = WebSocketConfig::default()
            .read_buffer_size(self.read_buffer_size)
            .write_buffer_size(self.write_buffer_size)
            .max_write_buffer_size(max_write)
            .max_message_size(Some(self.max_message_size))
            .max_frame_size(Some(self.max_message_size));
        Ok(Settings {
            ws,
            max_in_flight: self.max_in_flight,
            queue: self.queue,
            call_timeout: self.call_timeout,
            ping_interval: self.ping_interval,
            idle_timeout: self.idle_timeout,
            close_timeout: self.close_timeout,
            drain,
            overflow: Overflow::Close,
        })
    }
}

/// Builds a [`WsServer`]: the connection settings ([`WsSettings`], whose setters it repeats),
/// the drain budget and the topics registry, checked by [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::ws::WsServer;
///
/// let server = WsServer::builder(Methods::new())
///     .max_in_flight(16)
///     .max_message_size(256 * 1024)
///     .ping_interval(Some(Duration::from_secs(20)))
///     .idle_timeout(Some(Duration::from_secs(45)))
///     .build()
///     .expect("valid settings");
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct WsServerBuilder {
    methods: Methods,
    topics: Option<Topics>,
    settings: WsSettings,
    drain: Duration,
}

impl WsServerBuilder {
    pub(crate) fn new(methods: Methods) -> Self {
        Self {
            methods,
            topics: None,
            settings: WsSettings::default(),
            drain: crate::http::DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// The registry that handlers subscribe to (see [`Topics`]); share one between the server
    /// and the code that publishes. Left unset, the server makes its own
    /// ([`WsServer::topics`]).
    pub fn topics(mut self, topics: Topics) -> Self {
        self.topics = Some(topics);
        self
    }

    /// Every connection setting at once, replacing those set before.
    pub fn settings(mut self, settings: WsSettings) -> Self {
        self.settings = settings;
        self
    }

    fn with(mut self, set: impl FnOnce(WsSettings) -> WsSettings) -> Self {
        self.settings = set(self.settings);
        self
    }

    /// Sets [`WsSettings::max_in_flight`].
    pub fn max_in_flight(self, calls: usize) -> Self {
        self.with(|s| s.max_in_flight(calls))
    }

    /// Sets [`WsSettings::queue`].
    pub fn queue(self, messages: usize) -> Self {
        self.with(|s| s.queue(messages))
    }

    /// Sets [`WsSettings::max_message_size`].
    pub fn max_message_size(self, bytes: usize) -> Self {
        self.with(|s| s.max_message_size(bytes))
    }

    /// Sets [`WsSettings::read_buffer_size`].
    pub fn read_buffer_size(self, bytes: usize) -> Self {
        self.with(|s| s.read_buffer_size(bytes))
    }

    /// Sets [`WsSettings::write_buffer_size`].
    pub fn write_buffer_size(self, bytes: usize) -> Self {
        self.with(|s| s.write_buffer_size(bytes))
    }

    /// Sets [`WsSettings::ping_interval`].
    pub fn ping_interval(self, every: Option<Duration>) -> Self {
        self.with(|s| s.ping_interval(every))
    }

    /// Sets [`WsSettings::idle_timeout`].
    pub fn idle_timeout(self, limit: Option<Duration>) -> Self {
        self.with(|s| s.idle_timeout(limit))
    }

    /// Sets [`WsSettings::call_timeout`].
    pub fn call_timeout(self, limit: Option<Duration>) -> Self {
        self.with(|s| s.call_timeout(limit))
    }

    /// Sets [`WsSettings::close_timeout`].
    pub fn close_timeout(self, limit: Duration) -> Self {
        self.with(|s| s.close_timeout(limit))
    }

    /// How long [`WsServer::shutdown`] lets calls finish before it drops the connections left
    /// (default [`DEFAULT_DRAIN_TIMEOUT`](crate::http::DEFAULT_DRAIN_TIMEOUT), 30 s).
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.drain = budget;
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range: a zero `max_in_flight`,
    /// `queue`, `max_message_size`, `read_buffer_size`, `close_timeout`, or a zero
    /// `ping_interval`, `idle_timeout` or `call_timeout` (use `None`); an `idle_timeout` not
    /// longer than the `ping_interval` (a client answering every ping would still be cut).
    pub fn build(self) -> Result<WsServer, ConfigError> {
        let settings = self.settings.check(self.drain)?;
        Ok(WsServer::new(
            self.methods,
            settings,
            self.topics.unwrap_or_default(),
            self.drain,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(builder: WsServerBuilder) -> &'static str {
        builder.build().map(drop).unwrap_err().key()
    }

    #[test]
    fn the_defaults_pass() {
        assert!(WsSettings::default().check(Duration::ZERO).is_ok());
    }

    #[test]
    fn each_bad_setting_is_named() {
        let b = || WsServer::builder(Methods::new());
        assert_eq!(key_of(b().max_in_flight(0)), "max_in_flight");
        assert_eq!(key_of(b().queue(0)), "queue");
        assert_eq!(key_of(b().max_message_size(0)), "max_message_size");
        assert_eq!(key_of(b().read_buffer_size(0)), "read_buffer_size");
        assert_eq!(
            key_of(b().ping_interval(Some(Duration::ZERO))),
            "ping_interval"
        );
        assert_eq!(
            key_of(b().idle_timeout(Some(Duration::from_secs(30)))),
            "idle_timeout"
        );
        assert_eq!(
            key_of(b().call_timeout(Some(Duration::ZERO))),
            "call_timeout"
        );
        assert_eq!(key_of(b().close_timeout(Duration::ZERO)), "close_timeout");
        assert!(
            b().ping_interval(None)
                .idle_timeout(Some(Duration::from_secs(1)))
                .write_buffer_size(0)
                .build()
                .is_ok()
        );
    }
}
