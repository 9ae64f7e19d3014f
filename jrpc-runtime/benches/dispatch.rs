//! `Methods::handle` against the bare serde_json work on the same body: parse into a typed
//! request struct, serialize the typed response. Prints ns/call and the ratio at the end.
//!
//! ```text
//! cargo bench -p jrpc-runtime --bench dispatch
//! ```
//!
//! Allocations per call of the same cases are counted by `bench/`'s `--bin allocs` (a counting
//! global allocator is an `unsafe impl`, which this workspace forbids).
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use jrpc_runtime::{Methods, rpc_service};
use serde::{Deserialize, Serialize};

#[rpc_service]
trait Calc {
    async fn add(&self, a: i64, b: i64) -> i64;
}

struct Impl;

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

/// The table a case runs on: with an observer for `observed`.
fn table(case: &str) -> Methods {
    let mut methods: Methods = Impl.into_methods();
    if case == "observed" {
        methods.observe(|observation| {
            black_box(observation.elapsed);
        });
    }
    methods
}

/// A baseline: the bare serde_json work for a body.
type Baseline = fn(&str) -> String;

/// The cases: name, body, baseline. `observed` is `positional` on a table with an observer
/// hook set (tracing compiled in, no subscriber): what the hook costs.
fn cases() -> Vec<(&'static str, String, Baseline)> {
    vec![
        (
            "positional",
            POSITIONAL.to_owned(),
            baseline_positional as Baseline,
        ),
        ("observed", POSITIONAL.to_owned(), baseline_positional),
        ("named", NAMED.to_owned(), baseline_named),
        ("batch_of_10", batch(), baseline_batch),
        ("unknown_method", UNKNOWN.to_owned(), baseline_unknown),
    ]
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (name, body, baseline) in cases() {
        let methods = table(name);
        // Both sides must give the same answer, or the comparison means nothing.
        let ours: serde_json::Value =
            serde_json::from_str(&rt.block_on(methods.handle(&body)).unwrap()).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(&baseline(&body)).unwrap();
        assert_eq!(ours, theirs, "{name}");

        let mut group = c.benchmark_group(name);
        group.bench_function("jrpc", |b| {
            b.to_async(&rt).iter(|| methods.handle(black_box(&body)))
        });
        group.bench_function("serde_json", |b| b.iter(|| baseline(black_box(&body))));
        group.finish();
    }
}

/// Reads criterion's point estimates back and prints ns/call and the ratio to the baseline.
fn report() {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
            Into::into,
        )
        .join("criterion");
    let mean = |group: &str, function: &str| -> Option<f64> {
        let text =
            std::fs::read_to_string(dir.join(group).join(function).join("new/estimates.json"))
                .ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v["mean"]["point_estimate"].as_f64()
    };
    println!(
        "\n{:<16} {:>12} {:>12} {:>8}",
        "case", "jrpc ns", "serde_json ns", "ratio"
    );
    for (name, _, _) in cases() {
        if let (Some(ours), Some(base)) = (mean(name, "jrpc"), mean(name, "serde_json")) {
            println!("{name:<16} {ours:>12.1} {base:>12.1} {:>7.2}x", ours / base);
        }
    }
}

criterion_group!(benches, dispatch);

/// `--count N CASE SIDE` runs one side of one case N times and nothing else, for instruction
/// counts that do not depend on the machine's load:
///
/// ```text
/// valgrind --tool=callgrind target/release/deps/dispatch-* --count 100000 positional jrpc
/// ```
fn count(args: &[String]) -> bool {
    let [flag, n, case, side] = args else {
        return false;
    };
    if flag != "--count" {
        return false;
    }
    let n: usize = n.parse().unwrap_or(0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (name, body, baseline) in cases() {
        if name != case {
            continue;
        }
        let methods = table(name);
        if side == "jrpc" {
            rt.block_on(async {
                for _ in 0..n {
                    black_box(methods.handle(black_box(&body)).await);
                }
            });
        } else {
            for _ in 0..n {
                black_box(baseline(black_box(&body)));
            }
        }
    }
    true
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if count(&args) {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
