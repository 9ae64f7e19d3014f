//! Limits at their defaults: messages of several MiB are served on every transport, and clients
//! that send and never read are held to the server's byte budget, cut at `write_timeout`, while
//! the others are served.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jrpc_runtime::http::{HttpClient, HttpServer};
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use jrpc_tests::examples::Calculator;
use jrpc_tests::fixtures::{Gate, add, big};
use jrpc_tests::process::{alone, rss};
use jrpc_tests::raw_http::{exchange, post, post_json};
use jrpc_tests::servers::serve_http;
use jrpc_tests::{bounded, eventually};
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

const MIB: usize = 1024 * 1024;

/// Taken by each test of this module that makes megabytes in this process, so that they do not
/// all hold their megabytes at once.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn calculator_exe() -> std::path::PathBuf {
    match jrpc_tests::build_examples(&["calculator"]) {
        Ok(found) => found["calculator"].clone(),
        Err(why) => panic!("{why}"),
    }
}

fn echo_call(id: u64, bytes: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":{id}}}"#,
        "e".repeat(bytes)
    )
}

/// At the defaults the calculator echoes 2 MiB over HTTP/1.1 and h2c, 4 MiB over WebSocket: the body and the answer both pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calculator_echoes_megabytes_over_http_h2c_and_websocket() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = Calculator::start(&calculator_exe());
    let addr = server.addr.clone();
    bounded(async {
        let http = HttpClient::new(&format!("http://{addr}/rpc")).unwrap();
        let two = "h".repeat(2 * MIB);
        let echoed: Vec<String> = http.call("echo", [&two]).await.unwrap();
        assert_eq!(echoed, [two]);

        let ws = WsClient::connect(&format!("ws://{addr}/ws"), Methods::new())
            .await
            .unwrap();
        let four = "w".repeat(4 * MIB);
        let echoed: Vec<String> = ws.call("echo", [&four]).await.unwrap();
        assert_eq!(echoed, [four]);
    })
    .await;
    // h2c with prior knowledge, through hyper's own HTTP/2 client.
    bounded(async {
        let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tcp),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        let req = http::Request::post(format!("http://{addr}/rpc"))
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(hyper::body::Bytes::from(
                echo_call(7, 2 * MIB),
            )))
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        assert_eq!(res.version(), http::Version::HTTP_2);
        assert_eq!(res.status(), 200);
        let body = http_body_util::BodyExt::collect(res.into_body())
            .await
            .unwrap()
            .to_bytes();
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"][0].as_str().map(str::len), Some(2 * MIB));
    })
    .await;
}

/// At the defaults the calculator echoes 1 MiB over stdio.
#[test]
fn the_calculator_echoes_a_mebibyte_over_stdio() {
    let mut child = Command::new(calculator_exe())
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(echo_call(1, MIB).as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success());
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"][0].as_str().map(str::len), Some(MIB));
}

/// At the defaults a 5 MiB answer comes last on an SSE answer, after the handler's event.
#[tokio::test]
async fn a_five_mebibyte_answer_over_sse() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let mut methods = Methods::new();
    methods
        .register("export", &[], |(): (), ctx: Context| async move {
            let peer = ctx.peer().expect("an SSE answer's peer");
            peer.notify("progress", [50])
                .await
                .map_err(|err| RpcError::internal().with_data(&err.to_string()))?;
            Ok::<_, RpcError>("r".repeat(5 * MIB))
        })
        .unwrap();
    let server = HttpServer::builder(methods).build().unwrap();
    let (addr, _) = serve_http(server).await;
    let request = post(
        "/rpc",
        Some("application/json"),
        "accept: text/event-stream\r\nconnection: close\r\n",
        r#"{"jsonrpc":"2.0","method":"export","id":3}"#,
    );
    let reply = bounded(exchange(addr, &request)).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{}", &reply[..200]);
    let events: Vec<Value> = reply
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["method"], "progress");
    assert_eq!(events[1]["id"], 3);
    assert_eq!(events[1]["result"].as_str().map(str::len), Some(5 * MIB));
}

/// Many connections posting large bodies at once: the server's budget holds some of them at a
/// time (the others wait, unread), and all are answered once bytes are given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_at_once_are_held_to_the_budget_and_all_answered() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let gate = Gate::shared();
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut methods = Methods::new();
    let (g, r, m) = (Arc::clone(&gate), Arc::clone(&running), Arc::clone(&most));
    methods
        .register("store", &["blob"], move |(blob,): (String,), _| {
            let (g, r, m) = (Arc::clone(&g), Arc::clone(&r), Arc::clone(&m));
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                g.entered.fetch_add(1, Ordering::SeqCst);
                g.release.acquire().await.unwrap().forget();
                r.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, RpcError>(blob.len())
            }
        })
        .unwrap();
    // Room for four bodies of 1 MiB and their params decoded (each body counts twice while its
    // call runs), not five.
    let server = HttpServer::builder(methods)
        .server_budget(8 * MIB + MIB / 2)
        .build()
        .unwrap();
    let (addr, _) = serve_http(server).await;
    const CLIENTS: usize = 12;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let body = format!(
                r#"{{"jsonrpc":"2.0","method":"store","params":["{}"],"id":{id}}}"#,
                "b".repeat(MIB)
            );
            tokio::spawn(async move {
                let reply = exchange(
                    addr,
                    &post(
                        "/rpc",
                        Some("application/json"),
                        "connection: close\r\n",
                        &body,
                    ),
                )
                .await;
                let body = reply
                    .split_once("\r\n\r\n")
                    .map(|(_, body)| body.to_owned());
                serde_json::from_str::<Value>(&body.unwrap_or_default()).unwrap()
            })
        })
        .collect();
    eventually(|| gate.entered.load(Ordering::SeqCst) == 4).await;
    gate.release.add_permits(CLIENTS);
    for client in clients {
        let answer = bounded(client).await.unwrap();
        assert_eq!(answer["result"], MIB, "{answer}");
    }
    assert_eq!(gate.entered.load(Ordering::SeqCst), CLIENTS);
    let most = most.load(Ordering::SeqCst);
    assert!((1..=4).contains(&most), "{most} bodies were held at once");
}

/// A masked text frame, as a client sends it.
fn text_frame(payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x81, 0x80 | 127];
    frame.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    let mask = [0x12, 0x34, 0x56, 0x78];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

/// A client with a small receive window (so that the kernel does not take whole answers for it)
/// that asks for three 4 MiB answers, over HTTP or WebSocket, and never reads one; it returns
/// once the server has dropped it (a write fails).
async fn non_reader(addr: std::net::SocketAddr, websocket: bool) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let call = r#"{"jsonrpc":"2.0","method":"big","params":[4194304],"id":1}"#;
    let (request, probe) = if websocket {
        let upgrade = format!(
            "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(upgrade.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(tokio::io::AsyncReadExt::read_u8(&mut stream).await.unwrap());
        }
        assert!(head.starts_with(b"HTTP/1.1 101"));
        let probe = text_frame(br#"{"jsonrpc":"2.0","method":"nothing"}"#);
        (text_frame(call.as_bytes()), probe)
    } else {
        (post_json(call), b"\r\n".to_vec())
    };
    for _ in 0..3 {
        if stream.write_all(&request).await.is_err() {
            return;
        }
    }
    // Never read; probe until the server has dropped the connection. The real clock: the
    // socket is real and so is the server's write deadline; the period is not a budget, and no
    // assertion depends on it.
    while stream.write_all(&probe).await.is_ok() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// 200 clients that ask for 4 MiB answers and never read, over HTTP and over WebSocket: the
/// server holds at most its budget (plus a stated allowance), a well-behaved client is still
/// answered, and each non-reader is cut once a write has waited `write_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_readers_are_held_to_the_budget_and_cut_at_the_write_timeout() {
    // It measures this process's memory, which the other tests of the binary would add to.
    if !alone(
        module_path!(),
        "non_readers_are_held_to_the_budget_and_cut_at_the_write_timeout",
    ) {
        return;
    }
    let _alone = ONE_AT_A_TIME.lock().await;
    for websocket in [false, true] {
        non_readers_over(websocket).await;
    }
}

async fn non_readers_over(websocket: bool) {
    const BUDGET: usize = 64 * MIB;
    // What the budget does not count: an answer being made (its string, then its text), the
    // answers of the calls running when the budget filled, a WebSocket message read while the
    // budget had room, and the allocator's free pages. Measured from 123 to 160 MiB; the 200
    // answers unbounded would be 800 MiB.
    const ALLOWANCE: usize = 192 * MIB;
    const CLIENTS: usize = 200;
    let mut methods = Methods::new();
    add(&mut methods);
    big(&mut methods);
    let server = HttpServer::builder(methods)
        .server_budget(BUDGET)
        .write_timeout(Some(Duration::from_millis(250)))
        .build()
        .unwrap();
    let (addr, _) = serve_http(server.clone()).await;
    let before = rss();
    let peak = Arc::new(AtomicUsize::new(0));
    let sampling = tokio::spawn({
        let peak = Arc::clone(&peak);
        async move {
            loop {
                if let Some(now) = rss() {
                    peak.fetch_max(usize::try_from(now).unwrap_or(usize::MAX), Ordering::SeqCst);
                }
                // A sampling period: what it measures does not depend on it.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    let readers: Vec<_> = (0..CLIENTS)
        .map(|_| tokio::spawn(non_reader(addr, websocket)))
        .collect();
    // A well-behaved client is still answered.
    let client = HttpClient::new(&format!("http://{addr}/rpc")).unwrap();
    let sum: i64 = bounded(client.call("add", [2, 3])).await.unwrap();
    assert_eq!(sum, 5);
    for reader in readers {
        bounded(reader).await.unwrap();
    }
    sampling.abort();
    if let Some(before) = before {
        let before = usize::try_from(before).unwrap_or(0);
        let grown = peak.load(Ordering::SeqCst).saturating_sub(before);
        eprintln!(
            "{CLIENTS} non-readers (websocket: {websocket}): peak RSS growth {} MiB",
            grown / MIB
        );
        assert!(
            grown < BUDGET + ALLOWANCE,
            "grew by {} MiB against a budget of {} MiB",
            grown / MIB,
            BUDGET / MIB
        );
    }
}
