use jrpc_runtime::rpc_service;

const DISCOVER: &str = "rpc.discover";

#[rpc_service]
trait Discovery {
    #[rpc(name = DISCOVER)]
    async fn discover(&self) -> Vec<String>;
}

fn main() {}
