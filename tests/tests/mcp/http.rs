//! MCP's Streamable HTTP transport, rule by rule, against an `McpServer` on a free local port,
//! with HTTP written and read by hand.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use jrpc_mcp::{McpServer, McpServerBuilder, McpSession};
use jrpc_runtime::server::Drained;
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use jrpc_tests::fixtures::{self, Gate};
use jrpc_tests::raw_http::{Conn, Reply, post, request};
use jrpc_tests::servers::serve_mcp;
use jrpc_tests::{bounded, eventually};
use serde_json::{Value, json};

const BOTH: &str = "accept: application/json, text/event-stream\r\n";

/// `initialize`, `ping`, `announce [text]` (a notification on the session's GET stream),
/// `export [n]` (a `progress` notification, then `n` `x`s), and the fixtures `ticks`, `ask`,
/// `gate`, `big` and `add`.
fn methods(gate: &Arc<Gate>) -> Methods {
    let mut methods = Methods::new();
    fixtures::add(&mut methods);
    fixtures::big(&mut methods);
    methods
        .register(
            "export",
            &["n"],
            |(n,): (usize,), ctx: Context| async move {
                let peer = ctx.peer().ok_or_else(|| RpcError::new(2, "no peer"))?;
                peer.notify("progress", [50])
                    .await
                    .map_err(|err| RpcError::new(3, err.to_string()))?;
                Ok::<_, RpcError>("x".repeat(n))
            },
        )
        .unwrap();
    fixtures::gate(&mut methods, gate);
    methods
        .register("initialize", &[], |(): (), _| async move {
            Ok::<_, RpcError>(json!({ "protocolVersion": "2025-11-25", "capabilities": {} }))
        })
        .unwrap();
    methods
        .register("ping", &[], |(): (), _| async move {
            Ok::<_, RpcError>(json!({}))
        })
        .unwrap();
    fixtures::ticks(&mut methods);
    fixtures::ask(&mut methods);
    methods
        .register(
            "announce",
            &["text"],
            |(text,): (String,), ctx: Context| async move {
                let session = ctx
                    .extension::<McpSession>()
                    .ok_or_else(|| RpcError::new(2, "no session"))?;
                session
                    .peer()
                    .notify("announcement", [&text])
                    .await
                    .map_err(|err| RpcError::new(3, err.to_string()))?;
                Ok::<_, RpcError>(session.id().to_owned())
            },
        )
        .unwrap();
    methods
}

struct Server {
    addr: SocketAddr,
    server: McpServer,
    gate: Arc<Gate>,
    /// Whether [`Server::send`] connects over an in-memory pipe rather than TCP.
    in_memory: bool,
}

async fn start(configure: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> Server {
    let gate = Gate::shared();
    let server = configure(McpServer::builder(methods(&gate)))
        .build()
        .unwrap();
    let (addr, _) = serve_mcp(server.clone()).await;
    Server {
        addr,
        server,
        gate,
        in_memory: false,
    }
}

fn call(id: i64, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// A POST to `/mcp` with `headers` (lines ended by `\r\n`).
fn mcp_post(headers: &str, body: &str) -> Vec<u8> {
    post("/mcp", Some("application/json"), headers, body)
}

fn session_header(id: &str) -> String {
    format!("mcp-session-id: {id}\r\n")
}

impl Server {
    /// The same server, its requests sent over in-memory pipes: for a test on a paused clock,
    /// which loopback TCP cannot keep exact (a delivery the kernel defers under load lets tokio
    /// move the clock on to the server's next timeout).
    fn in_memory(self) -> Self {
        Self {
            in_memory: true,
            ..self
        }
    }

    /// Sends `raw` on a fresh connection and reads the reply.
    async fn send(&self, raw: &[u8]) -> Reply {
        if !self.in_memory {
            return bounded(request(self.addr, raw)).await;
        }
        let (client, served) = tokio::io::duplex(64 * 1024);
        tokio::spawn(self.server.serve_connection(served, None));
        bounded(Conn::over(client).send(raw)).await
    }

    /// Initializes a session; returns its id.
    async fn initialize(&self) -> String {
        let reply = self
            .send(&mcp_post(BOTH, &call(0, "initialize", json!({}))))
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.json()["result"]["protocolVersion"], "2025-11-25");
        reply
            .header("mcp-session-id")
            .expect("a session id on the initialize answer")
            .to_owned()
    }

    /// A POST of `body` in session `id`, with `Accept` naming both types.
    async fn post_in(&self, id: &str, body: &str) -> Reply {
        self.send(&mcp_post(&format!("{BOTH}{}", session_header(id)), body))
            .await
    }
}

fn data(event: &str) -> Value {
    let line = event
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no data in {event:?}"));
    serde_json::from_str(line).unwrap()
}

/// Asserts `event` is a stream's priming event (an id, the `retry`, no data); its id.
fn primer(event: &str) -> &str {
    assert!(event.contains("\nretry: 3000\n"), "{event:?}");
    assert!(event.ends_with("data: "), "no data: {event:?}");
    event_id(event)
}

fn event_id(event: &str) -> &str {
    event
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no id in {event:?}"))
}

fn get(headers: &str) -> Vec<u8> {
    format!("GET /mcp HTTP/1.1\r\nhost: localhost\r\n{headers}\r\n").into_bytes()
}

/// A connection that opened session `id`'s GET stream: its head is read, its events are next.
async fn listen(s: &Server, id: &str) -> Conn {
    let mut conn = Conn::open(s.addr).await;
    let headers = format!("accept: text/event-stream\r\n{}", session_header(id));
    conn.write(&get(&headers)).await;
    let head = bounded(conn.read_head()).await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    conn
}

// ---------------------------------------------------------------------------------------------
// Sessions

/// At the defaults an answer of 5 MiB comes whole: as JSON, and as the last event of an SSE
/// answer whose handler sent a notification first.
#[tokio::test]
async fn a_five_mebibyte_answer_comes_whole_as_json_and_over_sse() {
    const FIVE: usize = 5 * 1024 * 1024;
    let s = start(|b| b).await;
    let id = s.initialize().await;
    let json = s.post_in(&id, &call(1, "big", json!([FIVE]))).await;
    assert_eq!(json.status, 200);
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert_eq!(json.json()["result"].as_str().map(str::len), Some(FIVE));
    let events = s.post_in(&id, &call(2, "export", json!([FIVE]))).await;
    assert_eq!(events.header("content-type"), Some("text/event-stream"));
    let mut events = events.body.split("\n\n").filter(|e| e.contains("data: "));
    primer(events.next().expect("the stream's priming event"));
    let events: Vec<Value> = events.map(data).collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["method"], "progress");
    assert_eq!(events[1]["id"], 2);
    assert_eq!(events[1]["result"].as_str().map(str::len), Some(FIVE));
}

#[tokio::test]
async fn initialize_issues_a_random_session_id_that_later_requests_need() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    assert_ne!(id, s.initialize().await, "each session its own id");

    let ping = s.post_in(&id, &call(1, "ping", json!({}))).await;
    assert_eq!(
        (ping.status, ping.json()),
        (200, json!({ "jsonrpc": "2.0", "result": {}, "id": 1 }))
    );
    let without = s.send(&mcp_post(BOTH, &call(2, "ping", json!({})))).await;
    without.assert_envelope(400, -32600);
    let unknown = s
        .post_in(
            "00000000000000000000000000000000",
            &call(3, "ping", json!({})),
        )
        .await;
    unknown.assert_envelope(404, -32600);
}

#[tokio::test]
async fn delete_ends_a_session() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    let delete = |extra: String| format!("DELETE /mcp HTTP/1.1\r\nhost: localhost\r\n{extra}\r\n");
    let ended = s.send(delete(session_header(&id)).as_bytes()).await;
    assert_eq!((ended.status, ended.body.as_str()), (204, ""));
    s.post_in(&id, &call(1, "ping", json!({})))
        .await
        .assert_envelope(404, -32600);
    s.send(delete(session_header(&id)).as_bytes())
        .await
        .assert_envelope(404, -32600);
    s.send(delete(String::new()).as_bytes())
        .await
        .assert_envelope(400, -32600);
}

#[tokio::test(start_paused = true)]
async fn sessions_are_capped_and_idle_ones_expire() {
    let s = start(|b| {
        b.max_sessions(1)
            .session_idle_timeout(Duration::from_millis(50))
    })
    .await
    .in_memory();
    let first = s.initialize().await;
    // Used just now: not idle long enough to make room.
    s.send(&mcp_post(BOTH, &call(0, "initialize", json!({}))))
        .await
        .assert_envelope(503, -32000);
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.post_in(&first, &call(1, "ping", json!({})))
        .await
        .assert_envelope(404, -32600);
    let second = s.initialize().await;
    assert_ne!(first, second);
}

#[tokio::test]
async fn requests_of_a_session_are_capped() {
    let s = start(|b| b.max_in_flight(1)).await;
    let id = s.initialize().await;
    let held = tokio::spawn({
        let (addr, body) = (
            s.addr,
            mcp_post(&session_header(&id), &call(1, "gate", json!([]))),
        );
        async move { request(addr, &body).await }
    });
    eventually(|| s.gate.entered.load(std::sync::atomic::Ordering::SeqCst) == 1).await;
    let busy = s.post_in(&id, &call(2, "ping", json!({}))).await;
    assert_eq!(busy.status, 200);
    assert_eq!(busy.json()["error"]["code"], -32000);
    s.gate.release.add_permits(1);
    assert_eq!(bounded(held).await.unwrap().json()["result"], "through");
}

// ---------------------------------------------------------------------------------------------
// POST

#[tokio::test]
async fn notifications_and_answers_get_202_and_no_body() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    for body in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","result":{},"id":99}"#,
        r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","error":{"code":1,"message":"m"},"id":98}]"#,
    ] {
        let reply = s.post_in(&id, body).await;
        assert_eq!((reply.status, reply.body.as_str()), (202, ""), "{body}");
    }
    let bad = s.post_in(&id, "not json").await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["code"], -32700);
}

#[tokio::test]
async fn a_request_is_answered_as_accept_allows() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    // Pushes: an event stream, its priming event first, ids naming the stream, the answer last.
    let ticks = s.post_in(&id, &call(1, "ticks", json!([2]))).await;
    assert_eq!(ticks.header("content-type"), Some("text/event-stream"));
    let events: Vec<&str> = ticks.body.split_terminator("\n\n").collect();
    primer(events[0]);
    assert_eq!(
        events[1..].iter().map(|e| data(e)).collect::<Vec<_>>(),
        [
            json!({ "jsonrpc": "2.0", "method": "tick", "params": { "n": 1 } }),
            json!({ "jsonrpc": "2.0", "method": "tick", "params": { "n": 2 } }),
            json!({ "jsonrpc": "2.0", "result": 2, "id": 1 }),
        ]
    );
    let streams: Vec<&str> = events
        .iter()
        .map(|e| event_id(e).split('-').next().unwrap())
        .collect();
    assert!(streams.windows(2).all(|w| w[0] == w[1]), "{streams:?}");
    // Nothing pushed: JSON.
    let sum = s.post_in(&id, &call(2, "add", json!([2, 3]))).await;
    assert_eq!(sum.header("content-type"), Some("application/json"));
    assert_eq!(sum.json()["result"], 5);
    // JSON only accepted: JSON, and the handler has no peer to push on.
    let json_only = s
        .send(&mcp_post(
            &format!("accept: application/json\r\n{}", session_header(&id)),
            &call(3, "ticks", json!([2])),
        ))
        .await;
    assert_eq!(json_only.header("content-type"), Some("application/json"));
    assert_eq!(json_only.json()["error"]["message"], "no peer");
}

/// A handler's call to the client goes out on the request's stream; the client's POST of the
/// answer gets `202` and wakes it.
#[tokio::test]
async fn a_handlers_call_is_answered_by_a_post() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    let mut conn = Conn::open(s.addr).await;
    conn.write(&mcp_post(
        &format!("{BOTH}{}", session_header(&id)),
        &call(1, "ask", json!(["name?"])),
    ))
    .await;
    assert_eq!(bounded(conn.read_head()).await.status, 200);
    let mut pending = String::new();
    primer(&bounded(conn.read_event(&mut pending)).await.unwrap());
    let asked = data(&bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(asked["method"], "answer");
    let answer = json!({ "jsonrpc": "2.0", "result": "jrpc", "id": asked["id"] });
    let posted = s.post_in(&id, &answer.to_string()).await;
    assert_eq!(posted.status, 202);
    let last = data(&bounded(conn.read_event(&mut pending)).await.unwrap());
    assert_eq!(last, json!({ "jsonrpc": "2.0", "result": "jrpc", "id": 1 }));
}

// ---------------------------------------------------------------------------------------------
// GET

#[tokio::test]
async fn get_opens_the_sessions_stream() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    let mut conn = listen(&s, &id).await;
    let answered = s.post_in(&id, &call(1, "announce", json!(["hello"]))).await;
    assert_eq!(answered.json()["result"], id.as_str());
    let mut pending = String::new();
    assert!(primer(&bounded(conn.read_event(&mut pending)).await.unwrap()).starts_with("0-"));
    let event = bounded(conn.read_event(&mut pending)).await.unwrap();
    assert_eq!(
        data(&event),
        json!({ "jsonrpc": "2.0", "method": "announcement", "params": ["hello"] })
    );
    assert!(event_id(&event).starts_with("0-"), "{event}");

    let second = s
        .send(&get(&format!(
            "accept: text/event-stream\r\n{}",
            session_header(&id)
        )))
        .await;
    second.assert_envelope(409, -32600);
    s.send(&get(&session_header(&id)))
        .await
        .assert_envelope(406, -32600);
    s.send(&get("accept: text/event-stream\r\n"))
        .await
        .assert_envelope(400, -32600);

    // Ending the session ends its stream.
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: localhost\r\n{}\r\n",
        session_header(&id)
    );
    assert_eq!(s.send(delete.as_bytes()).await.status, 204);
    assert_eq!(bounded(conn.read_event(&mut pending)).await, None);
}

/// A GET stream quiet for the keep-alive interval gets a comment, and again an interval after
/// each event (on a paused clock, over an in-memory pipe).
#[tokio::test(start_paused = true)]
async fn a_quiet_get_stream_gets_keep_alive_comments() {
    let s = start(|b| b.keep_alive(Some(Duration::from_secs(20))))
        .await
        .in_memory();
    let id = s.initialize().await;
    let (client, served) = tokio::io::duplex(64 * 1024);
    tokio::spawn(s.server.serve_connection(served, None));
    let mut conn = Conn::over(client);
    let headers = format!("accept: text/event-stream\r\n{}", session_header(&id));
    conn.write(&get(&headers)).await;
    assert_eq!(bounded(conn.read_head()).await.status, 200);
    let mut pending = String::new();
    primer(&bounded(conn.read_event(&mut pending)).await.unwrap());
    let started = tokio::time::Instant::now();
    assert_eq!(
        bounded(conn.read_event(&mut pending)).await.as_deref(),
        Some(": keep-alive")
    );
    assert_eq!(started.elapsed(), Duration::from_secs(20));
    let answered = s.post_in(&id, &call(1, "announce", json!(["hi"]))).await;
    assert_eq!(answered.status, 200);
    let event = bounded(conn.read_event(&mut pending)).await.unwrap();
    assert_eq!(data(&event)["method"], "announcement");
    let announced = tokio::time::Instant::now();
    assert_eq!(
        bounded(conn.read_event(&mut pending)).await.as_deref(),
        Some(": keep-alive")
    );
    assert_eq!(announced.elapsed(), Duration::from_secs(20));
}

/// A request's stream broken off after its first event is resumed with `Last-Event-ID`: what
/// followed, on that stream only, then its answer.
#[tokio::test]
async fn a_broken_stream_is_resumed_from_its_last_event_id() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    let mut first = Conn::open(s.addr).await;
    // `ask` waits: its call to the client is the first event, its answer follows once the
    // client answers.
    first
        .write(&mcp_post(
            &format!("{BOTH}{}", session_header(&id)),
            &call(1, "ask", json!(["again?"])),
        ))
        .await;
    bounded(first.read_head()).await;
    let mut pending = String::new();
    primer(&bounded(first.read_event(&mut pending)).await.unwrap());
    let asked_event = bounded(first.read_event(&mut pending)).await.unwrap();
    let asked = data(&asked_event);
    let last_seen = event_id(&asked_event).to_owned();
    drop(first);
    // Answered while no one reads the stream: the handler's answer waits in the session.
    let answer = json!({ "jsonrpc": "2.0", "result": "yes", "id": asked["id"] });
    assert_eq!(s.post_in(&id, &answer.to_string()).await.status, 202);
    let resumed = s
        .send(&get(&format!(
            "accept: text/event-stream\r\nlast-event-id: {last_seen}\r\n{}",
            session_header(&id)
        )))
        .await;
    assert_eq!(resumed.status, 200);
    let events: Vec<&str> = resumed.body.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        data(events[0]),
        json!({ "jsonrpc": "2.0", "result": "yes", "id": 1 })
    );
    assert_eq!(
        event_id(events[0]).split('-').next(),
        last_seen.split('-').next(),
        "the same stream"
    );
}

// ---------------------------------------------------------------------------------------------
// Checks on every request

#[tokio::test]
async fn an_unsupported_protocol_version_is_400() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    for good in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let headers = format!(
            "{BOTH}{}mcp-protocol-version: {good}\r\n",
            session_header(&id)
        );
        let reply = s
            .send(&mcp_post(&headers, &call(1, "ping", json!({}))))
            .await;
        assert_eq!(reply.status, 200, "{good}");
    }
    let headers = format!(
        "{BOTH}{}mcp-protocol-version: 1999-01-01\r\n",
        session_header(&id)
    );
    let reply = s
        .send(&mcp_post(&headers, &call(1, "ping", json!({}))))
        .await;
    let body = reply.assert_envelope(400, -32600);
    assert!(
        body["error"]["data"]
            .as_str()
            .unwrap()
            .contains("2025-11-25")
    );
}

#[tokio::test]
async fn origins_outside_the_allow_list_get_403() {
    let s = start(|b| b).await;
    let init = call(0, "initialize", json!({}));
    for origin in [
        "http://evil.example",
        "http://localhost.evil.example",
        "null",
    ] {
        let reply = s
            .send(&mcp_post(&format!("{BOTH}origin: {origin}\r\n"), &init))
            .await;
        reply.assert_envelope(403, -32600);
    }
    for origin in [
        "http://localhost:6274",
        "http://127.0.0.1",
        "http://[::1]:8080",
    ] {
        let reply = s
            .send(&mcp_post(&format!("{BOTH}origin: {origin}\r\n"), &init))
            .await;
        assert_eq!(reply.status, 200, "{origin}");
    }
    let listed = start(|b| b.allowed_origins(["https://app.example"])).await;
    let reply = listed
        .send(&mcp_post(
            &format!("{BOTH}origin: https://app.example\r\n"),
            &init,
        ))
        .await;
    assert_eq!(reply.status, 200);
    let reply = listed
        .send(&mcp_post(
            &format!("{BOTH}origin: http://localhost\r\n"),
            &init,
        ))
        .await;
    reply.assert_envelope(403, -32600);
}

// ---------------------------------------------------------------------------------------------
// Stateless mode, shutdown

#[tokio::test]
async fn stateless_mode_has_no_sessions() {
    let s = start(|b| b.stateless(true)).await;
    let init = s
        .send(&mcp_post(BOTH, &call(0, "initialize", json!({}))))
        .await;
    assert_eq!(init.status, 200);
    assert_eq!(init.header("mcp-session-id"), None);
    let ticks = s.send(&mcp_post(BOTH, &call(1, "ticks", json!([1])))).await;
    assert_eq!(ticks.header("content-type"), Some("text/event-stream"));
    assert!(
        !ticks.body.contains("id: "),
        "no ids without replay: {}",
        ticks.body
    );
    let last = ticks.body.split_terminator("\n\n").last().unwrap();
    assert_eq!(data(last)["result"], 1);
    let notified = s
        .send(&mcp_post(BOTH, r#"{"jsonrpc":"2.0","method":"x"}"#))
        .await;
    assert_eq!(notified.status, 202);
    let get = s.send(&get("accept: text/event-stream\r\n")).await;
    get.assert_envelope(405, -32600);
    assert_eq!(get.header("allow"), Some("POST"));
}

#[tokio::test]
async fn a_shutdown_ends_the_get_streams_and_drains() {
    let s = start(|b| b).await;
    let id = s.initialize().await;
    let mut conn = listen(&s, &id).await;
    let mut pending = String::new();
    primer(&bounded(conn.read_event(&mut pending)).await.unwrap());
    let drained = bounded(s.server.shutdown_handle().shutdown()).await;
    assert_eq!(drained, Drained::Complete);
    assert_eq!(bounded(conn.read_event(&mut pending)).await, None);
}

#[tokio::test]
async fn other_paths_are_404_and_other_methods_405() {
    let s = start(|b| b).await;
    let reply = s
        .send(&post(
            "/rpc",
            Some("application/json"),
            BOTH,
            &call(1, "ping", json!({})),
        ))
        .await;
    reply.assert_envelope(404, -32600);
    let put = s
        .send(b"PUT /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-length: 0\r\n\r\n")
        .await;
    put.assert_envelope(405, -32600);
    assert_eq!(put.header("allow"), Some("GET, POST, DELETE"));
}

// ---------------------------------------------------------------------------------------------
// Identity

/// A session answers only the identity that opened it: by default the bearer token that did
/// (another token the verifier takes gets `404`, as for an unknown session); with
/// `session_identity`, what the verifier's identity names (a token refreshed for the same user
/// goes on).
#[tokio::test]
async fn a_session_answers_only_the_identity_that_opened_it() {
    use jrpc_runtime::http::BearerAuth;

    #[derive(Clone)]
    struct User(&'static str);

    let tokens = || {
        BearerAuth::tokens([
            ("ann-1", User("ann")),
            ("ann-2", User("ann")),
            ("bob-1", User("bob")),
        ])
    };
    let bearer = |token: &str| format!("authorization: Bearer {token}\r\n");
    for by_user in [false, true] {
        let s = start(|b| {
            let b = b.http(|http| http.bearer_auth(tokens()));
            if by_user {
                b.session_identity(|ctx| ctx.extension::<User>().map(|user| user.0.to_owned()))
            } else {
                b
            }
        })
        .await;
        let opened = s
            .send(&mcp_post(
                &format!("{BOTH}{}", bearer("ann-1")),
                &call(0, "initialize", json!({})),
            ))
            .await;
        let id = opened.header("mcp-session-id").unwrap().to_owned();
        let ping = |token: &str| {
            mcp_post(
                &format!("{BOTH}{}{}", bearer(token), session_header(&id)),
                &call(1, "ping", json!({})),
            )
        };
        assert_eq!(s.send(&ping("ann-1")).await.status, 200);
        s.send(&ping("bob-1")).await.assert_envelope(404, -32600);
        let refreshed = s.send(&ping("ann-2")).await;
        if by_user {
            assert_eq!(refreshed.status, 200, "the same user: {refreshed:?}");
        } else {
            refreshed.assert_envelope(404, -32600);
        }
        let headers = format!(
            "accept: text/event-stream\r\n{}{}",
            bearer("bob-1"),
            session_header(&id)
        );
        s.send(&get(&headers)).await.assert_envelope(404, -32600);
    }
}
