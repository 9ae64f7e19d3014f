// A type of the stub's name: one error, naming the option that renames the
// stub; the type itself keeps working.
use jrpc_runtime::rpc_service;

pub struct CalculatorClient;

#[rpc_service]
pub trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

fn main() {
    let _ = CalculatorClient;
}
