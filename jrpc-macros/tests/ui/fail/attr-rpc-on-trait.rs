// Service options go to `#[rpc_service(...)]`, not to an `#[rpc]` on the
// trait.
use jrpc_runtime::rpc_service;

#[rpc_service]
#[rpc(namespace = "calc")]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
