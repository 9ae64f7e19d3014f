use jrpc_runtime::rpc_service;

#[rpc_service]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
    #[rpc(name = "add")]
    async fn add_floats(&self, a: f64, b: f64) -> f64;
}

fn main() {}
