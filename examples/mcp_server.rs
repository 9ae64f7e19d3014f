//! A Model Context Protocol server with two tools, `add` and `count`, over stdio (one JSON
//! message a line) or Streamable HTTP.
//!
//! ```text
//! cargo run --example mcp_server                            # stdio
//! cargo run --example mcp_server -- --http 127.0.0.1:8000   # http://127.0.0.1:8000/mcp
//! ```
//!
//! With `--http ADDR` (port 0 takes any free port) it prints `listening on http://ADDR` with the
//! real address once it accepts, serves MCP at `/mcp` with sessions, and Ctrl-C drains it.
//!
//! `initialize` answers the protocol version the client asked for when this server knows it, else
//! the newest it knows. MCP has no batches: a batch is answered `-32600`. A
//! `notifications/cancelled` aborts the named call, which is then not answered
//! ([`Cancellation::Mcp`]). Logs go to stderr only: stdout carries the protocol.
//!
//! The tools are a service of their own, [`Tools`], declared with `#[rpc_service(schema)]`:
//! `tools/list` is made from its descriptions (the doc comment's first paragraph is the tool's
//! title, the rest its description, the argument struct's JSON Schema its `inputSchema`), and
//! `tools/call` calls it in-process, with the arguments as its params and the call's context
//! (its connection, and the progress token the call carried, if any).
//!
//! `count {n}` counts to `n`: when the call carries `_meta.progressToken`, it first sends `n`
//! `notifications/progress` `{progressToken, progress: i, total: n}`, for i = 1..n; then it answers
//! the text `"<n>"`. Over HTTP the progress goes out on the call's SSE answer, the result last.
//!
//! Tool failures (an unknown tool, arguments that do not fit the tool's schema, a sum too large to
//! be a number) are answered as results with `"isError": true`, so that the model can read them
//! and try again; params that are not a `tools/call` at all are `-32602`.

use jrpc_runtime::{
    Batches, Caller as _, Cancellation, Context, ErrorCode, Framing, Methods, PeerConfig, RpcError,
    rpc_service,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// The protocol versions this server speaks, newest first.
const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The members of `initialize`'s params this server reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(default)]
    client_info: Option<Implementation>,
}

#[derive(Debug, Deserialize)]
struct Implementation {
    name: String,
    #[serde(default)]
    version: Option<String>,
}

/// `tools/call`'s params.
#[derive(Debug, Deserialize)]
struct CallToolParams {
    name: String,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
    #[serde(default, rename = "_meta")]
    meta: Option<RequestMeta>,
}

/// A request's `_meta`: the members this server reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestMeta {
    #[serde(default)]
    progress_token: Option<Value>,
}

/// The progress token of the `tools/call` a tool runs for, in its context.
#[derive(Clone, Debug)]
struct ProgressToken(Value);

/// The arguments of the `add` tool.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddArguments {
    /// The first addend
    a: f64,
    /// The second addend
    b: f64,
}

/// The arguments of the `count` tool.
#[derive(Debug, Deserialize, JsonSchema)]
struct CountArguments {
    /// How far to count
    n: u64,
}

/// The tools: each method is one, its params (whole) the tool's arguments.
struct Tools;

#[rpc_service(schema)]
impl Tools {
    /// Add
    ///
    /// Adds two numbers and answers their sum as text.
    #[rpc(params = whole)]
    fn add(&self, arguments: AddArguments) -> Result<String, RpcError> {
        let AddArguments { a, b } = arguments;
        let sum = a + b;
        if !sum.is_finite() {
            return Err(RpcError::new(
                1,
                format!("{a} + {b} is too large to be a number"),
            ));
        }
        Ok(sum.to_string())
    }

    /// Count
    ///
    /// Counts to `n`, reporting each step as progress if asked, and answers `n` as text.
    #[rpc(params = whole)]
    async fn count(&self, ctx: &Context, arguments: CountArguments) -> Result<String, RpcError> {
        let n = arguments.n;
        if let (Some(ProgressToken(token)), Some(peer)) =
            (ctx.extension::<ProgressToken>(), ctx.peer())
        {
            for i in 1..=n {
                let progress = json!({ "progressToken": token, "progress": i, "total": n });
                peer.notify("notifications/progress", progress)
                    .await
                    .map_err(|err| RpcError::new(2, format!("progress not sent: {err}")))?;
            }
        }
        Ok(n.to_string())
    }
}

struct Server {
    /// [`Tools`]' method table.
    tools: Methods,
}

/// The methods of the MCP server; `into_methods` makes them a method table.
#[rpc_service]
impl Server {
    /// Agrees on a protocol version and states the server's capabilities.
    #[rpc(params = whole)]
    async fn initialize(&self, params: InitializeParams) -> Value {
        let asked = params.protocol_version.as_deref();
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|known| Some(**known) == asked)
            .unwrap_or(&PROTOCOL_VERSIONS[0]);
        match &params.client_info {
            Some(client) => eprintln!(
                "mcp_server: initialize from {} {} (asked {}, answering {version})",
                client.name,
                client.version.as_deref().unwrap_or("(no version)"),
                asked.unwrap_or("no version"),
            ),
            None => eprintln!(
                "mcp_server: initialize (asked {}, answering {version})",
                asked.unwrap_or("no version")
            ),
        }
        json!({
            "protocolVersion": version,
            "capabilities": { "tools": {} },
            "serverInfo": {
                "name": "jrpc-mcp-example",
                "version": env!("CARGO_PKG_VERSION"),
            },
        })
    }

    /// The client finished initializing.
    #[notification]
    #[rpc(name = "notifications/initialized", params = whole)]
    async fn initialized(&self, _params: Option<Value>) {
        eprintln!("mcp_server: the client is ready");
    }

    /// The client gave up a call. The connection aborts the call before this is reached; it is
    /// here so that the notice is accepted even on a connection without cancellation.
    #[notification]
    #[rpc(name = "notifications/cancelled", params = whole)]
    async fn cancelled(&self, params: Option<Value>) {
        eprintln!(
            "mcp_server: cancellation of no running call: {}",
            params.unwrap_or(Value::Null)
        );
    }

    /// Lists the tools (all of them: there is no next page), from their descriptions.
    #[rpc(name = "tools/list", params = whole)]
    async fn list_tools(&self, _params: Option<Value>) -> Value {
        let tools: Vec<Value> = self
            .tools
            .descriptions()
            .into_iter()
            .map(|(name, doc)| {
                json!({
                    "name": name,
                    "title": doc.summary,
                    "description": doc.description,
                    "inputSchema": doc.params_schema(),
                })
            })
            .collect();
        json!({ "tools": tools })
    }

    /// Runs a tool: calls it in-process, its arguments as the params, with this call's context
    /// (and its progress token, if it has one).
    #[rpc(name = "tools/call", params = whole)]
    async fn call_tool(&self, ctx: &Context, params: CallToolParams) -> Value {
        let name = params.name;
        let mut ctx = ctx.clone();
        if let Some(token) = params.meta.and_then(|meta| meta.progress_token) {
            ctx = ctx.with_extension(ProgressToken(token));
        }
        // A request for the tools' table, its params the arguments as the client wrote them.
        let method = Value::from(name.as_str());
        let call = match &params.arguments {
            Some(arguments) => format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":{method},"params":{}}}"#,
                arguments.get()
            ),
            None => format!(r#"{{"jsonrpc":"2.0","id":1,"method":{method}}}"#),
        };
        let answer = self.tools.handle_in(&call, &ctx).await;
        let answer: Value = answer
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        if let Some(text) = answer["result"].as_str() {
            return json!({ "content": [{ "type": "text", "text": text }] });
        }
        let error = &answer["error"];
        let code = error["code"].as_i64().unwrap_or_default();
        let message = error["message"].as_str().unwrap_or("no answer").to_owned();
        if code == i64::from(ErrorCode::METHOD_NOT_FOUND.code()) {
            let known: Vec<String> = self.tools.names().map(|n| format!("`{n}`")).collect();
            tool_error(format!(
                "unknown tool `{name}`; the tools are {}",
                known.join(", ")
            ))
        } else if code == i64::from(ErrorCode::INVALID_PARAMS.code()) {
            let reason = error["data"].as_str().map_or(message, str::to_owned);
            tool_error(format!("invalid arguments for `{name}`: {reason}"))
        } else {
            tool_error(message)
        }
    }

    /// Answers `{}`.
    async fn ping(&self) -> Map<String, Value> {
        Map::new()
    }
}

/// A tool's failure, as a result the model can read.
fn tool_error(message: String) -> Value {
    eprintln!("mcp_server: tool error: {message}");
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

#[tokio::main]
async fn main() {
    let mut args = jrpc_examples::Args::from_env(
        "mcp_server",
        "mcp_server [--http ADDR] (MCP on stdin and stdout, or Streamable HTTP at http://ADDR/mcp)",
    );
    let http = args.value("--http");
    args.finish();
    let server = Server {
        tools: Tools.into_methods(),
    };
    let mut methods = server.into_methods();
    methods.batches(Batches::Refused).on_error(|report| {
        eprintln!("mcp_server: {} failed: {}", report.method, report.reason);
    });
    let served = match http {
        Some(addr) => serve_http(methods, &addr).await,
        None => serve_stdio(methods).await,
    };
    if let Err(err) = served {
        eprintln!("mcp_server: {err}");
        std::process::exit(1);
    }
}

async fn serve_stdio(methods: Methods) -> Result<(), String> {
    let config = PeerConfig::builder()
        .framing(Framing::Lines)
        .cancellation(Cancellation::Mcp)
        .build()
        .map_err(|err| err.to_string())?;
    jrpc_runtime::stdio::serve(methods, config)
        .await
        .map_err(|err| err.to_string())
}

/// Serves MCP's Streamable HTTP at `http://ADDR/mcp` until Ctrl-C.
#[cfg(feature = "mcp")]
async fn serve_http(methods: Methods, addr: &str) -> Result<(), String> {
    use std::io::Write as _;

    let server = jrpc_runtime::mcp::McpServer::builder(methods)
        .build()
        .map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let local = listener.local_addr().map_err(|err| err.to_string())?;
    println!("listening on http://{local}");
    let _ = std::io::stdout().flush();
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("mcp_server: shutting down");
    let drained = shutdown.shutdown().await;
    let _ = serving.await;
    match drained {
        jrpc_runtime::server::Drained::BudgetSpent { calls, .. } => Err(format!(
            "the drain time ran out with {calls} calls in flight; they were dropped"
        )),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "mcp"))]
async fn serve_http(_methods: Methods, _addr: &str) -> Result<(), String> {
    Err("built without the `mcp` feature: --http is not available".to_owned())
}
