use jrpc_runtime::rpc_service;

struct Counter;

#[rpc_service(client = false)]
impl Counter {
    fn count(&self) -> u32 {
        1
    }
}

fn main() {
    let _ = Counter.into_methods();
}
