//! `client = "Name"` names the stub, `client = false` leaves it out, and a
//! type with the default stub name can then live beside the trait.
#![deny(warnings)]

use jrpc_runtime::{Methods, rpc_service};

/// A type of the name the stub would have had.
pub struct CalculatorClient;

/// Named otherwise.
#[rpc_service(client = "Remote")]
pub trait Calculator {
    /// Adds.
    async fn add(&self, a: i64, b: i64) -> i64;
}

/// Without a stub: `new` and the stub's other names are free.
#[rpc_service(client = false)]
pub trait Builder {
    /// A method named like a stub constructor.
    fn new(&self) -> u32;
}

/// The default name is free here.
#[rpc_service(client = true)]
pub trait Other {
    /// Pings.
    fn ping(&self);
}

struct Impl;

impl Calculator for Impl {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

impl Builder for Impl {
    fn new(&self) -> u32 {
        1
    }
}

impl Other for Impl {
    fn ping(&self) {}
}

fn main() {
    let _ = CalculatorClient;
    let _ = Remote::new(Methods::new());
    let _ = OtherClient::new(Methods::new());
    let _ = Calculator::into_methods(Impl);
    let _ = Builder::into_methods(Impl);
    let _ = Other::into_methods(Impl);
}
