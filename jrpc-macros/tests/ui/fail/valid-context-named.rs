use jrpc_runtime::{Context, rpc_service};

#[rpc_service]
trait Session {
    async fn whoami(&self, #[rpc(name = "context")] ctx: &Context) -> String;
}

fn main() {}
