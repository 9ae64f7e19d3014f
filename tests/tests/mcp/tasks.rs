//! The tasks extension (SEP-2663), in process: a task-supporting tool answered with a task for a
//! client that takes tasks (and a plain call, or `-32021`, for one that does not); `tasks/get`
//! with the result, the tool's error or the protocol's inlined; questions answered through
//! `tasks/update`; `tasks/cancel` reaching the handler through the runtime's cancellation; a
//! handler that starts its task itself; the task's changes on a listen stream; and over HTTP,
//! the `Mcp-Name` the extension asks of its methods.

use std::sync::Arc;

use jrpc_mcp::{Form, Mcp, McpContext as _, McpServer, TaskSupport};
use jrpc_runtime::{Context, RpcError, rpc_service};
use jrpc_tests::bounded;
use jrpc_tests::raw_http::{Conn, post, request};
use jrpc_tests::servers::serve_mcp;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

struct Tools {
    /// Told once a `hang` handler's cancellation reached it.
    cancelled: mpsc::UnboundedSender<()>,
    /// Lets `wait` handlers answer.
    go: Arc<Notify>,
}

#[rpc_service(schema)]
impl Tools {
    /// Answers once told to.
    async fn wait(&self) -> String {
        self.go.notified().await;
        "waited".into()
    }

    /// Fails as a tool.
    fn broken(&self) -> Result<String, RpcError> {
        Err(RpcError::new(7, "broken by design"))
    }

    /// Fails as the protocol.
    fn crashed(&self) -> Result<String, RpcError> {
        Err(RpcError::internal())
    }

    /// Runs until cancelled, and says so.
    async fn hang(&self, ctx: &Context) -> String {
        let stop = ctx.cancelled();
        let told = self.cancelled.clone();
        tokio::spawn(async move {
            stop.await;
            let _ = told.send(());
        });
        std::future::pending::<()>().await;
        String::new()
    }

    /// Asks a yes or no.
    async fn confirm(&self, ctx: &Context) -> Result<String, RpcError> {
        let form = Form::new(
            "Sure?",
            json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } }),
        );
        let ok: bool = ctx.elicit("sure", form).await?.take("ok")?;
        Ok(format!("ok: {ok}"))
    }

    /// Asks a name as a plain call, then goes on as a task.
    async fn later(&self, ctx: &Context) -> Result<String, RpcError> {
        let name: String = ctx
            .elicit("who", Form::string("Name?", "name"))
            .await?
            .take("name")?;
        let task = ctx.mcp().ok_or_else(|| RpcError::new(1, "not MCP"))?;
        let started = task.start_task().await?;
        Ok(format!("{name}: task {started}"))
    }
}

struct Fixture {
    mcp: Mcp,
    cancelled: mpsc::UnboundedReceiver<()>,
    go: Arc<Notify>,
}

fn fixture() -> Fixture {
    let (tx, cancelled) = mpsc::unbounded_channel();
    let go = Arc::new(Notify::new());
    let tools = Tools {
        cancelled: tx,
        go: Arc::clone(&go),
    };
    let mcp = Mcp::builder("tasks", "1")
        .tools(tools.into_methods())
        .tool_task("wait", TaskSupport::Optional)
        .tool_task("broken", TaskSupport::Optional)
        .tool_task("crashed", TaskSupport::Optional)
        .tool_task("hang", TaskSupport::Required)
        .tool_task("confirm", TaskSupport::Optional)
        .tool_task_deferred("later", TaskSupport::Optional)
        .build()
        .unwrap();
    Fixture { mcp, cancelled, go }
}

/// `_meta` of a modern request from a client that takes tasks (or not), and elicitations.
fn meta(tasks: bool) -> Value {
    let mut capabilities = json!({ "elicitation": {} });
    if tasks {
        capabilities["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    }
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities })
}

/// Calls `method` with `params` in process; the answer.
async fn call(mcp: &Mcp, method: &str, mut params: Value, tasks: bool) -> Value {
    params["_meta"] = meta(tasks);
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = bounded(mcp.methods().handle(&request.to_string()))
        .await
        .unwrap();
    serde_json::from_str(&answer).unwrap()
}

async fn tool(mcp: &Mcp, name: &str, tasks: bool) -> Value {
    call(
        mcp,
        "tools/call",
        json!({ "name": name, "arguments": {} }),
        tasks,
    )
    .await
}

async fn get(mcp: &Mcp, id: &Value) -> Value {
    call(mcp, "tasks/get", json!({ "taskId": id }), true).await["result"].clone()
}

/// Reads task `id` until its status is `status`.
async fn until(mcp: &Mcp, id: &Value, status: &str) -> Value {
    bounded(async {
        loop {
            let task = get(mcp, id).await;
            if task["status"] == status {
                return task;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
}

#[tokio::test]
async fn a_task_is_made_read_and_finished_with_its_result_or_error() {
    let f = fixture();
    let created = tool(&f.mcp, "wait", true).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    for absent in ["result", "error", "inputRequests", "requestState"] {
        assert!(created.get(absent).is_none(), "{created}");
    }
    let id = created["taskId"].clone();
    let working = get(&f.mcp, &id).await;
    assert_eq!(
        (working["status"].clone(), working["resultType"].clone()),
        (json!("working"), json!("complete"))
    );
    f.go.notify_one();
    let done = until(&f.mcp, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "waited", "{done}");

    let broken = tool(&f.mcp, "broken", true).await["result"]["taskId"].clone();
    let done = until(&f.mcp, &broken, "completed").await;
    assert_eq!(done["result"]["isError"], true, "a tool's error: {done}");
    let crashed = tool(&f.mcp, "crashed", true).await["result"]["taskId"].clone();
    let failed = until(&f.mcp, &crashed, "failed").await;
    assert_eq!(failed["error"]["code"], -32603, "the protocol's: {failed}");
    assert!(failed.get("result").is_none());

    let unknown = call(&f.mcp, "tasks/get", json!({ "taskId": "nope" }), true).await;
    assert_eq!(unknown["error"]["code"], -32602);
}

#[tokio::test]
async fn a_client_that_takes_no_tasks_gets_a_plain_call_or_minus_32021() {
    let f = fixture();
    let plain = tool(&f.mcp, "broken", false).await;
    assert_eq!(plain["result"]["isError"], true, "{plain}");
    assert!(plain["result"].get("taskId").is_none());
    let required = tool(&f.mcp, "hang", false).await;
    assert_eq!(required["error"]["code"], -32021, "{required}");
    assert_eq!(
        required["error"]["data"]["requiredCapabilities"],
        json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
    );
    let gated = call(&f.mcp, "tasks/get", json!({ "taskId": "x" }), false).await;
    assert_eq!(gated["error"]["code"], -32021, "{gated}");
    let discovered = call(&f.mcp, "server/discover", json!({}), false).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"],
        json!({ "io.modelcontextprotocol/tasks": {} })
    );
    let listed = call(&f.mcp, "tools/list", json!({}), false).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let support = |name: &str| {
        let tool = tools.iter().find(|tool| tool["name"] == name).unwrap();
        tool["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("hang"), "required");
    assert_eq!(support("wait"), "optional");
}

#[tokio::test]
async fn a_cancelled_task_cancels_its_handler() {
    let mut f = fixture();
    let id = tool(&f.mcp, "hang", true).await["result"]["taskId"].clone();
    let ack = call(&f.mcp, "tasks/cancel", json!({ "taskId": id }), true).await;
    assert_eq!(
        ack["result"]["resultType"], "complete",
        "an empty acknowledgement: {ack}"
    );
    assert!(ack["result"].get("status").is_none());
    // The handler's `ctx.cancelled()` resolved: the runtime cancelled it.
    bounded(f.cancelled.recv()).await.unwrap();
    assert_eq!(get(&f.mcp, &id).await["status"], "cancelled");
    let again = call(&f.mcp, "tasks/cancel", json!({ "taskId": id }), true).await;
    assert_eq!(again["result"]["resultType"], "complete", "idempotent");
}

#[tokio::test]
async fn a_tasks_question_is_answered_with_tasks_update() {
    let f = fixture();
    let id = tool(&f.mcp, "confirm", true).await["result"]["taskId"].clone();
    let asking = until(&f.mcp, &id, "input_required").await;
    assert_eq!(
        asking["inputRequests"]["sure"]["method"], "elicitation/create",
        "{asking}"
    );
    let answers = json!({ "sure": { "action": "accept", "content": { "ok": true } },
                          "other": { "ignored": true } });
    let ack = call(
        &f.mcp,
        "tasks/update",
        json!({ "taskId": id, "inputResponses": answers }),
        true,
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = until(&f.mcp, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "ok: true");
}

#[tokio::test]
async fn a_handler_starts_its_task_after_a_round_of_input() {
    let f = fixture();
    let first = tool(&f.mcp, "later", true).await["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none());
    let retry = json!({ "name": "later", "arguments": {}, "requestState": first["requestState"],
                        "inputResponses": { "who": { "action": "accept", "content": { "name": "Ann" } } } });
    let second = call(&f.mcp, "tools/call", retry, true).await["result"].clone();
    assert_eq!(second["resultType"], "task", "{second}");
    assert!(second.get("requestState").is_none());
    let done = until(&f.mcp, &second["taskId"], "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Ann: task true");
    // Without tasks, the handler goes on as a plain call.
    let retry = json!({ "name": "later", "arguments": {}, "requestState": first["requestState"],
                        "inputResponses": { "who": { "action": "accept", "content": { "name": "Bo" } } } });
    let plain = call(&f.mcp, "tools/call", retry, false).await["result"].clone();
    assert_eq!(plain["content"][0]["text"], "Bo: task false", "{plain}");
}

/// The headers of a modern POST of `method`, named `name`.
fn headers(method: &str, name: &str) -> String {
    format!(
        "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\nmcp-name: {name}\r\n"
    )
}

fn body(method: &str, id: &str, mut params: Value) -> String {
    params["_meta"] = meta(true);
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

#[tokio::test]
async fn over_http_a_task_is_named_and_its_changes_reach_a_listen_stream() {
    let f = fixture();
    let server = McpServer::builder(f.mcp.clone()).build().unwrap();
    let (addr, _) = serve_mcp(server).await;
    let send = |method: &'static str, name: String, body: String| async move {
        bounded(request(
            addr,
            &post(
                "/mcp",
                Some("application/json"),
                &headers(method, &name),
                &body,
            ),
        ))
        .await
    };
    let created = send(
        "tools/call",
        "wait".into(),
        body(
            "tools/call",
            "c",
            json!({ "name": "wait", "arguments": {} }),
        ),
    )
    .await
    .json();
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let wrong = send(
        "tasks/get",
        "another".into(),
        body("tasks/get", "g", json!({ "taskId": id })),
    )
    .await;
    assert_eq!(wrong.status, 400);
    assert_eq!(
        wrong.json()["error"]["code"],
        -32020,
        "Mcp-Name is the task's id"
    );
    let named = send(
        "tasks/get",
        id.clone(),
        body("tasks/get", "g", json!({ "taskId": id })),
    )
    .await;
    assert_eq!(named.json()["result"]["status"], "working");

    let mut listening = Conn::open(addr).await;
    let listen = body(
        "subscriptions/listen",
        "L",
        json!({ "notifications": { "taskIds": [id] } }),
    );
    let listen_headers = "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: subscriptions/listen\r\n";
    listening
        .write(&post(
            "/mcp",
            Some("application/json"),
            listen_headers,
            &listen,
        ))
        .await;
    assert_eq!(bounded(listening.read_head()).await.status, 200);
    let mut pending = String::new();
    let ack = bounded(listening.read_event(&mut pending)).await.unwrap();
    assert!(ack.contains(&id), "the task is honored: {ack}");
    f.go.notify_one();
    let event = bounded(listening.read_event(&mut pending)).await.unwrap();
    let heard: Value = serde_json::from_str(event.trim_start_matches("data: ")).unwrap();
    assert_eq!(heard["method"], "notifications/tasks", "{heard}");
    assert_eq!(heard["params"]["taskId"], id.as_str());
    assert_eq!(heard["params"]["status"], "completed");
    assert_eq!(heard["params"]["result"]["content"][0]["text"], "waited");
    assert_eq!(
        heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
}
