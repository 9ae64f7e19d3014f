//! The `calculator` example over the network, driven by clients nobody here wrote:
//!
//! - `curl`, for what HTTP itself says (status codes, `Allow`, content types);
//! - the `json-rpc-2.0` npm package's client over HTTP (Node's `fetch`) and over a WebSocket of
//!   the `ws` package, plus raw `ws` frames (binary frames, notifications that must get no frame),
//!   run by `tests/interop/http.mjs` and `tests/interop/ws.mjs`;
//! - `eventsource-parser` reading an SSE answer (`tests/interop/sse.mjs`), and the MCP TypeScript
//!   SDK's Streamable HTTP client against `mcp_server --http` (`tests/interop/mcp_http.mjs`);
//! - the python MCP SDK's `Client` against `mcp_server --http` (`tests/interop/mcp_client.py`).
//!
//! Without `curl`, or without `node` or `tests/interop/node_modules` (`npm ci --prefix
//! tests/interop`), the tests fail under CI and elsewhere print why they are skipped and pass
//! (`jrpc_tests::tools`). Each test starts its own calculator on `127.0.0.1:0`, killed when the
//! test ends; every child process runs under a time limit and is killed when it is exceeded.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use jrpc_tests::examples::Calculator;
use jrpc_tests::process::run_bounded;
use jrpc_tests::raw_http::Reply;
use jrpc_tests::{node, tools};
use serde_json::{Value, json};

/// How long one `curl` (or `curl --version`) may run.
const STEP_LIMIT: Duration = Duration::from_secs(20);

fn calculator() -> &'static Path {
    static BUILT: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();
    match BUILT.get_or_init(|| jrpc_tests::build_examples(&["calculator"])) {
        Ok(found) => &found["calculator"],
        Err(why) => panic!("{why}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Node: json-rpc-2.0 and ws

const NODE_PACKAGES: [&str; 2] = ["json-rpc-2.0", "ws"];

/// Runs `tests/interop/<script>` against a fresh calculator and asserts it succeeds.
fn run_node(script: &str) {
    let mut server = Calculator::start(calculator());
    let addr = server.addr.clone();
    run_node_against(script, &NODE_PACKAGES, &mut server, &addr);
}

#[test]
fn http_with_the_json_rpc_2_0_client() {
    run_node("http.mjs");
}

#[test]
fn ws_with_the_json_rpc_2_0_client_and_raw_ws_frames() {
    run_node("ws.mjs");
}

/// `@open-rpc/client-js` asks the calculator for its document with `rpc.discover` and calls `add`
/// over HTTP, WebSocket and both stdio framings; `@open-rpc/schema-utils-js` validates the
/// document. It prints the document, which is the pinned one.
#[test]
fn openrpc_with_the_open_rpc_client_and_validator() {
    const SCRIPT: &str = "openrpc.mjs";
    let packages = ["@open-rpc/client-js", "@open-rpc/schema-utils-js"];
    let Some(dir) = tools::require(SCRIPT, node::setup(&packages)) else {
        return;
    };
    let mut server = Calculator::start(calculator());
    let output = node::run_with(
        &dir,
        SCRIPT,
        &[server.addr.as_ref(), calculator().as_os_str()],
    )
    .unwrap_or_else(|why| panic!("{why}\n--- calculator's stderr\n{}", server.stderr()));
    assert!(
        output.status.success(),
        "node {SCRIPT} failed ({}):\n--- stdout\n{}\n--- stderr\n{}\n--- calculator's stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
    let document: Value = serde_json::from_slice(&output.stdout).expect("the document, as JSON");
    assert_eq!(document["methods"][0]["name"], "add");
    let pinned = jrpc_tests::examples::openrpc_snapshot();
    assert_eq!(document, pinned);
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------------
// Node: SSE answers and MCP over Streamable HTTP

/// Runs `tests/interop/<script>` with `arg`, once `packages` are installed, and asserts it
/// succeeds; `server` is the example it drives.
fn run_node_against(script: &str, packages: &[&str], server: &mut Calculator, arg: &str) {
    let Some(dir) = tools::require(script, node::setup(packages)) else {
        return;
    };
    let output = node::run(&dir, script, arg)
        .unwrap_or_else(|why| panic!("{why}\n--- server's stderr\n{}", server.stderr()));
    assert!(
        output.status.success(),
        "node {script} failed ({}):\n--- stdout\n{}\n--- stderr\n{}\n--- server's stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
    server.assert_alive();
}

/// `eventsource-parser` reads the calculator's SSE answer to `ticks(3)`: three `tick` events in
/// order, then the answer; without the `Accept`, plain JSON.
#[test]
fn an_sse_answer_read_by_eventsource_parser() {
    let mut server = Calculator::start(calculator());
    let addr = server.addr.clone();
    run_node_against("sse.mjs", &["eventsource-parser"], &mut server, &addr);
}

/// The MCP TypeScript SDK's `StreamableHTTPClientTransport` against `mcp_server --http`:
/// connect, list the tools, call `add`, call `count` with three progress callbacks before its
/// result, ping, and end the session.
#[test]
fn mcp_over_streamable_http_with_the_typescript_sdk() {
    static BUILT: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();
    let exe = match BUILT.get_or_init(|| jrpc_tests::build_examples(&["mcp_server"])) {
        Ok(found) => &found["mcp_server"],
        Err(why) => panic!("{why}"),
    };
    let mut server = Calculator::spawn(exe, &["--http", "127.0.0.1:0"]);
    let url = format!("http://{}/mcp", server.addr);
    run_node_against(
        "mcp_http.mjs",
        &["@modelcontextprotocol/sdk"],
        &mut server,
        &url,
    );
}

/// The python MCP SDK's `Client` against `mcp_server --http`: it negotiates 2026-07-28 probing
/// (`auto`) and pinned, and the legacy handshake when asked.
#[test]
fn mcp_over_streamable_http_with_the_python_sdk() {
    static BUILT: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();
    let exe = match BUILT.get_or_init(|| jrpc_tests::build_examples(&["mcp_server"])) {
        Ok(found) => &found["mcp_server"],
        Err(why) => panic!("{why}"),
    };
    let mut server = Calculator::spawn(exe, &["--http", "127.0.0.1:0"]);
    let url = format!("http://{}/mcp", server.addr);
    crate::stdio::run_python_client("http", OsStr::new(&url), &|| server.stderr());
    server.assert_alive();
}

// ---------------------------------------------------------------------------------------------
// curl

/// Runs `curl` with `args` (plus options that print the response's headers before its body)
/// against `url`.
fn curl(url: &str, args: &[&str]) -> Reply {
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
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `curl -X POST` of `body` as JSON.
fn post_json(url: &str, body: &Value) -> Reply {
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

/// `curl`, or why it cannot run here; with `http2`, a `curl` that speaks HTTP/2 (built with
/// nghttp2).
fn curl_found(http2: bool) -> Result<(), String> {
    let version = run_bounded(Command::new("curl").arg("--version"), STEP_LIMIT)
        .map_err(|_| "`curl` is not installed".to_owned())?;
    if !version.status.success() {
        return Err("`curl --version` failed".to_owned());
    }
    if http2 && !String::from_utf8_lossy(&version.stdout).contains("HTTP2") {
        return Err("`curl` does not speak HTTP/2".to_owned());
    }
    Ok(())
}

#[test]
fn http_with_curl() {
    if tools::require("http_with_curl", curl_found(false)).is_none() {
        return;
    }
    let mut server = Calculator::start(calculator());
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

    let discover = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "id": 5, "method": "rpc.discover" }),
    );
    assert_eq!(discover.status, 200, "{}", discover.body);
    let document = &discover.json()["result"];
    assert_eq!(document["openrpc"], "1.3.2");
    assert_eq!(document["methods"][0]["name"], "add");

    // Still serving after all that.
    let after = post_json(
        &url,
        &json!({ "jsonrpc": "2.0", "id": 4, "method": "add", "params": [20, 22] }),
    );
    assert_eq!(after.json()["result"], 42);
    server.assert_alive();
}

/// `curl` with `args`, posting `add(2, 3)`: the status line and the body.
fn curl_add(url: &str, args: &[&str]) -> (String, Value) {
    let output = run_bounded(
        Command::new("curl")
            .args(["--silent", "--show-error", "--max-time", "10", "--include"])
            .args(args)
            .args([
                "--header",
                "content-type: application/json",
                "--data-binary",
                r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#,
            ])
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
    let status = head.lines().next().unwrap_or_default().trim().to_owned();
    let body = serde_json::from_str(body).unwrap_or_else(|err| panic!("{err}: {body:?}"));
    (status, body)
}

#[test]
fn http2_with_curl_prior_knowledge_and_over_tls() {
    if tools::require(
        "http2_with_curl_prior_knowledge_and_over_tls",
        curl_found(true),
    )
    .is_none()
    {
        return;
    }
    let answer = json!({ "jsonrpc": "2.0", "result": 5, "id": 1 });

    // h2c: HTTP/2 with prior knowledge on the plain listener.
    let mut plain = Calculator::start(calculator());
    let url = format!("http://{}/rpc", plain.addr);
    let (status, body) = curl_add(&url, &["--http2-prior-knowledge"]);
    assert_eq!((status.as_str(), &body), ("HTTP/2 200", &answer));
    // HTTP/1.1 still, on the same listener.
    let (status, body) = curl_add(&url, &["--http1.1"]);
    assert_eq!((status.as_str(), &body), ("HTTP/1.1 200 OK", &answer));
    plain.assert_alive();

    // TLS: HTTP/2 by ALPN, or HTTP/1.1 when that is all curl offers.
    let certs = jrpc_tests::tls::Certs::localhost();
    let (cert, key) = (certs.cert.to_str().unwrap(), certs.key.to_str().unwrap());
    let mut tls = Calculator::start_as(
        calculator(),
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
    let url = format!("https://{}/rpc", tls.addr);
    let (status, body) = curl_add(&url, &["--http2", "--cacert", cert]);
    assert_eq!((status.as_str(), &body), ("HTTP/2 200", &answer));
    let (status, body) = curl_add(&url, &["--http1.1", "--cacert", cert]);
    assert_eq!((status.as_str(), &body), ("HTTP/1.1 200 OK", &answer));
    // Without the CA, curl refuses the certificate; the server goes on.
    let refused = run_bounded(
        Command::new("curl")
            .args(["--silent", "--max-time", "10"])
            .arg(&url),
        STEP_LIMIT,
    )
    .unwrap_or_else(|why| panic!("{why}"));
    assert!(!refused.status.success());
    let (status, _) = curl_add(&url, &["--http2", "--cacert", cert]);
    assert_eq!(status, "HTTP/2 200");
    tls.assert_alive();
}

/// The calculator's `ticks(3)` with `Accept: application/json, text/event-stream`: `200
/// text/event-stream`, three `tick` events in order, then the answer; without it, an error as
/// before.
#[test]
fn ticks_over_sse_with_curl() {
    if tools::require("ticks_over_sse_with_curl", curl_found(false)).is_none() {
        return;
    }
    let mut server = Calculator::start(calculator());
    let url = format!("http://{}/rpc", server.addr);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ticks", "params": [3] }).to_string();
    let args = |accept: &'static str| {
        [
            "--request",
            "POST",
            "--header",
            "Content-Type: application/json",
            "--header",
            accept,
            "--data-binary",
        ]
    };
    let mut streamed = args("Accept: application/json, text/event-stream").to_vec();
    streamed.push(&body);
    let reply = curl(&url, &streamed);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events: Vec<Value> = reply
        .body
        .split_terminator("\n\n")
        .map(|event| serde_json::from_str(event.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    let ticks =
        (1..=3).map(|n| json!({ "jsonrpc": "2.0", "method": "tick", "params": { "n": n } }));
    let expected: Vec<Value> = ticks
        .chain([json!({ "jsonrpc": "2.0", "result": 3, "id": 1 })])
        .collect();
    assert_eq!(events, expected);

    let mut plain = args("Accept: */*").to_vec();
    plain.push(&body);
    let reply = curl(&url, &plain);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.json()["error"]["code"], 2);
    server.assert_alive();
}
