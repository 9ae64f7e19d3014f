use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    async fn add(&self, a: i64, #[rpc(name = "a")] b: i64) -> i64;
}

fn main() {}
