//! Topics across replicas on Redis: announcements per second, and the latency from `announce`
//! to delivery, with two replicas on one Redis and 1 000 subscribed WebSocket connections, over
//! loopback.
//!
//! `cargo run --release --bin topics -- --seconds 5` starts a `redis-server` on a free port
//! (`--save '' --appendonly no`), two replicas (this binary re-executed as `topics --serve
//! --redis URL --listen 127.0.0.1:0`, each a jrpc `HttpServer` whose topics are
//! `Topics::redis`), opens `--connections` WebSockets split evenly between them, each watching
//! one topic, and one more to replica A that announces. Two phases, `--seconds` each:
//!
//! - **latency**: one announcement at a time (the next once every connection has the last);
//! - **throughput**: up to `--window` announcements outstanding (not yet delivered everywhere).
//!
//! Every delivery is timed from the moment the announce was written, in this process, so no two
//! clocks are compared; replica A's subscribers get it locally, replica B's through Redis, and
//! their latencies are reported apart. Every connection checks that it gets each announcement
//! once, in order. All children are killed on exit; each also exits by itself after
//! `--max-seconds`.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use jrpc_runtime::server::Topics;
use jrpc_runtime::{Context, Methods, RpcError};
use tokio::process::{Child, Command};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message;

use jrpc_bench::{BoxError, ServerChild, Ws, cpu_seconds, raise_nofile};

type Result<T, E = BoxError> = std::result::Result<T, E>;

/// How long a connection, a watch or the last deliveries of a phase may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
const TOPIC: &str = "bench";

const USAGE: &str = "usage: topics [--seconds S] [--connections N] [--window W] [--max-seconds M]
       topics --serve --redis URL --listen 127.0.0.1:0 [--max-seconds M]

  --seconds S      measured seconds of each phase (default 5)
  --connections N  subscribed WebSockets, half on each replica (default 1000)
  --window W       announcements outstanding in the throughput phase (default 32)
  --max-seconds M  every child exits after M seconds whatever happens (default 300)";

// ---------------------------------------------------------------------------------------------
// A replica.

fn methods(topics: Topics) -> Methods {
    let mut methods = Methods::new();
    methods
        .register(
            "watch",
            &["topic"],
            |(topic,): (String,), ctx: Context| async move {
                let added = ctx.subscribe(&topic)?;
                if let Some(topics) = ctx.topics() {
                    topics.ready(&topic).await;
                }
                Ok::<_, RpcError>(added)
            },
        )
        .expect("a fresh table");
    methods
        .register(
            "announce",
            &["topic", "text"],
            move |(topic, text): (String, String), _| {
                let topics = topics.clone();
                async move {
                    topics
                        .publish(&topic, "announcement", [&topic, &text])
                        .map_err(|err| RpcError::new(1, err.to_string()))
                }
            },
        )
        .expect("a fresh table");
    methods
}

/// The child: a replica on `listen`, until its stdin closes or `max` passes.
fn serve(redis: &str, listen: &str, max: Duration) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let topics = Topics::redis(redis)
            .channel_prefix("bench:")
            .connect()
            .await?;
        let server = jrpc_runtime::http::HttpServer::builder(methods(topics.clone()))
            .topics(topics)
            .max_connections(20_000)
            .build()?;
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { server.serve(listener).await });
        println!("listening {addr}");
        std::io::stdout().flush()?;
        jrpc_bench::until_stdin_closes(max, "replica").await;
        Ok::<_, BoxError>(())
    })?;
    std::process::exit(0)
}

// ---------------------------------------------------------------------------------------------
// Children: Redis and the replicas.

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn redis_answers_ping(port: u16) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut answer = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && &answer == b"+PONG\r\n"
}

async fn start_redis() -> Result<(Child, String)> {
    let port = free_port()?;
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| {
            format!("cannot start redis-server (apt-get install redis-server): {err}")
        })?;
    let deadline = Instant::now() + STEP_TIMEOUT;
    while !redis_answers_ping(port) {
        if Instant::now() > deadline {
            return Err("redis-server did not answer PING".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((child, format!("redis://127.0.0.1:{port}")))
}

struct Replica {
    addr: SocketAddr,
    child: ServerChild,
}

async fn start_replica(redis: &str, max: Duration) -> Result<Replica> {
    let max = max.as_secs().to_string();
    let args = [
        "--serve",
        "--redis",
        redis,
        "--listen",
        "127.0.0.1:0",
        "--max-seconds",
        &max,
    ];
    let (child, addr) = ServerChild::start(args, STEP_TIMEOUT).await?;
    Ok(Replica {
        addr: addr.parse()?,
        child,
    })
}

// ---------------------------------------------------------------------------------------------
// The load generator.

async fn ws_connect(addr: SocketAddr) -> Result<Ws> {
    jrpc_bench::ws_connect(&format!("ws://{addr}/ws"), STEP_TIMEOUT).await
}

/// What the subscribers share with the publisher.
struct Tally {
    base: Instant,
    /// Deliveries so far, all connections together.
    delivered: AtomicU64,
    /// Announcements received twice, or out of order.
    misordered: AtomicU64,
    /// How many connections are subscribed.
    connections: u64,
    /// Woken on every `connections`-th delivery.
    progress: Notify,
    /// Whether deliveries are timed (while a phase runs).
    counting: std::sync::atomic::AtomicBool,
}

/// The latencies (ns) one connection timed; each connection has its own, so no lock is shared.
type Samples = Arc<std::sync::Mutex<Vec<u64>>>;

/// One subscribed connection: reads announcements `"SEQ NANOS"` and times them.
async fn subscriber(mut ws: Ws, samples: Samples, tally: Arc<Tally>) -> Result<()> {
    let mut last = 0u64;
    while let Some(message) = ws.next().await {
        let Message::Text(text) = message? else {
            continue;
        };
        let now = tally.base.elapsed().as_nanos() as u64;
        // `{..."params":["bench","SEQ NANOS"]}`: the stamp is read in place, so that the load
        // generator's own parsing weighs little against the servers' work.
        let stamp = text
            .rsplit_once(r#"",""#)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(stamp, _)| stamp)
            .ok_or_else(|| format!("not an announcement: {}", text.as_str()))?;
        let (seq, sent) = stamp.split_once(' ').ok_or("bad stamp")?;
        let (seq, sent): (u64, u64) = (seq.parse()?, sent.parse()?);
        if seq <= last {
            tally.misordered.fetch_add(1, Ordering::Relaxed);
        }
        last = seq;
        if tally.counting.load(Ordering::Relaxed)
            && let Ok(mut samples) = samples.lock()
        {
            samples.push(now.saturating_sub(sent));
        }
        // The publisher counts an announcement done per `connections` deliveries: wake it then.
        if (tally.delivered.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(tally.connections) {
            tally.progress.notify_one();
        }
    }
    Ok(())
}

async fn watch(ws: &mut Ws) -> Result<()> {
    ws.send(Message::text(format!(
        r#"{{"jsonrpc":"2.0","method":"watch","params":["{TOPIC}"],"id":1}}"#
    )))
    .await?;
    let answer = tokio::time::timeout(STEP_TIMEOUT, ws.next())
        .await
        .map_err(|_| "watch timed out")?
        .ok_or("closed")??;
    let value: serde_json::Value = serde_json::from_str(answer.to_text()?)?;
    if value["result"] != serde_json::Value::Bool(true) {
        return Err(format!("watch answered {value}").into());
    }
    Ok(())
}

struct Phase {
    announcements: u64,
    seconds: f64,
    /// CPU seconds used meanwhile by replica A, replica B, Redis and the load generator.
    cpu: [f64; 4],
    /// Sorted latencies (ns) by replica.
    latencies: [Vec<u64>; 2],
}

fn quantile_us(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[i] as f64 / 1000.0
}

/// Announces with up to `window` announcements not yet delivered everywhere, for `seconds`;
/// then waits for the last deliveries.
async fn phase(
    publisher: &mut Ws,
    tally: &Tally,
    samples: &[(usize, Samples)],
    pids: &[String; 4],
    window: u64,
    seconds: f64,
    seq: &mut u64,
) -> Result<Phase> {
    let connections = samples.len() as u64;
    for (_, samples) in samples {
        samples.lock().map_err(|_| "poisoned")?.clear();
    }
    let first = *seq;
    let cpu_before = cpu_of(pids)?;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    tally.counting.store(true, Ordering::Relaxed);
    while Instant::now() < end {
        let done = tally.delivered.load(Ordering::Relaxed) / connections;
        if *seq - done < window {
            *seq += 1;
            let sent = tally.base.elapsed().as_nanos();
            publisher
                .send(Message::text(format!(
                    r#"{{"jsonrpc":"2.0","method":"announce","params":["{TOPIC}","{} {sent}"]}}"#,
                    *seq
                )))
                .await?;
            continue;
        }
        let progress = tally.progress.notified();
        let _ = tokio::time::timeout(Duration::from_millis(5), progress).await;
    }
    let sent = *seq - first;
    let expected = *seq * connections;
    let deadline = Instant::now() + STEP_TIMEOUT;
    while tally.delivered.load(Ordering::Relaxed) < expected {
        if Instant::now() > deadline {
            return Err(format!(
                "lost deliveries: {} of {expected}",
                expected - tally.delivered.load(Ordering::Relaxed)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    tally.counting.store(false, Ordering::Relaxed);
    let mut cpu = cpu_of(pids)?;
    for (after, before) in cpu.iter_mut().zip(cpu_before) {
        *after -= before;
    }
    let mut latencies = [Vec::new(), Vec::new()];
    for (replica, samples) in samples {
        let mut samples = samples.lock().map_err(|_| "poisoned")?;
        latencies[*replica].append(&mut samples);
    }
    for latencies in &mut latencies {
        latencies.sort_unstable();
    }
    Ok(Phase {
        announcements: sent,
        seconds,
        cpu,
        latencies,
    })
}

fn cpu_of(pids: &[String; 4]) -> Result<[f64; 4]> {
    let mut cpu = [0.0; 4];
    for (cpu, pid) in cpu.iter_mut().zip(pids) {
        *cpu = cpu_seconds(pid)?;
    }
    Ok(cpu)
}

struct Options {
    seconds: f64,
    connections: usize,
    window: u64,
    max: Duration,
}

async fn run(options: Options) -> Result<()> {
    let (redis, url) = start_redis().await?;
    let replicas = [
        start_replica(&url, options.max).await?,
        start_replica(&url, options.max).await?,
    ];
    let pid = |child: &Child| {
        child
            .id()
            .map(|pid| pid.to_string())
            .ok_or("a child is gone")
    };
    let pids = [
        replicas[0].child.pid()?,
        replicas[1].child.pid()?,
        pid(&redis)?,
        "self".to_owned(),
    ];
    let tally = Arc::new(Tally {
        base: Instant::now(),
        delivered: AtomicU64::new(0),
        misordered: AtomicU64::new(0),
        connections: options.connections as u64,
        progress: Notify::new(),
        counting: false.into(),
    });
    let mut readers = Vec::with_capacity(options.connections);
    let mut samples = Vec::with_capacity(options.connections);
    for n in 0..options.connections {
        let replica = n % 2;
        let mut ws = ws_connect(replicas[replica].addr).await?;
        watch(&mut ws).await?;
        let mine = Samples::default();
        samples.push((replica, Arc::clone(&mine)));
        readers.push(tokio::spawn(subscriber(ws, mine, Arc::clone(&tally))));
    }
    // Announces go as notifications: nothing comes back to the publisher.
    let mut publisher = ws_connect(replicas[0].addr).await?;
    println!(
        "topics on Redis over 127.0.0.1: 2 replicas, {} subscribed WebSockets ({} on each), announces on replica A; {} CPU(s)",
        options.connections,
        options.connections / 2,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let connections = options.connections as u64;
    let mut seq = 0;
    // A short warm-up, not counted.
    phase(&mut publisher, &tally, &samples, &pids, 4, 0.5, &mut seq).await?;
    let mut rows = Vec::new();
    for (label, window) in [
        ("latency (1 outstanding)", 1),
        ("throughput", options.window),
    ] {
        let result = phase(
            &mut publisher,
            &tally,
            &samples,
            &pids,
            window,
            options.seconds,
            &mut seq,
        )
        .await?;
        let rate = result.announcements as f64 / result.seconds;
        println!(
            "  {label}: {} announcements in {:.1} s, {rate:.0}/s ({:.0} deliveries/s)",
            result.announcements,
            result.seconds,
            rate * connections as f64,
        );
        rows.push((label, window, rate, result));
    }
    let misordered = tally.misordered.load(Ordering::Relaxed);
    drop(publisher);
    for reader in &readers {
        reader.abort();
    }
    println!(
        "\n| phase | announcements outstanding | announcements/s | deliveries/s | A (local) p50 / p99 (µs) | B (through Redis) p50 / p99 (µs) | CPU µs per delivery: replica A / replica B / Redis / load generator |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (label, window, rate, result) in &rows {
        let [a, b] = &result.latencies;
        let deliveries = (result.announcements * connections) as f64;
        let [cpu_a, cpu_b, cpu_redis, cpu_load] = result.cpu.map(|cpu| cpu * 1e6 / deliveries);
        println!(
            "| {label} | {window} | {rate:.0} | {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {cpu_a:.1} / {cpu_b:.1} / {cpu_redis:.2} / {cpu_load:.1} |",
            rate * connections as f64,
            quantile_us(a, 0.50),
            quantile_us(a, 0.99),
            quantile_us(b, 0.50),
            quantile_us(b, 0.99),
        );
    }
    println!("\nduplicates or out-of-order deliveries: {misordered}; lost: 0");
    if misordered > 0 {
        return Err("a connection got an announcement twice or out of order".into());
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut serving = false;
    let mut redis = String::new();
    let mut listen = "127.0.0.1:0".to_owned();
    let mut options = Options {
        seconds: 5.0,
        connections: 1000,
        window: 32,
        max: Duration::from_secs(300),
    };
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--serve" => serving = true,
            "--redis" => redis = value()?,
            "--listen" => listen = value()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--connections" => options.connections = value()?.parse()?,
            "--window" => options.window = value()?.parse()?,
            "--max-seconds" => options.max = Duration::from_secs(value()?.parse()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    if !(options.seconds > 0.0 && options.seconds <= 60.0) {
        return Err("--seconds must be in (0, 60]".into());
    }
    if !(2..=10_000).contains(&options.connections) || !(1..=1024).contains(&options.window) {
        return Err("--connections must be in 2..=10000 and --window in 1..=1024".into());
    }
    if serving {
        return serve(&redis, &listen, options.max);
    }
    raise_nofile(options.connections as u64 * 2 + 1024);
    // One thread for the load generator: its 1 000 readers waking one another across threads
    // would cost more than their reading, and the cores are the servers' to use.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}
