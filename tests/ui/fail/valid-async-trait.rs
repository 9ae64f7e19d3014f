// `#[async_trait]` under `#[rpc_service]`: one error at it (the attribute is
// taken out, so its crate need not even be a dependency).
use jrpc_runtime::rpc_service;

#[rpc_service]
#[async_trait::async_trait]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
