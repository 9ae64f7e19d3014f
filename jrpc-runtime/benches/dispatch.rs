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

mod cases;

use cases::{cases, table};

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
