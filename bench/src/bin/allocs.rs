//! Heap allocations per in-process call: `Methods::handle` on the dispatch bench's four bodies
//! (positional `add`, named `add`, a batch of 10, an unknown method), beside the bare serde_json
//! work on the same bodies, counted by a global allocator that counts while it is told to.
//!
//! It lives here rather than in `jrpc-runtime/benches/` because the workspace forbids `unsafe`,
//! and a global allocator is an `unsafe impl`.
//!
//! ```text
//! cd bench && CARGO_TARGET_DIR=$PWD/target cargo run --release --bin allocs
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use jrpc_runtime::{Methods, RpcError};
use serde::{Deserialize, Serialize};

/// The system allocator, counting allocations (reallocations included) while `COUNTING` is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn counted() {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: the caller keeps `GlobalAlloc::alloc`'s contract, which is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const POSITIONAL: &str = r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#;
const NAMED: &str = r#"{"jsonrpc":"2.0","method":"add","params":{"a":2,"b":3},"id":1}"#;
const UNKNOWN: &str = r#"{"jsonrpc":"2.0","method":"nope","params":[2,3],"id":1}"#;

fn batch() -> String {
    let calls: Vec<String> = (1..=10)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","method":"add","params":[2,{id}],"id":{id}}}"#))
        .collect();
    format!("[{}]", calls.join(","))
}

mod service {
    use jrpc_runtime::rpc_service;

    #[rpc_service]
    pub trait Calc {
        async fn add(&self, a: i64, b: i64) -> i64;
    }

    pub struct Impl;

    impl Calc for Impl {
        async fn add(&self, a: i64, b: i64) -> i64 {
            a + b
        }
    }
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
struct Response {
    jsonrpc: &'static str,
    result: i64,
    id: u64,
}

#[derive(Serialize)]
struct ErrorResponse {
    jsonrpc: &'static str,
    error: RpcError,
    id: u64,
}

fn baseline(name: &str, body: &str) -> Option<String> {
    let answer = |result, id| Response {
        jsonrpc: "2.0",
        result,
        id,
    };
    let text = match name {
        "positional" => {
            let req: Request<'_, (i64, i64)> = serde_json::from_str(body).ok()?;
            black_box((req.jsonrpc, req.method));
            serde_json::to_string(&answer(req.params.0 + req.params.1, req.id))
        }
        "named" => {
            let req: Request<'_, Named> = serde_json::from_str(body).ok()?;
            black_box((req.jsonrpc, req.method));
            serde_json::to_string(&answer(req.params.a + req.params.b, req.id))
        }
        "batch_of_10" => {
            let reqs: Vec<Request<'_, (i64, i64)>> = serde_json::from_str(body).ok()?;
            let answers: Vec<Response> = reqs
                .iter()
                .map(|r| answer(r.params.0 + r.params.1, r.id))
                .collect();
            serde_json::to_string(&answers)
        }
        _ => {
            let req: Request<'_, serde::de::IgnoredAny> = serde_json::from_str(body).ok()?;
            serde_json::to_string(&ErrorResponse {
                jsonrpc: "2.0",
                error: RpcError::method_not_found(),
                id: req.id,
            })
        }
    };
    text.ok()
}

/// Allocations per call of `f` over `n` calls, after a warm-up.
fn per_call(n: u64, mut f: impl FnMut()) -> f64 {
    for _ in 0..64 {
        f();
    }
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    for _ in 0..n {
        f();
    }
    COUNTING.store(false, Ordering::Relaxed);
    ALLOCATIONS.load(Ordering::Relaxed) as f64 / n as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    use service::Calc as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let methods: Methods = service::Impl.into_methods();
    let batch = batch();
    let cases = [
        ("positional", POSITIONAL),
        ("named", NAMED),
        ("batch_of_10", batch.as_str()),
        ("unknown_method", UNKNOWN),
    ];
    // Each call runs inside one `block_on`, so the runtime's own bookkeeping is not counted.
    let n = 10_000;
    println!(
        "{:<16} {:>22} {:>22}",
        "case", "jrpc allocations/call", "serde_json allocations"
    );
    for (name, body) in cases {
        let ours = runtime.block_on(async {
            let answer = methods.handle(body).await;
            let theirs = baseline(name, body);
            let same = |a: &Option<String>| {
                a.as_deref()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            };
            if same(&answer) != same(&theirs) {
                return Err(format!("{name}: {answer:?} differs from {theirs:?}"));
            }
            let mut total = 0.0;
            for _ in 0..2 {
                // Measured twice, the second figure kept: the first may grow the runtime's
                // structures.
                let mut count = 0u64;
                ALLOCATIONS.store(0, Ordering::Relaxed);
                COUNTING.store(true, Ordering::Relaxed);
                for _ in 0..n {
                    black_box(methods.handle(black_box(body)).await);
                    count += 1;
                }
                COUNTING.store(false, Ordering::Relaxed);
                total = ALLOCATIONS.load(Ordering::Relaxed) as f64 / count as f64;
            }
            Ok(total)
        })?;
        let theirs = per_call(n, || {
            black_box(baseline(name, black_box(body)));
        });
        println!("{name:<16} {ours:>22.2} {theirs:>22.2}");
    }
    Ok(())
}
