//! The `calculator` example over the network, driven by clients nobody here wrote:
//!
//! - `curl`, for what HTTP itself says (status codes, `Allow`, content types);
//! - the `json-rpc-2.0` npm package's client over HTTP (Node's `fetch`) and over a WebSocket of
//!   the `ws` package, plus raw `ws` frames (binary frames, notifications that must get no frame),
//!   run by `tests/interop/http.mjs` and `tests/interop/ws.mjs`.
//!
//! Without `curl`, or without `node` or `tests/interop/node_modules` (`npm ci --prefix
//! tests/interop`), the tests print why they are skipped and pass. Each test starts its own
//! calculator on `127.0.0.1:0`, killed when the test ends; every child process runs under a time
//! limit and is killed when it is exceeded.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the calculator may take to print its address.
const START_LIMIT: Duration = Duration::from_secs(20);
/// How long one `curl` or `--version` may run.
const STEP_LIMIT: Duration = Duration::from_secs(20);
/// How long a whole Node driver may run.
const NODE_LIMIT: Duration = Duration::from_secs(90);

fn calculator() -> &'static Path {
    static BUILT: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();
    match BUILT.get_or_init(|| jrpc_tests::build_examples(&["calculator"])) {
        Ok(found) => &found["calculator"],
        Err(why) => panic!("{why}"),
    }
}

/// A calculator listening on a free port of 127.0.0.1; killed on drop.
struct Server {
    child: Child,
    addr: String,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(calculator())
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("could not start the calculator: {err}"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        {
            let stderr = Arc::clone(&stderr);
            let mut pipe = child.stderr.take().expect("piped stderr");
            thread::spawn(move || {
                let mut chunk = [0; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    stderr.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
            });
        }
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, first_line) = mpsc::channel();
        thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            let _ = tx.send(stdout.read_line(&mut line).map(|_| line));
            // Keep reading, so the server never blocks on a full pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let mut server = Server {
            child,
            addr: String::new(),
            stderr,
        };
        let line = match first_line.recv_timeout(START_LIMIT) {
            Ok(Ok(line)) => line,
            Ok(Err(err)) => panic!("reading the calculator's stdout: {err}"),
            Err(_) => panic!(
                "the calculator printed no address within {START_LIMIT:?}\n{}",
                server.stderr()
            ),
        };
        server.addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}\n{}", server.stderr()))
            .to_owned();
        server
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Asserts the server is still running (a client must not have brought it down).
    fn assert_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("the calculator exited ({status})\n{}", self.stderr());
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` to completion with its output captured; kills it past `limit`.
fn run_bounded(command: &mut Command, limit: Duration) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("could not start {command:?}: {err}"))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_bounded(&mut child, limit);
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        None => Err(format!(
            "{command:?} did not finish within {limit:?}; killed.\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )),
    }
}

/// Reads a pipe to its end on a thread of its own.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut out);
        }
        out
    })
}

/// Waits for `child` up to `limit`; kills it and answers `None` past it.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Node: json-rpc-2.0 and ws

const NODE_PACKAGES: [&str; 2] = ["json-rpc-2.0", "ws"];

/// The interop directory, or why the Node tests cannot run here.
fn node_setup() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop");
    let node = run_bounded(Command::new("node").arg("--version"), STEP_LIMIT)
        .map_err(|_| "`node` is not installed".to_owned())?;
    if !node.status.success() {
        return Err("`node --version` failed".to_owned());
    }
    for package in NODE_PACKAGES {
        if !dir.join("node_modules").join(package).is_dir() {
            return Err(format!(
                "{package} is not installed in tests/interop/node_modules (run `npm ci --prefix tests/interop`)"
            ));
        }
    }
    Ok(dir)
}

/// Runs `tests/interop/<script>` against a fresh calculator and asserts it succeeds.
fn run_node(script: &str) {
    let dir = match node_setup() {
        Ok(dir) => dir,
        Err(why) => {
            eprintln!("skipped: {script}: {why}");
            return;
        }
    };
    let mut server = Server::start();
    let output = run_bounded(
        Command::new("node")
            .current_dir(&dir)
            .arg(dir.join(script))
            .arg(&server.addr),
        NODE_LIMIT,
    )
    .unwrap_or_else(|why| panic!("{why}\n--- calculator's stderr\n{}", server.stderr()));
    assert!(
        output.status.success(),
        "node {script} failed ({}):\n--- stdout\n{}\n--- stderr\n{}\n--- calculator's stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
    server.assert_alive();
}

#[test]
fn http_with_the_json_rpc_2_0_client() {
    run_node("http.mjs");
}

#[test]
fn ws_with_the_json_rpc_2_0_client_and_raw_ws_frames() {
    run_node("ws.mjs");
}

// ---------------------------------------------------------------------------------------------
// curl

/// What one `curl` exchange came back with.
struct Response {
    status: u16,
    /// Header names in lower case.
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {:?}", self.body))
    }
}

/// Runs `curl` with `args` (plus options that print the response's headers before its body)
/// against `url`.
fn curl(url: &str, args: &[&str]) -> Response {
    let output = run_bounded(
        Command::new("curl")
            .args([
                "--silent",
                "--show-error",
                "--max-time",
                "10",
                "--dump-header",
                "-",
            ])
            .args(args)
            .arg(url),
        STEP_LIMIT,
    )
    .unwrap_or_else(|why| panic!("{why}"));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "curl {args:?} {url} failed ({}): {}\n{text}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {text:?}"));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `curl -X POST` of `body` as JSON.
fn post_json(url: &str, body: &Value) -> Response {
    curl(
        url,
        &[
            "--request",
            "POST",
            "--header",
            "Content-Type: application/json",
            "--data-binary",
            &body.to_string(),
        ],
    )
}

fn curl_available() -> bool {
    run_bounded(Command::new("curl").arg("--version"), STEP_LIMIT)
        .is_ok_and(|output| output.status.success())
}

#[test]
fn http_with_curl() {
    if !curl_available() {
        eprintln!("skipped: curl not found");
        return;
    }
    let mut server = Server::start();
    let url = format!("http://{}/rpc", server.addr);

    let call = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "add", "params": [2, 3] }),
    );
    assert_eq!(call.status, 200, "{}", call.body);
    assert!(
        call.header("content-type")
            .is_some_and(|value| value.starts_with("application/json")),
        "{:?}",
        call.headers
    );
    assert_eq!(
        call.json(),
        json!({ "jsonrpc": "2.0", "result": 5, "id": 1 })
    );

    let named = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "id": "s", "method": "subtract",
                 "params": { "subtrahend": 23, "minuend": 42 } }),
    );
    assert_eq!(
        (named.status, named.json()),
        (200, json!({ "jsonrpc": "2.0", "result": 19, "id": "s" }))
    );

    let error = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "divide",
                 "params": { "dividend": 1, "divisor": 0 } }),
    );
    assert_eq!(error.status, 200, "an error answer is still 200");
    assert_eq!(
        error.json(),
        json!({ "jsonrpc": "2.0", "error": { "code": 1, "message": "division by zero" }, "id": 2 })
    );

    let batch = post_json(
        &url,
        &json!([
            { "jsonrpc": "2.0", "id": 1, "method": "whoami" },
            { "jsonrpc": "2.0", "method": "notify_hello", "params": [7] },
            { "jsonrpc": "2.0", "id": 2, "method": "get_data" },
        ]),
    );
    assert_eq!(batch.status, 200, "{}", batch.body);
    let mut answers = batch.json().as_array().cloned().expect("an array");
    answers.sort_by_key(|answer| answer["id"].as_i64());
    assert_eq!(
        answers,
        [
            json!({ "jsonrpc": "2.0", "result": "http", "id": 1 }),
            json!({ "jsonrpc": "2.0", "result": ["hello", 5], "id": 2 }),
        ]
    );

    let notification = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "method": "update", "params": [1, 2, 3] }),
    );
    assert_eq!(
        (notification.status, notification.body.as_str()),
        (204, ""),
        "a notification gets 204 and no body"
    );

    let get = curl(&url, &[]);
    assert_eq!(get.status, 405, "{}", get.body);
    let allow = get.header("allow").unwrap_or_default();
    assert!(
        allow.split(',').any(|method| method.trim() == "POST"),
        "Allow: {allow:?} in {:?}",
        get.headers
    );

    let text = curl(
        &url,
        &[
            "--request",
            "POST",
            "--header",
            "Content-Type: text/plain",
            "--data-binary",
            r#"{"jsonrpc":"2.0","id":3,"method":"add","params":[2,3]}"#,
        ],
    );
    assert_eq!(text.status, 415, "{}", text.body);

    // Still serving after all that.
    let after = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "id": 4, "method": "add", "params": [20, 22] }),
    );
    assert_eq!(after.json()["result"], 42);
    server.assert_alive();
}
