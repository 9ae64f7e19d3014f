//! The dispatch bench's cases: a service with one method, the request bodies, and for each the
//! bare typed serde_json work that answers it (the floor). Shared, by `#[path]`, by the dispatch
//! bench and the instruction gate (`bench/gate/`), so that both count the same calls.

use std::hint::black_box;

use jrpc_runtime::layers::Authorize;
use jrpc_runtime::{Methods, rpc_service};
use serde::{Deserialize, Serialize};

/// The service the cases call.
#[rpc_service]
pub trait Calc {
    /// Adds two integers.
    async fn add(&self, a: i64, b: i64) -> i64;
}

/// Its implementation.
pub struct Impl;

impl Calc for Impl {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

const POSITIONAL: &str = r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#;
const NAMED: &str = r#"{"jsonrpc":"2.0","method":"add","params":{"a":2,"b":3},"id":1}"#;
const UNKNOWN: &str = r#"{"jsonrpc":"2.0","method":"nope","params":[2,3],"id":1}"#;

fn batch() -> String {
    let calls: Vec<String> = (1..=10)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","method":"add","params":[2,{id}],"id":{id}}}"#))
        .collect();
    format!("[{}]", calls.join(","))
}

#[derive(Deserialize)]
struct Request<'a, P> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    method: &'a str,
    params: P,
    id: u64,
}

#[derive(Deserialize)]
struct Named {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct Response<'a> {
    jsonrpc: &'a str,
    result: i64,
    id: u64,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i32,
    message: &'a str,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'a str,
    error: ErrorObject<'a>,
    id: u64,
}

fn baseline_positional(body: &str) -> String {
    let req: Request<'_, (i64, i64)> = serde_json::from_str(body).unwrap();
    assert_eq!((req.jsonrpc, req.method), ("2.0", "add"));
    serde_json::to_string(&Response {
        jsonrpc: "2.0",
        result: req.params.0 + req.params.1,
        id: req.id,
    })
    .unwrap()
}

fn baseline_named(body: &str) -> String {
    let req: Request<'_, Named> = serde_json::from_str(body).unwrap();
    assert_eq!((req.jsonrpc, req.method), ("2.0", "add"));
    serde_json::to_string(&Response {
        jsonrpc: "2.0",
        result: req.params.a + req.params.b,
        id: req.id,
    })
    .unwrap()
}

fn baseline_batch(body: &str) -> String {
    let reqs: Vec<Request<'_, (i64, i64)>> = serde_json::from_str(body).unwrap();
    let answers: Vec<Response<'_>> = reqs
        .iter()
        .map(|r| Response {
            jsonrpc: "2.0",
            result: r.params.0 + r.params.1,
            id: r.id,
        })
        .collect();
    serde_json::to_string(&answers).unwrap()
}

fn baseline_unknown(body: &str) -> String {
    let req: Request<'_, serde::de::IgnoredAny> = serde_json::from_str(body).unwrap();
    assert_eq!(req.method, "nope");
    let error = ErrorObject {
        code: -32601,
        message: "Method not found",
    };
    serde_json::to_string(&ErrorResponse {
        jsonrpc: "2.0",
        error,
        id: req.id,
    })
    .unwrap()
}

/// The table a case runs on: with an observer for `observed`, one call layer that does nothing
/// for `layered`, and an `Authorize` that reads an extension for `authorized`.
pub fn table(case: &str) -> Methods {
    let mut methods: Methods = Impl.into_methods();
    match case {
        "observed" => {
            methods.observe(|observation| {
                black_box(observation.elapsed);
            });
        }
        "layered" => {
            methods.layer(tower_layer::Identity::new());
        }
        "authorized" => {
            methods.layer(Authorize::new(|method, ctx| {
                ctx.extension::<Reader>().is_none() || method == "add"
            }));
        }
        _ => {}
    }
    methods
}

/// An identity `authorized`'s layer looks for (none is there: every call is let through).
#[derive(Clone)]
struct Reader;

/// A baseline: the bare serde_json work for a body.
pub type Baseline = fn(&str) -> String;

/// The cases: name, body, baseline. `observed` is `positional` on a table with an observer
/// hook set (tracing compiled in, no subscriber): what the hook costs; `layered` and
/// `authorized` are `positional` through one call layer, a no-op (tower's `Identity`) and an
/// `Authorize`: what a layer costs.
pub fn cases() -> Vec<(&'static str, String, Baseline)> {
    vec![
        (
            "positional",
            POSITIONAL.to_owned(),
            baseline_positional as Baseline,
        ),
        ("observed", POSITIONAL.to_owned(), baseline_positional),
        ("layered", POSITIONAL.to_owned(), baseline_positional),
        ("authorized", POSITIONAL.to_owned(), baseline_positional),
        ("named", NAMED.to_owned(), baseline_named),
        ("batch_of_10", batch(), baseline_batch),
        ("unknown_method", UNKNOWN.to_owned(), baseline_unknown),
    ]
}
