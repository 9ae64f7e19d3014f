//! Idle HTTP/1.1 keep-alive connections: parked after `free_idle_after` (hyper's connection and
//! its buffers dropped, the socket kept), served again by the client's next bytes, and still cut
//! at `header_read_timeout`; a connection busy with a request, with an answer a slow client is
//! still reading, or with an event stream that is quiet for a while, is neither parked nor cut,
//! and one the client asked to close is closed.

use std::time::Duration;

use jrpc_runtime::http::{HttpServer, HttpServerBuilder};
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use jrpc_tests::bounded;
use jrpc_tests::fixtures::{add, big};
use jrpc_tests::raw_http::{Conn, post, post_json};
use jrpc_tests::servers::connect_in_memory;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};
use tokio::time::Instant;

const ADD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[2,3]}"#;

/// `add`, and `pause [ms]`: pushes `tick`, waits `ms`, answers `ms`.
fn methods() -> Methods {
    let mut methods = Methods::new();
    add(&mut methods);
    big(&mut methods);
    methods
        .register("pause", &["ms"], |(ms,): (u64,), ctx: Context| async move {
            if let Some(peer) = ctx.peer() {
                peer.notify("tick", json!({ "n": 1 }))
                    .await
                    .map_err(|err| RpcError::new(3, err.to_string()))?;
            }
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })
        .unwrap();
    methods
}

/// Runs `test` against a server built by `settings`, given the server (which counts its parked
/// connections) and one connection to it over an in-memory pipe. Time is paused (the tests below
/// run with `start_paused`): it moves on, to the next timer, only when the client and the server
/// both wait, so every wait below is exact and takes no wall-clock time. The pipe keeps it so:
/// over loopback TCP, a delivery the kernel defers under load would let the clock run past a
/// server's timeout.
async fn with_server<F: Future<Output = ()>>(
    settings: impl FnOnce(HttpServerBuilder) -> HttpServerBuilder,
    test: impl FnOnce(HttpServer, Conn) -> F,
) {
    let server = settings(HttpServer::builder(methods())).build().unwrap();
    let conn = Conn::over(connect_in_memory(&server, 64 * 1024));
    bounded(test(server, conn)).await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_connection_is_parked_and_serves_its_next_requests() {
    with_server(
        |b| b.free_idle_after(Some(Duration::from_millis(20))),
        |server, mut conn| async move {
            assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(server.idle_frees(), 1);
            // Served again on the same socket, by a new hyper connection.
            assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(server.idle_frees(), 2);
            // Two requests written at once after a park: both answered, in order.
            let mut two = post_json(ADD);
            two.extend(post_json(
                r#"{"jsonrpc":"2.0","id":2,"method":"add","params":[4,4]}"#,
            ));
            conn.write(&two).await;
            assert_eq!(conn.read_reply().await.json()["result"], 5);
            assert_eq!(conn.read_reply().await.json()["result"], 8);
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_connection_is_kept_whole_without_free_idle_after() {
    with_server(
        |b| b.free_idle_after(None),
        |server, mut conn| async move {
            assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
            assert_eq!(server.idle_frees(), 0);
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_request_being_answered_is_not_parked() {
    with_server(
        |b| b.free_idle_after(Some(Duration::from_millis(20))),
        |server, mut conn| async move {
            let call = r#"{"jsonrpc":"2.0","id":3,"method":"pause","params":[300]}"#;
            let reply = conn.send(&post_json(call)).await;
            assert_eq!(reply.json()["result"], 300);
            assert_eq!(reply.header("connection"), None);
            assert_eq!(server.idle_frees(), 0);
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_quiet_event_stream_is_not_parked_and_the_connection_goes_on() {
    with_server(
        |b| b.free_idle_after(Some(Duration::from_millis(20))),
        |server, mut conn| async move {
            let call = r#"{"jsonrpc":"2.0","id":4,"method":"pause","params":[300]}"#;
            let sse = "accept: application/json, text/event-stream\r\n";
            conn.write(&post("/rpc", Some("application/json"), sse, call))
                .await;
            let head = conn.read_head().await;
            assert_eq!(head.header("content-type"), Some("text/event-stream"));
            let mut pending = String::new();
            let tick = conn.read_event(&mut pending).await.unwrap();
            assert!(tick.contains("tick"), "{tick}");
            // The handler is quiet for 300 ms, many times `free_idle_after`.
            let answer = conn.read_event(&mut pending).await.unwrap();
            assert!(answer.contains(r#""result":300"#), "{answer}");
            assert_eq!(conn.read_event(&mut pending).await, None);
            assert_eq!(server.idle_frees(), 0);
            // Then idle, parked, and served again.
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(server.idle_frees(), 1);
            assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_head_trickled_after_a_park_is_cut_at_the_header_read_timeout() {
    with_server(
        |b| {
            b.free_idle_after(Some(Duration::from_millis(20)))
                .header_read_timeout(Duration::from_millis(400))
        },
        |server, mut conn| async move {
            assert_eq!(conn.send(&post_json(ADD)).await.json()["result"], 5);
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(server.idle_frees(), 1);
            // Part of a head, and no more: read, served, and cut once the timeout (counted from
            // the answer before) has passed, not kept open by parking it again.
            conn.write(b"POST /rpc HTTP/1.1\r\nhost: te").await;
            let started = Instant::now();
            assert!(conn.is_closed().await);
            assert!(started.elapsed() < Duration::from_secs(2));
            assert_eq!(server.idle_frees(), 1);
        },
    )
    .await;
}

/// An answer of 16 MiB, far more than the pipe holds: hyper writes it as the client reads.
const BIG: usize = 16 * 1024 * 1024;

/// Posts `big [BIG]` on a connection over a pipe of 64 KiB, with `extra` header lines, and
/// reads the answer's bytes as they come, 10 ms apart (over two seconds in all); returns the
/// client's end and how many bytes came (head and body) before the answer's end or the pipe's.
async fn read_big_slowly(server: &HttpServer, extra: &str) -> (DuplexStream, usize) {
    let mut stream = connect_in_memory(server, 64 * 1024);
    let call = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"big","params":[{BIG}]}}"#);
    stream
        .write_all(&post("/rpc", Some("application/json"), extra, &call))
        .await
        .unwrap();
    let mut read = Vec::with_capacity(BIG + 4096);
    let mut chunk = vec![0u8; 256 * 1024];
    while !read.ends_with(br#","id":5}"#) {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => read.extend_from_slice(&chunk[..n]),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (stream, read.len())
}

/// A server whose header read timeout (200 ms) is far shorter than a slow read of [`BIG`].
fn big_server() -> HttpServer {
    HttpServer::builder(methods())
        .free_idle_after(Some(Duration::from_millis(20)))
        .header_read_timeout(Duration::from_millis(200))
        .max_buffered(64 * 1024 * 1024)
        .max_message_size(32 * 1024 * 1024)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_answer_read_slowly_is_written_whole_past_the_header_read_timeout() {
    let server = big_server();
    bounded(async {
        // hyper's writes take over two seconds: the header read timeout (200 ms) counts from
        // the last of them, not from the end of the handler.
        let (_stream, read) = read_big_slowly(&server, "").await;
        assert!(read > BIG, "the answer was cut after {read} bytes");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_connection_the_client_asked_to_close_is_closed_not_parked() {
    let server = big_server();
    bounded(async {
        let (mut stream, read) = read_big_slowly(&server, "connection: close\r\n").await;
        assert!(read > BIG, "the answer was cut after {read} bytes");
        // Closed once the answer is out, before the header read timeout could (on the paused
        // clock, no time passes until then).
        let answered = Instant::now();
        let mut byte = [0u8; 1];
        let closed = stream.read(&mut byte).await;
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
        assert!(answered.elapsed() < Duration::from_millis(200));
        assert_eq!(server.idle_frees(), 0);
    })
    .await;
}
