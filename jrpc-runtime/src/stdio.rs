//! Serves over standard input and output, and calls a child process over its pipes.

use std::process::Stdio;

use tokio::process::Command;

use crate::dispatch::Methods;
use crate::peer::{Lifetime, Peer, PeerConfig};
use crate::transport::Transport;

/// Serves `methods` on stdin and stdout, framed as `config` says, until the end of input, then
/// lets running calls finish (up to its
/// [`drain_timeout`](crate::peer::PeerConfigBuilder::drain_timeout)) and returns. Handlers see
/// [`Transport::Stdio`]. Logs belong on stderr: stdout carries the protocol.
///
/// ```no_run
/// use jrpc_runtime::{Framing, Methods, PeerConfig, stdio};
///
/// # async fn run(methods: Methods) -> Result<(), Box<dyn std::error::Error>> {
/// let config = PeerConfig::builder().framing(Framing::ContentLength).build()?;
/// stdio::serve(methods, config).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// When input cannot be read any more (a garbled `Content-Length` header) or output cannot be
/// written.
pub async fn serve(methods: Methods, config: PeerConfig) -> std::io::Result<()> {
    let config = config.on_transport(Transport::Stdio);
    let (_peer, driver) =
        Peer::connect_split(tokio::io::stdin(), tokio::io::stdout(), methods, config);
    driver.await
}

/// Starts `command` as a child process and returns a [`Peer`] over its stdin and stdout, framed
/// as `config` says; `methods` answers what the child calls. The child's stderr passes through to
/// ours, and the child is killed when the last handle drops (or when its output ends): the
/// connection runs [`Lifetime::UntilUnused`], whatever `config` says.
///
/// ```no_run
/// use jrpc_runtime::{Caller as _, Framing, Methods, PeerConfig, stdio};
/// use tokio::process::Command;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = PeerConfig::builder().framing(Framing::ContentLength).build()?;
/// let server = stdio::spawn(Command::new("my-lsp-server"), Methods::new(), config)?;
/// let capabilities: serde_json::Value = server.call("initialize", serde_json::json!({"capabilities": {}})).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// When the process cannot be started.
pub fn spawn(mut command: Command, methods: Methods, config: PeerConfig) -> std::io::Result<Peer> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the child's pipes were not opened"));
    };
    let config = config
        .on_transport(Transport::Stdio)
        .with_lifetime(Lifetime::UntilUnused);
    let (peer, driver) = Peer::connect_split(stdout, stdin, methods, config);
    tokio::spawn(async move {
        if let Err(err) = driver.await {
            tracing::warn!(%err, "child connection ended");
        }
        // Dropping the child kills it (kill_on_drop).
        drop(child);
    });
    Ok(peer)
}
