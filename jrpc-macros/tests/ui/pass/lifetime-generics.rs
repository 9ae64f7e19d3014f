//! Lifetime parameters change no type the wire sees: they are allowed.
#![deny(warnings)]

use jrpc_runtime::{Context, rpc_service};

/// Methods with lifetime parameters.
#[rpc_service]
pub trait Text {
    /// The receiver's lifetime, named.
    fn len<'a>(&'a self) -> usize;
    /// The context's.
    fn transport<'c>(&self, ctx: &'c Context) -> String;
}

struct Impl;

impl Text for Impl {
    fn len<'a>(&'a self) -> usize {
        3
    }
    fn transport<'c>(&self, ctx: &'c Context) -> String {
        ctx.transport().to_string()
    }
}

fn main() {
    let _ = Impl.into_methods();
}
