use jrpc_runtime::{Items, Methods, rpc_service};

#[rpc_service]
trait Chain {
    #[subscription(notification = "head", unsubscribe = "unsubscribe")]
    async fn heads(&self) -> Items<u64>;
}

/// A stub over a caller that cannot subscribe (here the table in process, as over HTTP) has no
/// subscription methods.
async fn subscribe(client: ChainClient<Methods>) {
    let _ = client.heads().await;
}

fn main() {}
