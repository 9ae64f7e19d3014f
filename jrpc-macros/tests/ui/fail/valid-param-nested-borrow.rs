use jrpc_runtime::rpc_service;

#[rpc_service]
trait Words {
    async fn count(&self, words: Vec<&str>) -> usize;
}

fn main() {}
