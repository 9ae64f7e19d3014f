//! The proof that any replica serves any request: three `mcp_everything --redis URL` replicas on
//! one `redis-server`, behind HAProxy (round robin, every request balanced on its own, no
//! stickiness), driven by clients nobody here wrote:
//!
//! - the conformance suite (`conformance`'s run: both revisions, required and unscored
//!   scenarios, the skills extension's), against HAProxy's address;
//! - the python `mcp` SDK's `Client`, in both eras (`tests/interop/mcp_everything_client.py`);
//! - then one replica is killed (by its PID) between two calls of a legacy session begun on it,
//!   and the next calls, through HAProxy, are served by the others; of the two tasks it made,
//!   the one that finished is read from another replica, and the one it was running reads as
//!   failed once its lease runs out, and a listen stream held by another replica hears it
//!   failed (`notifications/tasks`, from a surviving replica's sweep); a task made and cancelled
//!   through HAProxy is cancelled.
//!
//! The test starts its own `redis-server` and `haproxy` (killed by their PIDs); where one is
//! missing it says so and passes (under CI it fails).

use std::ffi::OsStr;
use std::net::SocketAddr;

use jrpc_tests::examples::Calculator;
use jrpc_tests::haproxy::Haproxy;
use jrpc_tests::raw_http::{Conn, Reply, post, request};
use jrpc_tests::redis::RedisServer;
use jrpc_tests::{bounded, node, python, tools};
use serde_json::{Value, json};

use crate::conformance::{REVISIONS, check_revision};

const LABEL: &str = "3 replicas behind HAProxy";
const BOTH: &str = "accept: application/json, text/event-stream\r\n";

#[test]
fn three_replicas_behind_haproxy_serve_every_client() {
    let Some(dir) = tools::require(
        "the MCP conformance suite",
        node::setup(&["@modelcontextprotocol/conformance"]),
    ) else {
        return;
    };
    let Some(python) = tools::require(
        "mcp_everything_client.py",
        python::setup("mcp", "2.3.0").map(|(_, python)| python),
    ) else {
        return;
    };
    let Some(mut redis) = RedisServer::start("mcp_balanced") else {
        return;
    };
    let built =
        jrpc_tests::build_examples(&["mcp_everything"]).unwrap_or_else(|why| panic!("{why}"));
    let exe = &built["mcp_everything"];
    let redis_url = redis.url();
    let args = ["--http", "127.0.0.1:0", "--redis", redis_url.as_str()];
    let mut replicas: Vec<Calculator> = (0..3).map(|_| Calculator::spawn(exe, &args)).collect();
    let addrs: Vec<&str> = replicas.iter().map(|r| r.addr.as_str()).collect();
    let Some(haproxy) = Haproxy::start("mcp_balanced", &addrs) else {
        return;
    };
    let url = format!("http://{}/mcp", haproxy.addr());
    let stderr = || {
        let mut all = format!("--- haproxy\n{}", haproxy.stderr());
        for (n, replica) in replicas.iter().enumerate() {
            all.push_str(&format!("\n--- replica {n}\n{}", replica.stderr()));
        }
        all
    };

    // The suite, both revisions at once: each mostly waits.
    let dir = dir.as_path();
    let problems: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = REVISIONS
            .map(|revision| {
                let (url, stderr) = (&url, &stderr);
                scope.spawn(move || check_revision(dir, url, revision, LABEL, stderr))
            })
            .into_iter()
            .collect();
        runs.into_iter()
            .flat_map(|run| run.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    assert!(problems.is_empty(), "{}\n{}", problems.join("\n"), stderr());

    for mode in ["legacy", "2026-07-28"] {
        let script_args = [OsStr::new(&url), OsStr::new(mode)];
        let output = python::run(dir, &python, "mcp_everything_client.py", &script_args)
            .unwrap_or_else(|why| panic!("{why}"));
        assert!(
            output.status.success(),
            "mcp_everything_client.py {mode} failed ({}):\n--- stdout\n{}\n--- stderr\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            stderr()
        );
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let first: SocketAddr = replicas[0].addr.parse().unwrap();
    let balanced: SocketAddr = haproxy.addr().parse().unwrap();
    let session = runtime.block_on(begin_session(first));
    let (finished, running) = runtime.block_on(begin_tasks(first));
    let second: SocketAddr = replicas[1].addr.parse().unwrap();
    let mut listening = runtime.block_on(listen_to(second, &running));
    replicas[0].kill();
    runtime.block_on(go_on_without_it(balanced, &session));
    runtime.block_on(read_tasks_without_it(balanced, &finished, &running));
    runtime.block_on(hear_it_failed(&mut listening, &running));
    for replica in &mut replicas[1..] {
        replica.assert_alive();
    }
    redis.kill();
}

/// A legacy POST of `body` to `/mcp` in `session` (none for `initialize`).
fn legacy_post(session: Option<&str>, body: &Value) -> Vec<u8> {
    let mut headers = BOTH.to_owned();
    if let Some(id) = session {
        headers.push_str(&format!(
            "mcp-session-id: {id}\r\nmcp-protocol-version: 2025-11-25\r\n"
        ));
    }
    post(
        "/mcp",
        Some("application/json"),
        &headers,
        &body.to_string(),
    )
}

/// The one JSON-RPC message of a reply: its JSON body, or the last event of its stream.
fn message(reply: &Reply) -> Value {
    if reply.header("content-type") == Some("application/json") {
        return reply.json();
    }
    let data = reply
        .body
        .split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter(|data| !data.is_empty())
        .last()
        .unwrap_or_else(|| panic!("no event in {reply:?}"));
    serde_json::from_str(data).unwrap()
}

/// Begins a session on the replica at `addr` and makes a first call in it; its id.
async fn begin_session(addr: SocketAddr) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} },
        "clientInfo": { "name": "balanced", "version": "1" } } });
    let reply = bounded(request(addr, &legacy_post(None, &init))).await;
    let id = reply
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {reply:?}"))
        .to_owned();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let reply = bounded(request(addr, &legacy_post(Some(&id), &initialized))).await;
    assert_eq!(reply.status, 202, "{reply:?}");
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "test_simple_text", "arguments": {} } });
    let reply = bounded(request(addr, &legacy_post(Some(&id), &call))).await;
    assert_eq!(
        message(&reply)["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    id
}

/// Goes on with `session` through the balancer once the replica that began it is gone: a plain
/// call, then one whose handler asks the client, answered in a POST of its own.
async fn go_on_without_it(balanced: SocketAddr, session: &str) {
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": { "name": "test_simple_text", "arguments": {} } });
    let reply = bounded(request(balanced, &legacy_post(Some(session), &call))).await;
    assert_eq!(
        message(&reply)["result"]["content"][0]["text"],
        "This is a simple text response for testing.",
        "{reply:?}"
    );
    let ask = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": { "name": "test_elicitation", "arguments": { "message": "ok?" } } });
    let mut conn = Conn::open(balanced).await;
    conn.write(&legacy_post(Some(session), &ask)).await;
    assert_eq!(bounded(conn.read_head()).await.status, 200);
    let mut pending = String::new();
    let asked = next_message(&mut conn, &mut pending).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let answer = json!({ "jsonrpc": "2.0", "id": asked["id"],
                         "result": { "action": "accept", "content": { "response": "yes" } } });
    let posted = bounded(request(balanced, &legacy_post(Some(session), &answer))).await;
    assert_eq!(posted.status, 202, "{posted:?}");
    let done = next_message(&mut conn, &mut pending).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"User response: action=accept, content={"response":"yes"}"#,
        "{done}"
    );
}

/// The next message of an event stream (past its priming event).
async fn next_message(conn: &mut Conn, pending: &mut String) -> Value {
    loop {
        let event = bounded(conn.read_event(pending)).await.unwrap();
        if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: "))
            && !data.is_empty()
        {
            return serde_json::from_str(data).unwrap();
        }
    }
}

/// A modern POST of `method` (named `name`) to `/mcp`, from a client that takes tasks.
fn modern_post(method: &str, name: &str, params: Value) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": { "io.modelcontextprotocol/tasks": {} } },
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let headers = format!(
        "{BOTH}mcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\nmcp-name: {name}\r\n"
    );
    post(
        "/mcp",
        Some("application/json"),
        &headers,
        &body.to_string(),
    )
}

/// Makes a task of `slow_compute` on `addr`, sleeping `seconds`; its id.
async fn slow_task(addr: SocketAddr, seconds: u64) -> String {
    let params = json!({ "name": "slow_compute", "arguments": { "seconds": seconds } });
    let created = message(
        &bounded(request(
            addr,
            &modern_post("tools/call", "slow_compute", params),
        ))
        .await,
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// Reads task `id` on `addr`.
async fn task(addr: SocketAddr, id: &str) -> Value {
    let params = json!({ "taskId": id });
    message(&bounded(request(addr, &modern_post("tasks/get", id, params))).await)["result"].clone()
}

/// Reads task `id` on `addr` until it is no longer `working`.
async fn until_over(addr: SocketAddr, id: &str) -> Value {
    bounded(async {
        loop {
            let read = task(addr, id).await;
            if read["status"] != "working" {
                return read;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
}

/// Makes two tasks on the replica at `addr`: one that finished there, one it runs on; their
/// ids.
async fn begin_tasks(addr: SocketAddr) -> (String, String) {
    let finished = slow_task(addr, 0).await;
    assert_eq!(until_over(addr, &finished).await["status"], "completed");
    let running = slow_task(addr, 600).await;
    (finished, running)
}

/// Opens a listen stream on the replica at `addr` that names task `id`; it is acknowledged.
async fn listen_to(addr: SocketAddr, id: &str) -> (Conn, String) {
    let params = json!({
        "notifications": { "taskIds": [id] },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": { "io.modelcontextprotocol/tasks": {} } },
        },
    });
    let body = json!({ "jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                       "params": params });
    let headers =
        format!("{BOTH}mcp-protocol-version: 2026-07-28\r\nmcp-method: subscriptions/listen\r\n");
    let mut conn = Conn::open(addr).await;
    conn.write(&post(
        "/mcp",
        Some("application/json"),
        &headers,
        &body.to_string(),
    ))
    .await;
    assert_eq!(bounded(conn.read_head()).await.status, 200);
    let mut pending = String::new();
    let ack = next_message(&mut conn, &mut pending).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    (conn, pending)
}

/// Reads the listen stream until it says task `id` failed.
async fn hear_it_failed((conn, pending): &mut (Conn, String), id: &str) {
    loop {
        let heard = next_message(conn, pending).await;
        assert_eq!(heard["method"], "notifications/tasks", "{heard}");
        assert_eq!(heard["params"]["taskId"], id, "{heard}");
        if heard["params"]["status"] == "failed" {
            assert_eq!(heard["params"]["error"]["code"], -32603, "{heard}");
            return;
        }
    }
}

/// Reads the tasks of the replica gone, through the balancer; makes a task and cancels it.
async fn read_tasks_without_it(balanced: SocketAddr, finished: &str, running: &str) {
    let read = task(balanced, finished).await;
    assert_eq!(read["status"], "completed", "{read}");
    assert_eq!(
        read["result"]["content"][0]["text"], "Computed a result after 0 s",
        "{read}"
    );
    let lost = until_over(balanced, running).await;
    assert_eq!(lost["status"], "failed", "{lost}");
    assert_eq!(lost["error"]["code"], -32603, "{lost}");
    let cancelled = slow_task(balanced, 600).await;
    let params = json!({ "taskId": cancelled });
    let ack = message(
        &bounded(request(
            balanced,
            &modern_post("tasks/cancel", &cancelled, params),
        ))
        .await,
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(task(balanced, &cancelled).await["status"], "cancelled");
}
