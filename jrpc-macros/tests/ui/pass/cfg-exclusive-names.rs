//! Two methods may share a wire name under `#[cfg]`s that exclude each
//! other.
#![deny(warnings)]

use jrpc_runtime::rpc_service;

/// One `os` method in any build.
#[rpc_service]
pub trait System {
    /// On Unix.
    #[cfg(unix)]
    #[rpc(name = "os")]
    fn os_unix(&self) -> String;
    /// Elsewhere.
    #[cfg(not(unix))]
    #[rpc(name = "os")]
    fn os_other(&self) -> String;
}

struct Impl;

impl System for Impl {
    #[cfg(unix)]
    fn os_unix(&self) -> String {
        "unix".to_owned()
    }
    #[cfg(not(unix))]
    fn os_other(&self) -> String {
        "other".to_owned()
    }
}

fn main() {
    let _ = Impl.into_methods();
}
