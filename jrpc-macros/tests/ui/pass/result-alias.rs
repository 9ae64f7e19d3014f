//! Whether a return type is a `Result` is decided by the type: an alias of
//! `Result` answers its `Err` as an error, a type named `Result` that is not
//! one answers as a value. (`tests/macro_decisions.rs` checks the answers.)
#![deny(warnings)]

use jrpc_runtime::{RpcError, rpc_service};

type Answer = Result<u8, RpcError>;

/// A value that happens to be named `Result`.
pub mod wrapped {
    /// Wraps a value.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Result<T>(pub T);
}

struct Calc;

#[rpc_service]
impl Calc {
    fn five(&self) -> Answer {
        Ok(5)
    }
    fn wrapped(&self) -> wrapped::Result<u8> {
        wrapped::Result(5)
    }
}

/// A trait without a stub may use aliases too.
#[rpc_service(client = false)]
pub trait Aliased {
    /// Through an alias.
    fn five(&self) -> Answer;
}

impl Aliased for Calc {
    fn five(&self) -> Answer {
        Ok(5)
    }
}

fn main() {
    let _ = Calc.into_methods();
    let _ = Aliased::into_methods(Calc);
}
