//! Runs language servers on jrpc: the Language Server Protocol's base protocol (`Content-Length`
//! framing) on stdio or any stream, with LSP's cancellation (`$/cancelRequest`), over a method
//! table declared with `#[rpc_service]`.
//!
//! `examples/lsp_server.rs` is a whole server (hover on the word under the cursor, the
//! lifecycle's rules); `cargo run --example lsp_server` runs it.
//!
//! ```
//! use jrpc_runtime::Methods;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let config = jrpc_lsp::peer_config().build().expect("valid settings");
//! let (_client, server) = tokio::io::duplex(4096);
//! let (_peer, driver) = jrpc_runtime::Peer::connect(server, Methods::new(), config);
//! # drop(driver);
//! # });
//! ```

use jrpc_runtime::{Cancellation, Framing, PeerConfig, PeerConfigBuilder};

/// Returns the settings of an LSP connection: `Content-Length` framing, and `$/cancelRequest`
/// sent for a call given up and honoured when received. Set the rest (limits, timeouts) on the
/// builder before `build`.
pub fn peer_config() -> PeerConfigBuilder {
    PeerConfig::builder()
        .framing(Framing::ContentLength)
        .cancellation(Cancellation::Lsp)
}
