use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    async fn add(&self, #[rpc(alias = "x")] a: i64, b: i64) -> i64;
}

fn main() {}
