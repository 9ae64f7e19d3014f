use jrpc_runtime::rpc_service;

#[rpc_service]
trait Info {
    fn names(&self) -> Vec<&'static str>;
}

fn main() {}
