//! The examples' exit status: when the drain time runs out with calls still in flight, they say
//! so and exit non-zero, over stdio (at the end of input) and over the network (on Ctrl-C).

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use jrpc_tests::examples::Calculator;
use jrpc_tests::process::run_bounded;
use jrpc_tests::raw_ws::RawWs;

fn calculator() -> PathBuf {
    static BUILT: OnceLock<Result<std::collections::HashMap<String, PathBuf>, String>> =
        OnceLock::new();
    match BUILT.get_or_init(|| jrpc_tests::build_examples(&["calculator"])) {
        Ok(found) => found["calculator"].clone(),
        Err(why) => panic!("{why}"),
    }
}

/// Runs `calculator --stdio --drain-timeout 0` on `input`: its exit code, stdout and stderr.
fn stdio_without_drain_time(input: &str) -> (Option<i32>, String, String) {
    let mut child = Command::new(calculator())
        .args(["--stdio", "--drain-timeout", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Dropped once written: the end of input.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let status = jrpc_tests::process::wait_bounded(&mut child, jrpc_tests::LIMIT);
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.and_then(|s| s.code()), stdout, stderr)
}

/// A long `sleep` call over stdio, then the end of input: with no drain time the call is dropped,
/// and the exit status says so; with the call finished in time, it is 0.
#[test]
fn stdio_exits_1_when_the_drain_time_runs_out_with_a_call_running() {
    let sleep = "{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":[60000],\"id\":1}\n";
    let (code, _, stderr) = stdio_without_drain_time(sleep);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("drain time"), "{stderr}");
    assert!(stderr.contains("1 calls unanswered"), "{stderr}");

    // A call that finishes before the input ends leaves nothing to drain.
    let quick = "{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2],\"id\":1}\n";
    let (code, stdout, stderr) = stdio_without_drain_time(quick);
    assert!(stdout.contains("\"result\":3"), "{stdout}");
    assert_eq!(code, Some(0), "{stderr}");
    // A bad value is refused before anything is served.
    let refused = run_bounded(
        Command::new(calculator()).args(["--stdio", "--drain-timeout", "soon"]),
        jrpc_tests::LIMIT,
    )
    .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}

/// A WebSocket call in flight when Ctrl-C comes, longer than the drain time: exit 1 with a
/// message.
#[tokio::test]
async fn the_network_server_exits_1_when_ctrl_c_leaves_a_call_past_the_drain_time() {
    let mut server = Calculator::start_with(&calculator(), &["--drain-timeout", "0.2"]);
    let addr = server.addr.parse().unwrap();
    let mut ws = RawWs::connect(addr, "/ws", &[]).await;
    ws.send_text(r#"{"jsonrpc":"2.0","method":"sleep","params":[60000],"id":1}"#)
        .await;
    // Calls start in the order they are read: once `add` is answered, `sleep` runs.
    ws.send_text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2}"#)
        .await;
    assert_eq!(ws.next_json().await["result"], 3);
    let code = tokio::task::spawn_blocking(move || {
        let code = server.interrupt(jrpc_tests::LIMIT);
        (code, server.stderr())
    })
    .await
    .unwrap();
    assert_eq!(code.0, Some(1), "{}", code.1);
    assert!(
        code.1
            .contains("the drain time ran out with 0 HTTP calls in flight and 1 connections open"),
        "{}",
        code.1
    );
    drop(ws);
}
