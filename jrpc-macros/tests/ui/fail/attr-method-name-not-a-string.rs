use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    #[rpc(name = 1)]
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
