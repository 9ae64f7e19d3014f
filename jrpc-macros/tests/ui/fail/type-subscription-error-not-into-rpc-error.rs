use jrpc_runtime::{Items, rpc_service};

struct Refused;

#[rpc_service]
trait Chain {
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    async fn heads(&self, kind: String) -> Result<Items<u64>, Refused>;
}

fn main() {}
