//! Subscriptions whose clients never read, and clients that go: the server's memory against its
//! budget, and the time from a disconnect to the drop of the subscription's producer.
//!
//! `cargo run --release --bin subscribers -- --stalled 1000 --seconds 20` starts a server (this
//! binary re-executed as `subscribers --serve --listen 127.0.0.1:0`: a jrpc `HttpServer` with a
//! `newHeads`-like subscription, a header of about 600 bytes every `--block-ms`, one encoding
//! per block shared by every subscription) and runs two phases:
//!
//! - **stalled**: `--stalled` WebSocket connections subscribe, then never read again (their
//!   receive buffers are set small, so the kernel holds little for them). The server's RSS is
//!   sampled every 100 ms for `--seconds`; the report gives it against the server's byte budget
//!   and how many producers are still live (the default policy ends a subscription that cannot
//!   keep up).
//! - **disconnects**: `--leaving` connections subscribe and read; one at a time, each goes
//!   (its socket dropped, no close frame), and the time from the drop to the server's count of
//!   live producers going down is measured, through a call on another connection that the
//!   server answers when the count is at most a number (so nothing is polled).
//!
//! The server exits when its stdin closes or after `--max-seconds`.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _, stream};
use jrpc_runtime::{Context, Items, Methods, RpcError, WhenFull};
use serde_json::value::RawValue;
use tokio::net::TcpSocket;
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::Message;

use jrpc_bench::{BoxError, ServerChild, Ws, raise_nofile};

type Result<T, E = BoxError> = std::result::Result<T, E>;

/// How long a connection, a subscribe or a drop may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

const USAGE: &str = "usage: subscribers [--stalled N] [--leaving N] [--seconds S] [--block-ms MS]
                   [--when-full lag|wait|drop-oldest] [--max-seconds M]
       subscribers --serve --listen 127.0.0.1:0 [--block-ms MS] [--when-full POLICY] [--max-seconds M]

  --stalled N      subscribers that never read (default 1000)
  --leaving N      subscribers that read, then go one at a time (default 200)
  --seconds S      how long the stalled subscribers are watched (default 20)
  --block-ms MS    a header every MS milliseconds (default 1)
  --when-full P    the subscriptions' policy (default lag, the runtime's default)
  --max-seconds M  the server exits after M seconds whatever happens (default 300)";

struct Options {
    serve: bool,
    listen: String,
    stalled: usize,
    leaving: usize,
    seconds: u64,
    block_ms: u64,
    when_full: String,
    max_seconds: u64,
}

fn options() -> Result<Options> {
    let mut options = Options {
        serve: false,
        listen: "127.0.0.1:0".into(),
        stalled: 1000,
        leaving: 200,
        seconds: 20,
        block_ms: 1,
        when_full: "lag".into(),
        max_seconds: 300,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--serve" => options.serve = true,
            "--listen" => options.listen = value()?,
            "--stalled" => options.stalled = value()?.parse()?,
            "--leaving" => options.leaving = value()?.parse()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--block-ms" => options.block_ms = value()?.parse()?,
            "--when-full" => options.when_full = value()?,
            "--max-seconds" => options.max_seconds = value()?.parse()?,
            _ => return Err(format!("unknown argument {arg}\n{USAGE}").into()),
        }
    }
    Ok(options)
}

// ---------------------------------------------------------------------------------------------
// The server.

/// Counts a subscription's producer while it lives.
struct Live(watch::Sender<usize>);

impl Live {
    fn new(count: &watch::Sender<usize>) -> Self {
        count.send_modify(|n| *n += 1);
        Self(count.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

fn when_full(name: &str) -> Result<WhenFull> {
    Ok(match name {
        "lag" => WhenFull::Lag,
        "wait" => WhenFull::Wait,
        "drop-oldest" => WhenFull::DropOldest,
        _ => return Err(format!("unknown policy {name}\n{USAGE}").into()),
    })
}

/// A header of about 600 bytes, as a node's `newHeads` sends.
fn header(number: u64) -> Result<Arc<RawValue>> {
    let hash = format!("0x{:064x}", number.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let header = serde_json::json!({
        "number": format!("0x{number:x}"),
        "hash": hash,
        "parentHash": hash,
        "stateRoot": hash,
        "transactionsRoot": hash,
        "receiptsRoot": hash,
        "miner": "0x0000000000000000000000000000000000000000",
        "gasLimit": "0x1c9c380",
        "gasUsed": "0x0",
        "timestamp": format!("0x{number:x}"),
        "baseFeePerGas": "0x7",
        "extraData": "0x",
    });
    Ok(Arc::from(serde_json::value::to_raw_value(&header)?))
}

fn methods(
    heads: broadcast::Sender<Arc<RawValue>>,
    live: watch::Sender<usize>,
    policy: WhenFull,
) -> Result<Methods> {
    let mut methods = Methods::new();
    let count = live.clone();
    let watched = live.clone();
    methods.register_subscription(
        "subscribe",
        &[],
        "heads",
        "unsubscribe",
        move |(): (), _ctx: Context| {
            let rx = heads.subscribe();
            let guard = Live::new(&count);
            async move {
                let items = stream::unfold((rx, guard), |(mut rx, guard)| async move {
                    loop {
                        match rx.recv().await {
                            Ok(item) => return Some((item, (rx, guard))),
                            Err(broadcast::error::RecvError::Lagged(_)) => {}
                            Err(broadcast::error::RecvError::Closed) => return None,
                        }
                    }
                });
                Ok::<_, RpcError>(Items::<Box<RawValue>>::shared(items).when_full(policy))
            }
        },
    )?;
    methods.register(
        "live_at_most",
        &["count"],
        move |(at_most,): (usize,), _| {
            let mut live = watched.subscribe();
            async move {
                let now = live
                    .wait_for(|n| *n <= at_most)
                    .await
                    .map_err(|_| RpcError::internal())?;
                Ok::<_, RpcError>(*now)
            }
        },
    )?;
    methods.register("live", &[], move |(): (), _| {
        let now = *live.borrow();
        async move { Ok::<_, RpcError>(now) }
    })?;
    Ok(methods)
}

fn serve(options: &Options) -> Result<()> {
    let policy = when_full(&options.when_full)?;
    let block = Duration::from_millis(options.block_ms.max(1));
    let max = Duration::from_secs(options.max_seconds);
    let listen = options.listen.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (heads, _) = broadcast::channel(16);
        let (live, _) = watch::channel(0usize);
        let server = jrpc_runtime::http::HttpServer::builder(methods(heads.clone(), live, policy)?)
            .max_connections(20_000)
            .build()?;
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { server.serve(listener).await });
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(block);
            for number in 1u64.. {
                ticks.tick().await;
                if let Ok(item) = header(number) {
                    let _ = heads.send(item);
                }
            }
        });
        println!(
            "listening {addr} budget {}",
            jrpc_runtime::limits::ServerBudget::default_limit()
        );
        std::io::stdout().flush()?;
        jrpc_bench::until_stdin_closes(max, "server").await;
        Ok::<_, BoxError>(())
    })?;
    std::process::exit(0)
}

// ---------------------------------------------------------------------------------------------
// The clients.

struct Server {
    addr: SocketAddr,
    budget: u64,
    child: ServerChild,
}

impl Server {
    async fn start(options: &Options) -> Result<Self> {
        let (block_ms, max) = (
            options.block_ms.to_string(),
            options.max_seconds.to_string(),
        );
        let args = [
            "--serve",
            "--listen",
            "127.0.0.1:0",
            "--block-ms",
            &block_ms,
            "--when-full",
            &options.when_full,
            "--max-seconds",
            &max,
        ];
        let (child, rest) = ServerChild::start(args, STEP_TIMEOUT).await?;
        let (addr, budget) = rest.split_once(" budget ").ok_or("no budget")?;
        Ok(Self {
            addr: addr.parse()?,
            budget: budget.parse()?,
            child,
        })
    }

    fn rss_kib(&self) -> Result<u64> {
        self.child.rss_kib()
    }
}

/// Opens a WebSocket whose socket takes at most `rcvbuf` bytes in (0: the kernel's default).
async fn connect(addr: SocketAddr, rcvbuf: u32) -> Result<Ws> {
    let socket = TcpSocket::new_v4()?;
    if rcvbuf > 0 {
        socket.set_recv_buffer_size(rcvbuf)?;
    }
    let stream = tokio::time::timeout(STEP_TIMEOUT, socket.connect(addr))
        .await
        .map_err(|_| "connect timed out")??;
    stream.set_nodelay(true)?;
    let (ws, _) = tokio::time::timeout(
        STEP_TIMEOUT,
        tokio_tungstenite::client_async(
            format!("ws://{addr}/ws"),
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        ),
    )
    .await
    .map_err(|_| "handshake timed out")??;
    Ok(ws)
}

/// Sends a call and reads frames until its answer, skipping notifications.
async fn call(
    ws: &mut Ws,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value> {
    let call = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    ws.send(Message::text(call.to_string())).await?;
    loop {
        let frame = tokio::time::timeout(STEP_TIMEOUT, ws.next())
            .await
            .map_err(|_| format!("{method} was not answered"))?
            .ok_or("the connection closed")??;
        let Message::Text(text) = frame else { continue };
        let value: serde_json::Value = serde_json::from_str(&text)?;
        if value.get("id") == Some(&serde_json::json!(id)) {
            return value
                .get("result")
                .cloned()
                .ok_or_else(|| format!("{method} failed: {value}").into());
        }
    }
}

async fn stalled(server: &Server, options: &Options) -> Result<()> {
    let before = server.rss_kib()?;
    let mut held = Vec::with_capacity(options.stalled);
    for _ in 0..options.stalled {
        let mut ws = connect(server.addr, 4096).await?;
        call(&mut ws, 1, "subscribe", serde_json::json!([])).await?;
        held.push(ws);
    }
    let subscribed = server.rss_kib()?;
    let mut control = connect(server.addr, 0).await?;
    let mut peak = subscribed;
    let mut samples = Vec::new();
    let start = Instant::now();
    let mut next = 1;
    while start.elapsed() < Duration::from_secs(options.seconds) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let rss = server.rss_kib()?;
        peak = peak.max(rss);
        if start.elapsed() >= Duration::from_secs(next) {
            next += 1;
            let live = call(&mut control, next, "live", serde_json::json!([])).await?;
            samples.push((start.elapsed().as_secs(), rss, live));
        }
    }
    let end = server.rss_kib()?;
    println!(
        "\nstalled: {} subscribers that never read, a header every {} ms, policy {}",
        options.stalled, options.block_ms, options.when_full
    );
    println!("| s | server RSS (MiB) | live producers |\n|---|---|---|");
    for (s, rss, live) in &samples {
        println!("| {s} | {:.1} | {live} |", *rss as f64 / 1024.0);
    }
    println!(
        "\nRSS before {:.1} MiB, subscribed {:.1} MiB, peak {:.1} MiB, at the end {:.1} MiB; \
         server budget {:.0} MiB: peak growth {:.1} % of the budget, {:.1} KiB per subscriber",
        before as f64 / 1024.0,
        subscribed as f64 / 1024.0,
        peak as f64 / 1024.0,
        end as f64 / 1024.0,
        server.budget as f64 / (1 << 20) as f64,
        (peak - before) as f64 * 1024.0 / server.budget as f64 * 100.0,
        (peak - before) as f64 / options.stalled as f64,
    );
    let dropped = Instant::now();
    drop(held);
    call(
        &mut control,
        1_000_000,
        "live_at_most",
        serde_json::json!([0]),
    )
    .await?;
    println!(
        "all {} stalled connections dropped at once: every producer gone {:.1} ms later",
        options.stalled,
        dropped.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

async fn disconnects(server: &Server, options: &Options) -> Result<()> {
    let mut control = connect(server.addr, 0).await?;
    let mut leaving = Vec::with_capacity(options.leaving);
    for _ in 0..options.leaving {
        let mut ws = connect(server.addr, 0).await?;
        call(&mut ws, 1, "subscribe", serde_json::json!([])).await?;
        let (sink, mut stream) = ws.split();
        let reader = tokio::spawn(async move { while stream.next().await.is_some() {} });
        leaving.push((sink, reader));
    }
    let mut live: usize =
        serde_json::from_value(call(&mut control, 1, "live", serde_json::json!([])).await?)?;
    let mut times = Vec::with_capacity(options.leaving);
    for (n, (sink, reader)) in leaving.into_iter().enumerate() {
        let id = 2 + n as u64;
        let ask = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "live_at_most", "params": [live - 1]});
        control.send(Message::text(ask.to_string())).await?;
        let gone = Instant::now();
        reader.abort();
        drop(sink);
        loop {
            let frame = tokio::time::timeout(STEP_TIMEOUT, control.next())
                .await
                .map_err(|_| "a producer outlived its connection")?
                .ok_or("the control connection closed")??;
            let Message::Text(text) = frame else { continue };
            let value: serde_json::Value = serde_json::from_str(&text)?;
            if value.get("id") == Some(&serde_json::json!(id)) {
                live = serde_json::from_value(value.get("result").cloned().ok_or("no result")?)?;
                break;
            }
        }
        times.push(gone.elapsed());
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    println!(
        "\ndisconnects: {} subscribers that read, dropped one at a time (no close frame): \
         disconnect to producer dropped p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs \
         (one answer on another connection included)",
        times.len(),
        at(0.5),
        at(0.99),
        at(1.0),
    );
    Ok(())
}

fn main() -> Result<()> {
    let options = options()?;
    if options.serve {
        return serve(&options);
    }
    raise_nofile(65_536);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = Server::start(&options).await?;
        if options.leaving > 0 {
            disconnects(&server, &options).await?;
        }
        if options.stalled > 0 {
            stalled(&server, &options).await?;
        }
        Ok(())
    })
}
