use jrpc_runtime::rpc_service;

#[derive(Debug)]
enum CalcError {
    ByZero,
}

#[rpc_service(client_error = CalcError)]
trait Calculator {
    async fn divide(&self, a: f64, b: f64) -> f64;
    #[notification]
    async fn reset(&self);
}

fn main() {}
