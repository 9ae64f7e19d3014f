//! `crate = "..."` names the runtime when it is imported under another
//! name, at the crate root or through a module.
#![deny(warnings)]

pub extern crate jrpc_runtime as rt;

/// The runtime, re-exported by a module of this crate.
pub mod api {
    pub use rt as runtime;
}

/// Through the crate-root alias.
#[rt::rpc_service(crate = "rt")]
pub trait Calculator {
    /// Adds.
    async fn add(&self, a: i64, b: i64) -> i64;
    /// Fails.
    async fn fail(&self) -> Result<(), rt::RpcError>;
    /// The context.
    async fn whoami(&self, ctx: &rt::Context) -> String;
}

/// Through a module path.
#[api::runtime::rpc_service(crate = "crate::api::runtime", namespace = "echo")]
pub trait Echo {
    /// Echoes.
    #[notification]
    async fn echo(&self, text: String);
}

struct Impl;

impl Calculator for Impl {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    async fn fail(&self) -> Result<(), rt::RpcError> {
        Err(rt::RpcError::internal())
    }
    async fn whoami(&self, ctx: &rt::Context) -> String {
        ctx.transport().as_str().to_owned()
    }
}

impl Echo for Impl {
    async fn echo(&self, _text: String) {}
}

fn main() {
    let _ = Calculator::into_methods(Impl);
    let _ = Echo::into_methods(Impl);
    let _ = CalculatorClient::new(rt::Methods::new());
    let _ = EchoClient::new(rt::Methods::new());
}
