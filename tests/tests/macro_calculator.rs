//! The calculator of the design, served through `Methods::handle` and called
//! through its generated client.
#![warn(clippy::pedantic)]

use jrpc_runtime::{Context, Methods, RpcError, rpc_service};
use serde_json::{Value, json};

#[rpc_service]
pub trait Calculator {
    /// Adds two integers.
    async fn add(&self, a: i64, b: i64) -> i64;
    /// Divides; dividing by zero is an error.
    async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError>;
    /// Sums a list given as the whole params.
    #[rpc(params = whole)]
    async fn sum(&self, numbers: Vec<i64>) -> i64;
    /// Some data, under another wire name.
    #[rpc(name = "get_data")]
    async fn data(&self) -> (String, u32);
    /// Records values; never answered.
    #[notification]
    async fn update(&self, values: Vec<i64>);
    /// The transport the call came through.
    async fn whoami(&self, ctx: &Context) -> String;
}

struct Calc;

impl Calculator for Calc {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError> {
        if divisor == 0.0 {
            return Err(RpcError::invalid_params("division by zero"));
        }
        Ok(dividend / divisor)
    }
    async fn sum(&self, numbers: Vec<i64>) -> i64 {
        numbers.iter().sum()
    }
    async fn data(&self) -> (String, u32) {
        ("x".to_owned(), 1)
    }
    async fn update(&self, _values: Vec<i64>) {}
    async fn whoami(&self, ctx: &Context) -> String {
        ctx.transport().as_str().to_owned()
    }
}

async fn call(methods: &Methods, body: Value) -> Option<Value> {
    let answer = methods.handle(&body.to_string()).await?;
    Some(serde_json::from_str(&answer).unwrap())
}

#[tokio::test]
async fn positional() {
    let methods = Calc.into_methods();
    let answer = call(
        &methods,
        json!({"jsonrpc": "2.0", "id": 1, "method": "add", "params": [1, 2]}),
    )
    .await;
    assert_eq!(
        answer,
        Some(json!({"jsonrpc": "2.0", "id": 1, "result": 3}))
    );
}

#[tokio::test]
async fn client() {
    let client = CalculatorClient::new(Calc.into_methods());
    assert_eq!(client.add(2, 3).await.unwrap(), 5);
    assert_eq!(client.sum(vec![1, 2, 3]).await.unwrap(), 6);
    assert_eq!(client.whoami().await.unwrap(), "in-process");
    client.update(vec![1]).await.unwrap();
}
