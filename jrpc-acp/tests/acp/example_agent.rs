//! The `acp_agent` example's contract, on its own agent: counting, asking, echoing, both kinds
//! of cancellation, unknown sessions, and the wire rules ACP sets.

use jrpc_acp::Acp;
use serde_json::json;
use tokio::time::{Duration, Instant};

use crate::wire::{Wire, chunks};

#[allow(dead_code, reason = "the example's `main` is not run here")]
#[path = "../../examples/acp_agent.rs"]
mod acp_agent;

fn example() -> Acp {
    Acp::builder(acp_agent::Example::default())
        .info("acp_agent", "test")
        .build()
        .expect("valid settings")
}

#[tokio::test(start_paused = true)]
async fn initialize_answers_version_1_whatever_the_client_speaks() {
    let acp = example();
    for asked in [0, 1, 2, 65535] {
        let mut wire = Wire::start(&acp);
        let answer = wire
            .call(0, "initialize", json!({"protocolVersion": asked}))
            .await;
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], 1, "asked {asked}: {answer}");
        assert_eq!(result["agentInfo"]["name"], "acp_agent");
        assert_eq!(result["agentCapabilities"]["loadSession"], false);
    }
}

#[tokio::test(start_paused = true)]
async fn count_sends_its_chunks_100_ms_apart_then_ends_the_turn() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "count 4").await;
    let mut at = Vec::new();
    let mut messages = Vec::new();
    for _ in 0..4 {
        messages.push(wire.recv().await);
        at.push(Instant::now());
    }
    let answer = wire.recv().await;
    assert_eq!(chunks(&messages, &session), ["1", "2", "3", "4"]);
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [Duration::from_millis(100); 3]);
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})
    );
    wire.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn session_cancel_ends_the_turn_cancelled_with_no_chunk_after() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "count 5").await;
    let first_two = vec![wire.recv().await, wire.recv().await];
    assert_eq!(chunks(&first_two, &session), ["1", "2"]);
    wire.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (between, answer) = wire.until_answer(2).await;
    assert_eq!(between, Vec::<serde_json::Value>::new());
    assert_eq!(answer["result"], json!({"stopReason": "cancelled"}));
    wire.assert_quiet().await;

    // The session goes on: the next turn runs to its end.
    wire.prompt(3, &session, "count 1").await;
    let (updates, answer) = wire.until_answer(3).await;
    assert_eq!(chunks(&updates, &session), ["1"]);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
}

#[tokio::test(start_paused = true)]
async fn a_cancel_right_behind_its_prompt_finds_the_turn() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    let session = wire.new_session(1).await;
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": session, "prompt": [{"type": "text", "text": "count 5"}]}});
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}});
    // Both in one write: the agent reads the cancel before the turn's first sleep ends.
    wire.send_text(&format!("{prompt}\n{cancel}")).await;
    let (updates, answer) = wire.until_answer(2).await;
    assert_eq!(chunks(&updates, &session), ["1"]);
    assert_eq!(answer["result"]["stopReason"], "cancelled");
}

#[tokio::test(start_paused = true)]
async fn cancel_request_naming_the_prompt_answers_it_32800() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    let session = wire.new_session(1).await;
    wire.prompt(7, &session, "count 5").await;
    let first_two = vec![wire.recv().await, wire.recv().await];
    assert_eq!(chunks(&first_two, &session), ["1", "2"]);
    wire.notify("$/cancel_request", json!({"requestId": 7}))
        .await;
    let (between, answer) = wire.until_answer(7).await;
    assert_eq!(between, Vec::<serde_json::Value>::new());
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    wire.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn ask_says_the_option_chosen() {
    for (outcome, said) in [
        (json!({"outcome": "selected", "optionId": "allow"}), "allow"),
        (
            json!({"outcome": "selected", "optionId": "reject"}),
            "reject",
        ),
        (json!({"outcome": "cancelled"}), "cancelled"),
    ] {
        let mut wire = Wire::initialized(&example(), json!({})).await;
        let session = wire.new_session(1).await;
        wire.prompt(2, &session, "ask").await;
        let ask = wire.recv().await;
        assert_eq!(ask["method"], "session/request_permission", "{ask}");
        let params = &ask["params"];
        assert_eq!(params["sessionId"], session.as_str());
        let options: Vec<_> = params["options"]
            .as_array()
            .expect("options")
            .iter()
            .map(|option| (option["optionId"].clone(), option["kind"].clone()))
            .collect();
        assert_eq!(
            options,
            [
                (json!("allow"), json!("allow_once")),
                (json!("reject"), json!("reject_once"))
            ]
        );
        wire.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": outcome}}))
            .await;
        let (updates, answer) = wire.until_answer(2).await;
        assert_eq!(chunks(&updates, &session), [said]);
        assert_eq!(answer["result"]["stopReason"], "end_turn");
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_gives_up_its_permission_request() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "ask").await;
    let ask = wire.recv().await;
    assert_eq!(ask["method"], "session/request_permission", "{ask}");
    wire.notify("session/cancel", json!({"sessionId": session}))
        .await;
    // ACP's cascading cancellation: the question is given up, then the turn answers.
    let given_up = wire.recv().await;
    assert_eq!(
        given_up,
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": ask["id"]}})
    );
    let answer = wire.recv().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    // The client's late answer to the question is dropped quietly.
    wire.send(
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "cancelled"}}}),
    )
    .await;
    wire.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn other_text_is_echoed() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    let session = wire.new_session(1).await;
    wire.prompt(2, &session, "hello there").await;
    let (updates, answer) = wire.until_answer(2).await;
    assert_eq!(chunks(&updates, &session), ["hello there"]);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
}

#[tokio::test(start_paused = true)]
async fn a_prompt_for_an_unknown_session_is_resource_not_found() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    wire.new_session(1).await;
    wire.prompt(2, "no-such-session", "count 1").await;
    let answer = wire.recv().await;
    assert_eq!(
        answer["error"],
        json!({"code": -32002, "message": "Resource not found", "data": {"sessionId": "no-such-session"}})
    );
    // Sessions are the connection's: another connection's is unknown here.
    let mut other = Wire::initialized(&example(), json!({})).await;
    let theirs = wire.new_session(3).await;
    other.prompt(4, &theirs, "count 1").await;
    assert_eq!(other.recv().await["error"]["code"], -32002);
}

#[tokio::test(start_paused = true)]
async fn batches_are_refused_and_null_params_are_no_params() {
    let mut wire = Wire::initialized(&example(), json!({})).await;
    wire.send_text(r#"[{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}]"#)
        .await;
    let refused = wire.recv().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["id"], serde_json::Value::Null);
    // Read as no params: what a prompt without its session id is answered, not -32600.
    let answer = wire
        .call(2, "session/prompt", serde_json::Value::Null)
        .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // A cancel with null params is a notification like any: nothing is answered.
    wire.notify("session/cancel", serde_json::Value::Null).await;
    wire.assert_quiet().await;
}
