use jrpc_runtime::rpc_service;

#[rpc_service]
trait Snapshot {
    fn snapshot(&self) -> Self;
}

fn main() {}
