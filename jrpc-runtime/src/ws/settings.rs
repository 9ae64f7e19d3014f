//! Holds the settings of each WebSocket connection, their defaults, and the checks a build makes.

use std::time::Duration;

use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::connection::{BinaryFrames, Settings};
use crate::error::ConfigError;
use crate::error::check;
use crate::limits::{Limits, limit_setters};
use crate::peer::{Cancellation, Lifetime, Overflow, PeerConfig};
use crate::transport::Transport;

/// Holds the settings of each WebSocket connection: limits and keepalive. One value configures a
/// [`WsServer`](super::WsServer) ([`WsServerBuilder::settings`](super::WsServerBuilder::settings))
/// or the WebSocket path of an `http::HttpServer`
/// (`http::HttpServerBuilder::websocket`); the server's
/// `build` checks it and names a bad setting by its method here.
///
/// The limits ([`Limits`]: message size, watermark, calls in flight, queue, write and call
/// timeouts) are those every transport shares. On an HTTP server's WebSocket path, a limit not
/// set here is the HTTP server's: raising the HTTP limits raises those of `/ws` too.
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::ws::{WsServer, WsSettings};
///
/// let settings = WsSettings::new()
///     .max_in_flight(16)
///     .max_message_size(1024 * 1024)
///     .max_buffered(4 * 1024 * 1024)
///     .write_timeout(Some(Duration::from_secs(10)))
///     .ping_interval(Some(Duration::from_secs(20)))
///     .idle_timeout(Some(Duration::from_secs(45)));
/// let server = WsServer::builder(Methods::new()).settings(settings).build();
/// assert!(server.is_ok());
/// ```
#[derive(Clone, Debug)]
#[must_use = "settings do nothing until a server builder takes them"]
pub struct WsSettings {
    limits: Limits,
    read_buffer_size: usize,
    write_buffer_size: usize,
    ping_interval: Option<Duration>,
    idle_timeout: Option<Duration>,
    close_timeout: Duration,
    cancellation: Cancellation,
    binary: BinaryFrames,
}

/// Holds the default buffer size, 4 KiB: see [`WsSettings::read_buffer_size`].
const BUFFER_SIZE: usize = 4 * 1024;

impl Default for WsSettings {
    /// Returns every setting at the default its method gives.
    fn default() -> Self {
        Self {
            limits: Limits::DEFAULT,
            read_buffer_size: BUFFER_SIZE,
            write_buffer_size: BUFFER_SIZE,
            ping_interval: Some(Duration::from_secs(30)),
            idle_timeout: Some(Duration::from_secs(75)),
            close_timeout: Duration::from_secs(5),
            cancellation: Cancellation::Off,
            binary: BinaryFrames::Accept,
        }
    }
}

impl WsSettings {
    /// Returns every setting at its default.
    pub fn new() -> Self {
        Self::default()
    }

    limit_setters!(limits);

    /// Sets the size of the read buffer each connection allocates up front (default 4 KiB).
    /// tungstenite's own default is 128 KiB each way, allocated up front: 256 KiB for an idle
    /// connection. JSON-RPC messages are mostly well under 4 KiB; a larger one grows the buffer as
    /// it arrives (up to [`max_message_size`](Self::max_message_size)).
    pub fn read_buffer_size(mut self, bytes: usize) -> Self {
        self.read_buffer_size = bytes;
        self
    }

    /// Sets how much tungstenite gathers before writing to the socket (default 4 KiB); the write
    /// buffer never holds more than this plus one message.
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = bytes;
        self
    }

    /// Sets how often to ping each connection (default 30 s, below the 60 s idle cut of common
    /// proxies and load balancers, so that a quiet connection stays open through them); `None`
    /// sends no pings.
    pub fn ping_interval(mut self, every: Option<Duration>) -> Self {
        self.ping_interval = every;
        self
    }

    /// Sets how long a connection may send nothing at all, pongs included, before it is closed with
    /// 1000 (default 75 s: two ping intervals and some slack, so a client that answered none of
    /// two pings is gone); `None` keeps idle connections open.
    pub fn idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.idle_timeout = limit;
        self
    }

    /// Sets how long to wait for the client's answer to a close frame before the socket is dropped
    /// anyway (default 5 s).
    pub fn close_timeout(mut self, limit: Duration) -> Self {
        self.close_timeout = limit;
        self
    }

    /// Sets which cancellation notices the connection sends and honours (default
    /// [`Cancellation::Off`]): with [`Cancellation::Lsp`], a client's `$/cancelRequest {"id": ID}`
    /// drops that call's handler and answers it `-32800` at once, and a [`WsClient`](super::WsClient)
    /// call given up (its future dropped, or timed out) sends one.
    pub fn cancellation(mut self, cancellation: Cancellation) -> Self {
        self.cancellation = cancellation;
        self
    }

    /// Sets what a binary frame is (default [`BinaryFrames::Accept`]: a message, when it is UTF-8
    /// JSON). Clients that send JSON-RPC in binary frames exist (web3.py does by default), and
    /// jsonrpsee and anvil take them; [`BinaryFrames::Refuse`] closes the connection with 1003
    /// instead. Answers and pushes are text frames either way.
    pub fn binary_frames(mut self, binary: BinaryFrames) -> Self {
        self.binary = binary;
        self
    }

    /// Checks the settings (each rule says why) and turns them into a connection's: a server's,
    /// whose calls may run for `drain_timeout` once a shutdown begins and whose pushes never wait
    /// for room ([`Overflow::Close`]); a limit not set here is `base`'s.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range: a zero `max_in_flight`,
    /// `queue`, `max_message_size`, `max_buffered`, `read_buffer_size` or `close_timeout`; a
    /// `queue` above what a Tokio channel holds; a zero `ping_interval`, `idle_timeout`,
    /// `call_timeout` or `write_timeout` (use `None`); an `idle_timeout` not longer than the
    /// `ping_interval` (a client answering every ping would still be cut).
    pub(crate) fn check(
        &self,
        drain_timeout: Duration,
        base: Limits,
    ) -> Result<Settings, ConfigError> {
        self.check_as(
            PeerConfig::builder()
                .overflow(Overflow::Close)
                .drain_timeout(drain_timeout),
            base,
        )
    }

    /// Does what [`check`](Self::check) does, for a client: its own calls wait for room in a full
    /// queue rather than close it, and the connection ends with its last handle.
    pub(crate) fn check_client(&self) -> Result<Settings, ConfigError> {
        self.check_as(
            PeerConfig::builder()
                .overflow(Overflow::Wait)
                .lifetime(Lifetime::UntilUnused),
            Limits::DEFAULT,
        )
    }

    fn check_as(
        &self,
        peer: crate::peer::PeerConfigBuilder,
        base: Limits,
    ) -> Result<Settings, ConfigError> {
        let limits = self.limits.or(base);
        let max_message_size = limits.get_max_message_size();
        let mut peer = peer
            .context(crate::dispatch::Context::new(Transport::WebSocket))
            .cancellation(self.cancellation)
            .limits(limits)
            .max_buffered(limits.get_max_buffered())
            .build()?;
        // The pump gives back the room of what the socket took, keeps the deadline, and takes
        // the subscriptions' notifications itself.
        peer.sink_gives_back = true;
        peer.notifications_by_sink = true;
        peer.write_timeout = None;
        // tungstenite reads into this buffer's capacity; with none it would see the end of input.
        check::at_least_one("read_buffer_size", self.read_buffer_size)?;
        check::optional_limit("ping_interval", self.ping_interval)?;
        check::optional_limit("idle_timeout", self.idle_timeout)?;
        check::limit("close_timeout", self.close_timeout)?;
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
            .saturating_add(max_message_size)
            .saturating_add(14);
        let ws = WebSocketConfig::default()
            .read_buffer_size(self.read_buffer_size)
            .write_buffer_size(self.write_buffer_size)
            .max_write_buffer_size(max_write)
            .max_message_size(Some(max_message_size))
            .max_frame_size(Some(max_message_size));
        Ok(Settings {
            ws,
            peer,
            ping_interval: self.ping_interval,
            idle_timeout: self.idle_timeout,
            close_timeout: self.close_timeout,
            write_timeout: limits.get_write_timeout(),
            binary: self.binary,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(settings: WsSettings) -> &'static str {
        settings
            .check(Duration::ZERO, Limits::DEFAULT)
            .map(drop)
            .unwrap_err()
            .key()
    }

    #[test]
    fn the_defaults_pass() {
        assert!(
            WsSettings::default()
                .check(Duration::ZERO, Limits::DEFAULT)
                .is_ok()
        );
        assert!(WsSettings::default().check_client().is_ok());
    }

    #[test]
    fn each_bad_setting_is_named() {
        let s = WsSettings::new;
        assert_eq!(key_of(s().max_in_flight(0)), "max_in_flight");
        assert_eq!(key_of(s().queue(0)), "queue");
        assert_eq!(key_of(s().queue(usize::MAX)), "queue");
        assert_eq!(key_of(s().max_message_size(0)), "max_message_size");
        assert_eq!(key_of(s().max_buffered(0)), "max_buffered");
        assert_eq!(
            key_of(s().write_timeout(Some(Duration::ZERO))),
            "write_timeout"
        );
        assert_eq!(key_of(s().read_buffer_size(0)), "read_buffer_size");
        assert_eq!(
            key_of(s().ping_interval(Some(Duration::ZERO))),
            "ping_interval"
        );
        assert_eq!(
            key_of(s().idle_timeout(Some(Duration::from_secs(30)))),
            "idle_timeout"
        );
        assert_eq!(
            key_of(s().call_timeout(Some(Duration::ZERO))),
            "call_timeout"
        );
        assert_eq!(key_of(s().close_timeout(Duration::ZERO)), "close_timeout");
        assert!(
            s().ping_interval(None)
                .idle_timeout(Some(Duration::from_secs(1)))
                .write_buffer_size(0)
                .check(Duration::ZERO, Limits::DEFAULT)
                .is_ok()
        );
    }
}
