// One error: the stand-in stub does not add a "type annotations needed".
use jrpc_runtime::rpc_service;

#[rpc_service]
trait Greeter {
    fn greeting(&self) -> impl serde::Serialize;
}

fn main() {}
