//! What the crate keeps for an agent beyond a turn: the client's capabilities checked before its
//! file and terminal methods, turns that answer `cancelled` however they end, the sessions a
//! connection opened, loaded and closed, and the builder's settings.

use jrpc_acp::Acp;
use jrpc_runtime::{Context, Methods, RpcError};
use serde_json::{Value, json};

use crate::test_agent::TestAgent;
use crate::wire::{Wire, chunks};

fn agent() -> Acp {
    Acp::builder(TestAgent).build().expect("valid settings")
}

/// Answers the agent's next message, which must call `method` with params holding `expected`'s
/// members, with `result`.
async fn serve(wire: &mut Wire, method: &str, expected: Value, result: Value) {
    let call = wire.recv().await;
    assert_eq!(call["method"], method, "{call}");
    for (key, value) in expected.as_object().expect("an object") {
        assert_eq!(&call["params"][key], value, "{key} of {call}");
    }
    wire.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": result}))
        .await;
}

#[tokio::test(start_paused = true)]
async fn file_methods_go_out_only_when_the_client_offers_them() {
    let mut wire = Wire::initialized(&agent(), json!({"fs": {"writeTextFile": true}})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "read /a").await;
    let (sent, answer) = wire.until_answer(2).await;
    assert_eq!(sent, Vec::<Value>::new(), "nothing goes out");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(
        answer["error"]["data"],
        "the client does not offer `fs/read_text_file`"
    );

    wire.prompt(3, &session, "write /b some text").await;
    let expected = json!({"sessionId": session, "path": "/b", "content": "some text"});
    serve(&mut wire, "fs/write_text_file", expected, Value::Null).await;
    let (updates, answer) = wire.until_answer(3).await;
    assert_eq!(chunks(&updates, &session), ["written"]);
    assert_eq!(answer["result"]["stopReason"], "end_turn");

    let mut wire = Wire::initialized(&agent(), json!({"fs": {"readTextFile": true}})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "read /a").await;
    let expected = json!({"sessionId": session, "path": "/a"});
    serve(
        &mut wire,
        "fs/read_text_file",
        expected,
        json!({"content": "A"}),
    )
    .await;
    let (updates, answer) = wire.until_answer(2).await;
    assert_eq!(chunks(&updates, &session), ["A"]);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
}

#[tokio::test(start_paused = true)]
async fn terminals_go_out_only_when_the_client_offers_them() {
    let mut wire = Wire::initialized(&agent(), json!({"fs": {"readTextFile": true}})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "run make").await;
    let (sent, answer) = wire.until_answer(2).await;
    assert_eq!(sent, Vec::<Value>::new());
    assert_eq!(
        answer["error"]["data"],
        "the client does not offer `terminal/create`"
    );

    let mut wire = Wire::initialized(&agent(), json!({"terminal": true})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "run make").await;
    let created = json!({"sessionId": session, "command": "make"});
    serve(
        &mut wire,
        "terminal/create",
        created,
        json!({"terminalId": "t1"}),
    )
    .await;
    let terminal = json!({"sessionId": session, "terminalId": "t1"});
    serve(
        &mut wire,
        "terminal/wait_for_exit",
        terminal.clone(),
        json!({"exitCode": 2}),
    )
    .await;
    let output = json!({"output": "made", "truncated": false});
    serve(&mut wire, "terminal/output", terminal.clone(), output).await;
    serve(&mut wire, "terminal/release", terminal, json!({})).await;
    let (updates, answer) = wire.until_answer(2).await;
    assert_eq!(chunks(&updates, &session), ["made Some(2)"]);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
}

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_answers_cancelled_however_it_ends() {
    let mut wire = Wire::initialized(&agent(), json!({})).await;
    let session = wire.new_session(1).await;
    // It runs on, says its last, and claims `end_turn`: the answer is `cancelled`.
    wire.prompt(2, &session, "linger").await;
    wire.assert_quiet().await;
    wire.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (updates, answer) = wire.until_answer(2).await;
    assert_eq!(chunks(&updates, &session), ["bye"]);
    assert_eq!(answer["result"], json!({"stopReason": "cancelled"}));
    // It fails once cancelled: still `cancelled`, as ACP asks of an agent.
    wire.prompt(3, &session, "fail").await;
    wire.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = wire.recv().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"], json!({"stopReason": "cancelled"}));
    // A failure that is no cancellation is answered as the agent said.
    wire.prompt(4, &session, "nonsense").await;
    let answer = wire.recv().await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["error"]["data"], "nonsense");
}

#[tokio::test(start_paused = true)]
async fn close_cancels_the_running_turn_and_forgets_the_session() {
    let mut wire = Wire::initialized(&agent(), json!({})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "linger").await;
    wire.request(3, "session/close", json!({"sessionId": session}))
        .await;
    let mut answers = Vec::new();
    let mut updates = Vec::new();
    while answers.len() < 2 {
        let message = wire.recv().await;
        if message.get("method").is_some() {
            updates.push(message);
        } else {
            answers.push(message);
        }
    }
    answers.sort_by_key(|answer| answer["id"].as_i64());
    assert_eq!(answers[0]["result"], json!({"stopReason": "cancelled"}));
    assert_eq!(answers[1]["result"], json!({}));
    assert_eq!(chunks(&updates, &session), ["bye"]);
    wire.prompt(4, &session, "linger").await;
    assert_eq!(wire.recv().await["error"]["code"], -32002);
    let closed_again = wire
        .call(5, "session/close", json!({"sessionId": session}))
        .await;
    assert_eq!(closed_again["error"]["code"], -32002);
}

#[tokio::test(start_paused = true)]
async fn a_loaded_session_replays_then_is_the_connections() {
    let mut wire = Wire::initialized(&agent(), json!({})).await;
    wire.prompt(1, "kept", "nonsense").await;
    assert_eq!(wire.recv().await["error"]["code"], -32002);
    let load = json!({"sessionId": "kept", "cwd": "/tmp", "mcpServers": []});
    wire.request(2, "session/load", load).await;
    let (updates, answer) = wire.until_answer(2).await;
    assert_eq!(chunks(&updates, "kept"), ["replayed"]);
    assert_eq!(answer["result"], json!({}));
    wire.prompt(3, "kept", "nonsense").await;
    assert_eq!(wire.recv().await["error"]["code"], -32602);
}

#[tokio::test(start_paused = true)]
async fn methods_the_agent_lacks_answer_method_not_found() {
    let mut wire = Wire::initialized(&agent(), json!({})).await;
    let session = wire.new_session(1).await;
    let mode = json!({"sessionId": session, "modeId": "fast"});
    let answer = wire.call(2, "session/set_mode", mode).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let unknown = json!({"sessionId": "other", "modeId": "fast"});
    let answer = wire.call(3, "session/set_mode", unknown).await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    let answer = wire
        .call(4, "authenticate", json!({"methodId": "token"}))
        .await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let resume = json!({"sessionId": "other", "cwd": "/tmp", "mcpServers": []});
    let answer = wire.call(5, "session/resume", resume).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
}

#[tokio::test(start_paused = true)]
async fn a_connection_keeps_at_most_max_sessions() {
    let acp = Acp::builder(TestAgent)
        .max_sessions(1)
        .build()
        .expect("valid settings");
    let mut wire = Wire::initialized(&acp, json!({})).await;
    let first = wire.new_session(1).await;
    let refused = wire
        .call(
            2,
            "session/new",
            json!({"cwd": "/elsewhere", "mcpServers": []}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    wire.call(3, "session/close", json!({"sessionId": first}))
        .await;
    assert_eq!(wire.new_session(4).await, "in-/tmp");
    // Another connection has room of its own.
    let mut other = Wire::initialized(&acp, json!({})).await;
    assert_eq!(other.new_session(1).await, "in-/tmp");
}

#[tokio::test(start_paused = true)]
async fn extra_methods_are_served_beside_acps() {
    let mut extra = Methods::new();
    extra
        .register("_test/ping", &[], |(): (), _ctx| async {
            Ok::<_, RpcError>("pong")
        })
        .expect("a new name");
    let acp = Acp::builder(TestAgent)
        .methods(extra)
        .build()
        .expect("valid settings");
    let mut wire = Wire::initialized(&acp, json!({})).await;
    let answer = wire.call(1, "_test/ping", Value::Null).await;
    assert_eq!(answer["result"], "pong", "{answer}");

    // A method of one's own that registers under a session is told by its `session/cancel`.
    let mut told = Methods::new();
    told.register(
        "_test/wait",
        &["sessionId"],
        |(session,): (String,), ctx: Context| async move {
            let _told = ctx.cancellable_by_key(session);
            ctx.cancelled().await;
            Ok::<_, RpcError>("told")
        },
    )
    .expect("a new name");
    let acp = Acp::builder(TestAgent)
        .methods(told)
        .build()
        .expect("valid settings");
    let mut wire = Wire::initialized(&acp, json!({})).await;
    let session = wire.new_session(1).await;
    wire.request(2, "_test/wait", json!({"sessionId": session}))
        .await;
    wire.assert_quiet().await;
    wire.notify("session/cancel", json!({"sessionId": session}))
        .await;
    assert_eq!(wire.recv().await["result"], "told");

    let mut clash = Methods::new();
    clash
        .register("session/new", &[], |(): (), _ctx| async {
            Ok::<_, RpcError>(())
        })
        .expect("a new name");
    let err = Acp::builder(TestAgent)
        .methods(clash)
        .build()
        .expect_err("session/new is ACP's");
    assert_eq!(err.key(), "methods");
    let err = Acp::builder(TestAgent)
        .max_sessions(0)
        .build()
        .expect_err("no session at all");
    assert_eq!(err.key(), "max_sessions");
}
