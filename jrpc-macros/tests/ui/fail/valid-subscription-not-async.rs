use jrpc_runtime::{Items, rpc_service};

#[rpc_service]
trait Chain {
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    fn heads(&self) -> Items<u64>;
}

fn main() {}
