//! The kind of transport a call travels over: a label that a handler's context and a caller's
//! spans carry, below both the dispatcher and the callers so that each can name it; and what
//! transports hand the dispatcher's `Context` to keep for them (a request's headers, its tag),
//! as types the dispatcher holds without knowing which transport made them.

use std::fmt;
use std::sync::Arc;

/// The kind of transport a request arrived on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// Standard input and output, or a child process's pipes.
    Stdio,
    /// HTTP `POST`.
    Http,
    /// A WebSocket connection.
    WebSocket,
    /// A direct call of [`Methods::handle`](crate::dispatch::Methods::handle) or a stub over `Methods`.
    InProcess,
    /// Any other byte stream served as a peer.
    Stream,
    /// A Unix socket (`server::SocketServer::serve_unix`, `unix:` client URLs).
    Unix,
    /// A TCP connection served as a two-way peer (`server::SocketServer::serve_tcp`).
    Tcp,
}

impl Transport {
    /// The transport's short name: `"stdio"`, `"http"`, `"ws"`, `"in-process"`, `"stream"`,
    /// `"unix"` or `"tcp"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::WebSocket => "ws",
            Self::InProcess => "in-process",
            Self::Stream => "stream",
            Self::Unix => "unix",
            Self::Tcp => "tcp",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The headers of a request (or of a WebSocket's upgrade), as `Context` keeps them: HTTP's
/// header map where a transport that has headers is built, else a type with no value.
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) type Headers = http::HeaderMap;
/// The headers of a request: no transport built has any.
#[cfg(not(any(feature = "http", feature = "ws")))]
pub(crate) type Headers = std::convert::Infallible;

/// A request tag: the application's text, or an HTTP request's `x-request-id`, taken from the
/// request (its value shares the buffer the request was read into) or made up (16 hex digits,
/// written when first read).
#[derive(Clone, Debug)]
pub(crate) enum RequestTag {
    Text(Arc<str>),
    #[cfg(feature = "http")]
    Header(http::HeaderValue),
    #[cfg(feature = "http")]
    Hex(crate::http::request_id::MadeUp),
}

impl RequestTag {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Text(text) => text,
            // A tag taken is checked to be plain ASCII; one made up is hex digits.
            #[cfg(feature = "http")]
            Self::Header(value) => value.to_str().unwrap_or_default(),
            #[cfg(feature = "http")]
            Self::Hex(made) => made.as_str(),
        }
    }
}
