// The context is always given: it cannot be optional, nor inside another
// type.
use jrpc_runtime::{Context, rpc_service};

#[rpc_service]
trait Session {
    async fn whoami(&self, ctx: Option<&Context>) -> String;
}

fn main() {}
