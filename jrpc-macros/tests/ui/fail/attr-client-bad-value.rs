use jrpc_runtime::rpc_service;

#[rpc_service(client = 1)]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
