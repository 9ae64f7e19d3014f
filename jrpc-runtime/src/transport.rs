//! The kind of transport a call travels over: a label that a handler's context and a caller's
//! spans carry, below both the dispatcher and the callers so that each can name it.

use std::fmt;

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
