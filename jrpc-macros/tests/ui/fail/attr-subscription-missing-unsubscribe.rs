use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    #[subscription(name = "eth_subscribe", notification = "eth_subscription")]
    async fn heads(&self) -> Items<u64>;
}

fn main() {}
