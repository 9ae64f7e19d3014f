use jrpc_runtime::rpc_service;

#[rpc_service]
trait Memory {
    unsafe fn peek(&self, address: u64) -> u8;
}

fn main() {}
