//! Sync methods in a trait, next to a trait method with a default body and
//! a method returning `impl Future` by hand.
#![deny(warnings)]

use std::future::Future;

use jrpc_runtime::{RpcError, rpc_service};

/// Sync and async methods.
#[rpc_service]
pub trait Mixed: Send + Sync {
    /// A plain function.
    fn add(&self, a: i64, b: i64) -> i64;
    /// A fallible plain function.
    fn check(&self, a: i64) -> Result<i64, RpcError>;
    /// A sync notification.
    #[notification]
    fn poke(&self);
    /// A provided method, made `Send`.
    async fn twice(&self, a: i64) -> i64 {
        if a == 0 {
            return 0;
        }
        self.add(a, a)
    }
    /// A future written by hand.
    fn later(&self, a: i64) -> impl Future<Output = i64> + Send;
}

struct Impl;

impl Mixed for Impl {
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    fn check(&self, a: i64) -> Result<i64, RpcError> {
        Ok(a)
    }
    fn poke(&self) {}
    fn later(&self, a: i64) -> impl Future<Output = i64> + Send {
        async move { a }
    }
}

fn main() {
    let _ = Impl.into_methods();
}
