use jrpc_runtime::rpc_service;

mod remote {
    pub struct Remote;
}
use remote::Remote;

#[rpc_service(client = "Remote")]
pub trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {
    let _ = Remote;
}
