//! A type of one's own named `Context` is a parameter like any other: taken
//! by value, it is read from params.
#![deny(warnings)]

use jrpc_runtime::rpc_service;

/// Not the runtime's context.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Context {
    /// Who.
    pub user: String,
}

/// Reads a `Context` from params.
#[rpc_service]
pub trait Session {
    /// Greets the user named in params.
    fn greet(&self, ctx: Context) -> String;
}

struct Impl;

impl Session for Impl {
    fn greet(&self, ctx: Context) -> String {
        format!("hello {}", ctx.user)
    }
}

fn main() {
    let _ = Impl.into_methods();
}
