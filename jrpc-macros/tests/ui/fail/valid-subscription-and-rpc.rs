use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    #[rpc(name = "eth_subscribe")]
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    async fn heads(&self) -> Items<u64>;
}

fn main() {}
