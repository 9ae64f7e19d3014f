use jrpc_runtime::rpc_service;

#[rpc_service]
trait Greeter {
    async fn greet(&self, name: &str) -> String;
}

fn main() {}
