//! Questions a handler asks its client, in both eras: a request to the client on the call's
//! stream (legacy), and `input_required` with a signed `requestState` (modern).

use jrpc_mcp::{Form, Mcp, McpContext as _, Sampling};
use jrpc_runtime::{Caller as _, Context, Methods, Peer, PeerConfig, RpcError, rpc_service};
use jrpc_tests::bounded;
use serde_json::{Value, json};

struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Asks a name, then greets.
    async fn greet(&self, ctx: &Context, polite: bool) -> Result<String, RpcError> {
        let name: String = ctx
            .elicit("who", Form::string("Your name?", "name"))
            .await?
            .take("name")?;
        Ok(if polite {
            format!("Good day, {name}")
        } else {
            format!("Hi {name}")
        })
    }

    /// Asks twice, one after the other.
    async fn two_steps(&self, ctx: &Context) -> Result<String, RpcError> {
        let first: String = ctx
            .elicit("one", Form::string("First?", "v"))
            .await?
            .take("v")?;
        let second: String = ctx
            .elicit("two", Form::string("Second?", "v"))
            .await?
            .take("v")?;
        Ok(format!("{first}+{second}"))
    }

    /// Asks three things at once.
    async fn all(&self, ctx: &Context) -> Result<String, RpcError> {
        let mut answers = ctx
            .ask()
            .elicit("who", Form::string("Your name?", "name"))
            .sample("idea", Sampling::user_text("An idea").max_tokens(5))
            .roots("roots")
            .send()
            .await?;
        let name: String = answers.elicited("who")?.take("name")?;
        let idea = answers
            .sampled("idea")?
            .text()
            .unwrap_or_default()
            .to_owned();
        Ok(format!("{name} {idea} {}", answers.roots("roots")?.len()))
    }

    /// Samples, or says it cannot.
    async fn careful(&self, ctx: &Context) -> Result<String, RpcError> {
        match ctx.sample("s", Sampling::user_text("x")).await {
            Ok(sampled) => Ok(sampled.model),
            Err(jrpc_mcp::McpError::MissingCapability(_)) => Ok("no sampling".into()),
            Err(other) => Err(other.into()),
        }
    }

    /// Samples, failing without it.
    async fn needy(&self, ctx: &Context) -> Result<String, RpcError> {
        Ok(ctx.sample("s", Sampling::user_text("x")).await?.model)
    }
}

fn mcp() -> Mcp {
    Mcp::builder("asking", "1")
        .tools(Tools.into_methods())
        .request_state_key([7u8; 32])
        .build()
        .unwrap()
}

fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A modern `tools/call` of `name` with `extra` params; the whole answer.
async fn call(mcp: &Mcp, name: &str, extra: Value) -> Value {
    let mut params = json!({ "name": name, "arguments": { "polite": true },
                             "_meta": meta(json!({ "elicitation": {}, "sampling": {}, "roots": {} })) });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    serde_json::from_str(&mcp.methods().handle(&body.to_string()).await.unwrap()).unwrap()
}

fn accept(field: &str, value: &str) -> Value {
    json!({ "action": "accept", "content": { field: value } })
}

#[tokio::test]
async fn a_modern_question_is_answered_by_a_retry() {
    let mcp = mcp();
    let first = call(&mcp, "greet", json!({})).await["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(
        first["inputRequests"],
        json!({ "who": { "method": "elicitation/create", "params": { "mode": "form",
            "message": "Your name?", "requestedSchema": { "type": "object",
            "properties": { "name": { "type": "string" } }, "required": ["name"] } } } })
    );
    let state = first["requestState"].as_str().unwrap().to_owned();
    assert!(
        first.get("ttlMs").is_none(),
        "an input_required result is not cached"
    );

    let retry =
        json!({ "inputResponses": { "who": accept("name", "Ada") }, "requestState": state });
    let done = call(&mcp, "greet", retry).await["result"].clone();
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["content"][0]["text"], "Good day, Ada");
    // The answers alone do; extra ones are left alone.
    let alone =
        json!({ "inputResponses": { "who": accept("name", "Bo"), "extra": accept("x", "y") } });
    assert_eq!(
        call(&mcp, "greet", alone).await["result"]["content"][0]["text"],
        "Good day, Bo"
    );
    // A wrong key is no answer: asked again.
    let wrong = json!({ "inputResponses": { "nope": accept("name", "Bo") } });
    assert_eq!(
        call(&mcp, "greet", wrong).await["result"]["resultType"],
        "input_required"
    );
}

#[tokio::test]
async fn a_state_is_checked_before_it_is_believed() {
    let mcp = mcp();
    let first = call(&mcp, "greet", json!({})).await["result"].clone();
    let state = first["requestState"].as_str().unwrap();
    let answer = json!({ "who": accept("name", "Ada") });
    let tampered = json!({ "inputResponses": answer, "requestState": format!("{state}-TAMPERED") });
    let refused = call(&mcp, "greet", tampered).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "requestState integrity check failed"
    );
    // Bound to its tool and arguments.
    let other_tool = json!({ "inputResponses": answer, "requestState": state });
    assert_eq!(
        call(&mcp, "two_steps", other_tool).await["error"]["code"],
        -32602
    );
    let mut params = json!({ "inputResponses": answer, "requestState": state });
    params["arguments"] = json!({ "polite": false });
    assert_eq!(call(&mcp, "greet", params).await["error"]["code"], -32602);
    // Signed with this server's key: another server does not take it.
    let other = Mcp::builder("asking", "1")
        .tools(Tools.into_methods())
        .build()
        .unwrap();
    let params = json!({ "inputResponses": answer, "requestState": state });
    assert_eq!(call(&other, "greet", params).await["error"]["code"], -32602);
    for bad in [json!({ "who": 12345 }), json!([1])] {
        let refused = call(&mcp, "greet", json!({ "inputResponses": bad })).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
}

#[tokio::test]
async fn each_round_carries_the_answers_of_the_rounds_before() {
    let mcp = mcp();
    let one = call(&mcp, "two_steps", json!({})).await["result"].clone();
    assert!(one["inputRequests"].get("one").is_some());
    let state = one["requestState"].clone();
    let two = call(
        &mcp,
        "two_steps",
        json!({ "inputResponses": { "one": accept("v", "a") },
                                              "requestState": state }),
    )
    .await["result"]
        .clone();
    assert!(two["inputRequests"].get("two").is_some(), "{two}");
    assert_ne!(two["requestState"], state, "a new state each round");
    let done = call(
        &mcp,
        "two_steps",
        json!({ "inputResponses": { "two": accept("v", "b") },
                                               "requestState": two["requestState"] }),
    )
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "a+b");
}

#[tokio::test]
async fn questions_asked_together_come_in_one_round() {
    let mcp = mcp();
    let asked = call(&mcp, "all", json!({})).await["result"].clone();
    let requests = &asked["inputRequests"];
    assert_eq!(requests.as_object().map(|r| r.len()), Some(3), "{asked}");
    assert_eq!(requests["who"]["method"], "elicitation/create");
    assert_eq!(requests["idea"]["method"], "sampling/createMessage");
    assert_eq!(requests["idea"]["params"]["maxTokens"], 5);
    assert_eq!(
        requests["roots"],
        json!({ "method": "roots/list", "params": {} })
    );
    let answers = json!({
        "who": accept("name", "Ada"),
        "idea": { "role": "assistant", "content": { "type": "text", "text": "kites" }, "model": "m" },
        "roots": { "roots": [{ "uri": "file:///a" }, { "uri": "file:///b", "name": "b" }] },
    });
    let done = call(
        &mcp,
        "all",
        json!({ "inputResponses": answers,
                                         "requestState": asked["requestState"] }),
    )
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada kites 2");
}

#[tokio::test]
async fn a_capability_not_declared_is_minus_32021_unless_the_tool_copes() {
    let mcp = mcp();
    let bare = |name: &'static str| {
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": name, "_meta": meta(json!({})) } })
        .to_string()
    };
    let answer: Value =
        serde_json::from_str(&mcp.methods().handle(&bare("needy")).await.unwrap()).unwrap();
    assert_eq!(
        answer["error"],
        json!({ "code": -32021, "message": "Missing required client capability",
                "data": { "requiredCapabilities": { "sampling": {} } } })
    );
    let answer: Value =
        serde_json::from_str(&mcp.methods().handle(&bare("careful")).await.unwrap()).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "no sampling");
}

/// The legacy era: the client is asked on the connection, and answers while the tool waits.
#[tokio::test]
async fn a_legacy_question_is_a_request_to_the_client() {
    bounded(async {
        let mcp = mcp();
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(theirs);
        let (_server, serving) = mcp.connect(read, write).unwrap();
        tokio::spawn(serving);
        let mut client_side = Methods::new();
        client_side
            .register(
                "elicitation/create",
                &[],
                |params: jrpc_runtime::Params, _| async move {
                    let params: Value = params.parse()?;
                    assert_eq!(params["message"], "Your name?");
                    Ok::<_, RpcError>(json!({ "action": "accept", "content": { "name": "Lin" } }))
                },
            )
            .unwrap();
        let config = PeerConfig::builder()
            .framing(jrpc_runtime::Framing::Lines)
            .build()
            .unwrap();
        let (client, driving) = Peer::connect(ours, client_side, config);
        tokio::spawn(driving);
        let _: Value = client
            .call(
                "initialize",
                json!({ "capabilities": { "elicitation": {} } }),
            )
            .await
            .unwrap();
        let greeted: Value = client
            .call(
                "tools/call",
                json!({ "name": "greet", "arguments": { "polite": false } }),
            )
            .await
            .unwrap();
        assert_eq!(greeted["content"][0]["text"], "Hi Lin");
        let refused = client
            .call::<Value>("tools/call", json!({ "name": "needy" }))
            .await
            .unwrap_err();
        assert_eq!(refused.rpc_error().map(|e| e.code().code()), Some(-32021));
    })
    .await;
}

#[test]
fn a_short_state_key_is_refused() {
    let err = Mcp::builder("s", "1")
        .request_state_key(vec![1; 31])
        .build()
        .unwrap_err();
    assert_eq!(err.key(), "request_state_key");
}
