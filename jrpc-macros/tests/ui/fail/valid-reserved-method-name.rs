use jrpc_runtime::rpc_service;

#[rpc_service]
trait Factory {
    async fn new(&self, kind: String) -> u64;
}

fn main() {}
