// Every `fn` of the block is a method of the service: a constructor goes in
// another block.
use jrpc_runtime::rpc_service;

struct Counter;

#[rpc_service]
impl Counter {
    pub fn new() -> Self {
        Counter
    }

    pub fn count(&self) -> u32 {
        1
    }
}

fn main() {}
