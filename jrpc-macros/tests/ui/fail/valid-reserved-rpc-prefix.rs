use jrpc_runtime::rpc_service;

#[rpc_service]
trait Discovery {
    #[rpc(name = "rpc.discover")]
    async fn discover(&self) -> Vec<String>;
}

fn main() {}
