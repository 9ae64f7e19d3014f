//! The calculator's topics, as its contract states them: `watch(topic)` and
//! `announce(topic, text)` over WebSocket, stdio and HTTP, process-local without `--redis`,
//! shared by every calculator on one Redis with it (through a Redis restart), and a dead Redis
//! URL at start-up.
//!
//! Each wait is for an event, within [`jrpc_tests::LIMIT`]; none checks how long anything took.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use jrpc_runtime::http::HttpClient;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller, ClientError, Methods, Peer, PeerConfig, Whole};
use jrpc_tests::examples::Calculator;
use jrpc_tests::process::run_bounded;
use jrpc_tests::redis::{RedisServer, free_port};
use jrpc_tests::{LIMIT, bounded};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The calculator's executable, built once for the tests of this binary that start it.
pub(crate) fn calculator_exe() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BUILT.get_or_init(|| {
        jrpc_tests::build_examples(&["calculator"])
            .map(|mut found| found.remove("calculator").unwrap_or_default())
    }) {
        Ok(exe) => exe.clone(),
        Err(why) => panic!("{why}"),
    }
}

/// Handlers that put every `announcement`'s params in a channel.
fn announcements() -> (Methods, mpsc::UnboundedReceiver<Value>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut handlers = Methods::new();
    handlers
        .register_notification(
            "announcement",
            &[],
            move |Whole(params): Whole<Value>, _| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(params);
                }
            },
        )
        .unwrap();
    (handlers, rx)
}

/// A WebSocket client of `server` watching `topic` (twice: the second changes nothing).
async fn ws_watcher(
    server: &Calculator,
    topic: &str,
) -> (WsClient, mpsc::UnboundedReceiver<Value>) {
    let (handlers, rx) = announcements();
    let url = format!("ws://{}/ws", server.addr);
    let client = bounded(WsClient::connect(&url, handlers)).await.unwrap();
    watch(&client, topic).await;
    (client, rx)
}

/// The calculator over stdio (with `args`), watching `topic`.
async fn stdio_watcher(args: &[&str], topic: &str) -> (Peer, mpsc::UnboundedReceiver<Value>) {
    let (handlers, rx) = announcements();
    let mut command = tokio::process::Command::new(calculator_exe());
    command.arg("--stdio").args(args);
    let peer = jrpc_runtime::stdio::spawn(command, handlers, PeerConfig::default()).unwrap();
    watch(&peer, topic).await;
    (peer, rx)
}

async fn watch(client: &impl Caller, topic: &str) {
    for _ in 0..2 {
        let answer: Value = bounded(client.call("watch", [topic])).await.unwrap();
        assert_eq!(answer, Value::Null);
    }
}

async fn announce(client: &impl Caller, topic: &str, text: &str) {
    let answer: Value = bounded(client.call("announce", [topic, text]))
        .await
        .unwrap();
    assert_eq!(answer, Value::Null);
}

fn http(server: &Calculator) -> HttpClient {
    HttpClient::new(&format!("http://{}/rpc", server.addr)).unwrap()
}

/// The next announcement, which must be `text` on `topic`, exactly as the contract shapes it.
async fn next_is(rx: &mut mpsc::UnboundedReceiver<Value>, topic: &str, text: &str) {
    let got = bounded(rx.recv()).await;
    assert_eq!(got, Some(json!({"topic": topic, "text": text})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_and_announce_within_one_process() {
    let server = Calculator::start(&calculator_exe());
    let (_w1, mut w1) = ws_watcher(&server, "news").await;
    let (_w2, mut w2) = ws_watcher(&server, "sport").await;
    let http = http(&server);

    // Over HTTP, watch is refused with a server error that says why.
    let err = bounded(http.call::<Value>("watch", ["news"]))
        .await
        .unwrap_err();
    let ClientError::Failed(err) = err else {
        panic!("{err:?}")
    };
    assert!((-32099..=-32000).contains(&err.code().code()), "{err:?}");
    assert!(err.message().contains("HTTP"), "{err:?}");

    // Announced over HTTP: the watchers of that topic get it once (watched twice).
    announce(&http, "news", "hello").await;
    announce(&http, "sport", "goal").await;
    announce(&http, "news", "fence").await;
    next_is(&mut w1, "news", "hello").await;
    next_is(&mut w1, "news", "fence").await;
    next_is(&mut w2, "sport", "goal").await;

    // stdio: a connection of its own process; topics there are that process's.
    let (stdio, mut s1) = stdio_watcher(&[], "news").await;
    announce(&stdio, "news", "over stdio").await;
    next_is(&mut s1, "news", "over stdio").await;
    announce(&http, "news", "network only").await;
    next_is(&mut w1, "news", "network only").await;
    announce(&stdio, "news", "stdio fence").await;
    next_is(&mut s1, "news", "stdio fence").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calculators_on_one_redis_share_topics_through_a_restart() {
    let Some(mut redis) = RedisServer::start("calculators_on_one_redis_share_topics") else {
        return;
    };
    let url = redis.url();
    let exe = calculator_exe();
    let a = Calculator::start_with(&exe, &["--redis", &url]);
    let b = Calculator::start_with(&exe, &["--redis", &url]);
    let (_a1, mut a1) = ws_watcher(&a, "news").await;
    let (_b1, mut b1) = ws_watcher(&b, "news").await;
    let (stdio, mut c1) = stdio_watcher(&["--redis", &url], "news").await;
    let (a_http, b_http) = (http(&a), http(&b));

    // Announced on A: every watcher on every replica gets it once; fences from the others show
    // that no echo follows.
    announce(&a_http, "news", "one").await;
    for rx in [&mut a1, &mut b1, &mut c1] {
        next_is(rx, "news", "one").await;
    }
    announce(&b_http, "news", "fence b").await;
    for rx in [&mut a1, &mut b1, &mut c1] {
        next_is(rx, "news", "fence b").await;
    }
    announce(&stdio, "news", "fence c").await;
    for rx in [&mut a1, &mut b1, &mut c1] {
        next_is(rx, "news", "fence c").await;
    }

    // Redis goes away: calls and A's own topics go on.
    redis.kill();
    let five: i64 = bounded(a_http.call("add", [2, 3])).await.unwrap();
    assert_eq!(five, 5);
    announce(&a_http, "news", "local").await;
    next_is(&mut a1, "news", "local").await;

    // Redis is back: deliveries from A reach B again once the replicas have subscribed again
    // (an announce before that may be lost: probe until one arrives).
    redis.restart();
    // Measured for the record, never checked: tests do not hold a budget.
    let answering = std::time::Instant::now();
    let mut probes = 0;
    let mut b_seen: Vec<String> = Vec::new();
    bounded(async {
        loop {
            probes += 1;
            announce(&a_http, "news", &format!("probe {probes}")).await;
            if let Ok(Some(got)) = tokio::time::timeout(Duration::from_millis(200), b1.recv()).await
            {
                b_seen.push(got["text"].as_str().unwrap_or_default().to_owned());
                if b_seen.iter().any(|text| text.starts_with("probe")) {
                    break;
                }
            }
        }
    })
    .await;
    eprintln!(
        "deliveries from A reached B {:?} after Redis answered PING again ({probes} probes)",
        answering.elapsed()
    );
    // A's watcher had every probe, locally, and nothing twice: the fence from B comes next.
    for n in 1..=probes {
        next_is(&mut a1, "news", &format!("probe {n}")).await;
    }
    announce(&b_http, "news", "fence after").await;
    next_is(&mut a1, "news", "fence after").await;
    // B's watcher: the held "local", then probes, each at most once, then the fence.
    loop {
        let got = bounded(b1.recv()).await.expect("b1 open");
        let text = got["text"].as_str().unwrap_or_default().to_owned();
        if text == "fence after" {
            break;
        }
        assert!(
            text == "local" || text.starts_with("probe "),
            "unexpected {got}"
        );
        b_seen.push(text);
    }
    let mut unique = b_seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        b_seen.len(),
        "a duplicate reached B: {b_seen:?}"
    );
}

#[test]
fn a_dead_redis_url_stops_the_calculator_naming_it() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let output = run_bounded(
        std::process::Command::new(calculator_exe()).args([
            "--listen",
            "127.0.0.1:0",
            "--redis",
            &url,
        ]),
        LIMIT,
    )
    .unwrap();
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&url), "{stderr}");
    assert!(output.stdout.is_empty(), "it never listened: {output:?}");
}
