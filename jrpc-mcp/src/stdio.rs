//! Serves MCP over stdio (one JSON message a line) or any byte stream: the server's protocol table
//! on a connection whose context keeps what a legacy `initialize` says, with MCP's cancellation.

use tokio::io::{AsyncRead, AsyncWrite};

use super::data::{LegacyState, Mcp};
use jrpc_runtime::ConfigError;
use jrpc_runtime::Context;
use jrpc_runtime::Transport;
use jrpc_runtime::{Cancellation, Driver, Framing, Peer, PeerConfig};

impl Mcp {
    /// Serves on stdin and stdout, one JSON message a line, until the end of input; then lets
    /// running requests finish and returns. Each request is served in its own era: a modern one
    /// statelessly, a legacy one with what `initialize` said on this connection. A client's
    /// `notifications/cancelled` aborts the request it names. Logs belong on stderr.
    ///
    /// ```no_run
    /// use jrpc_mcp::Mcp;
    ///
    /// # async fn run(mcp: Mcp) -> std::io::Result<()> {
    /// mcp.serve_stdio().await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// When input cannot be read or output written.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        let config = self
            .connection_config(Transport::Stdio)
            .map_err(std::io::Error::other)?;
        jrpc_runtime::stdio::serve(self.methods().clone(), config).await
    }

    /// Serves one connection over `read` and `write` (a socket, a child's pipes, a test's
    /// duplex), framed one JSON message a line as over stdio: the handle on it, and its loop to
    /// spawn.
    ///
    /// # Errors
    ///
    /// None with the settings it uses; a [`ConfigError`] would name the bad one.
    pub fn connect<R, W>(&self, read: R, write: W) -> Result<(Peer, Driver), ConfigError>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let config = self.connection_config(Transport::Stream)?;
        Ok(Peer::connect_split(
            read,
            write,
            self.methods().clone(),
            config,
        ))
    }

    /// Returns a connection's settings: lines, MCP's cancellation, and a legacy state of its own.
    fn connection_config(&self, transport: Transport) -> Result<PeerConfig, ConfigError> {
        let ctx = Context::new(transport).with_extension(LegacyState::new(None));
        PeerConfig::builder()
            .framing(Framing::Lines)
            .cancellation(Cancellation::Mcp)
            .context(ctx)
            .build()
    }
}
