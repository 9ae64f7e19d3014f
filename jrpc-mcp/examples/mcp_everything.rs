//! The MCP server the official conformance suite (`@modelcontextprotocol/conformance`) measures:
//! the tools, resources and prompts of the suite's reference server
//! (`examples/servers/typescript/everything-server.ts` in its repository), under the names its
//! scenarios call, over Streamable HTTP, for clients of both protocol eras.
//!
//! ```text
//! cargo run --example mcp_everything -- --http 127.0.0.1:3001   # http://127.0.0.1:3001/mcp
//! ```
//!
//! It prints `listening on http://ADDR` with the real address once it accepts (port 0 takes any
//! free port), serves MCP at `/mcp`, and Ctrl-C drains it. Besides the reference server's
//! tools it serves the tasks extension's fixtures (`greet`, `slow_compute`, `failing_job`,
//! `protocol_error_job`, `confirm_delete`, `multi_input`, `test_tool_with_task`) and a skill
//! (`skill://conformance-testing/SKILL.md`). With `--redis URL` (built with
//! jrpc-mcp's `redis` feature, as the workspace's tests build it) every replica on that Redis
//! serves every request: they share the keys that sign `requestState`, and their changes (list
//! changed, resource updated), so that a modern client listening on one hears what a tool
//! called on another changed.

use std::time::Duration;

use jrpc_mcp::{
    CompleteRequest, Completion, Content, Elicited, Form, LogLevel, Mcp, McpContext as _,
    McpServer, PromptMessage, PromptResult, Resource, ResourceContents, ResourceTemplate, Sampling,
    Skill, TaskSupport,
};
use jrpc_runtime::server::Topics;
use jrpc_runtime::{Context, RpcError, rpc_service};
use serde_json::{Value, json};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The tools, in the order they are listed.
struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Tests simple text content response
    fn test_simple_text(&self) -> String {
        "This is a simple text response for testing.".into()
    }

    /// Tests image content response
    fn test_image_content(&self) -> Content {
        Content::image(PNG, "image/png")
    }

    /// Tests audio content response
    fn test_audio_content(&self) -> Content {
        Content::audio(WAV, "audio/wav")
    }

    /// Tests embedded resource content response
    fn test_embedded_resource(&self) -> Content {
        let text = "This is an embedded resource content.";
        Content::resource(
            ResourceContents::text("test://embedded-resource", text).mime("text/plain"),
        )
    }

    /// Tests response with multiple content types (text, image, resource)
    fn test_multiple_content_types(&self) -> Vec<Content> {
        let json = r#"{"test":"data","value":123}"#;
        vec![
            Content::text("Multiple content types test:"),
            Content::image(PNG, "image/png"),
            Content::resource(
                ResourceContents::text("test://mixed-content-resource", json)
                    .mime("application/json"),
            ),
        ]
    }

    /// Tests tool that emits log messages during execution
    async fn test_tool_with_logging(&self, ctx: &Context) -> Result<String, RpcError> {
        for step in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ] {
            ctx.log(LogLevel::Info, step).await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok("Tool with logging executed successfully".into())
    }

    /// Tests tool that reports progress notifications
    async fn test_tool_with_progress(&self, ctx: &Context) -> Result<String, RpcError> {
        for step in [0.0, 50.0, 100.0] {
            let message = format!("Completed step {step} of 100");
            ctx.progress(step, Some(100.0), Some(&message)).await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let token = ctx.mcp().and_then(|req| req.progress_token());
        Ok(match token {
            Some(Value::String(token)) => token.clone(),
            Some(other) => other.to_string(),
            None => "no progress token".into(),
        })
    }

    /// Tests error response handling
    fn test_error_handling(&self) -> Result<String, RpcError> {
        Err(RpcError::new(
            1,
            "This tool intentionally returns an error for testing",
        ))
    }

    /// Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the
    /// stream mid-call and send the result after client reconnects.
    async fn test_reconnection(&self, ctx: &Context) -> String {
        ctx.close_stream_for_polling();
        tokio::time::sleep(Duration::from_millis(100)).await;
        "Reconnection test completed successfully. If you received this, the client properly \
         reconnected after stream closure."
            .into()
    }

    /// Tests an argument an HTTP header mirrors (`x-mcp-header`, SEP-2243)
    fn test_custom_header(&self, value: String) -> String {
        format!("Header value: {value}")
    }

    /// Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)
    #[rpc(params = whole)]
    fn json_schema_2020_12_tool(&self, arguments: Option<Value>) -> String {
        format!(
            "JSON Schema 2020-12 tool called with: {}",
            arguments.unwrap_or_default()
        )
    }

    /// Diagnostic tool validating response progress streams
    async fn test_streaming_elicitation(&self, ctx: &Context) -> Result<String, RpcError> {
        ctx.progress(50.0, Some(100.0), None).await?;
        Ok("Streaming complete".into())
    }

    /// Diagnostic logging validator tool
    async fn test_logging_tool(&self, ctx: &Context) -> Result<String, RpcError> {
        ctx.log(LogLevel::Info, "Logging tool evaluated the request's level")
            .await?;
        Ok("Logging evaluated".into())
    }

    /// Tests server-initiated sampling (LLM completion request)
    async fn test_sampling(&self, ctx: &Context, prompt: String) -> Result<String, RpcError> {
        let sampled = ctx
            .sample("sample", Sampling::user_text(prompt).max_tokens(100))
            .await?;
        Ok(format!(
            "LLM response: {}",
            sampled.text().unwrap_or_default()
        ))
    }

    /// Tests server-initiated elicitation (user input request)
    async fn test_elicitation(&self, ctx: &Context, message: String) -> Result<String, RpcError> {
        let schema = json!({ "type": "object", "required": ["response"],
            "properties": { "response": { "type": "string", "description": "User's response" } } });
        let answer = ctx.elicit("response", Form::new(message, schema)).await?;
        Ok(format!("User response: {}", described(&answer)))
    }

    /// Tests elicitation with default values per SEP-1034
    async fn test_elicitation_sep1034_defaults(&self, ctx: &Context) -> Result<String, RpcError> {
        let message = "Please review and update the form fields with defaults";
        let answer = ctx
            .elicit("defaults", Form::new(message, sep1034()))
            .await?;
        Ok(format!("Elicitation completed: {}", described(&answer)))
    }

    /// Tests elicitation with enum schema improvements per SEP-1330
    async fn test_elicitation_sep1330_enums(&self, ctx: &Context) -> Result<String, RpcError> {
        let message = "Please select options from the enum fields";
        let answer = ctx.elicit("enums", Form::new(message, sep1330())).await?;
        Ok(format!("Elicitation completed: {}", described(&answer)))
    }

    /// Test tool requiring sampling
    async fn test_missing_capability(&self, ctx: &Context) -> Result<String, RpcError> {
        ctx.sample("sample", Sampling::user_text("Say yes").max_tokens(10))
            .await?;
        Ok("Success".into())
    }

    /// MRTR: returns InputRequiredResult with elicitation request
    async fn test_input_required_result_elicitation(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        let asked = Form::string("What is your name?", "name");
        let name: String = ctx.elicit("user_name", asked).await?.take("name")?;
        Ok(format!("Hello, {name}!"))
    }

    /// MRTR: returns InputRequiredResult with sampling request
    async fn test_input_required_result_sampling(&self, ctx: &Context) -> Result<String, RpcError> {
        let asked = Sampling::user_text("What is the capital of France?").max_tokens(100);
        let sampled = ctx.sample("sample_request", asked).await?;
        Ok(format!(
            "Sampling result: {}",
            sampled.text().unwrap_or_default()
        ))
    }

    /// MRTR: returns InputRequiredResult with roots/list request
    async fn test_input_required_result_list_roots(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        Ok(format!(
            "Found {} root(s)",
            ctx.roots("roots_request").await?.len()
        ))
    }

    /// MRTR: returns InputRequiredResult with requestState
    async fn test_input_required_result_request_state(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        let ok: bool = ctx.elicit("confirm", confirm()).await?.take("ok")?;
        Ok(if ok {
            "state-ok: requestState validated"
        } else {
            "state: not confirmed"
        }
        .into())
    }

    /// MRTR: returns InputRequiredResult with multiple input requests
    async fn test_input_required_result_multiple_inputs(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        let mut answers = ctx
            .ask()
            .elicit("user_name", Form::string("What is your name?", "name"))
            .sample(
                "greeting",
                Sampling::user_text("Generate a greeting").max_tokens(50),
            )
            .roots("client_roots")
            .send()
            .await?;
        let name: String = answers.elicited("user_name")?.take("name")?;
        let greeting = answers
            .sampled("greeting")?
            .text()
            .unwrap_or_default()
            .to_owned();
        let roots = answers.roots("client_roots")?.len();
        Ok(format!(
            "Name: {name}; Greeting: {greeting}; Roots: {roots}"
        ))
    }

    /// MRTR: multi-round InputRequiredResult workflow
    async fn test_input_required_result_multi_round(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        let step1 = Form::string("Step 1: What is your name?", "name");
        let name: String = ctx.elicit("step1", step1).await?.take("name")?;
        let step2 = Form::string("Step 2: What is your favorite color?", "color");
        let color: String = ctx.elicit("step2", step2).await?.take("color")?;
        Ok(format!("Multi-round complete for {name} who likes {color}"))
    }

    /// MRTR: HMAC-signed requestState integrity test
    async fn test_input_required_result_tampered_state(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        ctx.elicit("confirm", confirm()).await?.take::<bool>("ok")?;
        Ok("integrity-ok: state verified".into())
    }

    /// MRTR: respects client capabilities in inputRequests
    async fn test_input_required_result_capabilities(
        &self,
        ctx: &Context,
    ) -> Result<String, RpcError> {
        let declared = ctx
            .mcp()
            .map(|req| req.client_capabilities().clone())
            .unwrap_or_default();
        let mut ask = ctx.ask();
        let mut keys = Vec::new();
        if declared.get("elicitation").is_some() {
            ask = ask.elicit("elicit_input", Form::string("Elicitation input", "value"));
            keys.push("elicit_input");
        }
        if declared.get("sampling").is_some() {
            ask = ask.sample(
                "sample_input",
                Sampling::user_text("Sample request").max_tokens(50),
            );
            keys.push("sample_input");
        }
        if keys.is_empty() {
            return Ok("No supported capabilities declared".into());
        }
        ask.send().await?;
        Ok(format!("capabilities-ok: received {}", keys.join(", ")))
    }

    /// Diagnostic tool: tells listen streams the tool list changed
    fn test_trigger_tool_change(&self, ctx: &Context) -> Result<String, RpcError> {
        if let Some(req) = ctx.mcp() {
            req.notify_tools_changed()
                .map_err(|err| RpcError::new(1, err.to_string()))?;
        }
        Ok("Mutation triggered".into())
    }

    /// Diagnostic tool: tells listen streams the prompt list changed
    fn test_trigger_prompt_change(&self, ctx: &Context) -> Result<String, RpcError> {
        if let Some(req) = ctx.mcp() {
            req.notify_prompts_changed()
                .map_err(|err| RpcError::new(1, err.to_string()))?;
        }
        Ok("Mutation triggered".into())
    }

    /// Tasks: a plain tool, never a task
    fn greet(&self, name: String) -> String {
        format!("Hello, {name}!")
    }

    /// Tasks: sleeps `seconds`, then answers (a task for a client that takes tasks)
    async fn slow_compute(&self, seconds: f64, label: Option<String>) -> String {
        tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))).await;
        format!(
            "Computed {} after {seconds} s",
            label.unwrap_or_else(|| "a result".into())
        )
    }

    /// Tasks: fails with a tool error after about a second (only as a task)
    async fn failing_job(&self) -> Result<String, RpcError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Err(RpcError::new(1, "failing_job fails by design"))
    }

    /// Tasks: fails with a protocol (internal) error
    fn protocol_error_job(&self) -> Result<String, RpcError> {
        Err(RpcError::internal().with_data("protocol_error_job fails by design"))
    }

    /// Tasks: asks the user to confirm, then answers
    async fn confirm_delete(&self, ctx: &Context, filename: String) -> Result<String, RpcError> {
        let form = Form::new(format!("Delete {filename}?"), confirm_schema());
        let confirmed: bool = ctx.elicit("confirm", form).await?.take("confirm")?;
        Ok(if confirmed {
            format!("Deleted {filename}")
        } else {
            format!("Kept {filename}")
        })
    }

    /// Tasks: asks the user two questions at once
    async fn multi_input(&self, ctx: &Context) -> Result<String, RpcError> {
        let ask = |n: u32| Form::new(format!("Question {n}"), confirm_schema());
        let mut answers = ctx
            .ask()
            .elicit("first", ask(1))
            .elicit("second", ask(2))
            .send()
            .await?;
        let first: String = answers.elicited("first")?.take("name")?;
        let second: String = answers.elicited("second")?.take("name")?;
        Ok(format!("Got {first} and {second}"))
    }

    /// Tasks: asks the user's name (input_required rounds), then goes on as a task
    async fn test_tool_with_task(&self, ctx: &Context) -> Result<String, RpcError> {
        let asked = Form::string("What is your name?", "name");
        let name: String = ctx.elicit("user_name", asked).await?.take("name")?;
        if let Some(req) = ctx.mcp() {
            req.start_task().await?;
        }
        Ok(format!("Hello, {name}!"))
    }
}

/// `confirm_delete`'s and `multi_input`'s form: a name (optional) and a confirmation.
fn confirm_schema() -> Value {
    json!({ "type": "object", "required": ["confirm"], "properties": {
        "name": { "type": "string" }, "confirm": { "type": "boolean" } } })
}

/// The prompts, in the order they are listed.
struct Prompts;

#[rpc_service(schema)]
impl Prompts {
    /// A simple prompt without arguments
    fn test_simple_prompt(&self) -> String {
        "This is a simple prompt for testing.".into()
    }

    /// A prompt with required arguments
    fn test_prompt_with_arguments(&self, arg1: String, arg2: String) -> String {
        format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
    }

    /// A prompt that includes an embedded resource
    fn test_prompt_with_embedded_resource(
        &self,
        #[rpc(name = "resourceUri")] uri: String,
    ) -> PromptResult {
        let text = "Embedded resource content for testing.";
        PromptResult::new([
            PromptMessage::user(Content::resource(
                ResourceContents::text(uri, text).mime("text/plain"),
            )),
            PromptMessage::user(Content::text("Please process the embedded resource above.")),
        ])
    }

    /// A prompt that includes image content
    fn test_prompt_with_image(&self) -> PromptResult {
        PromptResult::new([
            PromptMessage::user(Content::image(PNG, "image/png")),
            PromptMessage::user(Content::text("Please analyze the image above.")),
        ])
    }

    /// MRTR: prompt that requires elicitation input
    async fn test_input_required_result_prompt(&self, ctx: &Context) -> Result<String, RpcError> {
        let asked = Form::string("What context should the prompt use?", "context");
        let context: String = ctx.elicit("user_context", asked).await?.take("context")?;
        Ok(format!("Prompt with context: {context}"))
    }
}

/// An elicitation's answer, as the reference server says it.
fn described(answer: &Elicited) -> String {
    match answer {
        Elicited::Accept(content) => format!("action=accept, content={}", json!(content)),
        Elicited::Decline => "action=decline".into(),
        _ => "action=cancel".into(),
    }
}

/// A form asking to confirm.
fn confirm() -> Form {
    let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] });
    Form::new("Please confirm", schema)
}

/// SEP-1034's form: a default for each kind of field.
fn sep1034() -> Value {
    json!({ "type": "object", "required": [], "properties": {
        "name": { "type": "string", "description": "User name", "default": "John Doe" },
        "age": { "type": "integer", "description": "User age", "default": 30 },
        "score": { "type": "number", "description": "User score", "default": 95.5 },
        "status": { "type": "string", "description": "User status",
                    "enum": ["active", "inactive", "pending"], "default": "active" },
        "verified": { "type": "boolean", "description": "Verification status", "default": true },
    } })
}

/// SEP-1330's form: each kind of enumeration.
fn sep1330() -> Value {
    let titled = |choice: &str| {
        json!([{ "const": "value1", "title": format!("First {choice}") },
               { "const": "value2", "title": format!("Second {choice}") },
               { "const": "value3", "title": format!("Third {choice}") }])
    };
    json!({ "type": "object", "required": [], "properties": {
        "untitledSingle": { "type": "string", "description": "Select one option",
                            "enum": ["option1", "option2", "option3"] },
        "titledSingle": { "type": "string", "description": "Select one option with titles",
                          "oneOf": titled("Option") },
        "legacyEnum": { "type": "string", "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"] },
        "untitledMulti": { "type": "array", "description": "Select multiple options",
                           "minItems": 1, "maxItems": 3,
                           "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
        "titledMulti": { "type": "array", "description": "Select multiple options with titles",
                         "minItems": 1, "maxItems": 3, "items": { "anyOf": titled("Choice") } },
    } })
}

/// The resources: two fixed, one to follow, and a template.
fn resources(mcp: jrpc_mcp::McpBuilder) -> jrpc_mcp::McpBuilder {
    let text = "This is the content of the static text resource.";
    mcp.resource(
        Resource::text("test://static-text", "static-text", text)
            .title("Static Text Resource")
            .description("A static text resource for testing")
            .mime("text/plain"),
    )
    .resource(
        Resource::blob("test://static-binary", "static-binary", PNG)
            .title("Static Binary Resource")
            .description("A static binary resource (image) for testing")
            .mime("image/png"),
    )
    .resource(
        Resource::text(
            "test://watched-resource",
            "watched-resource",
            "Watched resource content",
        )
        .title("Watched Resource")
        .description("A resource to subscribe to")
        .mime("text/plain"),
    )
    .resource_template(
        ResourceTemplate::new("test://template/{id}/data", "template")
            .title("Resource Template")
            .description("A resource template with parameter substitution")
            .mime("application/json")
            .read(|req, _ctx| async move {
                let id = req.var("id").unwrap_or_default();
                let data =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(vec![ResourceContents::text(req.uri(), data.to_string())])
            }),
    )
}

/// The skill the skills extension's scenarios read: its `SKILL.md` and a file in a
/// subdirectory.
fn skill() -> Skill {
    Skill::new(
        "conformance-testing",
        "Run the MCP conformance suite against a server and read its report.",
    )
    .frontmatter("license", json!("MIT OR Apache-2.0"))
    .body(
        "# Conformance testing\n\nStart the server, then run the suite against its URL; \
         `references/REVISIONS.md` lists the revisions to run.\n",
    )
    .file(
        "references/REVISIONS.md",
        "# Revisions\n\n- 2025-11-25 (legacy)\n- 2026-07-28 (modern)\n",
        "text/markdown",
    )
}

/// Completes the prompt's arguments and the template's `id` from short lists, by prefix.
async fn complete(req: CompleteRequest, _ctx: Context) -> Result<Completion, RpcError> {
    let known: &[&str] = match req.argument() {
        "arg1" | "arg2" => &["test", "testing", "value1", "value2"],
        "id" => &["1", "2", "3", "123"],
        _ => &[],
    };
    let typed = req.value();
    Ok(Completion::new(
        known
            .iter()
            .filter(|v| v.starts_with(typed))
            .map(|v| (*v).to_owned()),
    ))
}

/// `test_custom_header`'s input schema: its argument mirrored in `Mcp-Param-Value`.
fn custom_header() -> Value {
    json!({ "type": "object", "required": ["value"],
            "properties": { "value": { "type": "string", "x-mcp-header": "Value" } } })
}

/// `json_schema_2020_12_tool`'s input schema, exactly as the suite expects it.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": { "address": { "$anchor": "addressDef", "type": "object",
            "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
        "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" }, "email": { "type": "string" } },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    })
}

#[tokio::main]
async fn main() {
    jrpc_examples::log_to_stderr();
    let mut args = jrpc_examples::Args::from_env(
        "mcp_everything",
        "mcp_everything [--http ADDR] [--redis URL] (Streamable HTTP at http://ADDR/mcp; default 127.0.0.1:3001)",
    );
    let addr = args
        .value("--http")
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    let redis = args.value("--redis");
    args.finish();
    if let Err(err) = serve(&addr, redis).await {
        eprintln!("mcp_everything: {err}");
        std::process::exit(1);
    }
}

/// What replicas share through Redis: the topics their changes go on, and the store of their
/// state.
struct Shared {
    topics: Topics,
    #[cfg(feature = "redis")]
    store: Option<jrpc_mcp::RedisStore>,
}

/// Connects to the Redis at `redis`, if given.
async fn shared(redis: Option<String>) -> Result<Shared, String> {
    let Some(url) = redis else {
        return Ok(Shared {
            topics: Topics::new(),
            #[cfg(feature = "redis")]
            store: None,
        });
    };
    let topics = Topics::redis(url.clone())
        .channel_prefix("mcp_everything:")
        .connect()
        .await
        .map_err(|err| err.to_string())?;
    #[cfg(feature = "redis")]
    {
        let store = jrpc_mcp::RedisStore::builder(url)
            .prefix("mcp_everything:")
            .connect()
            .await
            .map_err(|err| err.to_string())?;
        Ok(Shared {
            topics,
            store: Some(store),
        })
    }
    #[cfg(not(feature = "redis"))]
    {
        let _ = topics;
        Err("--redis needs jrpc-mcp's `redis` feature: build with `--features redis`".to_owned())
    }
}

/// Serves MCP's Streamable HTTP at `http://ADDR/mcp` until Ctrl-C, sharing its state and changes
/// through the Redis at `redis` if given.
async fn serve(addr: &str, redis: Option<String>) -> Result<(), String> {
    use std::io::Write as _;

    let shared = shared(redis).await?;
    #[cfg_attr(not(feature = "redis"), allow(unused_mut, reason = "Redis's keys"))]
    let mut mcp = Mcp::builder("jrpc-mcp-everything", env!("CARGO_PKG_VERSION"))
        .topics(shared.topics.clone());
    #[cfg(feature = "redis")]
    if let Some(store) = &shared.store {
        let keys = store.state_keys().await.map_err(|err| err.to_string())?;
        mcp = mcp.request_state_key_ring(keys).task_store(store.clone());
    }
    let mcp = mcp
        .tools(Tools.into_methods())
        .tool_schema("json_schema_2020_12_tool", json_schema_2020_12())
        .tool_schema("test_custom_header", custom_header())
        .tool_task("slow_compute", TaskSupport::Optional)
        .tool_task("failing_job", TaskSupport::Required)
        .tool_task("protocol_error_job", TaskSupport::Optional)
        .tool_task("confirm_delete", TaskSupport::Optional)
        .tool_task("multi_input", TaskSupport::Optional)
        .tool_task_deferred("test_tool_with_task", TaskSupport::Required)
        // A replica that dies fails its tasks 3 s on, rather than the default 10 s.
        .task_lease(Duration::from_secs(3))
        .prompts(Prompts.into_methods())
        .skill(skill())
        .completion(complete);
    let mcp = resources(mcp).build().map_err(|err| err.to_string())?;
    let server = McpServer::builder(mcp);
    #[cfg(feature = "redis")]
    let server = match shared.store {
        Some(store) => server.session_store(store),
        None => server,
    };
    let server = server.build().map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let local = listener.local_addr().map_err(|err| err.to_string())?;
    println!("listening on http://{local}");
    let _ = std::io::stdout().flush();
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let _ = tokio::signal::ctrl_c().await;
    let _ = shutdown.shutdown().await;
    let _ = serving.await;
    Ok(())
}
