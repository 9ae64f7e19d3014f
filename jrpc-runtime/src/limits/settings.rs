//! Holds the limits every connection keeps, whatever its transport: one type, and the setters every
//! builder shares ([`limit_setters`]).

use std::time::Duration;

use crate::error::{ConfigError, check};

/// Defaults the largest message to 10 MiB, as jsonrpsee: see [`Limits::max_message_size`].
pub(crate) const MAX_MESSAGE_SIZE: usize = 10 * 1024 * 1024;

/// Defaults the watermark to 256 KiB: see [`Limits::max_buffered`].
pub(crate) const WATERMARK: usize = 256 * 1024;

/// Holds the limits each connection keeps, on every transport: the largest message, the watermark
/// of unsent bytes, the calls in flight, the outgoing queue, and the write and call timeouts.
///
/// One value configures an `http::HttpServer` (its `POST`s, its SSE answers and its WebSocket
/// path alike), a `ws::WsServer` and a [`PeerConfig`](crate::peer::PeerConfig); each of their
/// builders also has these setters itself. A limit left unset takes the default given here; on
/// an HTTP server's WebSocket path, it takes the HTTP server's value first, so raising the HTTP
/// limits raises those of `/ws` too. The builder's `build` checks them and names a bad one by
/// its setter.
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Limits;
///
/// let limits = Limits::new()
///     .max_message_size(32 * 1024 * 1024)
///     .write_timeout(Some(Duration::from_secs(10)));
/// assert_eq!(limits.get_max_message_size(), 32 * 1024 * 1024);
/// assert_eq!(limits.get_max_buffered(), 256 * 1024);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use = "limits do nothing until a builder takes them"]
pub struct Limits {
    max_message_size: Option<usize>,
    max_buffered: Option<usize>,
    max_in_flight: Option<usize>,
    max_subscriptions: Option<usize>,
    queue: Option<usize>,
    write_timeout: Option<Option<Duration>>,
    call_timeout: Option<Option<Duration>>,
}

impl Limits {
    /// Holds every limit at its default, as a constant.
    pub const DEFAULT: Self = Self {
        max_message_size: None,
        max_buffered: None,
        max_in_flight: None,
        max_subscriptions: None,
        queue: None,
        write_timeout: None,
        call_timeout: None,
    };

    /// Returns every limit at its default.
    pub fn new() -> Self {
        Self::DEFAULT
    }

    /// Sets the largest message, in bytes, either way (default 10 MiB, as jsonrpsee): a request
    /// body or WebSocket message, and an answer. A larger incoming one is refused (HTTP `413`,
    /// WebSocket close 1009, a stream's line answered `-32600`); a larger answer is replaced by
    /// an error answer to its call (`-32008`, its id kept), its writing stopped once it passes
    /// the limit.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = Some(bytes);
        self
    }

    /// Sets the watermark of what one connection holds for its client, in bytes (default 256 KiB):
    /// answers, pushes and calls not yet taken by the socket. Past it the connection stops
    /// reading (the client's next messages wait in its socket) until the client takes some; no
    /// message is refused for it, and an answer larger than the watermark is held whole. A
    /// push (a notification or call from the server) that finds the connection past its
    /// watermark closes it under [`Overflow::Close`](crate::peer::Overflow::Close): its client does
    /// not keep up. What all the connections of a server hold together is bounded by the
    /// server's byte budget (`server_budget`).
    pub fn max_buffered(mut self, bytes: usize) -> Self {
        self.max_buffered = Some(bytes);
        self
    }

    /// Sets how many calls of one connection may run at once (default 128; a batch counts as one);
    /// past it a call is answered `-32000` at once. Answers waiting to be written do not count.
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = Some(calls);
        self
    }

    /// Sets how many subscriptions one connection may hold at once (default 1 024, as jsonrpsee);
    /// past it a subscribe call is answered `-32005` with `data` naming the limit.
    pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = Some(subscriptions);
        self
    }

    /// Sets how many outgoing messages may wait to be written on one connection (default 1 024):
    /// past it handles wait for room, or (a server's pushes) the connection closes.
    pub fn queue(mut self, messages: usize) -> Self {
        self.queue = Some(messages);
        self
    }

    /// Sets how long a write may wait for the client to take a byte (default 30 s); past it the
    /// connection is dropped: a client that stopped reading cannot hold what waits for it.
    /// `None` waits forever.
    pub fn write_timeout(mut self, limit: Option<Duration>) -> Self {
        self.write_timeout = Some(limit);
        self
    }

    /// Sets how long a call from a handler to its client
    /// ([`Context::peer`](crate::dispatch::Context::peer)), or from a [`Peer`](crate::peer::Peer)
    /// handle, waits for its answer (default 60 s); `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = Some(limit);
        self
    }

    /// Returns these limits, each unset one taken from `base`.
    pub fn or(self, base: Limits) -> Self {
        Self {
            max_message_size: self.max_message_size.or(base.max_message_size),
            max_buffered: self.max_buffered.or(base.max_buffered),
            max_in_flight: self.max_in_flight.or(base.max_in_flight),
            max_subscriptions: self.max_subscriptions.or(base.max_subscriptions),
            queue: self.queue.or(base.queue),
            write_timeout: self.write_timeout.or(base.write_timeout),
            call_timeout: self.call_timeout.or(base.call_timeout),
        }
    }

    /// Returns the largest message, in bytes.
    pub fn get_max_message_size(&self) -> usize {
        self.max_message_size.unwrap_or(MAX_MESSAGE_SIZE)
    }

    /// Returns the watermark of unsent bytes per connection.
    pub fn get_max_buffered(&self) -> usize {
        self.max_buffered.unwrap_or(WATERMARK)
    }

    /// Returns the watermark, or `default` when it is unset: what a transport with another default
    /// takes.
    pub(crate) fn max_buffered_or(&self, default: usize) -> usize {
        self.max_buffered.unwrap_or(default)
    }

    /// Returns the cap on calls in flight per connection.
    pub fn get_max_in_flight(&self) -> usize {
        self.max_in_flight.unwrap_or(128)
    }

    /// Returns the cap on subscriptions per connection.
    pub fn get_max_subscriptions(&self) -> usize {
        self.max_subscriptions.unwrap_or(1024)
    }

    /// Returns how many outgoing messages may wait per connection.
    pub fn get_queue(&self) -> usize {
        self.queue.unwrap_or(1024)
    }

    /// Returns how long a write may wait for the client to take a byte.
    pub fn get_write_timeout(&self) -> Option<Duration> {
        self.write_timeout.unwrap_or(Some(Duration::from_secs(30)))
    }

    /// Returns how long an outgoing call waits for its answer.
    pub fn get_call_timeout(&self) -> Option<Duration> {
        self.call_timeout.unwrap_or(Some(Duration::from_secs(60)))
    }

    /// Checks each limit, naming the first out of range by its setter: a zero
    /// `max_message_size`, `max_buffered`, `max_in_flight` or `max_subscriptions`; a `queue` of zero or above what a
    /// Tokio channel holds; a zero `write_timeout` or `call_timeout` (use `None`).
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        check::at_least_one("max_message_size", self.get_max_message_size())?;
        check::at_least_one("max_buffered", self.get_max_buffered())?;
        check::at_least_one("max_in_flight", self.get_max_in_flight())?;
        check::at_least_one("max_subscriptions", self.get_max_subscriptions())?;
        check::permits("queue", self.get_queue())?;
        check::optional_limit("write_timeout", self.get_write_timeout())?;
        check::optional_limit("call_timeout", self.get_call_timeout())?;
        Ok(())
    }
}

/// Writes the [`Limits`] setters on a builder whose limits are the field `$field`: each sets that
/// limit, as the method of the same name on [`Limits`] says, and `limits` sets all those a
/// [`Limits`] value sets.
macro_rules! limit_setters {
    ($field:ident) => {
        /// Sets the largest message, in bytes, either way (default 10 MiB); see
        /// [`Limits::max_message_size`](crate::limits::Limits::max_message_size).
        pub fn max_message_size(mut self, bytes: usize) -> Self {
            self.$field = self.$field.max_message_size(bytes);
            self
        }

        /// Sets the watermark of unsent bytes per connection (default 256 KiB): past it reading
        /// pauses; see [`Limits::max_buffered`](crate::limits::Limits::max_buffered).
        pub fn max_buffered(mut self, bytes: usize) -> Self {
            self.$field = self.$field.max_buffered(bytes);
            self
        }

        /// Sets how many calls of one connection may run at once (default 128); see
        /// [`Limits::max_in_flight`](crate::limits::Limits::max_in_flight).
        pub fn max_in_flight(mut self, calls: usize) -> Self {
            self.$field = self.$field.max_in_flight(calls);
            self
        }

        /// Sets how many subscriptions one connection may hold (default 1 024); see
        /// [`Limits::max_subscriptions`](crate::limits::Limits::max_subscriptions).
        pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
            self.$field = self.$field.max_subscriptions(subscriptions);
            self
        }

        /// Sets how many outgoing messages may wait per connection (default 1 024); see
        /// [`Limits::queue`](crate::limits::Limits::queue).
        pub fn queue(mut self, messages: usize) -> Self {
            self.$field = self.$field.queue(messages);
            self
        }

        /// Sets how long a write may wait for the other side to take a byte (default 30 s); see
        /// [`Limits::write_timeout`](crate::limits::Limits::write_timeout).
        pub fn write_timeout(mut self, limit: Option<::std::time::Duration>) -> Self {
            self.$field = self.$field.write_timeout(limit);
            self
        }

        /// Sets how long an outgoing call waits for its answer (default 60 s); see
        /// [`Limits::call_timeout`](crate::limits::Limits::call_timeout).
        pub fn call_timeout(mut self, limit: Option<::std::time::Duration>) -> Self {
            self.$field = self.$field.call_timeout(limit);
            self
        }

        /// Sets every limit `limits` sets (see [`Limits`](crate::limits::Limits)); the others
        /// keep their values.
        pub fn limits(mut self, limits: crate::limits::Limits) -> Self {
            self.$field = limits.or(self.$field);
            self
        }
    };
}
pub(crate) use limit_setters;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_limits_come_from_the_base_then_the_defaults() {
        let base = Limits::new().max_message_size(1 << 20).queue(8);
        let limits = Limits::new().queue(4).or(base);
        assert_eq!(limits.get_max_message_size(), 1 << 20);
        assert_eq!(limits.get_queue(), 4);
        assert_eq!(limits.get_max_buffered(), WATERMARK);
        assert_eq!(Limits::new().get_max_message_size(), 10 << 20);
        assert!(Limits::new().check().is_ok());
        let key = |limits: Limits| limits.check().unwrap_err().key();
        assert_eq!(key(Limits::new().max_buffered(0)), "max_buffered");
        assert_eq!(key(Limits::new().queue(0)), "queue");
        assert_eq!(
            key(Limits::new().write_timeout(Some(Duration::ZERO))),
            "write_timeout"
        );
    }
}
