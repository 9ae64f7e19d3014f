//! The calculator and calculator_client examples, as a user runs them: their command lines, method
//! set and output are a contract.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jrpc_runtime::http::HttpClient;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{Caller, ClientError, Methods};
use jrpc_tests::examples::Calculator;
use serde_json::{Value, json};

fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<std::collections::HashMap<String, PathBuf>, String>> =
        OnceLock::new();
    match BUILT.get_or_init(|| {
        jrpc_tests::build_examples(&[
            "calculator",
            "calculator_client",
            "lsp_server",
            "mcp_server",
            "axum_mount",
        ])
    }) {
        Ok(found) => found[name].clone(),
        Err(why) => panic!("{why}"),
    }
}

/// A calculator listening on a free port; killed on drop.
fn calculator() -> Calculator {
    Calculator::start(&example("calculator"))
}

const CLIENT_OUTPUT: &str = "add(2, 3) = 5\nsubtract(42, 23) = 19\nget_data() = [\"hello\",5]\ndivide(1, 0) = error 1: division by zero\nupdate([1, 2, 3]) sent\n";

#[test]
fn the_client_example_prints_its_contract_over_http_and_ws() {
    let server = calculator();
    for url in [
        format!("http://{}/rpc", server.addr),
        format!("ws://{}/ws", server.addr),
    ] {
        let output = Command::new(example("calculator_client"))
            .args(["--url", &url])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            CLIENT_OUTPUT,
            "{url}"
        );
    }
}

/// Runs `calculator_client` with `args`, within a time limit.
fn run_client(args: &[&str]) -> std::process::Output {
    jrpc_tests::process::run_bounded(
        Command::new(example("calculator_client")).args(args),
        Duration::from_secs(30),
    )
    .unwrap_or_else(|why| panic!("{why}"))
}

#[test]
fn the_client_example_prints_its_contract_over_https_wss_and_unix() {
    let certs = jrpc_tests::tls::Certs::localhost();
    let (cert, key) = (certs.cert.to_str().unwrap(), certs.key.to_str().unwrap());
    let mut server = Calculator::start_as(
        &example("calculator"),
        &[
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ],
        "https://",
    );
    for url in [
        format!("https://{}/rpc", server.addr),
        format!("wss://{}/ws", server.addr),
    ] {
        let output = run_client(&["--url", &url, "--ca", cert]);
        assert!(
            output.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            CLIENT_OUTPUT,
            "{url}"
        );

        // Without `--ca` the self-signed certificate is nobody's: a prompt failure that says so.
        let output = run_client(&["--url", &url]);
        assert!(!output.status.success(), "{url} without --ca succeeded");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("certificate"), "{url}: {stderr}");
        assert!(!stderr.contains("not supported"), "{url}: {stderr}");
    }
    server.assert_alive();

    let socket = certs.dir().join("calc.sock");
    let socket = socket.to_str().unwrap();
    let mut unix = Calculator::start_as(&example("calculator"), &["--unix", socket], "unix:");
    assert_eq!(unix.addr, socket);
    let output = run_client(&["--url", &format!("unix:{socket}")]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), CLIENT_OUTPUT);
    unix.assert_alive();
}

#[tokio::test]
async fn whoami_and_ticks_over_a_unix_socket() {
    let dir = jrpc_tests::tls::Certs::localhost();
    let socket = dir.dir().join("calc.sock");
    let socket = socket.to_str().unwrap().to_owned();
    let _server = Calculator::start_as(&example("calculator"), &["--unix", &socket], "unix:");
    jrpc_tests::bounded_by(Duration::from_secs(30), async {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut methods = Methods::new();
        let sink = Arc::clone(&seen);
        methods
            .register_notification("tick", &["n"], move |(n,): (u32,), _| {
                sink.lock().unwrap().push(n);
                async {}
            })
            .unwrap();
        let client = jrpc_runtime::Client::builder(format!("unix:{socket}"))
            .methods(methods)
            .connect()
            .await
            .unwrap();
        let who: String = client.call("whoami", ()).await.unwrap();
        assert_eq!(who, "unix");
        let count: u32 = client.call("ticks", [3]).await.unwrap();
        assert_eq!(count, 3);
        assert_eq!(*seen.lock().unwrap(), [1, 2, 3]);
    })
    .await;
}

#[test]
fn unknown_flags_are_an_error_with_a_usage_line_in_every_example() {
    for name in [
        "calculator",
        "calculator_client",
        "lsp_server",
        "mcp_server",
        "axum_mount",
    ] {
        let output = jrpc_tests::process::run_bounded(
            Command::new(example(name)).arg("--no-such-flag"),
            Duration::from_secs(30),
        )
        .unwrap_or_else(|why| panic!("{why}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains("--no-such-flag"), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("usage: {name}")),
            "{name}: {stderr}"
        );
    }
    // A flag that needs a value, given none.
    let output = run_client(&["--url"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`--url` needs a value"));
}

#[test]
fn stdio_mode_answers_the_readme_line() {
    let mut child = Command::new(example("calculator"))
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[42,23],\"id\":1}\n").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["error"]["code"], -32700);
    assert_eq!(lines[1], json!({"jsonrpc": "2.0", "result": 19, "id": 1}));
}

#[tokio::test]
async fn whoami_and_ticks_over_http_and_ws() {
    let server = calculator();
    jrpc_tests::bounded_by(Duration::from_secs(30), async {
        let http = HttpClient::new(&format!("http://{}/rpc", server.addr)).unwrap();
        let who = http.call_raw("whoami", None).await.unwrap();
        assert_eq!(who.get(), r#""http""#);
        let ticks = http
            .call_raw("ticks", serde_json::value::to_raw_value(&[2]).ok())
            .await;
        assert!(matches!(ticks, Err(ClientError::Failed(_))), "{ticks:?}");

        // Over WebSocket the ticks arrive before the answer.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut methods = Methods::new();
        let sink = Arc::clone(&seen);
        methods
            .register_notification("tick", &["n"], move |(n,): (u32,), _| {
                sink.lock().unwrap().push(n);
                async {}
            })
            .unwrap();
        let ws = WsClient::connect(&format!("ws://{}/ws", server.addr), methods)
            .await
            .unwrap();
        let who = ws.call_raw("whoami", None).await.unwrap();
        assert_eq!(who.get(), r#""ws""#);
        let count = ws
            .call_raw("ticks", serde_json::value::to_raw_value(&[3]).ok())
            .await
            .unwrap();
        assert_eq!(count.get(), "3");
        assert_eq!(*seen.lock().unwrap(), [1, 2, 3]);
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Discovery: `--openrpc` and `rpc.discover`

/// Every method the calculator serves, in the order of its trait.
const METHODS: [&str; 14] = [
    "add",
    "subtract",
    "sum",
    "get_data",
    "divide",
    "echo",
    "sleep",
    "whoami",
    "ticks",
    "watch",
    "announce",
    "update",
    "notify_hello",
    "notify_sum",
];

/// `calculator --openrpc`: the document, after the process exited 0.
fn printed_document() -> Value {
    let output = Command::new(example("calculator"))
        .arg("--openrpc")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--openrpc prints JSON")
}

#[test]
fn openrpc_prints_the_pinned_document_and_exits_0() {
    let document = printed_document();
    jrpc_tests::examples::bless_openrpc_snapshot(&document);
    assert_eq!(
        document,
        jrpc_tests::examples::openrpc_snapshot(),
        "the calculator's document changed: if on purpose, run with JRPC_BLESS=1 to pin it in tests/{}",
        jrpc_tests::examples::OPENRPC_SNAPSHOT
    );
    let openrpc = document["openrpc"].as_str().unwrap_or_default();
    assert!(["1.3.0", "1.3.1", "1.3.2"].contains(&openrpc), "{openrpc}");
    let names: Vec<&str> = document["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .filter_map(|method| method["name"].as_str())
        .collect();
    assert_eq!(names, METHODS);
    let add = &document["methods"][0];
    assert_eq!(
        add["params"],
        json!([
            { "name": "a", "required": true, "schema": { "type": "integer", "format": "int64" } },
            { "name": "b", "required": true, "schema": { "type": "integer", "format": "int64" } },
        ])
    );
    assert_eq!(add["result"]["schema"]["type"], "integer");
    assert_eq!(add["summary"], "Adds two integers.");
    for notification in ["update", "notify_hello", "notify_sum"] {
        let method = document["methods"]
            .as_array()
            .and_then(|methods| methods.iter().find(|m| m["name"] == notification))
            .unwrap();
        assert_eq!(method.get("result"), None, "{notification} answers nothing");
    }
}

/// One `rpc.discover` over the calculator's stdio, in either framing.
fn discover_over_stdio(content_length: bool) -> Value {
    let request = r#"{"jsonrpc":"2.0","method":"rpc.discover","id":7}"#;
    let mut command = Command::new(example("calculator"));
    command.arg("--stdio");
    let input = if content_length {
        command.arg("--content-length");
        format!("Content-Length: {}\r\n\r\n{request}", request.len())
    } else {
        format!("{request}\n")
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let body = if content_length {
        text.split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .unwrap_or("")
    } else {
        text.trim_end()
    };
    let answer: Value = serde_json::from_str(body).unwrap_or_else(|err| panic!("{err}: {text}"));
    assert_eq!(answer["id"], 7);
    answer["result"].clone()
}

#[tokio::test]
async fn rpc_discover_answers_the_document_on_every_transport() {
    let expected = printed_document();
    let server = calculator();
    jrpc_tests::bounded_by(Duration::from_secs(30), async {
        let http = HttpClient::new(&format!("http://{}/rpc", server.addr)).unwrap();
        let over_http: Value = http.call("rpc.discover", ()).await.unwrap();
        assert_eq!(over_http, expected, "http");
        let ws = WsClient::connect(&format!("ws://{}/ws", server.addr), Methods::new())
            .await
            .unwrap();
        let over_ws: Value = ws.call("rpc.discover", ()).await.unwrap();
        assert_eq!(over_ws, expected, "ws");
    })
    .await;
    assert_eq!(discover_over_stdio(false), expected, "stdio");
    assert_eq!(
        discover_over_stdio(true),
        expected,
        "stdio --content-length"
    );
}
