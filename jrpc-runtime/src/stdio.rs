//! Serving over standard input and output, and calling a child process over its pipes.

use std::process::Stdio;

use tokio::process::Command;

use crate::peer::{Framing, PeerConfig};
use crate::{Methods, Peer, Transport};

/// Serves `methods` on stdin and stdout until the end of input, then lets running calls finish
/// (up to [`PeerConfig::drain`]) and returns. Logs belong on stderr: stdout carries the protocol.
///
/// ```no_run
/// use jrpc_runtime::{Framing, Methods, PeerConfig, stdio};
///
/// # async fn run(methods: Methods) -> std::io::Result<()> {
/// stdio::serve(methods, Framing::Lines, PeerConfig::default()).await
/// # }
/// ```
///
/// # Errors
///
/// When input cannot be read any more (a garbled `Content-Length` header) or output cannot be
/// written.
pub async fn serve(methods: Methods, framing: Framing, config: PeerConfig) -> std::io::Result<()> {
    let config = config.transport(Transport::Stdio);
    let (_peer, driver) = Peer::connect_split(
        tokio::io::stdin(),
        tokio::io::stdout(),
        framing,
        methods,
        config,
    );
    driver.await
}

/// Starts `command` as a child process and returns a [`Peer`] over its stdin and stdout; `methods`
/// answers what the child calls. The child's stderr passes through to ours, and the child is
/// killed when the last handle drops (or when its output ends).
///
/// ```no_run
/// use jrpc_runtime::{Framing, Methods, PeerConfig, stdio};
/// use tokio::process::Command;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = stdio::spawn(Command::new("my-lsp-server"), Framing::ContentLength, Methods::new(), PeerConfig::default())?;
/// let capabilities: serde_json::Value = server.call("initialize", serde_json::json!({"capabilities": {}})).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// When the process cannot be started.
pub fn spawn(
    mut command: Command,
    framing: Framing,
    methods: Methods,
    config: PeerConfig,
) -> std::io::Result<Peer> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the child's pipes were not opened"));
    };
    let config = config.transport(Transport::Stdio);
    let (peer, driver) = Peer::connect_split_with(stdout, stdin, framing, methods, config, true);
    tokio::spawn(async move {
        if let Err(err) = driver.await {
            tracing::warn!(%err, "child connection ended");
        }
        // Dropping the child kills it (kill_on_drop).
        drop(child);
    });
    Ok(peer)
}
