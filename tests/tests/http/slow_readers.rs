//! Peers that send and do not read: what a connection holds for them stays within its byte
//! budget (`max_buffered`), a write that waits `write_timeout` for them cuts them off, the
//! in-flight cap counts running handlers only, and a WebSocket's idle clock and pings go on
//! while its reading is paused.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::ws::{WsServer, WsSettings};
use jrpc_runtime::{Caller as _, ClientError, Methods, Outcome, Peer, PeerConfig, RpcError};
use jrpc_tests::fixtures::{Gate, add, big};
use jrpc_tests::logs::logged;
use jrpc_tests::process::{alone, rss};
use jrpc_tests::raw_http::{Conn, post_json};
use jrpc_tests::raw_ws::{CLOSE, PING, RawWs};
use jrpc_tests::servers::{serve_http, serve_ws};
use jrpc_tests::{bounded, eventually};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// What the observer saw: each request's method and outcome.
type Seen = Arc<Mutex<Vec<(String, Outcome)>>>;

/// `add`, `big`, and `held [n]`: a string of `n` `x`s once the gate lets the call through; every
/// outcome recorded in the returned list.
fn methods(gate: &Arc<Gate>) -> (Methods, Seen) {
    let mut methods = Methods::new();
    add(&mut methods);
    big(&mut methods);
    let g = Arc::clone(gate);
    methods
        .register("held", &["n"], move |(n,): (usize,), _| {
            let g = Arc::clone(&g);
            async move {
                g.entered.fetch_add(1, Ordering::SeqCst);
                g.release.acquire().await.unwrap().forget();
                Ok::<_, RpcError>("x".repeat(n))
            }
        })
        .unwrap();
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    methods.observe(move |o| sink.lock().unwrap().push((o.method.to_owned(), o.outcome)));
    (methods, seen)
}

fn call(id: usize, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params},"id":{id}}}"#)
}

fn overflowed(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(_, outcome)| *outcome == Outcome::Overflowed)
        .map(|(method, _)| method.clone())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// WebSocket
// ---------------------------------------------------------------------------------------------

/// Answers that finish together past the watermark are all sent: the watermark pauses reading,
/// it refuses no answer.
#[tokio::test]
async fn websocket_answers_past_the_watermark_are_all_sent() {
    let gate = Gate::shared();
    let (methods, seen) = methods(&gate);
    let server = WsServer::builder(methods).build().unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    // Eight answers of 40 000 bytes: 320 000, past the default watermark of 256 KiB.
    for id in 0..8 {
        ws.send_text(&call(id, "held", "[40000]")).await;
    }
    eventually(|| gate.entered.load(Ordering::SeqCst) == 8).await;
    gate.release.add_permits(8);
    for _ in 0..8 {
        let answer = ws.next_json().await;
        assert_eq!(
            answer["result"].as_str().map(str::len),
            Some(40_000),
            "{answer}"
        );
    }
    assert_eq!(server.shutdown_handle().connections(), 1);
    assert!(overflowed(&seen).is_empty());
}

/// A client that calls for 100 MB of answers and reads none: the server writes what the socket
/// takes, then holds at most its budget, and drops the client once a write has waited
/// `write_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_that_never_reads_is_cut_by_the_write_timeout() {
    // It measures this process's memory, which other tests would add to.
    if !alone(
        module_path!(),
        "a_websocket_client_that_never_reads_is_cut_by_the_write_timeout",
    ) {
        return;
    }
    let (methods, _) = methods(&Gate::shared());
    let settings = WsSettings::new().write_timeout(Some(Duration::from_millis(300)));
    let server = WsServer::builder(methods)
        .settings(settings)
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let before = rss();
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    for id in 0..1000 {
        ws.send_text(&call(id, "big", "[100000]")).await;
    }
    eventually(|| server.shutdown_handle().connections() == 0).await;
    if let (Some(before), Some(after)) = (before, rss()) {
        let grown = after.saturating_sub(before);
        // 100 MB asked for; what is held is the budget, the socket's buffers (not resident) and
        // the hand-offs: a few MiB at most, allocator slack included.
        assert!(grown < 16 << 20, "grew by {grown} bytes");
    }
    // It reads what the kernel took, then finds the socket dropped: no close frame got through.
    let mut answers = 0;
    let code = bounded(async {
        loop {
            match ws.next_frame().await {
                None => break None,
                Some(frame) if frame.opcode == CLOSE => break Some(frame.close_code()),
                Some(_) => answers += 1,
            }
        }
    })
    .await;
    assert_eq!(code, None);
    assert!(answers < 1000, "every answer was written");
}

/// A client that pipelines thousands of instant calls and reads late is never told busy: the cap
/// counts handlers running, not answers waiting to be written.
#[tokio::test]
async fn a_late_websocket_reader_of_instant_calls_is_never_told_busy() {
    bounded(late_websocket_reader()).await;
}

/// The same under a subscriber that records each request's span (at DEBUG): logging changes
/// neither which calls count against the cap nor what the client is told.
#[test]
fn under_a_subscriber_a_late_websocket_reader_is_never_told_busy() {
    logged(LevelFilter::DEBUG, FmtSpan::NONE, |_| {
        late_websocket_reader()
    });
}

async fn late_websocket_reader() {
    let (methods, _) = methods(&Gate::shared());
    let server = WsServer::builder(methods)
        .settings(WsSettings::new().max_in_flight(4).queue(8))
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    // 10 MB of answers: more than the socket's buffers, so they back up behind the reader.
    const CALLS: usize = 5000;
    for id in 0..CALLS {
        ws.send_text(&call(id, "big", "[2000]")).await;
    }
    for _ in 0..CALLS {
        let answer = ws.next_json().await;
        assert_eq!(
            answer["result"].as_str().map(str::len),
            Some(2000),
            "{answer}"
        );
    }
}

/// While the peer cannot take messages (a notification handler runs, one message waits behind
/// it), the pump still pings and still reads: a client that answers nothing is closed as idle.
#[tokio::test]
async fn the_idle_clock_and_pings_run_while_reading_is_paused() {
    let gate = Gate::shared();
    let mut methods = Methods::new();
    let g = Arc::clone(&gate);
    methods
        .register_notification("block", &[], move |(): (), _| {
            let g = Arc::clone(&g);
            async move {
                g.entered.fetch_add(1, Ordering::SeqCst);
                let _ = g.release.acquire().await;
            }
        })
        .unwrap();
    add(&mut methods);
    let settings = WsSettings::new()
        .ping_interval(Some(Duration::from_millis(50)))
        .idle_timeout(Some(Duration::from_millis(200)));
    let server = WsServer::builder(methods)
        .settings(settings)
        .build()
        .unwrap();
    let (addr, _) = serve_ws(server.clone()).await;
    let mut ws = RawWs::connect(addr, "/", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"block"}"#).await;
    eventually(|| gate.entered.load(Ordering::SeqCst) == 1).await;
    // Two calls behind the running notification: one fills the peer's input, one waits in the
    // pump. Neither can be taken until the handler ends, which it never does.
    ws.send_text(&call(1, "add", "[1,2]")).await;
    let (mut pings, mut code) = (0, None);
    bounded(async {
        while let Some(frame) = ws.next_frame().await {
            match frame.opcode {
                PING => pings += 1,
                CLOSE => {
                    code = Some(frame.close_code());
                    break;
                }
                other => panic!("unexpected frame {other}"),
            }
        }
    })
    .await;
    assert!(pings >= 1, "no ping while the peer was paused");
    assert_eq!(code, Some(1000));
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

/// A client that pipelines calls for 10 MB of answers and never reads: the connection is dropped
/// once a reply has waited `write_timeout`, holding little meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_client_that_never_reads_is_cut_by_the_write_timeout() {
    // It measures this process's memory, which other tests would add to.
    if !alone(
        module_path!(),
        "an_http_client_that_never_reads_is_cut_by_the_write_timeout",
    ) {
        return;
    }
    let (methods, _) = methods(&Gate::shared());
    let server = HttpServer::builder(methods)
        .write_timeout(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let (addr, _) = serve_http(server.clone()).await;
    let before = rss();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = post_json(&call(1, "big", "[100000]"));
    let writing = tokio::spawn(async move {
        // The server stops reading once its reply waits; so do these writes, until it drops us.
        for _ in 0..100 {
            if stream.write_all(&request).await.is_err() {
                break;
            }
        }
        stream
    });
    eventually(|| server.shutdown_handle().connections() == 0).await;
    if let (Some(before), Some(after)) = (before, rss()) {
        let grown = after.saturating_sub(before);
        assert!(grown < 16 << 20, "grew by {grown} bytes");
    }
    writing.abort();
}

/// An answer over `max_message_size` is not sent: the call is answered `-32008` with its id,
/// and the connection goes on.
#[tokio::test]
async fn an_http_answer_over_the_cap_is_an_error_answer_with_its_id() {
    let (methods, _) = methods(&Gate::shared());
    let server = HttpServer::builder(methods)
        .max_message_size(1000)
        .max_buffered(2000)
        .build()
        .unwrap();
    let (addr, _) = serve_http(server).await;
    let mut conn = Conn::open(addr).await;
    let fits = conn.send(&post_json(&call(1, "big", "[900]"))).await;
    assert_eq!(fits.status, 200);
    let reply = conn.send(&post_json(&call(2, "big", "[1500]"))).await;
    assert_eq!(reply.status, 200);
    let answer = reply.json();
    assert_eq!(answer["error"]["code"], -32008, "{answer}");
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(
        answer["error"]["data"]
            .as_str()
            .is_some_and(|data| data.contains("max_message_size")),
        "{answer}"
    );
    let again = conn.send(&post_json(&call(3, "big", "[10]"))).await;
    assert_eq!(again.status, 200);
}

// ---------------------------------------------------------------------------------------------
// Streams (stdio, pipes)
// ---------------------------------------------------------------------------------------------

/// Over a stream whose reader is late, instant calls are never refused busy however many are
/// pipelined, and all are answered once the reader reads.
#[tokio::test]
async fn a_late_stream_reader_of_instant_calls_is_never_told_busy() {
    bounded(late_stream_reader()).await;
}

/// The same under a subscriber that records each request's span (at DEBUG).
#[test]
fn under_a_subscriber_a_late_stream_reader_is_never_told_busy() {
    logged(LevelFilter::DEBUG, FmtSpan::NONE, |_| late_stream_reader());
}

async fn late_stream_reader() {
    let mut methods = Methods::new();
    add(&mut methods);
    // Calls in through a roomy pipe, answers out through a tiny one: the answers back up.
    let (mut to_server, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, from_server) = tokio::io::duplex(64);
    let config = PeerConfig::builder()
        .max_in_flight(2)
        .queue(4)
        .build()
        .unwrap();
    let (_peer, driver) = Peer::connect_split(server_in, server_out, methods, config);
    tokio::spawn(driver);
    const CALLS: usize = 2000;
    for id in 0..CALLS {
        let line = call(id, "add", "[1,2]") + "\n";
        to_server.write_all(line.as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(from_server).lines();
    for _ in 0..CALLS {
        let line = lines.next_line().await.unwrap().expect("an answer");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["result"], 3, "{answer}");
    }
}

/// A stream whose other side stops reading: once a write has waited `write_timeout`, the loop
/// ends with an error naming it (time is paused: the deadline passes without waiting for it).
#[tokio::test(start_paused = true)]
async fn a_stream_that_is_not_read_is_cut_by_the_write_timeout() {
    let mut methods = Methods::new();
    big(&mut methods);
    let (mut client, server) = tokio::io::duplex(1024);
    let config = PeerConfig::builder()
        .write_timeout(Some(Duration::from_secs(30)))
        .build()
        .unwrap();
    let (_peer, driver) = Peer::connect(server, methods, config);
    let driver = tokio::spawn(driver);
    let line = call(1, "big", "[100000]") + "\n";
    client.write_all(line.as_bytes()).await.unwrap();
    let err = driver.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("write_timeout"), "{err}");
    drop(client);
}

/// Over a stream too, answers past the watermark are all written: none is refused.
#[tokio::test]
async fn stream_answers_past_the_watermark_are_all_written() {
    bounded(async {
        let gate = Gate::shared();
        let (methods, seen) = methods(&gate);
        let (client, server) = tokio::io::duplex(1 << 20);
        let (read, mut client) = tokio::io::split(client);
        let config = PeerConfig::builder()
            .max_message_size(10_000)
            .max_buffered(30_000)
            .build()
            .unwrap();
        let (_peer, driver) = Peer::connect(server, methods, config);
        tokio::spawn(driver);
        for id in 0..4 {
            let line = call(id, "held", "[8000]") + "\n";
            client.write_all(line.as_bytes()).await.unwrap();
        }
        eventually(|| gate.entered.load(Ordering::SeqCst) == 4).await;
        gate.release.add_permits(4);
        // 32 000 bytes of answers against a watermark of 30 000: all of them come.
        let mut lines = BufReader::new(read).lines();
        for _ in 0..4 {
            let line = lines.next_line().await.unwrap().expect("an answer");
            let answer: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(answer["result"].as_str().map(str::len), Some(8000));
        }
        assert!(overflowed(&seen).is_empty());
    })
    .await;
}

/// A call given up (by its timeout) while it waits for room in the queue gives its room in the
/// budget back: once the other side reads again, calls go through.
#[tokio::test(start_paused = true)]
async fn calls_given_up_while_waiting_give_their_room_back() {
    let (client, server) = tokio::io::duplex(256);
    let config = PeerConfig::builder()
        .queue(1)
        .max_message_size(1000)
        .max_buffered(100_000)
        .call_timeout(Some(Duration::from_secs(1)))
        .write_timeout(None)
        .build()
        .unwrap();
    let (peer, driver) = Peer::connect(client, Methods::new(), config);
    tokio::spawn(driver);
    // Nobody reads: the writer's buffer, the outbox and the queue fill, and each later call gives
    // up while it waits for the queue. 200 of them take twice the room there is.
    let padding = "p".repeat(900);
    for _ in 0..200 {
        let err = peer.call::<Value>("echo", [&padding]).await.unwrap_err();
        assert!(matches!(err, ClientError::TimedOut { .. }), "{err:?}");
    }
    // Now the other side reads, and answers every call `1`.
    let (read, mut write) = tokio::io::split(server);
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let call: Value = serde_json::from_str(&line).unwrap();
            let answer = serde_json::json!({"jsonrpc": "2.0", "result": 1, "id": call["id"]});
            write
                .write_all(format!("{answer}\n").as_bytes())
                .await
                .unwrap();
        }
    });
    let one: i64 = peer.call("echo", [&padding]).await.unwrap();
    assert_eq!(one, 1);
}
