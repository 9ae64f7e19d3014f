//! Without a stub, a result may borrow for `'static`: only the stub needs
//! an owned type to decode into.
#![deny(warnings)]

use jrpc_runtime::rpc_service;

struct Info;

#[rpc_service]
impl Info {
    fn version(&self) -> &'static str {
        "1.0"
    }
    fn names(&self) -> Vec<&'static str> {
        vec!["a", "b"]
    }
}

/// A trait, without a stub.
#[rpc_service(client = false)]
pub trait Described {
    /// Borrows for `'static`.
    fn description(&self) -> &'static str;
}

impl Described for Info {
    fn description(&self) -> &'static str {
        "info"
    }
}

fn main() {
    let _ = Info.into_methods();
    let _ = Described::into_methods(Info);
}
