// One error, and the service still works: the attribute that remains does
// the work.
use jrpc_runtime::{Methods, rpc_service};

#[rpc_service]
#[rpc_service]
trait Calculator {
    async fn add(&self, a: i64, b: i64) -> i64;
}

struct Calc;

impl Calculator for Calc {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {
    let _: Methods = Calc.into_methods();
    let _ = CalculatorClient::new(Methods::new());
}
