//! The calculator's contract around every call, against the example binary: over WebSocket and
//! stdio `$/cancelRequest {"id": ID}` drops that call's handler and the call is answered `-32800`
//! at once; an HTTP client that closes its connection cancels its calls (that the handler ran
//! before is seen from its first pushed event, not guessed); with `RUST_LOG=debug`
//! each request's line carries the incoming `traceparent`'s trace id; `calculator_client` sends
//! one on its calls.
//!
//! A dropped handler shows from outside: its request's line says `outcome=cancelled`, and a
//! server that ends (end of input, Ctrl-C) has nothing left to drain, so it exits 0 at once rather
//! than wait out its drain time and exit 1.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use jrpc_tests::examples::Calculator;
use jrpc_tests::process::{Capture, wait_bounded};
use jrpc_tests::raw_http::{Conn, post};
use jrpc_tests::raw_ws::RawWs;
use serde_json::{Value, json};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// An hour: a `sleep` that only a cancellation ends.
const AN_HOUR: u64 = 3_600_000;

fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<std::collections::HashMap<String, PathBuf>, String>> =
        OnceLock::new();
    match BUILT.get_or_init(|| jrpc_tests::build_examples(&["calculator", "calculator_client"])) {
        Ok(found) => found[name].clone(),
        Err(why) => panic!("{why}"),
    }
}

/// A calculator on a free port, logging each request (`RUST_LOG=debug`).
fn logged_calculator() -> Calculator {
    Calculator::start_in(
        &example("calculator"),
        &["--listen", "127.0.0.1:0"],
        "http://",
        &[("RUST_LOG", "jrpc_runtime=debug")],
    )
}

/// Waits until the calculator has logged a request line with every one of `parts`.
async fn logged(server: &Calculator, parts: &[&str]) {
    jrpc_tests::eventually(|| {
        server
            .stderr()
            .lines()
            .any(|line| line.contains(" request ") && parts.iter().all(|part| line.contains(part)))
    })
    .await;
}

#[tokio::test]
async fn cancel_request_over_websocket_drops_the_call_and_answers_at_once() {
    let mut server = logged_calculator();
    let addr = server.addr.parse().unwrap();
    let mut ws = RawWs::connect(addr, "/ws", &[]).await;
    ws.send_text(
        &json!({"jsonrpc": "2.0", "method": "sleep", "params": [AN_HOUR], "id": 1}).to_string(),
    )
    .await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#)
        .await;
    let answer = ws.next_json().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    logged(
        &server,
        &["method=sleep", "transport=ws", "outcome=cancelled"],
    )
    .await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":2}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], 5);
    assert_eq!(
        server.interrupt(Duration::from_secs(20)),
        Some(0),
        "{}",
        server.stderr()
    );
}

#[tokio::test]
async fn an_http_client_that_closes_its_connection_cancels_its_call() {
    let mut server = logged_calculator();
    let addr = server.addr.parse().unwrap();
    let mut conn = Conn::open(addr).await;
    // A batch over an event stream: `ticks(1)`'s tick, pushed while `sleep` runs beside it, says
    // the batch is in hand (a call whose client closes before the server reads it never starts,
    // and would prove nothing).
    let batch = json!([
        {"jsonrpc": "2.0", "method": "ticks", "params": [1], "id": 1},
        {"jsonrpc": "2.0", "method": "sleep", "params": [AN_HOUR], "id": 2},
    ]);
    conn.write(&post(
        "/rpc",
        Some("application/json"),
        "accept: text/event-stream\r\n",
        &batch.to_string(),
    ))
    .await;
    assert_eq!(conn.read_head().await.status, 200);
    let mut pending = String::new();
    let tick = conn.read_event(&mut pending).await.unwrap();
    assert!(tick.contains(r#""method":"tick""#), "{tick}");
    drop(conn);
    // Nothing left running: the end drains nothing and exits 0 at once (a `sleep` still running
    // would hold it for the 30 s drain time, then make it exit 1).
    assert_eq!(
        server.interrupt(Duration::from_secs(20)),
        Some(0),
        "{}",
        server.stderr()
    );
}

#[tokio::test]
async fn the_request_line_carries_the_incoming_trace_id() {
    let server = logged_calculator();
    let addr = server.addr.parse().unwrap();
    let mut conn = Conn::open(addr).await;
    let body = r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#;
    let headers = format!("traceparent: {TRACEPARENT}\r\n");
    conn.write(&post("/rpc", Some("application/json"), &headers, body))
        .await;
    assert_eq!(conn.read_reply().await.json()["result"], 3);
    logged(&server, &["method=add", &format!("trace_id={TRACE_ID}")]).await;
    // Over WebSocket, the upgrade's.
    let mut ws = RawWs::connect(addr, "/ws", &[("traceparent", TRACEPARENT)]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], "ws");
    logged(&server, &["method=whoami", &format!("trace_id={TRACE_ID}")]).await;
}

#[tokio::test]
async fn the_client_example_sends_traceparent_on_its_calls() {
    let server = logged_calculator();
    for url in [
        format!("http://{}/rpc", server.addr),
        format!("ws://{}/ws", server.addr),
    ] {
        let output = jrpc_tests::process::run_bounded(
            Command::new(example("calculator_client")).args([
                "--url",
                &url,
                "--traceparent",
                TRACEPARENT,
            ]),
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let transport = if url.starts_with("ws") {
            "transport=ws"
        } else {
            "transport=http"
        };
        // (Its last message, a notification, may still be queued when it exits and closes a
        // WebSocket: only calls, which it waits for, are sure to arrive.)
        for method in ["method=add", "method=subtract", "method=divide"] {
            logged(
                &server,
                &[method, transport, &format!("trace_id={TRACE_ID}")],
            )
            .await;
        }
    }
    // Without `--traceparent`, a trace of its own, one for all its calls.
    let before = server.stderr().lines().count();
    let output = jrpc_tests::process::run_bounded(
        Command::new(example("calculator_client"))
            .args(["--url", &format!("http://{}/rpc", server.addr)]),
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(output.status.success());
    jrpc_tests::eventually(|| {
        server
            .stderr()
            .lines()
            .skip(before)
            .any(|line| line.contains(" request method=divide"))
    })
    .await;
    let text = server.stderr();
    let ids: std::collections::HashSet<&str> = text
        .lines()
        .skip(before)
        .filter(|line| line.contains(" request "))
        .filter_map(|line| line.split("trace_id=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert_eq!(ids.len(), 1, "{text}");
    assert!(!ids.contains(TRACE_ID));
}

/// On stdio, one message a line and with `--content-length`.
#[test]
fn cancel_request_over_stdio_drops_the_call_and_answers_at_once() {
    for extra in [None, Some("--content-length")] {
        let mut args = vec!["--stdio"];
        args.extend(extra);
        let mut child = Command::new(example("calculator"))
            .args(&args)
            .env("RUST_LOG", "jrpc_runtime=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = Capture::start(child.stderr.take().unwrap());
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let framed = |message: Value| {
            let text = message.to_string();
            match extra {
                None => format!("{text}\n"),
                Some(_) => format!("Content-Length: {}\r\n\r\n{text}", text.len()),
            }
        };
        let read = |stdout: &mut BufReader<std::process::ChildStdout>| -> Value {
            let mut line = String::new();
            if extra.is_some() {
                // `Content-Length: N`, a blank line, then the body.
                stdout.read_line(&mut line).unwrap();
                let len: usize = line
                    .trim()
                    .strip_prefix("Content-Length: ")
                    .unwrap()
                    .parse()
                    .unwrap();
                stdout.read_line(&mut String::new()).unwrap();
                let mut body = vec![0; len];
                std::io::Read::read_exact(stdout, &mut body).unwrap();
                return serde_json::from_slice(&body).unwrap();
            }
            stdout.read_line(&mut line).unwrap();
            serde_json::from_str(&line).unwrap()
        };
        let sleep = json!({"jsonrpc": "2.0", "method": "sleep", "params": [AN_HOUR], "id": 1});
        let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}});
        let add = json!({"jsonrpc": "2.0", "method": "add", "params": [2, 3], "id": 2});
        stdin
            .write_all(format!("{}{}{}", framed(sleep), framed(cancel), framed(add)).as_bytes())
            .unwrap();
        stdin.flush().unwrap();
        let first = read(&mut stdout);
        assert_eq!(first["id"], 1, "{first}");
        assert_eq!(first["error"]["code"], -32800, "{first}");
        assert_eq!(read(&mut stdout)["result"], 5);
        // End of input: nothing left running, so it exits 0 (a `sleep` still running would hold
        // it for its drain time, then make it exit 1).
        drop(stdin);
        let status =
            wait_bounded(&mut child, Duration::from_secs(60)).expect("the calculator exits");
        stderr.wait();
        assert!(status.success(), "{status}\n{}", stderr.text());
        let text = stderr.text();
        assert!(
            text.lines()
                .any(|line| line.contains("method=sleep") && line.contains("outcome=cancelled")),
            "{text}"
        );
    }
}
