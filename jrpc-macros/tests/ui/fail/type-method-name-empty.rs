use jrpc_runtime::rpc_service;

mod names {
    pub const ADD: &str = "";
}

#[rpc_service]
trait Calculator {
    #[rpc(name = names::ADD)]
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {}
