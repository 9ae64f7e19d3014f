//! The `lsp_server` and `mcp_server` examples as processes on stdio.
//!
//! Two kinds of tests:
//!
//! - scripted sessions: this file writes the client's side frame by frame into the server's stdin
//!   and checks what comes out of its stdout (and its exit status), so the behaviour is tested
//!   wherever Rust is;
//! - interop: clients nobody here wrote drive the servers: `vscode-jsonrpc` (VS Code's JSON-RPC
//!   layer) and the official MCP TypeScript SDK, run by the Node scripts in `tests/interop/`,
//!   the python MCP SDK (`tests/interop/mcp_client.py`), and pytest-lsp impersonating VS Code
//!   and Neovim (`tests/interop/test_lsp_server.py`). Without `node`, or without
//!   `tests/interop/node_modules` (`npm ci --prefix tests/interop`), or without
//!   `tests/interop/.venv` (see `jrpc_tests::python`), these fail under CI and elsewhere print why
//!   they are skipped and pass (`jrpc_tests::tools`).
//!
//! The examples are built once, by `cargo build --example ...`, and found through cargo's own
//! report of what it built (so a custom target directory works). Every child process runs under a
//! time limit and is killed when it is exceeded or when a test fails.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use jrpc_tests::process::{Capture, wait_bounded};
use jrpc_tests::{node, python, tools};
use serde_json::{Value, json};

/// How long a server may take to send an expected message, or to exit.
const STEP_LIMIT: Duration = Duration::from_secs(20);
/// How long a server has to send something it must not send (an answer to a notification).
const QUIET: Duration = Duration::from_millis(300);

/// The executable of the example `name` (`lsp_server` or `mcp_server`); both are built on first
/// use, once per test binary.
fn example(name: &str) -> &'static Path {
    static BUILT: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();
    match BUILT.get_or_init(|| jrpc_tests::build_examples(&["lsp_server", "mcp_server"])) {
        Ok(found) => &found[name],
        Err(why) => panic!("{why}"),
    }
}

// ---------------------------------------------------------------------------------------------
// A scripted session: the test plays the client

#[derive(Clone, Copy)]
enum Framing {
    Lines,
    ContentLength,
}

/// A server process with its stdin in the test's hand and its stdout read into messages. It is
/// killed when dropped (a failing test included).
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Result<Value, String>>,
    stderr: Capture,
    framing: Framing,
}

impl Session {
    fn start(binary: &Path, framing: Framing) -> Session {
        let mut child = Command::new(binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("could not start {}: {err}", binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, messages) = mpsc::channel();
        thread::spawn(move || read_messages(BufReader::new(stdout), framing, &tx));
        let stderr = Capture::start(child.stderr.take().expect("piped stderr"));
        Session {
            stdin: child.stdin.take(),
            child,
            messages,
            stderr,
            framing,
        }
    }

    fn send(&mut self, message: &Value) {
        self.send_text(&message.to_string());
    }

    /// Frames `text` as the session's framing wants and writes it.
    fn send_text(&mut self, text: &str) {
        let framed = match self.framing {
            Framing::Lines => format!("{text}\n"),
            Framing::ContentLength => format!("Content-Length: {}\r\n\r\n{text}", text.len()),
        };
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin
            .write_all(framed.as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server reads its stdin");
    }

    fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let answer = self.recv();
        assert_eq!(
            answer["id"], id,
            "expected the answer to call {id}, got {answer}"
        );
        answer
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// The next message from the server.
    fn recv(&mut self) -> Value {
        match self.messages.recv_timeout(STEP_LIMIT) {
            Ok(Ok(message)) => {
                assert_eq!(message["jsonrpc"], "2.0", "{message}");
                message
            }
            Ok(Err(why)) => panic!("bad output from the server: {why}\n{}", self.stderr()),
            Err(RecvTimeoutError::Timeout) => {
                panic!("no message within {STEP_LIMIT:?}\n{}", self.stderr())
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the server's stdout ended\n{}", self.stderr())
            }
        }
    }

    /// Asserts that nothing arrives for a moment.
    fn expect_quiet(&mut self) {
        match self.messages.recv_timeout(QUIET) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(message) => panic!("expected nothing, got {message:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server's stdout ended"),
        }
    }

    /// Closes stdin (end of input).
    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the exit and returns the status and what the server wrote on stderr.
    fn finish(mut self) -> (ExitStatus, String) {
        let status = wait_bounded(&mut self.child, STEP_LIMIT)
            .unwrap_or_else(|| panic!("the server did not exit within {STEP_LIMIT:?}; killed"));
        self.stderr.wait();
        // Every message on stdout was checked: nothing but protocol may be there.
        match self.messages.recv_timeout(STEP_LIMIT) {
            Err(_) => {}
            Ok(Ok(message)) => panic!("unexpected message after the session: {message}"),
            Ok(Err(why)) => panic!("bad output from the server: {why}"),
        }
        (status, self.stderr())
    }

    fn stderr(&self) -> String {
        self.stderr.text()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Splits the server's stdout into messages; anything that is not a well-framed JSON message is
/// reported (logs on stdout would corrupt the protocol).
fn read_messages<R: BufRead>(
    mut out: R,
    framing: Framing,
    tx: &mpsc::Sender<Result<Value, String>>,
) {
    loop {
        let body = match framing {
            Framing::Lines => {
                let mut line = String::new();
                match out.read_line(&mut line) {
                    Ok(0) => return,
                    Ok(_) => match line.strip_suffix('\n') {
                        Some(body) => Ok(body.to_owned()),
                        None => Err(format!("a line without its newline: {line:?}")),
                    },
                    Err(err) => Err(err.to_string()),
                }
            }
            Framing::ContentLength => match read_content_length_frame(&mut out) {
                Ok(None) => return,
                Ok(Some(body)) => Ok(body),
                Err(why) => Err(why),
            },
        };
        let message = body.and_then(|body| {
            serde_json::from_str::<Value>(&body).map_err(|err| format!("{err}: {body:?}"))
        });
        let failed = message.is_err();
        if tx.send(message).is_err() || failed {
            return;
        }
    }
}

/// One `Content-Length` frame: `None` at a clean end of output.
fn read_content_length_frame<R: BufRead>(out: &mut R) -> Result<Option<String>, String> {
    let mut length = None;
    let mut first = true;
    loop {
        let mut header = String::new();
        let read = out.read_line(&mut header).map_err(|err| err.to_string())?;
        if read == 0 && first {
            return Ok(None);
        }
        first = false;
        let header = header
            .strip_suffix("\r\n")
            .ok_or_else(|| format!("a header line not ended by CRLF: {header:?}"))?;
        if header.is_empty() {
            break;
        }
        let (name, value) = header
            .split_once(": ")
            .ok_or_else(|| format!("not a header: {header:?}"))?;
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|err| format!("{header:?}: {err}"))?,
            );
        }
    }
    let length = length.ok_or("a frame without Content-Length")?;
    let mut body = vec![0; length];
    out.read_exact(&mut body).map_err(|err| err.to_string())?;
    String::from_utf8(body)
        .map(Some)
        .map_err(|err| err.to_string())
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {answer}"))
}

// ---------------------------------------------------------------------------------------------
// lsp_server, scripted

fn lsp() -> Session {
    Session::start(example("lsp_server"), Framing::ContentLength)
}

/// `initialize` with the given client capabilities; checks the answer.
fn lsp_initialize(session: &mut Session, capabilities: Value) {
    let answer = session.call(
        1,
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": capabilities }),
    );
    assert_eq!(
        answer["result"]["capabilities"],
        json!({ "textDocumentSync": 1, "hoverProvider": true }),
        "{answer}"
    );
    assert_eq!(answer["result"]["serverInfo"]["name"], "jrpc-lsp-example");
    assert!(
        answer["result"]["serverInfo"]["version"].is_string(),
        "{answer}"
    );
}

fn hover_params(uri: &str, line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": character } })
}

/// The hover text for the position, `None` for a `null` result.
fn hover(session: &mut Session, id: i64, uri: &str, line: u32, character: u32) -> Option<String> {
    let answer = session.call(id, "textDocument/hover", hover_params(uri, line, character));
    let result = &answer["result"];
    if result.is_null() {
        assert!(answer.get("error").is_none(), "{answer}");
        return None;
    }
    assert_eq!(result["contents"]["kind"], "markdown", "{answer}");
    Some(
        result["contents"]["value"]
            .as_str()
            .expect("a markdown string")
            .to_owned(),
    )
}

#[test]
fn lsp_session_from_initialize_to_exit() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({ "workspace": { "configuration": true } }));
    s.notify("initialized", json!({}));

    let greeting = s.recv();
    assert_eq!(greeting["method"], "window/logMessage", "{greeting}");
    assert_eq!(greeting["params"]["type"], 3);

    // The server calls back; the test answers as an editor would.
    let ask = s.recv();
    assert_eq!(ask["method"], "workspace/configuration", "{ask}");
    assert_eq!(
        ask["params"],
        json!({ "items": [{ "section": "example" }] })
    );
    assert!(ask["id"].is_number() || ask["id"].is_string(), "{ask}");
    s.send(&json!({ "jsonrpc": "2.0", "id": ask["id"], "result": [{ "level": "verbose" }] }));
    let logged = s.recv();
    assert_eq!(logged["method"], "window/logMessage", "{logged}");
    let message = logged["params"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"{"level":"verbose"}"#), "{logged}");

    let uri = "file:///notes.txt";
    s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "plaintext", "version": 1,
                                  "text": "fn main() {\n    let answer = 42;\n}\n" } }),
    );
    assert_eq!(hover(&mut s, 2, uri, 0, 1).as_deref(), Some("`fn`"));
    assert_eq!(hover(&mut s, 3, uri, 1, 10).as_deref(), Some("`answer`"));
    assert_eq!(hover(&mut s, 4, uri, 1, 17).as_deref(), Some("`42`"));
    assert_eq!(hover(&mut s, 5, uri, 1, 2), None, "indentation is no word");
    assert_eq!(hover(&mut s, 6, uri, 9, 0), None, "past the last line");
    assert_eq!(hover(&mut s, 7, "file:///unopened.txt", 0, 0), None);

    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 },
                "contentChanges": [{ "text": "first\nsecond" }, { "text": "replaced text" }] }),
    );
    assert_eq!(hover(&mut s, 8, uri, 0, 0).as_deref(), Some("`replaced`"));
    assert_eq!(
        hover(&mut s, 9, uri, 0, 13).as_deref(),
        Some("`text`"),
        "the end of the line"
    );

    s.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": uri } }),
    );
    assert_eq!(
        hover(&mut s, 10, uri, 0, 0),
        None,
        "a closed document is forgotten"
    );

    s.send(&json!({ "jsonrpc": "2.0", "id": 11, "method": "shutdown" }));
    assert_eq!(
        s.recv(),
        json!({ "jsonrpc": "2.0", "id": 11, "result": null })
    );
    s.send(&json!({ "jsonrpc": "2.0", "method": "exit" }));
    let (status, stderr) = s.finish();
    assert_eq!(
        status.code(),
        Some(0),
        "exit after shutdown; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(r#"configuration of "example": [{"level":"verbose"}]"#),
        "the configuration answer is logged on stderr too:\n{stderr}"
    );
}

#[test]
fn lsp_requests_after_shutdown_fail() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({}));
    s.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown" }));
    let answer = s.recv();
    assert_eq!(answer, json!({ "jsonrpc": "2.0", "id": 2, "result": null }));
    // After shutdown, requests are invalid, as the specification says.
    let late = s.call(3, "textDocument/hover", hover_params("file:///a", 0, 0));
    assert_eq!(error_code(&late), -32600, "{late}");
    s.send(&json!({ "jsonrpc": "2.0", "method": "exit" }));
    assert_eq!(s.finish().0.code(), Some(0));
}

/// lsp4j's clients (Eclipse, IntelliJ's lsp4ij), Eglot and Vim9's LSP plugin send `shutdown` and
/// `exit` with `"params": null`: taken as no params.
#[test]
fn lsp_shutdown_and_exit_with_null_params_exit_0() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({}));
    s.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null }));
    assert_eq!(
        s.recv(),
        json!({ "jsonrpc": "2.0", "id": 2, "result": null })
    );
    s.send(&json!({ "jsonrpc": "2.0", "method": "exit", "params": null }));
    let (status, stderr) = s.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn lsp_exit_without_shutdown_is_status_1() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({}));
    s.send(&json!({ "jsonrpc": "2.0", "method": "exit" }));
    assert_eq!(s.finish().0.code(), Some(1));
}

#[test]
fn lsp_end_of_input_without_exit_is_status_1() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({}));
    s.close_stdin();
    assert_eq!(s.finish().0.code(), Some(1));
}

#[test]
fn lsp_requests_before_initialize_are_refused() {
    let mut s = lsp();
    let early = s.call(1, "textDocument/hover", hover_params("file:///a", 0, 0));
    assert_eq!(error_code(&early), -32002, "ServerNotInitialized: {early}");
    lsp_initialize(&mut s, json!({}));
    assert_eq!(hover(&mut s, 2, "file:///a", 0, 0), None);
}

#[test]
fn lsp_without_configuration_capability_asks_nothing() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({ "workspace": { "configuration": false } }));
    s.notify("initialized", json!({}));
    assert_eq!(s.recv()["method"], "window/logMessage");
    // The notification handler has finished before the next call is read, so a request of the
    // server's would come before this answer.
    assert_eq!(hover(&mut s, 2, "file:///a", 0, 0), None);
    s.expect_quiet();
}

#[test]
fn lsp_positions_are_utf16_and_ranged_changes_apply() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({}));
    let uri = "file:///unicode.txt";
    // `😀` is two UTF-16 code units, `é` one: `wörld` starts at column 9.
    s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "plaintext", "version": 1,
                                  "text": "héllo 😀 wörld\r\nnext" } }),
    );
    assert_eq!(hover(&mut s, 2, uri, 0, 1).as_deref(), Some("`héllo`"));
    assert_eq!(hover(&mut s, 3, uri, 0, 9).as_deref(), Some("`wörld`"));
    assert_eq!(hover(&mut s, 4, uri, 0, 13).as_deref(), Some("`wörld`"));
    assert_eq!(
        hover(&mut s, 5, uri, 1, 2).as_deref(),
        Some("`next`"),
        "CRLF ends a line"
    );
    // A ranged change (the server asks for full sync, but takes ranges too).
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 },
                "contentChanges": [{ "range": { "start": { "line": 0, "character": 9 },
                                                "end": { "line": 0, "character": 14 } },
                                     "text": "planet" }] }),
    );
    assert_eq!(hover(&mut s, 6, uri, 0, 10).as_deref(), Some("`planet`"));
}

#[test]
fn lsp_bad_input_is_answered_and_serving_goes_on() {
    let mut s = lsp();
    lsp_initialize(&mut s, json!({}));

    s.send_text("{not json");
    let answer = s.recv();
    assert_eq!((error_code(&answer), &answer["id"]), (-32700, &Value::Null));

    let answer = s.call(2, "textDocument/hover", json!({ "textDocument": 7 }));
    assert_eq!(error_code(&answer), -32602, "{answer}");
    assert!(
        answer["error"]["data"].is_string(),
        "the reason is given: {answer}"
    );

    let answer = s.call(
        3,
        "textDocument/definition",
        hover_params("file:///a", 0, 0),
    );
    assert_eq!(error_code(&answer), -32601, "{answer}");

    // Notifications are never answered, even with bad params or for unknown ids.
    s.notify("textDocument/didOpen", json!({ "textDocument": "nope" }));
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": "file:///x" }, "contentChanges": [] }),
    );
    s.notify("$/cancelRequest", json!({ "id": 99 }));
    s.notify("$/setTrace", json!({ "value": "off" }));
    s.expect_quiet();

    let uri = "file:///still.txt";
    s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "plaintext", "version": 1, "text": "alive" } }),
    );
    assert_eq!(hover(&mut s, 4, uri, 0, 0).as_deref(), Some("`alive`"));
    let (_, stderr) = {
        s.close_stdin();
        s.finish()
    };
    // The runtime reports a notification's bad params to the table's `on_error`, which the
    // example prints.
    assert!(
        stderr.contains("textDocument/didOpen failed: error -32602"),
        "a notification's bad params are reported on stderr:\n{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// mcp_server, scripted

fn mcp() -> Session {
    Session::start(example("mcp_server"), Framing::Lines)
}

fn mcp_initialize(session: &mut Session, id: i64, version: Value) -> Value {
    let answer = session.call(
        id,
        "initialize",
        json!({ "protocolVersion": version, "capabilities": {},
                "clientInfo": { "name": "scripted", "version": "1" } }),
    );
    assert_eq!(
        answer["result"]["capabilities"],
        json!({ "logging": {}, "tools": { "listChanged": true } }),
        "{answer}"
    );
    assert_eq!(answer["result"]["serverInfo"]["name"], "jrpc-mcp-example");
    answer["result"]["protocolVersion"].clone()
}

/// The text of a tool result and whether it is an error.
fn tool_result(answer: &Value) -> (String, bool) {
    let result = &answer["result"];
    assert!(answer.get("error").is_none(), "{answer}");
    let content = result["content"].as_array().expect("content is an array");
    assert_eq!(content.len(), 1, "{answer}");
    assert_eq!(content[0]["type"], "text", "{answer}");
    let text = content[0]["text"].as_str().expect("text").to_owned();
    (text, result["isError"] == true)
}

#[test]
fn mcp_session_lists_and_calls_the_tool() {
    let mut s = mcp();
    assert_eq!(mcp_initialize(&mut s, 0, json!("2025-06-18")), "2025-06-18");
    s.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    let tools = s.call(1, "tools/list", json!({}));
    let tools = tools["result"]["tools"]
        .as_array()
        .expect("a list of tools")
        .clone();
    assert_eq!(tools.len(), 2);
    let add = &tools[0];
    assert_eq!(add["name"], "add");
    let count = &tools[1];
    assert_eq!(count["name"], "count");
    assert_eq!(count["inputSchema"]["type"], "object");
    assert_eq!(count["inputSchema"]["properties"]["n"]["type"], "integer");
    assert_eq!(count["inputSchema"]["required"], json!(["n"]));
    assert!(add["description"].is_string());
    let schema = &add["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["a"]["type"], "number");
    assert_eq!(schema["properties"]["b"]["type"], "number");
    assert_eq!(schema["required"], json!(["a", "b"]));

    let sum = s.call(
        2,
        "tools/call",
        json!({ "name": "add", "arguments": { "a": 2, "b": 3 } }),
    );
    assert_eq!(tool_result(&sum), ("5".to_owned(), false));
    assert_eq!(sum["result"].get("isError"), None, "{sum}");
    let sum = s.call(
        3,
        "tools/call",
        json!({ "name": "add", "arguments": { "a": 2.5, "b": -0.25 } }),
    );
    assert_eq!(tool_result(&sum), ("2.25".to_owned(), false));

    // An unknown tool is the request's fault, not the tool's: -32602, naming the tools.
    let unknown = s.call(
        4,
        "tools/call",
        json!({ "name": "multiply", "arguments": {} }),
    );
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["tools"], json!(["add", "count"]));

    // `count` with a progress token: n progress notifications, then the answer.
    s.send(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": { "name": "count", "arguments": { "n": 3 },
                                "_meta": { "progressToken": "p7" } } }));
    for i in 1..=3 {
        assert_eq!(
            s.recv(),
            json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                    "params": { "progressToken": "p7", "progress": i, "total": 3 } })
        );
    }
    assert_eq!(tool_result(&s.recv()), ("3".to_owned(), false));
    // Without one: the answer alone.
    let counted = s.call(
        8,
        "tools/call",
        json!({ "name": "count", "arguments": { "n": 2 } }),
    );
    assert_eq!(tool_result(&counted), ("2".to_owned(), false));

    assert_eq!(s.call(5, "ping", json!({}))["result"], json!({}));
    s.send(&json!({ "jsonrpc": "2.0", "id": 6, "method": "ping" }));
    assert_eq!(s.recv(), json!({ "jsonrpc": "2.0", "id": 6, "result": {} }));

    s.close_stdin();
    let (status, stderr) = s.finish();
    assert!(
        status.success(),
        "end of input is a clean exit: {status}\n{stderr}"
    );
}

/// `_meta` of a 2026-07-28 request, with `extra` members.
fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(meta), Value::Object(extra)) = (meta.as_object_mut(), extra) {
        meta.extend(extra);
    }
    meta
}

/// A 2026-07-28 client on the same stdio server: no `initialize`, each request stateless, every
/// result stamped; the methods that era removed are not there.
#[test]
fn mcp_modern_requests_are_served_statelessly() {
    let mut s = mcp();
    let discovered = s.call(
        1,
        "server/discover",
        json!({ "_meta": modern_meta(json!({})) }),
    );
    let result = &discovered["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28"]),
        "{discovered}"
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        (&result["ttlMs"], &result["cacheScope"]),
        (&json!(0), &json!("public"))
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "jrpc-mcp-example"
    );
    assert_eq!(
        result["capabilities"]["tools"],
        json!({ "listChanged": true })
    );

    let tools = s.call(2, "tools/list", json!({ "_meta": modern_meta(json!({})) }));
    assert_eq!(tools["result"]["resultType"], "complete", "{tools}");
    assert_eq!(tools["result"]["tools"][0]["name"], "add");
    let count_schema = &tools["result"]["tools"][1]["inputSchema"]["properties"]["n"];
    assert_eq!(
        count_schema,
        &json!({ "type": "integer", "minimum": 0 }),
        "no format"
    );

    s.send(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": { "name": "count", "arguments": { "n": 2 },
                                "_meta": modern_meta(json!({ "progressToken": 7 })) } }));
    for i in 1..=2 {
        assert_eq!(
            s.recv()["params"],
            json!({ "progressToken": 7, "progress": i, "total": 2 })
        );
    }
    let counted = s.recv();
    assert_eq!(counted["result"]["resultType"], "complete", "{counted}");
    assert_eq!(tool_result(&counted), ("2".to_owned(), false));

    for (id, method) in (4..).zip(["initialize", "ping"]) {
        let removed = s.call(id, method, json!({ "_meta": modern_meta(json!({})) }));
        assert_eq!(error_code(&removed), -32601, "{method}: {removed}");
    }
    let bad = s.call(
        6,
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }),
    );
    assert_eq!(error_code(&bad), -32602, "no capabilities: {bad}");
    let unknown = s.call(
        7,
        "tools/list",
        json!({ "_meta": modern_meta(json!({ "io.modelcontextprotocol/protocolVersion": "1999-01-01" })) }),
    );
    assert_eq!(error_code(&unknown), -32022, "{unknown}");
    assert_eq!(
        unknown["error"]["data"],
        json!({ "supported": ["2026-07-28"], "requested": "1999-01-01" })
    );
    // A legacy client probing discover falls back to initialize on this answer.
    let probe = s.call(8, "server/discover", json!({}));
    assert_eq!(error_code(&probe), -32602, "{probe}");
    s.close_stdin();
    assert!(s.finish().0.success());
}

#[test]
fn mcp_protocol_version_is_negotiated() {
    let mut s = mcp();
    for (id, known) in (1..).zip(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
        assert_eq!(mcp_initialize(&mut s, id, json!(known)), known);
    }
    assert_eq!(
        mcp_initialize(&mut s, 10, json!("1999-01-01")),
        "2025-11-25",
        "unknown: newest"
    );
    assert_eq!(
        mcp_initialize(&mut s, 11, json!("2099-01-01")),
        "2025-11-25"
    );
    assert_eq!(
        mcp_initialize(&mut s, 12, Value::Null),
        "2025-11-25",
        "none asked: newest"
    );
}

#[test]
fn mcp_tool_failures_are_results_with_is_error() {
    let mut s = mcp();
    mcp_initialize(&mut s, 1, json!("2025-11-25"));
    for (id, arguments) in (2..).zip([
        json!({ "a": 1 }),
        json!({ "a": "one", "b": 2 }),
        json!([1, 2, 3]),
        Value::Null,
        json!({ "a": 1e308, "b": 1e308 }),
    ]) {
        let mut params = json!({ "name": "add" });
        if !arguments.is_null() {
            params["arguments"] = arguments.clone();
        }
        let answer = s.call(id, "tools/call", params);
        let (text, is_error) = tool_result(&answer);
        assert!(is_error, "{arguments} -> {answer}");
        assert!(!text.is_empty());
    }
}

#[test]
fn mcp_bad_input_is_answered_and_serving_goes_on() {
    let mut s = mcp();
    mcp_initialize(&mut s, 1, json!("2025-11-25"));

    s.send_text(
        r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
    );
    let answer = s.recv();
    assert_eq!(
        (error_code(&answer), &answer["id"]),
        (-32600, &Value::Null),
        "no batches in MCP"
    );

    s.send_text("not json");
    let answer = s.recv();
    assert_eq!((error_code(&answer), &answer["id"]), (-32700, &Value::Null));

    let answer = s.call(4, "tools/call", json!({ "arguments": { "a": 1, "b": 2 } }));
    assert_eq!(
        error_code(&answer),
        -32602,
        "a tools/call without a name: {answer}"
    );

    let answer = s.call(5, "resources/list", json!({}));
    assert_eq!(error_code(&answer), -32601, "{answer}");

    // Notifications are never answered: a cancellation of nothing running, an unknown one.
    s.send(
        &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": { "requestId": 42, "reason": "changed my mind" } }),
    );
    s.send(&json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }));
    s.expect_quiet();

    let sum = s.call(
        6,
        "tools/call",
        json!({ "name": "add", "arguments": { "a": 40, "b": 2 } }),
    );
    assert_eq!(tool_result(&sum), ("42".to_owned(), false));
    s.close_stdin();
    assert!(s.finish().0.success());
}

// ---------------------------------------------------------------------------------------------
// Interop: third-party clients, through Node

/// Runs `tests/interop/<script>` (which needs `package`) against the example `binary` and
/// asserts it succeeds.
fn run_node(script: &str, package: &str, binary: &str) {
    let Some(dir) = tools::require(script, node::setup(&[package])) else {
        return;
    };
    let output = node::run(&dir, script, example(binary)).unwrap_or_else(|why| panic!("{why}"));
    assert!(
        output.status.success(),
        "node {script} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn lsp_server_with_vscode_jsonrpc() {
    run_node("lsp.mjs", "vscode-jsonrpc", "lsp_server");
}

#[test]
fn mcp_server_with_the_official_sdk_client() {
    run_node("mcp.mjs", "@modelcontextprotocol/sdk", "mcp_server");
}

// ---------------------------------------------------------------------------------------------
// Interop: pytest-lsp

/// pytest-lsp drives `lsp_server` as VS Code and as Neovim (their recorded capability sets): the
/// hover, the greeting and its configuration question, a hover sent right behind `initialized`,
/// `shutdown` and `exit` with `"params": null` (status 0) and without `shutdown` (status 1). A
/// specification warning (something sent that the client's capabilities do not allow) fails it.
#[test]
fn lsp_server_with_pytest_lsp() {
    let what = "test_lsp_server.py (pytest-lsp)";
    let Some((dir, python)) = tools::require(what, python::setup("pytest-lsp", "1.0.1")) else {
        return;
    };
    let args = [
        "-W",
        "error::pytest_lsp.LspSpecificationWarning",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-q",
    ];
    let env = [("LSP_SERVER", example("lsp_server").as_os_str())];
    let output = python::pytest(&dir, &python, "test_lsp_server.py", &args, &env)
        .unwrap_or_else(|why| panic!("{why}"));
    assert!(
        output.status.success(),
        "pytest-lsp failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// Interop: the python MCP SDK

/// Runs `tests/interop/mcp_client.py` (the python `mcp` SDK's `Client`) against `target` over
/// `kind` (`stdio`, with the executable; `http`, with the URL) in each connect mode, asserting
/// each succeeds; `server_stderr` says what the server wrote, for a failure. Skipped, with why,
/// where the SDK is not installed.
pub(crate) fn run_python_client(kind: &str, target: &OsStr, server_stderr: &dyn Fn() -> String) {
    let what = format!("mcp_client.py ({kind})");
    let Some((dir, python)) = tools::require(&what, python::setup("mcp", "2.3.0")) else {
        return;
    };
    for mode in ["auto", "2026-07-28", "legacy"] {
        let args = [OsStr::new(kind), target, OsStr::new(mode)];
        let output = python::run(&dir, &python, "mcp_client.py", &args)
            .unwrap_or_else(|why| panic!("{why}"));
        assert!(
            output.status.success(),
            "mcp_client.py {kind} {mode} failed ({}):\n--- stdout\n{}\n--- stderr\n{}\n--- server's stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            server_stderr()
        );
    }
}

/// The python SDK's `Client` negotiates 2026-07-28 with `mcp_server` over stdio, probing
/// (`auto`) and pinned, and the legacy handshake when asked.
#[test]
fn mcp_server_with_the_python_sdk_client() {
    run_python_client("stdio", example("mcp_server").as_os_str(), &String::new);
}
