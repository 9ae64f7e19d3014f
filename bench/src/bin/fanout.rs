//! Fan-out of subscriptions: one `newHeads` header published to every subscriber, by jrpc, by
//! jsonrpsee 0.26 (`#[subscription]`, a `SubscriptionMessage` per sink, as reth writes it) and by
//! the floor (tokio-tungstenite writing the notification texts, no framework), side by side in one
//! run, over loopback WebSockets.
//!
//! `cargo run --release --bin fanout -- --seconds 4 --rounds 5` measures, for each scenario (1 000
//! connections with one subscription each, 100 connections with 10 each) and each server, in
//! rounds that take the servers in turn (a different one first each round):
//!
//! - the server's RSS growth per idle subscription, 1 s after all are open (connections
//!   included, and the subscriptions alone);
//! - at each publish rate (`--rates`, default 10 and 100 a second): the server's CPU time per
//!   delivered notification, and the delivery latency (from the header's making in the server to
//!   its read here, on CLOCK_MONOTONIC, which both processes share), p50 and p99; notifications
//!   lost (a gap in a subscription's block numbers) are counted.
//!
//! Each server is this binary re-executed as `fanout --serve jrpc|floor|jsonrpsee --listen
//! 127.0.0.1:0`, which prints `listening ADDR`, publishes a header `R` times a second after a
//! line `rate R` on its standard input (0 stops), and exits when its input closes or after
//! `--max-seconds`. The load generator runs on one thread, the servers on tokio's default
//! multi-threaded runtime.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::Message;

use jrpc_bench::fanout::header::{Header, NEW_HEADS};
use jrpc_bench::fanout::{floor, jrpc};
use jrpc_bench::{BoxError, ServerChild, Ws, cpu_ns, monotonic_ns, raise_nofile};

type Result<T, E = BoxError> = std::result::Result<T, E>;

/// How long a connection, a subscription or a child's start may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long each rate runs before its window opens.
const WARMUP: Duration = Duration::from_secs(1);

const USAGE: &str = "usage: fanout [--seconds S] [--rounds R] [--rates LIST] [--only SCENARIOS] [--max-seconds M]
       fanout --serve jrpc|floor|jsonrpsee --listen 127.0.0.1:0 [--max-seconds M]

  --seconds S      measured seconds of each rate (default 4)
  --rounds R       rounds, each taking every server in turn (default 5)
  --rates LIST     publishes a second, comma-separated (default 10,100)
  --only LIST      scenarios, comma-separated: CONNECTIONSxSUBSCRIPTIONS (default 1000x1,100x10)
  --servers LIST   servers, comma-separated: jrpc, floor, jsonrpsee (default all; the tables need jrpc)
  --max-seconds M  a server child exits after M seconds whatever happens (default 900)";

// ---------------------------------------------------------------------------------------------
// The servers.

mod jsonrpsee_side {
    use std::sync::Arc;

    use jsonrpsee::core::SubscriptionResult;
    use jsonrpsee::core::traits::IdProvider;
    use jsonrpsee::proc_macros::rpc;
    use jsonrpsee::types::{ErrorObjectOwned, SubscriptionId};
    use jsonrpsee::{PendingSubscriptionSink, SubscriptionMessage};
    use tokio::sync::broadcast;

    use jrpc_bench::fanout::header::{Header, NEW_HEADS, mix};

    /// The `newHeads` service for jsonrpsee.
    #[rpc(server)]
    pub trait Eth {
        /// Subscribes to new heads.
        #[subscription(name = "eth_subscribe" => "eth_subscription", unsubscribe = "eth_unsubscribe", item = Header)]
        async fn subscribe(&self, kind: String) -> SubscriptionResult;
    }

    /// Its implementation: every subscription reads the one broadcast of headers.
    pub struct Impl {
        pub heads: broadcast::Sender<Arc<Header>>,
    }

    #[jsonrpsee::core::async_trait]
    impl EthServer for Impl {
        async fn subscribe(
            &self,
            pending: PendingSubscriptionSink,
            kind: String,
        ) -> SubscriptionResult {
            if kind != NEW_HEADS {
                let err = ErrorObjectOwned::owned(-32602, "unknown subscription kind", None::<()>);
                pending.reject(err).await;
                return Ok(());
            }
            let mut heads = self.heads.subscribe();
            let sink = pending.accept().await?;
            // As reth pipes a stream into a sink: each item made a message for this sink.
            loop {
                tokio::select! {
                    () = sink.closed() => return Ok(()),
                    head = heads.recv() => match head {
                        Ok(head) => {
                            let message = SubscriptionMessage::new(
                                sink.method_name(),
                                sink.subscription_id(),
                                &*head,
                            )?;
                            if sink.send(message).await.is_err() {
                                return Ok(());
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    },
                }
            }
        }
    }

    /// Subscription ids as jrpc's and the floor's: `0x` and 32 hex digits (reth's are such).
    #[derive(Debug)]
    pub struct HexIds(pub std::sync::atomic::AtomicU64);

    impl IdProvider for HexIds {
        fn next_id(&self) -> SubscriptionId<'static> {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            SubscriptionId::Str(format!("0x{:016x}{:016x}", mix(n), mix(!n)).into())
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Server {
    Jrpc,
    Floor,
    Jsonrpsee,
}

impl Server {
    const ALL: [Server; 3] = [Server::Jrpc, Server::Floor, Server::Jsonrpsee];

    fn name(self) -> &'static str {
        match self {
            Server::Jrpc => "jrpc",
            Server::Floor => "floor",
            Server::Jsonrpsee => "jsonrpsee",
        }
    }

    fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|server| server.name() == name)
            .ok_or_else(|| format!("unknown server {name:?} (jrpc, floor or jsonrpsee)").into())
    }

    /// The path of WebSocket upgrades.
    fn ws_path(self) -> &'static str {
        match self {
            Server::Jrpc => "/ws",
            Server::Floor | Server::Jsonrpsee => "/",
        }
    }
}

/// The child: serves `server` on `listen`, publishing at the rate its input says, until its
/// input closes or `max` passes.
fn serve(server: Server, listen: &str, max: Duration) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let publish: Box<dyn Fn(Header) + Send> = match server {
            Server::Jrpc => {
                let topics = jrpc_runtime::server::Topics::new();
                let http = jrpc_runtime::http::HttpServer::builder(jrpc::methods(&topics))
                    .max_connections(20_000)
                    .build()?;
                tokio::spawn(async move { http.serve(listener).await });
                Box::new(move |header| jrpc::publish(&topics, &header))
            }
            Server::Floor => {
                let heads = floor::Heads::default();
                tokio::spawn(floor::serve(listener, heads.clone()));
                Box::new(move |header| heads.publish(&header))
            }
            Server::Jsonrpsee => {
                use jsonrpsee_side::EthServer as _;
                // Its per-connection buffer (1 024 messages) at its default.
                let config = jsonrpsee::server::ServerConfig::builder()
                    .max_connections(20_000)
                    .set_id_provider(jsonrpsee_side::HexIds(AtomicU64::new(1)))
                    .build();
                let server = jsonrpsee::server::Server::builder()
                    .set_config(config)
                    .build_from_tcp(listener.into_std()?)?;
                let (heads, _) = broadcast::channel(16);
                let handle = server.start(
                    jsonrpsee_side::Impl {
                        heads: heads.clone(),
                    }
                    .into_rpc(),
                );
                // Serves until the process exits.
                std::mem::forget(handle);
                Box::new(move |header| {
                    let _ = heads.send(Arc::new(header));
                })
            }
        };
        let (rate_tx, rate_rx) = watch::channel(0u64);
        tokio::spawn(publisher(rate_rx, publish));
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening {addr}")?;
        out.flush()?;
        drop(out);
        let commands = async {
            let mut lines = BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rate) = line.strip_prefix("rate ").and_then(|r| r.parse().ok()) {
                    let _ = rate_tx.send(rate);
                }
            }
        };
        tokio::select! {
            () = commands => {}
            () = tokio::time::sleep(max) => eprintln!("fanout: --max-seconds reached, exiting"),
        }
        Ok::<_, BoxError>(())
    })?;
    // The runtime's blocking stdin reader would keep a graceful shutdown waiting.
    std::process::exit(0)
}

/// Publishes a header `rate` times a second (none while it is 0), numbered from 1, each stamped
/// with the moment it was made.
async fn publisher(mut rate: watch::Receiver<u64>, publish: Box<dyn Fn(Header) + Send>) {
    let mut number = 0;
    loop {
        let per_second = *rate.borrow_and_update();
        if per_second > 0 {
            let every = Duration::from_secs_f64(1.0 / per_second as f64);
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {
                        number += 1;
                        publish(Header::new(number, monotonic_ns()));
                    }
                    changed = rate.changed() => if changed.is_err() { return } else { break },
                }
            }
        } else if rate.changed().await.is_err() {
            return;
        }
    }
}

/// A server child process.
struct ServerProcess {
    addr: SocketAddr,
    child: ServerChild,
}

impl ServerProcess {
    async fn start(server: Server, max: Duration) -> Result<Self> {
        let max = max.as_secs().to_string();
        let args = [
            "--serve",
            server.name(),
            "--listen",
            "127.0.0.1:0",
            "--max-seconds",
            &max,
        ];
        let (child, addr) = ServerChild::start(args, STEP_TIMEOUT)
            .await
            .map_err(|err| format!("{}: {err}", server.name()))?;
        Ok(Self {
            addr: addr.parse()?,
            child,
        })
    }

    fn pid(&self) -> Result<String> {
        self.child.pid()
    }

    /// Its resident set, in KiB.
    fn rss_kib(&self) -> Result<u64> {
        self.child.rss_kib()
    }

    async fn rate(&mut self, per_second: u64) -> Result<()> {
        let stdin = self.child.stdin().ok_or("no stdin")?;
        stdin
            .write_all(format!("rate {per_second}\n").as_bytes())
            .await?;
        Ok(stdin.flush().await?)
    }

    async fn stop(self) {
        self.child.stop().await;
    }
}

// ---------------------------------------------------------------------------------------------
// The load generator.

/// What the readers share with the driver.
#[derive(Default)]
struct Tally {
    delivered: AtomicU64,
    /// Notifications missing: the gaps in each subscription's block numbers.
    lost: AtomicU64,
    /// Notifications that came twice or out of order.
    misordered: AtomicU64,
    /// Whether latencies are recorded (while a window is open).
    counting: AtomicBool,
    /// Latencies (ns) of the window.
    latencies: Mutex<Vec<u64>>,
}

/// Returns what follows `key` in `text`, up to the byte `end`.
fn field<'a>(text: &'a str, key: &str, end: u8) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    let len = text[start..].bytes().position(|b| b == end)?;
    Some(&text[start..start + len])
}

/// Opens `subscriptions` subscriptions on `ws`; returns it with their ids.
async fn subscribe(mut ws: Ws, subscriptions: usize) -> Result<(Ws, Vec<String>)> {
    for id in 0..subscriptions {
        ws.feed(Message::text(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_subscribe","params":["{NEW_HEADS}"]}}"#
        )))
        .await?;
    }
    ws.flush().await?;
    let mut ids = Vec::with_capacity(subscriptions);
    while ids.len() < subscriptions {
        let message = tokio::time::timeout(STEP_TIMEOUT, ws.next())
            .await
            .map_err(|_| "eth_subscribe timed out")?
            .ok_or("closed while subscribing")??;
        let text = message.to_text()?;
        let id = field(text, r#""result":""#, b'"')
            .ok_or_else(|| format!("eth_subscribe answered {text}"))?;
        ids.push(id.to_owned());
    }
    Ok((ws, ids))
}

/// Reads a connection's notifications: counts them, checks each subscription's block numbers
/// follow one another, and times them while the window is open.
async fn read(mut ws: Ws, ids: Vec<String>, tally: Arc<Tally>) -> Result<()> {
    let mut last: Vec<(String, u64)> = ids.into_iter().map(|id| (id, 0)).collect();
    while let Some(message) = ws.next().await {
        let Message::Text(text) = message? else {
            continue;
        };
        let now = monotonic_ns();
        let text = text.as_str();
        let parsed = (|| {
            let id = field(text, r#""subscription":""#, b'"')?;
            let number = u64::from_str_radix(field(text, r#""number":"0x"#, b'"')?, 16).ok()?;
            let stamp = u64::from_str_radix(field(text, r#""extraData":"0x"#, b'"')?, 16).ok()?;
            Some((id, number, stamp))
        })();
        let (id, number, stamp) = parsed.ok_or_else(|| format!("not a notification: {text}"))?;
        let (_, seen) = last
            .iter_mut()
            .find(|(mine, _)| mine == id)
            .ok_or_else(|| format!("a notification for another connection's {id}"))?;
        if *seen > 0 && number <= *seen {
            tally.misordered.fetch_add(1, Ordering::Relaxed);
        } else if *seen > 0 && number > *seen + 1 {
            tally.lost.fetch_add(number - *seen - 1, Ordering::Relaxed);
        }
        *seen = (*seen).max(number);
        if tally.counting.load(Ordering::Relaxed) {
            tally
                .latencies
                .lock()
                .map_err(|_| "poisoned")?
                .push(now.saturating_sub(stamp));
        }
        tally.delivered.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
struct Scenario {
    connections: usize,
    subscriptions: usize,
}

impl Scenario {
    fn name(self) -> String {
        format!("{}x{}", self.connections, self.subscriptions)
    }

    fn total(self) -> usize {
        self.connections * self.subscriptions
    }
}

/// What one server measured at one rate, in one round.
#[derive(Clone, Debug)]
struct Window {
    notifications: u64,
    server_ns: u64,
    client_ns: u64,
    p50_us: f64,
    p99_us: f64,
    lost: u64,
}

/// What one server measured in one round of a scenario.
#[derive(Clone, Debug)]
struct Measured {
    server: Server,
    scenario: String,
    /// RSS growth (KiB) per subscription: with the connections', and of the subscriptions alone.
    rss_per_subscription: f64,
    rss_per_subscription_alone: f64,
    /// By rate, in `--rates`' order.
    windows: Vec<(u64, Window)>,
}

fn quantile_us(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[i] as f64 / 1000.0
}

struct Options {
    seconds: f64,
    rounds: usize,
    rates: Vec<u64>,
    scenarios: Vec<Scenario>,
    servers: Vec<Server>,
    max: Duration,
}

/// Runs one server through one scenario: memory idle, then each rate.
async fn measure(
    server: Server,
    scenario: Scenario,
    round: usize,
    options: &Options,
) -> Result<Measured> {
    let mut child = ServerProcess::start(server, options.max).await?;
    let url = format!("ws://{}{}", child.addr, server.ws_path());
    let rss_start = child.rss_kib()?;
    // Connected, then subscribed: the growth of each step, 1 s after it.
    let mut sockets = Vec::with_capacity(scenario.connections);
    for _ in 0..scenario.connections {
        sockets.push(jrpc_bench::ws_connect(&url, STEP_TIMEOUT).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_connected = child.rss_kib()?;
    let mut connections = Vec::with_capacity(scenario.connections);
    for ws in sockets {
        connections.push(subscribe(ws, scenario.subscriptions).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_subscribed = child.rss_kib()?;
    let total = scenario.total() as f64;
    let rss_per_subscription = (rss_subscribed as f64 - rss_start as f64) / total;
    let rss_per_subscription_alone = (rss_subscribed as f64 - rss_connected as f64) / total;
    let tally = Arc::new(Tally::default());
    let readers: Vec<_> = connections
        .into_iter()
        .map(|(ws, ids)| tokio::spawn(read(ws, ids, Arc::clone(&tally))))
        .collect();
    let pid = child.pid()?;
    let mut windows = Vec::new();
    for &rate in &options.rates {
        child.rate(rate).await?;
        tokio::time::sleep(WARMUP).await;
        let lost = tally.lost.load(Ordering::Relaxed);
        tally.latencies.lock().map_err(|_| "poisoned")?.clear();
        let (delivered, server_ns, client_ns) = (
            tally.delivered.load(Ordering::Relaxed),
            cpu_ns(&pid)?,
            cpu_ns("self")?,
        );
        tally.counting.store(true, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs_f64(options.seconds)).await;
        tally.counting.store(false, Ordering::Relaxed);
        let window_of = |delivered_after: u64, server_after: u64, client_after: u64| Window {
            notifications: delivered_after - delivered,
            server_ns: server_after - server_ns,
            client_ns: client_after - client_ns,
            p50_us: 0.0,
            p99_us: 0.0,
            lost: 0,
        };
        let mut window = window_of(
            tally.delivered.load(Ordering::Relaxed),
            cpu_ns(&pid)?,
            cpu_ns("self")?,
        );
        let mut latencies = std::mem::take(&mut *tally.latencies.lock().map_err(|_| "poisoned")?);
        latencies.sort_unstable();
        window.p50_us = quantile_us(&latencies, 0.50);
        window.p99_us = quantile_us(&latencies, 0.99);
        child.rate(0).await?;
        // What is on its way arrives; its gaps count.
        tokio::time::sleep(Duration::from_millis(500)).await;
        window.lost = tally.lost.load(Ordering::Relaxed) - lost;
        if window.notifications == 0 {
            return Err(format!("{}: nothing delivered at {rate}/s", server.name()).into());
        }
        eprintln!(
            "  round {round} {} {:>9} {rate:>4}/s: {:>8} notifications, server {:.2} µs each, p50 {:.0} µs, p99 {:.0} µs, lost {}",
            scenario.name(),
            server.name(),
            window.notifications,
            window.server_ns as f64 / 1e3 / window.notifications as f64,
            window.p50_us,
            window.p99_us,
            window.lost,
        );
        windows.push((rate, window));
    }
    let misordered = tally.misordered.load(Ordering::Relaxed);
    for reader in &readers {
        reader.abort();
    }
    child.stop().await;
    if misordered > 0 {
        return Err(format!(
            "{}: {misordered} notifications came twice or out of order",
            server.name()
        )
        .into());
    }
    Ok(Measured {
        server,
        scenario: scenario.name(),
        rss_per_subscription,
        rss_per_subscription_alone,
        windows,
    })
}

/// The median of `values`, and their least and greatest.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|load| {
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Prints the tables for the servers measured, jrpc among them: medians over the rounds, with
/// their spread (least to greatest); jrpc's ratios to each other server are taken in each round
/// (the servers ran back to back) before their median.
fn report(results: &[Measured], options: &Options) {
    let servers: Vec<Server> = Server::ALL
        .into_iter()
        .filter(|server| options.servers.contains(server))
        .collect();
    let others: Vec<Server> = servers
        .iter()
        .copied()
        .filter(|&server| server != Server::Jrpc)
        .collect();
    let names = servers
        .iter()
        .map(|server| server.name())
        .collect::<Vec<_>>()
        .join(" / ");
    // A column per other server, headed `prefix jrpc ÷ NAME`.
    let against = |prefix: &str| -> String {
        others
            .iter()
            .map(|other| format!(" {prefix}jrpc ÷ {} |", other.name()))
            .collect()
    };
    let aligned = |columns: usize| "| --- ".to_owned() + &"| ---: ".repeat(columns - 1) + "|";
    let of = |server: Server, scenario: &str| -> Vec<&Measured> {
        results
            .iter()
            .filter(|m| m.server == server && m.scenario == scenario)
            .collect()
    };
    let fmt = |(median, low, high): (f64, f64, f64), digits: usize| {
        format!("{median:.digits$} ({low:.digits$}–{high:.digits$})")
    };
    println!(
        "\n| scenario | publishes/s | notifications/s | server CPU µs per notification: {names} |{} lost: {names} |",
        against("")
    );
    println!("{}", aligned(5 + others.len()));
    let mut latency_rows = Vec::new();
    for scenario in &options.scenarios {
        let name = scenario.name();
        for (i, &rate) in options.rates.iter().enumerate() {
            let window = |m: &Measured| m.windows[i].1.clone();
            let cpu = |m: &Measured| {
                let w = window(m);
                w.server_ns as f64 / 1e3 / w.notifications as f64
            };
            let per_round = |server: Server, value: &dyn Fn(&Measured) -> f64| -> Vec<f64> {
                of(server, &name).into_iter().map(value).collect()
            };
            let ratios = |value: &dyn Fn(&Measured) -> f64| -> String {
                others
                    .iter()
                    .map(|&other| {
                        let ours = per_round(Server::Jrpc, value);
                        let theirs = per_round(other, value);
                        let ratios = ours.iter().zip(&theirs).map(|(a, b)| a / b).collect();
                        format!(" {} |", fmt(spread(ratios), 2))
                    })
                    .collect()
            };
            let columns: Vec<String> = servers
                .iter()
                .map(|&server| fmt(spread(per_round(server, &cpu)), 2))
                .collect();
            let lost: Vec<String> = servers
                .iter()
                .map(|&server| {
                    per_round(server, &|m| window(m).lost as f64)
                        .iter()
                        .sum::<f64>()
                        .to_string()
                })
                .collect();
            let rate_seen = spread(per_round(Server::Jrpc, &|m| {
                window(m).notifications as f64 / options.seconds
            }))
            .0;
            println!(
                "| {} connections x {} | {rate} | {rate_seen:.0} | {} |{} {} |",
                scenario.connections,
                scenario.subscriptions,
                columns.join(" / "),
                ratios(&cpu),
                lost.join(" / "),
            );
            let p50 = |m: &Measured| window(m).p50_us;
            let p99 = |m: &Measured| window(m).p99_us;
            let client = |m: &Measured| {
                let w = window(m);
                w.client_ns as f64 / 1e3 / w.notifications as f64
            };
            let latency: Vec<String> = servers
                .iter()
                .map(|&server| {
                    format!(
                        "{:.0} / {:.0}",
                        spread(per_round(server, &p50)).0,
                        spread(per_round(server, &p99)).0
                    )
                })
                .collect();
            let clients: Vec<String> = servers
                .iter()
                .map(|&server| format!("{:.2}", spread(per_round(server, &client)).0))
                .collect();
            latency_rows.push(format!(
                "| {} connections x {} | {rate} | {} |{} {} |",
                scenario.connections,
                scenario.subscriptions,
                latency.join(" \\| "),
                ratios(&p99),
                clients.join(" / "),
            ));
        }
    }
    println!(
        "\n| scenario | publishes/s | p50 / p99 µs: {} |{} load-generator CPU µs per notification: {names} |",
        names.replace(" / ", " \\| "),
        against("p99 ")
    );
    println!("{}", aligned(4 + others.len()));
    for row in latency_rows {
        println!("{row}");
    }
    println!(
        "\n| scenario | RSS KiB per idle subscription, its connection's share included: {names} | the subscription alone: {names} |"
    );
    println!("{}", aligned(3));
    for scenario in &options.scenarios {
        let name = scenario.name();
        let column = |value: &dyn Fn(&Measured) -> f64| -> String {
            servers
                .iter()
                .map(|&server| {
                    let values = of(server, &name).into_iter().map(value).collect();
                    format!("{:.2}", spread(values).0)
                })
                .collect::<Vec<_>>()
                .join(" / ")
        };
        println!(
            "| {} connections x {} | {} | {} |",
            scenario.connections,
            scenario.subscriptions,
            column(&|m| m.rss_per_subscription),
            column(&|m| m.rss_per_subscription_alone),
        );
    }
}

async fn run(options: Options) -> Result<()> {
    println!(
        "fan-out over 127.0.0.1: scenarios {}, {} publishes/s, {} s windows, {} rounds; {} CPU(s); load average {}",
        options
            .scenarios
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", "),
        options
            .rates
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        options.seconds,
        options.rounds,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
    );
    let mut results = Vec::new();
    for round in 0..options.rounds {
        for &scenario in &options.scenarios {
            for k in 0..options.servers.len() {
                let server = options.servers[(round + k) % options.servers.len()];
                results.push(measure(server, scenario, round, &options).await?);
            }
        }
    }
    println!("load average at the end: {}", load_average());
    if options.servers.contains(&Server::Jrpc) {
        report(&results, &options);
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut serving = None;
    let mut listen = "127.0.0.1:0".to_owned();
    let mut options = Options {
        seconds: 4.0,
        rounds: 5,
        rates: vec![10, 100],
        scenarios: vec![
            Scenario {
                connections: 1000,
                subscriptions: 1,
            },
            Scenario {
                connections: 100,
                subscriptions: 10,
            },
        ],
        servers: Server::ALL.to_vec(),
        max: Duration::from_secs(900),
    };
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--serve" => serving = Some(Server::parse(&value()?)?),
            "--listen" => listen = value()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--rounds" => options.rounds = value()?.parse()?,
            "--rates" => {
                options.rates = value()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?;
            }
            "--only" => {
                options.scenarios = value()?
                    .split(',')
                    .map(|name| {
                        let (connections, subscriptions) = name
                            .split_once('x')
                            .ok_or("a scenario is CONNECTIONSxSUBSCRIPTIONS")?;
                        Ok::<_, BoxError>(Scenario {
                            connections: connections.parse()?,
                            subscriptions: subscriptions.parse()?,
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--servers" => {
                options.servers = value()?
                    .split(',')
                    .map(Server::parse)
                    .collect::<Result<_, _>>()?;
            }
            "--max-seconds" => options.max = Duration::from_secs(value()?.parse()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    if let Some(server) = serving {
        return serve(server, &listen, options.max);
    }
    if !(options.seconds > 0.0 && options.seconds <= 60.0) || options.rounds == 0 {
        return Err("--seconds must be in (0, 60] and --rounds at least 1".into());
    }
    if options.rates.iter().any(|&rate| rate == 0 || rate > 10_000) {
        return Err("each rate must be in 1..=10000".into());
    }
    raise_nofile(20_000);
    // One thread for the load generator: its readers waking one another across threads would
    // cost more than their reading, and the cores are the servers' to use.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}
