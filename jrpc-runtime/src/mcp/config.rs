//! The MCP server's settings: their defaults, the builder, and the checks `build` makes.

use std::time::Duration;

use super::endpoint::McpService;
use super::server::McpServer;
use crate::error::check;
use crate::http::sse::stream_config;
use crate::server::{Shutdown, Slots};
use crate::{ConfigError, Methods, PeerConfig};

/// 256 KiB: see [`McpServerBuilder::max_buffered`].
const BUDGET: usize = 256 * 1024;

/// How long the headers and the body of a request may each take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The protocol revisions whose Streamable HTTP this transport follows.
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// Builds an [`McpServer`]: its path, the origins it takes, sessions (or none), and the limits,
/// checked by [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_runtime::mcp::McpServer;
///
/// let server = McpServer::builder(Methods::new())
///     .path("/mcp")
///     .allowed_origins(["localhost", "https://app.example"])
///     .max_sessions(100)
///     .session_idle_timeout(Duration::from_secs(600))
///     .max_message_size(64 * 1024)
///     .replay_buffer(64 * 1024)
///     .build()?;
/// # drop(server);
/// # Ok::<(), jrpc_runtime::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct McpServerBuilder {
    methods: Methods,
    path: String,
    allowed_origins: Vec<String>,
    stateless: bool,
    max_sessions: usize,
    session_idle_timeout: Duration,
    replay_buffer: usize,
    max_in_flight: usize,
    max_message_size: usize,
    max_buffered: usize,
    write_timeout: Option<Duration>,
    queue: usize,
    call_timeout: Option<Duration>,
    max_connections: usize,
    handler_timeout: Option<Option<Duration>>,
    drain_timeout: Duration,
}

/// The checked settings the server runs with.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) path: Box<str>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) protocol_versions: Vec<String>,
    pub(crate) stateless: bool,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) replay_buffer: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) max_message_size: usize,
    pub(crate) body_read_timeout: Duration,
    pub(crate) header_read_timeout: Duration,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) streams: PeerConfig,
}

impl McpServerBuilder {
    pub(crate) fn new(methods: Methods) -> Self {
        Self {
            methods,
            path: "/mcp".to_owned(),
            allowed_origins: ["localhost", "127.0.0.1", "[::1]"]
                .map(String::from)
                .to_vec(),
            stateless: false,
            max_sessions: 1000,
            session_idle_timeout: Duration::from_secs(30 * 60),
            replay_buffer: BUDGET / 2,
            max_in_flight: 128,
            max_message_size: BUDGET / 2,
            max_buffered: BUDGET,
            write_timeout: Some(Duration::from_secs(30)),
            queue: 1024,
            call_timeout: Some(Duration::from_secs(60)),
            max_connections: 10_000,
            handler_timeout: None,
            drain_timeout: Duration::from_secs(30),
        }
    }

    /// The path of the MCP endpoint (default `/mcp`); it must start with `/` and hold no query
    /// or fragment. Other paths are answered `404`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The origins whose pages may reach the server (default `localhost`, `127.0.0.1` and
    /// `[::1]`, any scheme and port): each a host, which allows it with any scheme and port, or a
    /// whole origin (`https://app.example`), which allows that one. A request with another
    /// `Origin` is answered `403`, so that a page of another site cannot reach a local server
    /// through DNS rebinding; a request without `Origin` (not from a browser) is taken.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Serves without sessions (default `false`): no `Mcp-Session-Id` is issued or asked for,
    /// each POST stands alone, `GET` and `DELETE` are answered `405`: for servers behind a load
    /// balancer that sends each request to any instance. A handler's calls to its client still
    /// work on an SSE answer when the client's POST of the answer reaches the same instance.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// How many sessions may be open at once (default 1 000); at the cap, sessions idle past
    /// [`session_idle_timeout`](Self::session_idle_timeout) are ended to make room, and if none
    /// is, `initialize` is answered `503` (`-32000`) rather than ending a session in use.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long a session lives without a request (default 30 min); then its id gets `404`. A
    /// session whose GET stream a client reads, or with a request running, does not expire.
    pub fn session_idle_timeout(mut self, limit: Duration) -> Self {
        self.session_idle_timeout = limit;
        self
    }

    /// How many bytes of sent events a session keeps to replay to a client that reconnects with
    /// `Last-Event-ID` (default 128 KiB, one message of the default size; at the `max_sessions` default, 125 MiB
    /// in all). Older
    /// events are dropped; a replay asked from before them ends at once. Zero keeps none (and
    /// events carry no ids). It must hold a message (`max_message_size`) unless it is zero.
    pub fn replay_buffer(mut self, bytes: usize) -> Self {
        self.replay_buffer = bytes;
        self
    }

    /// How many requests of one session may run at once (default 128); past it a request is
    /// answered `-32000` at once. A session's requests run on when their client goes (it may
    /// resume them), so this is what bounds them.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// The largest message taken (default 128 KiB); a larger body is answered `413`.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// What one stream (a request's SSE answer, or a session's GET stream) may hold for its
    /// client, in bytes (default 256 KiB): events not yet sent, and the message being read; at
    /// least twice `max_message_size`. Past it the stream's connection closes (its client is not
    /// reading): a handler's pushes fail, and the stream ends after what it holds.
    pub fn max_buffered(mut self, bytes: usize) -> Self {
        self.max_buffered = bytes;
        self
    }

    /// The longest a reply's write may go without the client taking a byte (default 30 s);
    /// then the connection is dropped. `None` never drops it.
    pub fn write_timeout(mut self, limit: Option<Duration>) -> Self {
        self.write_timeout = limit;
        self
    }

    /// How many messages one stream's connection may have waiting to be written (default
    /// 1 024); past it, as past `max_buffered`.
    pub fn queue(mut self, messages: usize) -> Self {
        self.queue = messages;
        self
    }

    /// How long a handler's call to its client waits for the answer (default 60 s); `None`
    /// waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }

    /// How many connections are served at once (default 10 000); at the cap the server stops
    /// accepting until one closes.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// Sets the table's handler timeout ([`Methods::handler_timeout`]); left unset, the table
    /// keeps its own.
    pub fn handler_timeout(mut self, limit: Option<Duration>) -> Self {
        self.handler_timeout = Some(limit);
        self
    }

    /// How long a shutdown waits for requests running and connections open (default 30 s).
    /// Sessions end when it begins, and with them their GET streams.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.drain_timeout = budget;
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range: a `path` not starting with
    /// `/` or holding `?`, `#` or whitespace; an origin that is empty; a zero `max_sessions`,
    /// `session_idle_timeout`, `max_in_flight` or `max_message_size`; a `replay_buffer` neither
    /// zero nor at least `max_message_size`; a `max_buffered` below twice `max_message_size`; a
    /// `queue` or `max_connections` of zero or above what a Tokio channel holds; a zero
    /// `write_timeout`, `call_timeout` or `handler_timeout` (use `None`).
    pub fn build(self) -> Result<McpServer, ConfigError> {
        crate::http::check_path("path", &self.path)?;
        if self.allowed_origins.iter().any(|o| o.trim().is_empty()) {
            return Err(ConfigError::new("allowed_origins", "an origin is empty"));
        }
        check::at_least_one("max_sessions", self.max_sessions)?;
        check::limit("session_idle_timeout", self.session_idle_timeout)?;
        check::at_least_one("max_in_flight", self.max_in_flight)?;
        check::at_least_one("max_message_size", self.max_message_size)?;
        if self.replay_buffer != 0 && self.replay_buffer < self.max_message_size {
            return Err(ConfigError::new(
                "replay_buffer",
                format!(
                    "must be zero or hold a message of `max_message_size` ({} bytes)",
                    self.max_message_size
                ),
            ));
        }
        check::budget("max_buffered", self.max_buffered, self.max_message_size)?;
        check::optional_limit("write_timeout", self.write_timeout)?;
        let streams = stream_config(
            self.max_message_size,
            self.max_buffered,
            self.queue,
            self.call_timeout,
        )?;
        check::permits("max_connections", self.max_connections)?;
        check::optional_limit("handler_timeout", self.handler_timeout.flatten())?;
        let mut methods = self.methods;
        if let Some(limit) = self.handler_timeout {
            methods.handler_timeout(limit);
        }
        let settings = Settings {
            path: self.path.into(),
            allowed_origins: self.allowed_origins,
            protocol_versions: PROTOCOL_VERSIONS.map(String::from).to_vec(),
            stateless: self.stateless,
            max_sessions: self.max_sessions,
            session_idle_timeout: self.session_idle_timeout,
            replay_buffer: self.replay_buffer,
            max_in_flight: self.max_in_flight,
            max_message_size: self.max_message_size,
            body_read_timeout: READ_TIMEOUT,
            header_read_timeout: READ_TIMEOUT,
            write_timeout: self.write_timeout,
            streams,
        };
        let shutdown = Shutdown::new(self.drain_timeout);
        let slots = Slots::new(self.max_connections);
        let endpoint = McpService::new(methods, settings.clone(), shutdown);
        Ok(McpServer::new(endpoint, settings, slots))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(builder: McpServerBuilder) -> &'static str {
        builder.build().map(drop).unwrap_err().key()
    }

    #[test]
    fn each_bad_setting_is_named() {
        let b = || McpServer::builder(Methods::new());
        assert_eq!(key_of(b().path("mcp")), "path");
        assert_eq!(key_of(b().allowed_origins([" "])), "allowed_origins");
        assert_eq!(key_of(b().max_sessions(0)), "max_sessions");
        assert_eq!(
            key_of(b().session_idle_timeout(Duration::ZERO)),
            "session_idle_timeout"
        );
        assert_eq!(key_of(b().max_in_flight(0)), "max_in_flight");
        assert_eq!(key_of(b().replay_buffer(10)), "replay_buffer");
        assert_eq!(key_of(b().max_message_size(1 << 20)), "replay_buffer");
        assert_eq!(
            key_of(b().max_message_size(1 << 20).replay_buffer(0)),
            "max_buffered"
        );
        assert_eq!(key_of(b().queue(0)), "queue");
        assert_eq!(
            key_of(b().call_timeout(Some(Duration::ZERO))),
            "call_timeout"
        );
        assert_eq!(key_of(b().max_connections(0)), "max_connections");
        assert!(b().replay_buffer(0).stateless(true).build().is_ok());
    }
}
