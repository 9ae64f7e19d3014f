// `#[async_trait]` left on the trait (below `#[rpc_service]`) and on the
// impl: one error, at the trait's; the trait keeps it, so the impl matches.
use jrpc_runtime::rpc_service;

#[rpc_service]
#[async_trait::async_trait]
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
