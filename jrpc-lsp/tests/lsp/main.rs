//! `jrpc-lsp` driven as an editor drives a server: frames written and read by hand on an
//! in-memory stream (or a loopback socket), so that the order of what the server sends is seen
//! exactly. Time is Tokio's paused clock wherever something waits.

mod editor;
mod lifecycle;
mod progress;
mod sessions;
#[cfg(unix)]
mod watch;
