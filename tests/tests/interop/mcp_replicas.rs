//! `mcp_everything` replicas on one Redis, as the modern era's statelessness promises: any
//! replica serves any request, so a change made on one reaches a `subscriptions/listen` stream
//! held by another. The test starts its own `redis-server` on a free port (and kills it by its
//! PID); where it is not installed the test says so and passes (under CI it fails).

use std::net::SocketAddr;
use std::path::PathBuf;

use jrpc_tests::bounded;
use jrpc_tests::examples::Calculator;
use jrpc_tests::raw_http::{Conn, post, request};
use jrpc_tests::redis::RedisServer;
use serde_json::{Value, json};

fn everything() -> PathBuf {
    let mut built =
        jrpc_tests::build_examples(&["mcp_everything"]).unwrap_or_else(|why| panic!("{why}"));
    built.remove("mcp_everything").unwrap_or_default()
}

/// A modern POST of `method` (and `name`) to `/mcp`, from a client that takes elicitations.
fn modern_post(method: &str, name: Option<&str>, id: &str, params: Value) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
    });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let mut headers = format!(
        "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\n"
    );
    if let Some(name) = name {
        headers.push_str(&format!("mcp-name: {name}\r\n"));
    }
    post(
        "/mcp",
        Some("application/json"),
        &headers,
        &body.to_string(),
    )
}

fn addr(server: &Calculator) -> SocketAddr {
    server.addr.parse().unwrap()
}

fn event(text: &str) -> Value {
    serde_json::from_str(text.trim_start_matches("data: ")).unwrap()
}

#[tokio::test]
async fn a_change_on_one_replica_reaches_a_listen_stream_on_another() {
    let Some(mut redis) = RedisServer::start("mcp_replicas_share_changes") else {
        return;
    };
    let exe = everything();
    let url = redis.url();
    let args = ["--http", "127.0.0.1:0", "--redis", url.as_str()];
    let mut one = Calculator::spawn(&exe, &args);
    let mut two = Calculator::spawn(&exe, &args);

    let mut listening = Conn::open(addr(&one)).await;
    let params = json!({ "notifications": { "toolsListChanged": true } });
    listening
        .write(&modern_post(
            "subscriptions/listen",
            None,
            "listen-1",
            params,
        ))
        .await;
    assert_eq!(bounded(listening.read_head()).await.status, 200);
    let mut pending = String::new();
    // The acknowledgement comes once replica one follows the topic on Redis.
    let ack = event(&bounded(listening.read_event(&mut pending)).await.unwrap());
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    let trigger = json!({ "name": "test_trigger_tool_change", "arguments": {} });
    let reply = bounded(request(
        addr(&two),
        &modern_post(
            "tools/call",
            Some("test_trigger_tool_change"),
            "t-1",
            trigger,
        ),
    ))
    .await;
    assert_eq!(
        reply.json()["result"]["content"][0]["text"],
        "Mutation triggered"
    );

    let changed = event(&bounded(listening.read_event(&mut pending)).await.unwrap());
    assert_eq!(
        changed,
        json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": "listen-1" } } })
    );
    one.assert_alive();
    two.assert_alive();
    redis.kill();
}

/// A multi round-trip request begun on one replica is finished on another: both check the
/// `requestState` the first signed, with the keys they read from Redis.
#[tokio::test]
async fn a_request_state_signed_by_one_replica_is_taken_by_another() {
    let Some(mut redis) = RedisServer::start("mcp_replicas_share_state_keys") else {
        return;
    };
    let exe = everything();
    let url = redis.url();
    let args = ["--http", "127.0.0.1:0", "--redis", url.as_str()];
    let mut one = Calculator::spawn(&exe, &args);
    let mut two = Calculator::spawn(&exe, &args);
    let tool = "test_input_required_result_request_state";
    let first = bounded(request(
        addr(&one),
        &modern_post(
            "tools/call",
            Some(tool),
            "s-1",
            json!({ "name": tool, "arguments": {} }),
        ),
    ))
    .await
    .json();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let retry = json!({ "name": tool, "arguments": {}, "requestState": state,
                        "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } } });
    let second = bounded(request(
        addr(&two),
        &modern_post("tools/call", Some(tool), "s-2", retry),
    ))
    .await
    .json();
    assert_eq!(
        second["result"]["content"][0]["text"], "state-ok: requestState validated",
        "{second}"
    );
    one.assert_alive();
    two.assert_alive();
    redis.kill();
}

/// A legacy POST of `body` in `session` (none for `initialize`).
fn legacy_post(session: Option<&str>, body: &Value) -> Vec<u8> {
    let mut headers = "accept: application/json, text/event-stream\r\n".to_owned();
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

/// Initializes a session on `server`; its id.
async fn initialize(server: &Calculator) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "replicas", "version": "1" } } });
    let reply = bounded(request(addr(server), &legacy_post(None, &init))).await;
    reply
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {reply:?}"))
        .to_owned()
}

/// The data of the next event of `conn` that has some (past priming events and comments), and
/// the id it carried.
async fn next_data(conn: &mut Conn, pending: &mut String) -> (Option<String>, Value) {
    loop {
        let event = bounded(conn.read_event(pending)).await.unwrap();
        let data = event.lines().find_map(|l| l.strip_prefix("data: "));
        if let Some(data) = data.filter(|data| !data.is_empty()) {
            let id = event.lines().find_map(|l| l.strip_prefix("id: "));
            return (id.map(str::to_owned), serde_json::from_str(data).unwrap());
        }
    }
}

/// A legacy session's GET stream, held by one replica, hears what a call served by another
/// changed (the session's record, and the listener in it, are in Redis).
#[tokio::test]
async fn a_sessions_get_stream_on_one_replica_hears_a_change_made_on_another() {
    let Some(mut redis) = RedisServer::start("mcp_replicas_session_stream") else {
        return;
    };
    let exe = everything();
    let url = redis.url();
    let args = ["--http", "127.0.0.1:0", "--redis", url.as_str()];
    let mut one = Calculator::spawn(&exe, &args);
    let mut two = Calculator::spawn(&exe, &args);
    let session = initialize(&one).await;

    let mut listening = Conn::open(addr(&two)).await;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
    );
    listening.write(get.as_bytes()).await;
    assert_eq!(bounded(listening.read_head()).await.status, 200);
    let mut pending = String::new();

    let trigger = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": { "name": "test_trigger_tool_change", "arguments": {} } });
    let reply = bounded(request(addr(&one), &legacy_post(Some(&session), &trigger))).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let (_, changed) = next_data(&mut listening, &mut pending).await;
    assert_eq!(
        changed,
        json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {} })
    );
    one.assert_alive();
    two.assert_alive();
    redis.kill();
}

/// A legacy request's stream closed for polling on one replica is resumed, with
/// `Last-Event-ID`, on another: the replica that ran it replays what followed (its answer).
#[tokio::test]
async fn a_stream_cut_on_one_replica_is_resumed_on_another() {
    let Some(mut redis) = RedisServer::start("mcp_replicas_resume") else {
        return;
    };
    let exe = everything();
    let url = redis.url();
    let args = ["--http", "127.0.0.1:0", "--redis", url.as_str()];
    let mut one = Calculator::spawn(&exe, &args);
    let mut two = Calculator::spawn(&exe, &args);
    let session = initialize(&one).await;

    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": { "name": "test_reconnection", "arguments": {} } });
    let cut = bounded(request(addr(&one), &legacy_post(Some(&session), &call))).await;
    assert_eq!(cut.status, 200);
    // The priming event alone: the tool closed the stream at once.
    let last = cut
        .body
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no event id: {cut:?}"))
        .to_owned();
    assert!(!cut.body.contains("\"result\""), "{cut:?}");

    let mut resumed = Conn::open(addr(&two)).await;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\nlast-event-id: {last}\r\nmcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
    );
    resumed.write(get.as_bytes()).await;
    assert_eq!(bounded(resumed.read_head()).await.status, 200);
    let mut pending = String::new();
    let (id, answer) = next_data(&mut resumed, &mut pending).await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("Reconnection test completed")),
        "{answer}"
    );
    let stream = |id: &str| id.split('-').next().map(str::to_owned);
    assert_eq!(
        id.as_deref().and_then(stream),
        stream(&last),
        "the same stream"
    );
    one.assert_alive();
    two.assert_alive();
    redis.kill();
}

/// A task outlives its lease while the replica running it renews it, and is read on another
/// replica: made on one, running longer than `mcp_everything`'s 3 s lease, it completes.
#[tokio::test]
async fn a_task_running_past_its_lease_completes_and_is_read_on_another_replica() {
    let Some(mut redis) = RedisServer::start("mcp_replicas_task_lease") else {
        return;
    };
    let exe = everything();
    let url = redis.url();
    let args = ["--http", "127.0.0.1:0", "--redis", url.as_str()];
    let mut one = Calculator::spawn(&exe, &args);
    let mut two = Calculator::spawn(&exe, &args);
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let post_tasks = |method: &str, name: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": tasks });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let headers = format!(
            "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\nmcp-name: {name}\r\n"
        );
        post(
            "/mcp",
            Some("application/json"),
            &headers,
            &body.to_string(),
        )
    };
    let call = json!({ "name": "slow_compute", "arguments": { "seconds": 5 } });
    let created = bounded(request(
        addr(&one),
        &post_tasks("tools/call", "slow_compute", call),
    ))
    .await
    .json();
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = bounded(async {
        loop {
            let read = request(
                addr(&two),
                &post_tasks("tasks/get", &id, json!({ "taskId": id })),
            )
            .await
            .json();
            if read["result"]["status"] != "working" {
                return read;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    })
    .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"],
        "Computed a result after 5 s"
    );
    one.assert_alive();
    two.assert_alive();
    redis.kill();
}
