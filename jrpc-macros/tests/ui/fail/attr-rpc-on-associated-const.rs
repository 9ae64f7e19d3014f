use jrpc_runtime::rpc_service;

struct Counter;

#[rpc_service]
impl Counter {
    #[rpc(name = "limit")]
    const LIMIT: u32 = 10;

    fn count(&self) -> u32 {
        Self::LIMIT
    }
}

fn main() {}
