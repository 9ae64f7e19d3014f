use jrpc_runtime::rpc_service;

#[rpc_service]
pub struct Calculator {
    pub precision: u32,
}

fn main() {
    let _ = Calculator { precision: 2 };
}
