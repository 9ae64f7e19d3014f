use jrpc_runtime::rpc_service;

#[rpc_service]
trait Chain {
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    async fn heads(&self) -> Vec<u64>;
}

fn main() {}
