//! `stdio::serve` and `stdio::spawn` over real pipes, with the `peer-echo` test binary (and `sh`
//! for children that misbehave) as the child process.
//!
//! Every test runs under [`bounded`], which fails it rather than let it hang; none asserts how
//! fast anything is.
#![cfg(unix)]

use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jrpc_runtime::{
    Caller as _, ClientError, Context, Framing, Methods, Peer, PeerConfig, RpcError, stdio,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::Command;
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);
const CHILD: &str = env!("CARGO_BIN_EXE_peer-echo");

/// Runs a test body, failing it if it does not finish within [`LIMIT`].
async fn bounded<T>(test: impl Future<Output = T>) -> T {
    jrpc_tests::bounded_by(LIMIT, test).await
}

fn child(args: &[&str]) -> Command {
    let mut command = Command::new(CHILD);
    command.args(args);
    command
}

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

/// Spawns `command` speaking `framing`, with no methods of ours and the default settings.
fn spawn_plain(command: Command, framing: Framing) -> Peer {
    stdio::spawn(
        command,
        Methods::new(),
        PeerConfig::default().with_framing(framing),
    )
    .unwrap()
}

/// The parent's methods: `answer [q]` answers `"re: q"`; `tick [n]` notifications are logged.
fn parent_methods(ticks: &Arc<Mutex<Vec<u32>>>) -> Methods {
    let mut methods = Methods::new();
    methods
        .register(
            "answer",
            &["question"],
            |(q,): (String,), _ctx| async move { Ok::<_, RpcError>(format!("re: {q}")) },
        )
        .unwrap();
    let ticks = Arc::clone(ticks);
    methods
        .register_notification("tick", &["n"], move |(n,): (u32,), _ctx| {
            let ticks = Arc::clone(&ticks);
            async move { ticks.lock().unwrap().push(n) }
        })
        .unwrap();
    methods
}

async fn talk(peer: &Peer, ticks: &Arc<Mutex<Vec<u32>>>) {
    let sum: i64 = peer.call("add", [2, 3]).await.unwrap();
    assert_eq!(sum, 5);
    let echoed: Value = peer
        .call("echo", json!({"a": [1, "x", null]}))
        .await
        .unwrap();
    assert_eq!(echoed, json!({"a": [1, "x", null]}));
    // The child's pushes arrive, and are handled, before its answer.
    let count: u32 = peer.call("ticks", [3]).await.unwrap();
    assert_eq!(count, 3);
    assert_eq!(*ticks.lock().unwrap(), [1, 2, 3]);
    // The child calls back into the parent's methods from inside its handler.
    let answer: String = peer.call("ask", ["why"]).await.unwrap();
    assert_eq!(answer, "re: why");
    let err = peer.call::<Value>("nope", ()).await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code().code()), Some(-32601));
}

/// Spawns the child with `args`, speaking `framing`, and runs [`talk`] with it.
async fn spawn_and_talk(args: &[&str], framing: Framing) {
    let ticks = Arc::new(Mutex::new(Vec::new()));
    let peer = stdio::spawn(
        child(args),
        parent_methods(&ticks),
        PeerConfig::default().with_framing(framing),
    )
    .unwrap();
    talk(&peer, &ticks).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_calls_a_child_with_lines() {
    bounded(spawn_and_talk(&[], Framing::Lines)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_calls_a_child_with_content_length() {
    bounded(spawn_and_talk(
        &["--content-length"],
        Framing::ContentLength,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_see_the_stdio_transport_both_ways() {
    bounded(async {
        let mut methods = Methods::new();
        methods
            .register(
                "answer",
                &["q"],
                |(_q,): (String,), ctx: Context| async move {
                    Ok::<_, RpcError>(ctx.transport().as_str().to_owned())
                },
            )
            .unwrap();
        let peer = stdio::spawn(
            child(&[]),
            methods,
            PeerConfig::default().with_framing(Framing::Lines),
        )
        .unwrap();
        let answer: String = peer.call("ask", ["transport?"]).await.unwrap();
        assert_eq!(answer, "stdio");
    })
    .await;
}

/// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
#[cfg(target_os = "linux")]
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| matches!(state, 'Z' | 'X')),
    }
}

/// Polls until process `pid` has ended. The kernel tells nothing when another process's child
/// ends, so this looks every 10 ms of the real clock; the period is not a budget (the test's
/// bound is), and no assertion depends on it.
#[cfg(target_os = "linux")]
async fn wait_until_ended(pid: u32) {
    while !ended(pid) {
        // Real clock: the child is a real process, which no virtual time or signal of ours ends.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_is_killed_when_the_last_handle_drops() {
    bounded(async {
        // `--linger` keeps the child alive for minutes after its input ends: only a kill ends it.
        let peer = spawn_plain(child(&["--linger"]), Framing::Lines);
        let pid: u32 = peer.call("pid", ()).await.unwrap();
        assert!(!ended(pid));
        let clone = peer.clone();
        drop(peer);
        let sum: i64 = clone.call("add", [1, 1]).await.unwrap();
        assert_eq!(sum, 2, "a clone keeps the child alive");
        drop(clone);
        wait_until_ended(pid).await;
    })
    .await;
}

/// Reports `"dropped"` when dropped.
struct DropGuard(mpsc::UnboundedSender<&'static str>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        let _ = self.0.send("dropped");
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_is_killed_when_the_last_handle_drops_while_it_calls_us() {
    bounded(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut methods = Methods::new();
        methods
            .register("answer", &["q"], move |(_q,): (String,), _ctx| {
                let tx = tx.clone();
                async move {
                    let _guard = DropGuard(tx.clone());
                    let _ = tx.send("started");
                    std::future::pending::<()>().await;
                    Ok::<_, RpcError>(())
                }
            })
            .unwrap();
        let peer = stdio::spawn(
            child(&["--linger"]),
            methods,
            PeerConfig::default().with_framing(Framing::Lines),
        )
        .unwrap();
        let pid: u32 = peer.call("pid", ()).await.unwrap();
        peer.notify("call_me", ()).await.unwrap();
        assert_eq!(rx.recv().await, Some("started"));
        // The child's call is still running here; no one can answer it once the handle is gone.
        drop(peer);
        assert_eq!(rx.recv().await, Some("dropped"));
        wait_until_ended(pid).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_fails_pending_calls() {
    bounded(async {
        let peer = spawn_plain(child(&[]), Framing::Lines);
        let (hang, quit) = tokio::join!(peer.call::<Value>("hang", ()), peer.notify("quit", ()));
        quit.unwrap();
        let err = hang.unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "hang"),
            "{err:?}"
        );
        assert!(peer.call::<Value>("add", [1, 2]).await.is_err());
        assert!(peer.is_closed());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_gone_mid_frame_fails_the_call() {
    bounded(async {
        // Reads the first header line of our call, answers half a frame, and exits.
        let script = r#"read line; printf 'Content-Length: 100\r\n\r\n{"jsonrpc":'"#;
        let peer = spawn_plain(sh(script), Framing::ContentLength);
        let err = peer.call::<Value>("initialize", ()).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "initialize"),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_writing_a_garbage_header_fails_the_call() {
    bounded(async {
        // `exec`: the kill on drop must reach the sleeping process, or it would outlive the test.
        let script = r#"read line; printf 'this is no header\r\n\r\n'; exec sleep 600"#;
        let peer = spawn_plain(sh(script), Framing::ContentLength);
        let err = peer.call::<Value>("initialize", ()).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "initialize"),
            "{err:?}"
        );
        assert!(peer.is_closed());
    })
    .await;
}

/// Runs `peer-echo` with `args` on `input`; returns its exit status and output.
async fn serve_once(args: &[&str], input: &[u8]) -> (std::process::ExitStatus, String) {
    let mut command = child(args);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut process = command.spawn().unwrap();
    let mut stdin = process.stdin.take().unwrap();
    stdin.write_all(input).await.unwrap();
    drop(stdin);
    let mut output = String::new();
    let mut stdout = process.stdout.take().unwrap();
    stdout.read_to_string(&mut output).await.unwrap();
    (process.wait().await.unwrap(), output)
}

#[tokio::test]
async fn serve_answers_what_arrived_before_the_end_of_input() {
    bounded(async {
        // Real clock: `sleep` keeps a call running in the child, a real process, as input ends.
        let input = concat!(
            r#"{"jsonrpc":"2.0","method":"sleep","params":[50],"id":1}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2}"#,
            "\n",
            "not json\n",
        );
        let (status, output) = serve_once(&[], input.as_bytes()).await;
        assert!(status.success(), "{status}");
        let mut answers: Vec<Value> = output
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        answers.sort_by_key(|answer| answer["id"].as_i64().unwrap_or(0));
        assert_eq!(answers.len(), 3, "{output}");
        assert_eq!(answers[0]["error"]["code"], -32700);
        assert_eq!(answers[1], json!({"jsonrpc": "2.0", "result": 50, "id": 1}));
        assert_eq!(answers[2], json!({"jsonrpc": "2.0", "result": 3, "id": 2}));
    })
    .await;
}

#[tokio::test]
async fn serve_fails_on_a_garbage_header() {
    bounded(async {
        let (status, output) = serve_once(&["--content-length"], b"garbage\r\n\r\n").await;
        assert!(!status.success(), "{status}");
        assert_eq!(output, "");
    })
    .await;
}
