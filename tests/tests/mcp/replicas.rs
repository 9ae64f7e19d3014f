//! Legacy sessions across replicas, in process, against a real `redis-server`: two `McpServer`s
//! sharing a `RedisStore` and `Topics::redis`, a session begun on one, its GET stream read on the
//! other. What a handler sends on the session's connection ([`McpSession::peer`]) reaches the
//! GET stream on the other replica, and the client's answer to a call made there, posted to
//! either replica, comes back to the handler. The Redis store of sessions keeps its cap and
//! each change on its own, and sends its scripts by hash (again to a restarted Redis); a session
//! refuses, on another replica, an identity other than the one that opened it.

use std::net::SocketAddr;
use std::time::Duration;

use jrpc_mcp::{
    Form, Mcp, McpContext as _, McpServer, McpServerBuilder, McpSession, RedisStore, SessionChange,
    SessionLimits, SessionRecord, SessionStore,
};
use jrpc_runtime::server::Topics;
use jrpc_runtime::{Caller as _, Context, RpcError, rpc_service};
use jrpc_tests::bounded;
use jrpc_tests::raw_http::{Conn, post, request};
use jrpc_tests::redis::RedisServer;
use jrpc_tests::servers::serve_mcp;
use serde_json::{Value, json};

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Announces `text` on the session's GET stream.
    async fn announce(&self, ctx: &Context, text: String) -> Result<String, RpcError> {
        let session = ctx
            .extension::<McpSession>()
            .ok_or_else(|| RpcError::new(1, "no session"))?;
        session
            .peer()
            .notify("announcement", [text])
            .await
            .map_err(|err| RpcError::new(2, err.to_string()))?;
        Ok("announced".into())
    }

    /// Asks the client for its roots on the session's GET stream; how many it has.
    async fn count_roots(&self, ctx: &Context) -> Result<String, RpcError> {
        let session = ctx
            .extension::<McpSession>()
            .ok_or_else(|| RpcError::new(1, "no session"))?;
        let roots: Value = session
            .peer()
            .call("roots/list", json!({}))
            .await
            .map_err(|err| RpcError::new(2, err.to_string()))?;
        Ok(roots["roots"].as_array().map_or(0, Vec::len).to_string())
    }
}

struct Asking;

#[rpc_service(schema)]
impl Asking {
    /// Asks a name, then greets.
    async fn greet(&self, ctx: &Context) -> Result<String, RpcError> {
        let name: String = ctx
            .elicit("who", Form::string("Your name?", "name"))
            .await?
            .take("name")?;
        Ok(format!("Hi {name}"))
    }
}

/// A modern `tools/call` of `greet` on `mcp`, with `extra` params; its result.
async fn greet(mcp: &Mcp, extra: Value) -> Value {
    let mut params = json!({ "name": "greet", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } } });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let answer = mcp.methods().handle(&body.to_string()).await.unwrap();
    serde_json::from_str::<Value>(&answer).unwrap()["result"].clone()
}

/// Replicas share the keys that sign `requestState` through Redis, and a rotation made on one
/// reaches the other without refusing a state signed with the key before.
#[tokio::test]
async fn a_rotated_state_key_reaches_every_replica_and_the_one_before_still_checks() {
    let Some(mut redis) = RedisServer::start("mcp_state_key_rotation") else {
        return;
    };
    let refresh = Duration::from_millis(100);
    let store = || {
        RedisStore::builder(redis.url())
            .prefix("rotate:")
            .key_refresh(refresh)
            .connect()
    };
    let (one, two) = (
        bounded(store()).await.unwrap(),
        bounded(store()).await.unwrap(),
    );
    let replica = |ring| {
        Mcp::builder("rotating", "1")
            .tools(Asking.into_methods())
            .request_state_key_ring(ring)
            .build()
            .unwrap()
    };
    let ring_b = two.state_keys().await.unwrap();
    let (a, b) = (
        replica(one.state_keys().await.unwrap()),
        replica(ring_b.clone()),
    );
    let answer = json!({ "who": { "action": "accept", "content": { "name": "Ada" } } });
    let asked = greet(&a, json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let before = asked["requestState"].clone();
    let retry = json!({ "inputResponses": answer, "requestState": before });
    assert_eq!(
        greet(&b, retry.clone()).await["content"][0]["text"],
        "Hi Ada"
    );

    one.rotate_state_key().await.unwrap();
    bounded(async {
        while ring_b.key_count() < 2 {
            tokio::time::sleep(refresh / 4).await;
        }
    })
    .await;
    // Past twice the refresh the new key signs; the state signed before still checks on both.
    tokio::time::sleep(refresh * 3).await;
    for replica in [&a, &b] {
        let done = greet(replica, retry.clone()).await;
        assert_eq!(done["content"][0]["text"], "Hi Ada", "{done}");
    }
    let after = greet(&b, json!({})).await["requestState"].clone();
    let retry = json!({ "inputResponses": answer, "requestState": after });
    assert_eq!(greet(&a, retry).await["content"][0]["text"], "Hi Ada");
    redis.kill();
}

/// A replica on the Redis at `url`, keys and channels under `prefix`.
async fn replica(url: &str, prefix: &str) -> SocketAddr {
    replica_with(url, prefix, |server| server).await
}

/// A replica as [`replica`], its server's settings changed by `with`.
async fn replica_with(
    url: &str,
    prefix: &str,
    with: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> SocketAddr {
    let topics = bounded(Topics::redis(url).channel_prefix(prefix).connect())
        .await
        .unwrap();
    let store = bounded(RedisStore::builder(url).prefix(prefix).connect())
        .await
        .unwrap();
    let mcp = Mcp::builder("replicas", "1")
        .topics(topics)
        .tools(Tools.into_methods())
        .build()
        .unwrap();
    let server = with(McpServer::builder(mcp).session_store(store))
        .build()
        .unwrap();
    serve_mcp(server).await.0
}

fn legacy_post(session: Option<&str>, body: &Value) -> Vec<u8> {
    let mut headers = "accept: application/json, text/event-stream\r\n".to_owned();
    if let Some(id) = session {
        headers.push_str(&format!("mcp-session-id: {id}\r\n"));
    }
    post(
        "/mcp",
        Some("application/json"),
        &headers,
        &body.to_string(),
    )
}

fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } })
}

/// The data of the next event of `conn` that has some.
async fn next_data(conn: &mut Conn, pending: &mut String) -> Value {
    loop {
        let event = bounded(conn.read_event(pending)).await.unwrap();
        let data = event.lines().find_map(|l| l.strip_prefix("data: "));
        if let Some(data) = data.filter(|data| !data.is_empty()) {
            return serde_json::from_str(data).unwrap();
        }
    }
}

#[tokio::test]
async fn a_handler_on_one_replica_talks_on_a_get_stream_held_by_another() {
    let Some(mut redis) = RedisServer::start("mcp_session_relay") else {
        return;
    };
    let url = redis.url();
    let (one, two) = (replica(&url, "relay:").await, replica(&url, "relay:").await);
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": { "roots": {} },
        "clientInfo": { "name": "relay", "version": "1" } } });
    let reply = bounded(request(one, &legacy_post(None, &init))).await;
    let session = reply.header("mcp-session-id").unwrap().to_owned();

    let mut listening = Conn::open(two).await;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\n\r\n"
    );
    listening.write(get.as_bytes()).await;
    assert_eq!(bounded(listening.read_head()).await.status, 200);
    let mut pending = String::new();

    let call = tool_call(1, "announce", json!({ "text": "hello" }));
    let reply = bounded(request(one, &legacy_post(Some(&session), &call))).await;
    assert_eq!(reply.json()["result"]["content"][0]["text"], "announced");
    assert_eq!(
        next_data(&mut listening, &mut pending).await,
        json!({ "jsonrpc": "2.0", "method": "announcement", "params": ["hello"] })
    );

    // The call goes out on the GET stream (replica two); its answer is posted to each replica in
    // turn, and comes back to the handler on replica one.
    for (n, answered_at) in [(2, one), (3, two)] {
        let counted = legacy_post(Some(&session), &tool_call(n, "count_roots", json!({})));
        let counting = tokio::spawn(async move { request(one, &counted).await });
        let asked = next_data(&mut listening, &mut pending).await;
        assert_eq!(asked["method"], "roots/list", "{asked}");
        let answer = json!({ "jsonrpc": "2.0", "id": asked["id"],
                             "result": { "roots": [{ "uri": "file:///a" }, { "uri": "file:///b" }] } });
        let posted = bounded(request(answered_at, &legacy_post(Some(&session), &answer))).await;
        assert_eq!(posted.status, 202);
        let counted = bounded(counting).await.unwrap();
        assert_eq!(
            counted.json()["result"]["content"][0]["text"],
            "2",
            "{counted:?}"
        );
    }
    redis.kill();
}

/// A session opened on one replica by a token answers that token on another, and refuses
/// another token there (`404`, as for an unknown session), on POST and GET alike: the identity
/// that opened it is in the shared record.
#[tokio::test]
async fn a_session_refuses_a_second_identity_on_another_replica() {
    use jrpc_runtime::http::BearerAuth;

    let Some(mut redis) = RedisServer::start("mcp_session_identity") else {
        return;
    };
    let url = redis.url();
    let auth = |server: McpServerBuilder| {
        server.http(|http| http.bearer_auth(BearerAuth::tokens([("ann", "ann"), ("bob", "bob")])))
    };
    let one = replica_with(&url, "identity:", auth).await;
    let two = replica_with(&url, "identity:", auth).await;
    let with_token = |token: &str, session: Option<&str>, body: &Value| {
        let mut headers = format!(
            "accept: application/json, text/event-stream\r\nauthorization: Bearer {token}\r\n"
        );
        if let Some(id) = session {
            headers.push_str(&format!("mcp-session-id: {id}\r\n"));
        }
        post(
            "/mcp",
            Some("application/json"),
            &headers,
            &body.to_string(),
        )
    };
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "identity", "version": "1" } } });
    let reply = bounded(request(one, &with_token("ann", None, &init))).await;
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let by_ann = bounded(request(two, &with_token("ann", Some(&session), &ping))).await;
    assert_eq!(by_ann.status, 200, "{by_ann:?}");
    let by_bob = bounded(request(two, &with_token("bob", Some(&session), &ping))).await;
    assert_eq!(by_bob.status, 404, "{by_bob:?}");
    assert_eq!(by_bob.json()["error"]["code"], -32600, "{by_bob:?}");
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\nauthorization: Bearer bob\r\nmcp-session-id: {session}\r\n\r\n"
    );
    let streamed = bounded(request(two, get.as_bytes())).await;
    assert_eq!(streamed.status, 404, "{streamed:?}");
    redis.kill();
}

#[tokio::test]
async fn the_redis_store_caps_sessions_and_keeps_each_change() {
    let Some(mut redis) = RedisServer::start("mcp_session_store") else {
        return;
    };
    let store = bounded(RedisStore::builder(redis.url()).prefix("store:").connect())
        .await
        .unwrap();
    let limits = SessionLimits::new(2, Duration::from_secs(600));
    let idle = limits.idle;
    let opened = |who: &str| SessionRecord::opened_by(Some(who.to_owned()));
    assert!(
        store
            .create_session("a", opened("ann"), limits)
            .await
            .unwrap()
    );
    assert!(
        store
            .create_session("b", opened("bob"), limits)
            .await
            .unwrap()
    );
    assert!(
        !store
            .create_session("c", opened("cat"), limits)
            .await
            .unwrap(),
        "full"
    );
    let changes = [
        SessionChange::Initialized {
            version: "2025-11-25".into(),
            capabilities: Some(json!({ "sampling": {} })),
            client_info: None,
        },
        SessionChange::LogLevel(jrpc_mcp::LogLevel::Error),
        SessionChange::Follow("test://x".into(), true),
        SessionChange::Follow("test://y".into(), true),
        SessionChange::Follow("test://x".into(), false),
        SessionChange::Listener {
            now: Some(5),
            was: None,
        },
        SessionChange::Listener {
            now: None,
            was: Some(6),
        },
    ];
    for change in changes {
        assert!(store.update_session("a", change, idle).await.unwrap());
    }
    let record = store.session("a", idle).await.unwrap().unwrap();
    assert_eq!(record.identity.as_deref(), Some("ann"));
    assert_eq!(record.version.as_deref(), Some("2025-11-25"));
    assert_eq!(record.capabilities, Some(json!({ "sampling": {} })));
    assert_eq!(record.log_level, Some(jrpc_mcp::LogLevel::Error));
    assert_eq!(
        record.followed.into_iter().collect::<Vec<_>>(),
        ["test://y"]
    );
    assert_eq!(record.listener, Some(5), "cleared only by the listener");
    let cleared = SessionChange::Listener {
        now: None,
        was: Some(5),
    };
    assert!(store.update_session("a", cleared, idle).await.unwrap());
    assert_eq!(
        store.session("a", idle).await.unwrap().unwrap().listener,
        None
    );
    assert!(store.remove_session("b").await.unwrap());
    assert!(!store.remove_session("b").await.unwrap());
    assert!(store.session("b", idle).await.unwrap().is_none());
    let none = SessionChange::LogLevel(jrpc_mcp::LogLevel::Debug);
    assert!(!store.update_session("b", none, idle).await.unwrap());
    assert!(
        store
            .create_session("c", opened("cat"), limits)
            .await
            .unwrap(),
        "room again"
    );
    redis.kill();
}

#[tokio::test]
async fn the_redis_store_sends_its_scripts_by_hash_and_again_to_a_restarted_redis() {
    let Some(mut redis) = RedisServer::start("mcp_store_scripts") else {
        return;
    };
    let store = bounded(
        RedisStore::builder(redis.url())
            .prefix("scripts:")
            .connect(),
    )
    .await
    .unwrap();
    let limits = SessionLimits::new(8, Duration::from_secs(600));
    let idle = limits.idle;
    let opened = || SessionRecord::opened_by(None);
    for id in ["a", "b", "c"] {
        assert!(store.create_session(id, opened(), limits).await.unwrap());
        assert!(store.session(id, idle).await.unwrap().is_some());
    }
    // Each script's text went once (loaded where Redis did not hold it), then only its hash.
    let calls = |name: &str| redis.calls(name).unwrap();
    assert_eq!(calls("eval"), 0);
    assert!(calls("evalsha") >= 6, "{}", calls("evalsha"));
    let loaded = calls("script|load");
    assert!((1..6).contains(&loaded), "{loaded}");
    // A Redis restarted without persistence holds neither sessions nor scripts: the store
    // connects again (a command may meet the connection the restart broke) and loads them again.
    redis.restart();
    let mut made = None;
    for _ in 0..3 {
        made = Some(store.create_session("d", opened(), limits).await);
        if matches!(made, Some(Ok(_))) {
            break;
        }
    }
    assert!(matches!(made, Some(Ok(true))), "{made:?}");
    assert!(store.session("d", idle).await.unwrap().is_some());
    assert!(
        store.session("a", idle).await.unwrap().is_none(),
        "lost with the restart"
    );
    assert!(redis.calls("script|load").unwrap() >= 1);
    redis.kill();
}

#[tokio::test]
async fn the_redis_store_keeps_a_tasks_questions_answers_lease_and_sweep() {
    use jrpc_mcp::{TaskChange, TaskRecord, TaskStatus, TaskStore};

    let Some(mut redis) = RedisServer::start("mcp_task_store") else {
        return;
    };
    let store = bounded(RedisStore::builder(redis.url()).prefix("tasks:").connect())
        .await
        .unwrap();
    let (ttl, poll, lease) = (
        Duration::from_secs(600),
        Duration::from_millis(500),
        Duration::from_secs(600),
    );
    assert!(
        store
            .create_task(TaskRecord::working("t", ttl, poll), lease)
            .await
            .unwrap()
    );
    let made = store.task("t").await.unwrap().unwrap();
    assert_eq!(
        (made.status, made.ttl_ms, made.poll_interval_ms),
        (TaskStatus::Working, 600_000, 500)
    );
    let asked = json!({ "a": { "method": "elicitation/create" }, "b": { "method": "roots/list" } });
    let record = store
        .update_task("t", TaskChange::Ask(serde_json::from_value(asked).unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, TaskStatus::InputRequired);
    let one = json!({ "a": { "action": "accept" }, "z": { "ignored": true } });
    let record = store
        .update_task(
            "t",
            TaskChange::Answer(serde_json::from_value(one).unwrap()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, TaskStatus::InputRequired, "b is still asked");
    assert_eq!(record.input_requests.keys().collect::<Vec<_>>(), ["b"]);
    let keys = ["a".to_owned(), "b".to_owned()];
    let taken = store.take_answers("t", &keys).await.unwrap();
    assert_eq!(Value::Object(taken), json!({ "a": { "action": "accept" } }));
    assert!(
        store.take_answers("t", &keys).await.unwrap().is_empty(),
        "taken once"
    );
    let two = json!({ "b": { "roots": [] } });
    let record = store
        .update_task(
            "t",
            TaskChange::Answer(serde_json::from_value(two).unwrap()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, TaskStatus::Working);
    let result = json!({ "content": [{ "type": "text", "text": "done" }] });
    let record = store
        .update_task("t", TaskChange::Complete(result.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (record.status, record.result),
        (TaskStatus::Completed, Some(result))
    );
    let late = store
        .update_task("t", TaskChange::Cancel)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(late.status, TaskStatus::Completed, "terminal stays");
    assert!(store.task("u").await.unwrap().is_none());

    // A task whose replica stops renewing its lease reads as failed once the lease runs out (on
    // Redis's clock: the test polls for it).
    let short = Duration::from_millis(100);
    let record = TaskRecord::working("lost", ttl, poll);
    assert!(store.create_task(record, short).await.unwrap());
    store
        .renew_tasks(&["lost".to_owned()], short)
        .await
        .unwrap();
    let failed = bounded(async {
        loop {
            let record = store.task("lost").await.unwrap().unwrap();
            if record.status != TaskStatus::Working {
                return record;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(failed.status, TaskStatus::Failed);
    assert_eq!(failed.error.as_ref().unwrap()["code"], -32603);

    // The sweep hands each task lost so to one caller, once: the one a read failed, and one no
    // one read (failed by the sweep itself); a task that finished is not handed.
    let record = TaskRecord::working("unread", ttl, poll);
    assert!(store.create_task(record, short).await.unwrap());
    let record = TaskRecord::working("finished", ttl, poll);
    assert!(store.create_task(record, short).await.unwrap());
    store
        .update_task("finished", TaskChange::Complete(json!({})))
        .await
        .unwrap();
    tokio::time::sleep(short * 2).await;
    let mut swept = store.sweep_lost(10).await.unwrap();
    swept.sort_by(|a, b| a.id.cmp(&b.id));
    let swept: Vec<_> = swept.iter().map(|r| (r.id.as_str(), r.status)).collect();
    assert_eq!(
        swept,
        [("lost", TaskStatus::Failed), ("unread", TaskStatus::Failed)]
    );
    assert!(store.sweep_lost(10).await.unwrap().is_empty(), "once");
    let unread = store.task("unread").await.unwrap().unwrap();
    assert_eq!(unread.error.unwrap()["code"], -32603);
    redis.kill();
}
