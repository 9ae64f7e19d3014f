use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    #[notification]
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    async fn heads(&self) -> Items<u64>;
}

fn main() {}
