//! Names what a server serves a connection over.

use tokio::io::{AsyncRead, AsyncWrite};

/// Marks a connection's byte stream, as the servers' `serve_connection` take it: a TCP stream, a
/// TLS stream, a Unix socket, an in-memory pipe. Every `AsyncRead + AsyncWrite + Unpin + Send` type
/// is one.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}
