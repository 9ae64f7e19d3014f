use jrpc_runtime::rpc_service;

#[rpc_service]
trait Store {
    type Item;
    fn count(&self) -> u32;
}

fn main() {}
