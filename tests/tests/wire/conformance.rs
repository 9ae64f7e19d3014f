//! Every example of the JSON-RPC 2.0 specification (section 7), through `Methods::handle` of a
//! service declared with `#[rpc_service]`. The vectors are `tests/data/spec-examples.json`.

use jrpc_runtime::rpc_service;
use serde_json::Value;

#[rpc_service]
trait Spec {
    async fn subtract(&self, minuend: i64, subtrahend: i64) -> i64;
    #[rpc(params = whole)]
    async fn sum(&self, numbers: Vec<i64>) -> i64;
    #[notification]
    #[rpc(params = whole)]
    async fn update(&self, values: Value);
    #[notification]
    #[rpc(params = whole)]
    async fn notify_hello(&self, values: Value);
    #[notification]
    #[rpc(params = whole)]
    async fn notify_sum(&self, values: Value);
    async fn get_data(&self) -> (String, u32);
}

struct Server;

impl Spec for Server {
    async fn subtract(&self, minuend: i64, subtrahend: i64) -> i64 {
        minuend - subtrahend
    }
    async fn sum(&self, numbers: Vec<i64>) -> i64 {
        numbers.iter().sum()
    }
    async fn update(&self, _values: Value) {}
    async fn notify_hello(&self, _values: Value) {}
    async fn notify_sum(&self, _values: Value) {}
    async fn get_data(&self) -> (String, u32) {
        ("hello".into(), 5)
    }
}

/// Whether an answer matches the expected one by the rules of `conformance/README.md`.
fn matches(got: &Value, want: &Value) -> bool {
    let one_of = got.get("result").is_some() != got.get("error").is_some();
    let outcome = match want.get("result") {
        Some(result) => numbers_as_f64(&got["result"]) == numbers_as_f64(result),
        None => {
            got["error"]["code"] == want["error"]["code"]
                && got["error"]["message"] == want["error"]["message"]
        }
    };
    got["jsonrpc"] == "2.0" && got["id"] == want["id"] && one_of && outcome
}

/// Numbers compare by value.
fn numbers_as_f64(v: &Value) -> Value {
    match v {
        Value::Number(n) => n.as_f64().map_or(Value::Null, Value::from),
        Value::Array(items) => items.iter().map(numbers_as_f64).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
            .collect(),
        other => other.clone(),
    }
}

#[tokio::test]
async fn every_specification_example() {
    let vectors: Vec<Value> =
        serde_json::from_str(include_str!("../../data/spec-examples.json")).unwrap();
    assert_eq!(vectors.len(), 15);
    let methods = Server.into_methods();
    for vector in &vectors {
        let name = vector["name"].as_str().unwrap();
        let request = vector["request"].as_str().unwrap();
        let answer = methods.handle(request).await;
        let want = &vector["response"];
        let Some(text) = answer else {
            assert!(want.is_null(), "{name}: no answer, expected {want}");
            continue;
        };
        assert!(!want.is_null(), "{name}: answered {text}, expected nothing");
        let got: Value = serde_json::from_str(&text).unwrap();
        match (&got, want) {
            (Value::Array(got), Value::Array(want)) => {
                assert_eq!(got.len(), want.len(), "{name}: {got:?}");
                // Order-free: each expected element matches one answer with the same id and outcome.
                let mut unmatched: Vec<&Value> = got.iter().collect();
                for expected in want {
                    let at = unmatched
                        .iter()
                        .position(|g| matches(g, expected))
                        .unwrap_or_else(|| panic!("{name}: nothing answers {expected}"));
                    unmatched.remove(at);
                }
            }
            _ => assert!(matches(&got, want), "{name}: got {got}, expected {want}"),
        }
    }
}
