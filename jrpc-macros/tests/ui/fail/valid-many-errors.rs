// Every mistake is reported in one build, and none of them makes the
// code that uses the service fail as well.
use jrpc_runtime::{Methods, rpc_service};

#[rpc_service(rename_all = "camel")]
trait Calculator {
    async fn add(&mut self, a: i64, b: i64) -> i64;
    async fn greet(&self, name: &str) -> String;
    #[notification]
    async fn update(&self, values: Vec<i64>) -> bool;
}

struct Calc;

impl Calculator for Calc {
    async fn add(&mut self, a: i64, b: i64) -> i64 {
        a + b
    }
    async fn greet(&self, name: &str) -> String {
        format!("hello {name}")
    }
    async fn update(&self, _values: Vec<i64>) -> bool {
        true
    }
}

async fn use_it(methods: Methods) {
    let _ = Calc.into_methods();
    let client = CalculatorClient::new(methods);
    let _ = client.greet("x").await;
}

fn main() {
    let _ = use_it;
}
