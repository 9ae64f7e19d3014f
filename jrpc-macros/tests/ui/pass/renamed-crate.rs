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
    /// A subscription.
    #[subscription(notification = "tick", unsubscribe = "untick")]
    async fn ticks(&self, every: u64) -> Result<rt::Items<u64>, rt::RpcError>;
}

/// Through a module path.
#[api::runtime::rpc_service(crate = "crate::api::runtime", namespace = "echo")]
pub trait Echo {
    /// Echoes.
    #[notification]
    async fn echo(&self, text: String);
    /// Echoes as a subscription.
    #[subscription(notification = "echoed", unsubscribe = "unecho")]
    async fn echoes(&self, text: String) -> api::runtime::Items<String>;
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
    async fn ticks(&self, every: u64) -> Result<rt::Items<u64>, rt::RpcError> {
        Ok(rt::Items::new(futures_util::stream::iter([every])))
    }
}

impl Echo for Impl {
    async fn echo(&self, _text: String) {}
    async fn echoes(&self, text: String) -> api::runtime::Items<String> {
        api::runtime::Items::new(futures_util::stream::iter([text]))
    }
}

/// The stubs' subscriptions, over a caller that can subscribe.
#[allow(dead_code)]
async fn subscribe(calculator: CalculatorClient<rt::Peer>, echo: EchoClient<rt::Peer>) {
    let _: Result<rt::Subscription<u64>, rt::ClientError> = calculator.ticks(1).await;
    let _: Result<rt::Subscription<String>, rt::ClientError> = echo.echoes(String::new()).await;
}

fn main() {
    let _ = Calculator::into_methods(Impl);
    let _ = Echo::into_methods(Impl);
    let _ = CalculatorClient::new(rt::Methods::new());
    let _ = EchoClient::new(rt::Methods::new());
}
