// `#[async_trait]` under `#[rpc_service]`: one error at it. The emitted trait
// keeps it, so impls written for `#[async_trait]` add no error of their own.
use jrpc_runtime::rpc_service;

#[rpc_service]
#[async_trait::async_trait]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
