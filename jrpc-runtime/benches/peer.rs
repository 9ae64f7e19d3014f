//! Peer round trips over `tokio::io::duplex`, beside `Methods::handle` on the same call.
//!
//! ```text
//! cargo bench -p jrpc-runtime --bench peer -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Three benchmarks, reported in calls per second:
//!
//! - `Methods::handle`: the dispatcher alone, one request body in and one answer out; what every
//!   transport pays at least.
//! - `round trip, one at a time`: `Caller::call` on a `Peer`, to a second `Peer` over an in-memory stream and
//!   back, each call waiting for the one before it (latency-bound).
//! - `round trip, 64 in flight`: 64 calls sent at once and awaited together (throughput-bound).
//!
//! At the end the mean time per call of each round trip is printed as a multiple of
//! `Methods::handle`'s: the transport's own cost (framing, the loops, the task per call, the
//! wake-ups). The means are taken over every iteration criterion ran, warm-up included.
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jrpc_runtime::{Caller as _, Methods, Peer, PeerConfig, RpcError};

const BODY: &str = r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#;
const IN_FLIGHT: u64 = 64;

fn methods() -> Methods {
    let mut methods = Methods::new();
    methods
        .register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move {
            Ok::<_, RpcError>(a + b)
        })
        .expect("one registration");
    methods
}

/// Calls and time measured for one benchmark, for the ratios printed at the end.
#[derive(Clone, Default)]
struct Tally(Arc<Mutex<(u64, Duration)>>);

impl Tally {
    fn add(&self, calls: u64, took: Duration) {
        let mut tally = self.0.lock().expect("no panics while held");
        tally.0 += calls;
        tally.1 += took;
    }

    /// Mean nanoseconds per call, if anything ran.
    fn mean_nanos(&self) -> Option<f64> {
        let (calls, took) = *self.0.lock().expect("no panics while held");
        (calls > 0).then(|| took.as_nanos() as f64 / calls as f64)
    }
}

fn peer(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let client = runtime.block_on(async {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let (client, client_loop) = Peer::connect(a, Methods::new(), PeerConfig::default());
        let (_server, server_loop) = Peer::connect(b, methods(), PeerConfig::default());
        tokio::spawn(client_loop);
        tokio::spawn(server_loop);
        client
    });
    let table = methods();
    let (direct, one, many) = (Tally::default(), Tally::default(), Tally::default());

    let mut group = c.benchmark_group("peer");
    group.throughput(Throughput::Elements(1));
    group.bench_function("Methods::handle", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let (table, tally) = (table.clone(), direct.clone());
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(table.handle(black_box(BODY)).await);
                }
                let took = start.elapsed();
                tally.add(iters, took);
                took
            }
        });
    });
    group.bench_function("round trip, one at a time", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let (client, tally) = (client.clone(), one.clone());
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let sum: i64 = client.call("add", [1, 2]).await.expect("an answer");
                    black_box(sum);
                }
                let took = start.elapsed();
                tally.add(iters, took);
                took
            }
        });
    });
    group.throughput(Throughput::Elements(IN_FLIGHT));
    group.bench_function("round trip, 64 in flight", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let (client, tally) = (client.clone(), many.clone());
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let calls = (0..IN_FLIGHT).map(|_| client.call::<i64>("add", [1, 2]));
                    for sum in futures_util::future::join_all(calls).await {
                        black_box(sum.expect("an answer"));
                    }
                }
                let took = start.elapsed();
                tally.add(iters * IN_FLIGHT, took);
                took
            }
        });
    });
    group.finish();

    if let Some(base) = direct.mean_nanos() {
        println!("\nmean time per call over this run, against Methods::handle ({base:.0} ns):");
        for (name, tally) in [("one at a time", &one), ("64 in flight", &many)] {
            if let Some(mean) = tally.mean_nanos() {
                println!(
                    "  peer round trip, {name}: {mean:.0} ns, {:.0} calls/s, {:.1}x Methods::handle",
                    1e9 / mean,
                    mean / base
                );
            }
        }
    }
}

criterion_group!(benches, peer);
criterion_main!(benches);
