use jrpc_runtime::rpc_service;

struct Native;

#[rpc_service]
impl Native {
    extern "C" fn version(&self) -> u32 {
        1
    }
}

fn main() {}
