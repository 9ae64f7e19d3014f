use jrpc_runtime::rpc_service;

#[rpc_service]
trait Merge {
    fn merge(&self, other: Vec<Self>) -> u32
    where
        Self: Sized;
}

fn main() {}
