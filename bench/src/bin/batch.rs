//! How long a batch of `sleep(100)` calls takes against one such call, over HTTP (a jrpc
//! `HttpServer` on 127.0.0.1, one keep-alive connection) and in-process (`Methods::handle`), with
//! the batch concurrency at its default and capped.
//!
//! ```text
//! cd bench && CARGO_TARGET_DIR=$PWD/target cargo run --release --bin batch
//! ```
//!
//! Options: `--size N` (elements of the batch, default 100), `--ms M` (each sleep, default 100),
//! `--reps R` (repetitions of each measure, median kept, default 5). Every call is bounded by
//! 60 s; the run takes about 15 s with the defaults.

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use jrpc_bench::BoxError;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::{Methods, RpcError};

type Result<T, E = BoxError> = std::result::Result<T, E>;

const CALL_TIMEOUT: Duration = Duration::from_secs(60);

fn methods(concurrency: Option<usize>) -> Result<Methods> {
    let mut methods = Methods::new();
    methods.register("sleep", &["ms"], |(ms,): (u64,), _ctx| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok::<_, RpcError>(ms)
    })?;
    if let Some(max) = concurrency.and_then(NonZeroUsize::new) {
        methods.batch_concurrency(max);
    }
    Ok(methods)
}

fn body(size: usize, ms: u64) -> String {
    let call = |id| format!(r#"{{"jsonrpc":"2.0","method":"sleep","params":[{ms}],"id":{id}}}"#);
    if size == 1 {
        return call(1);
    }
    let calls: Vec<String> = (1..=size).map(call).collect();
    format!("[{}]", calls.join(","))
}

/// Checks an answer to `body(size, ms)`: `size` results, each `ms`.
fn check(answer: &[u8], size: usize, ms: u64) -> Result<()> {
    let value: serde_json::Value = serde_json::from_slice(answer)?;
    let answers = match value {
        serde_json::Value::Array(answers) => answers,
        one => vec![one],
    };
    let good = answers.len() == size && answers.iter().all(|a| a["result"] == ms);
    if !good {
        return Err(format!("unexpected answer: {}", String::from_utf8_lossy(answer)).into());
    }
    Ok(())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Median time of `reps` round trips of `body` over one keep-alive HTTP connection.
async fn over_http(
    methods: Methods,
    body: &str,
    size: usize,
    ms: u64,
    reps: usize,
) -> Result<Duration> {
    let server = HttpServer::builder(methods).build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let request = Request::post("/rpc")
            .header(hyper::header::HOST, addr.to_string())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_owned())))?;
        let start = Instant::now();
        let answer = tokio::time::timeout(CALL_TIMEOUT, async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            Ok::<_, BoxError>(response.into_body().collect().await?.to_bytes())
        })
        .await
        .map_err(|_| "call timed out")??;
        times.push(start.elapsed());
        check(&answer, size, ms)?;
    }
    serving.abort();
    Ok(median(times))
}

/// Median time of `reps` calls of `Methods::handle` on `body`.
async fn in_process(
    methods: Methods,
    body: &str,
    size: usize,
    ms: u64,
    reps: usize,
) -> Result<Duration> {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        let answer = tokio::time::timeout(CALL_TIMEOUT, methods.handle(body))
            .await
            .map_err(|_| "call timed out")?
            .ok_or("no answer")?;
        times.push(start.elapsed());
        check(answer.as_bytes(), size, ms)?;
    }
    Ok(median(times))
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut size, mut ms, mut reps) = (100usize, 100u64, 5usize);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--size" => size = value.parse()?,
            "--ms" => ms = value.parse()?,
            "--reps" => reps = value.parse()?,
            other => {
                return Err(
                    format!("unknown argument {other:?} (--size N, --ms M, --reps R)").into(),
                );
            }
        }
    }
    if !(2..=1000).contains(&size) || !(1..=10_000).contains(&ms) || !(1..=50).contains(&reps) {
        return Err("--size must be in 2..=1000, --ms in 1..=10000, --reps in 1..=50".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (one, many) = (body(1, ms), body(size, ms));
        println!("one sleep({ms}) against a batch of {size}, median of {reps}");
        println!(
            "| transport | batch concurrency | one call (ms) | batch (ms) | batch / one call |"
        );
        println!("| --- | --- | ---: | ---: | ---: |");
        for (label, cap) in [("default (128)", None), ("10", Some(10))] {
            let single = over_http(methods(cap)?, &one, 1, ms, reps).await?;
            let batch = over_http(methods(cap)?, &many, size, ms, reps).await?;
            row("HTTP", label, single, batch);
            let single = in_process(methods(cap)?, &one, 1, ms, reps).await?;
            let batch = in_process(methods(cap)?, &many, size, ms, reps).await?;
            row("in-process", label, single, batch);
        }
        Ok(())
    })
}

fn row(transport: &str, cap: &str, single: Duration, batch: Duration) {
    println!(
        "| {transport} | {cap} | {:.1} | {:.1} | {:.2}x |",
        single.as_secs_f64() * 1e3,
        batch.as_secs_f64() * 1e3,
        batch.as_secs_f64() / single.as_secs_f64()
    );
}
