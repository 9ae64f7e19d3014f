//! An inherent `impl` block: `into_methods` only, async and sync methods.
#![deny(warnings, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};

use jrpc_runtime::{Context, RpcError, rpc_service};

/// A counter.
#[derive(Default)]
pub struct Counter {
    value: AtomicU64,
}

#[rpc_service(namespace = "counter")]
impl Counter {
    /// Adds and answers the new value.
    pub async fn add(&self, by: u64) -> u64 {
        self.value.fetch_add(by, Ordering::SeqCst) + by
    }

    /// The value, synchronously.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::SeqCst)
    }

    /// Fails on zero.
    fn check(&self, value: u64) -> Result<u64, RpcError> {
        if value == 0 {
            Err(RpcError::invalid_params("zero"))
        } else {
            Ok(value)
        }
    }

    /// Resets; a notification.
    #[notification]
    async fn reset(&self, ctx: &Context) {
        let _ = ctx;
        self.value.store(0, Ordering::SeqCst);
    }
}

fn main() {
    let _ = Counter::default().into_methods();
}
