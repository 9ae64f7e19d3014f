// `#[async_trait]` above `#[rpc_service]` (it ran first), and on the impl:
// one error, at the attribute; the impl still matches the trait.
use jrpc_runtime::rpc_service;

#[async_trait::async_trait]
#[rpc_service]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

struct Calc;

#[async_trait::async_trait]
impl Calculator for Calc {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {}
