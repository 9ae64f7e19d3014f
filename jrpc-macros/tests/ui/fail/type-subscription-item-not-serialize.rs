use jrpc_runtime::{Items, rpc_service};

#[derive(serde::Deserialize)]
struct Head {
    number: u64,
}

#[rpc_service]
trait Chain {
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    async fn heads(&self) -> Items<Head>;
}

fn main() {}
