use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    async fn heads(&self) -> u64;
    #[subscription(name = "heads", notification = "head", unsubscribe = "unsubscribe")]
    async fn subscribe(&self) -> Items<u64>;
}

fn main() {}
