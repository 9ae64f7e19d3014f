use jrpc_runtime::rpc_service;

#[rpc_service(crate = "jrpc runtime")]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
