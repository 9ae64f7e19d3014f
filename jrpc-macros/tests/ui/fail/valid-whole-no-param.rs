use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    #[rpc(params = whole)]
    async fn zero(&self) -> i64;
}

fn main() {}
