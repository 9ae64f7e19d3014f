use jrpc_runtime::rpc_service;

#[derive(Debug)]
enum DivError {
    ByZero,
}

#[rpc_service]
trait Calculator {
    async fn divide(&self, a: f64, b: f64) -> Result<f64, DivError>;
}

fn main() {}
