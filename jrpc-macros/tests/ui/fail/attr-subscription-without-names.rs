use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    #[subscription]
    async fn heads(&self) -> Items<u64>;
}

fn main() {}
