use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    #[subscription(notification = "head", unsubscribe = "stop")]
    async fn heads(&self) -> Items<u64>;
    async fn stop(&self) -> bool;
}

fn main() {}
