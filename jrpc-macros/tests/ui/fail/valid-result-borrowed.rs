use jrpc_runtime::rpc_service;

#[rpc_service]
trait Greeter {
    async fn name(&self) -> &str;
}

fn main() {}
