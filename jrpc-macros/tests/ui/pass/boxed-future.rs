//! A method may return its future boxed, `Pin<Box<dyn Future<Output = T> +
//! Send>>` (a trait that stays dyn-compatible): it is awaited as a call, and
//! its stub returns `T`.
#![deny(warnings)]

use std::future::Future;
use std::pin::Pin;

use jrpc_runtime::rpc_service;

/// A boxed future.
#[rpc_service]
pub trait Counter {
    /// Counts.
    fn count(&self, from: usize) -> Pin<Box<dyn Future<Output = usize> + Send + '_>>;
}

struct Impl(usize);

impl Counter for Impl {
    fn count(&self, from: usize) -> Pin<Box<dyn Future<Output = usize> + Send + '_>> {
        Box::pin(async move { from + self.0 })
    }
}

fn main() {
    let _: &dyn Counter = &Impl(0);
    let methods = Impl(2).into_methods();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = CounterClient::new(methods);
        assert_eq!(client.count(1).await.ok(), Some(3));
    });
}
