use jrpc_runtime::rpc_service;

#[rpc_service]
trait Counter {
    async fn increment(&mut self, by: u64) -> u64;
}

fn main() {}
