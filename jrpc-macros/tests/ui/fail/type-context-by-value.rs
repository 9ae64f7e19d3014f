use jrpc_runtime::{Context, rpc_service};

#[rpc_service]
trait Session {
    async fn whoami(&self, ctx: Context) -> String;
}

fn main() {}
