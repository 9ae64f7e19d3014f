//! A Model Context Protocol server with one tool, `add`, over stdio (one JSON message a line).
//!
//! ```text
//! cargo run --example mcp_server
//! ```
//!
//! `initialize` answers the protocol version the client asked for when this server knows it, else
//! the newest it knows. MCP has no batches: a batch is answered `-32600`. A
//! `notifications/cancelled` aborts the named call, which is then not answered
//! ([`Cancellation::Mcp`]). Logs go to stderr only: stdout carries the protocol.
//!
//! The tools are a service of their own, [`Tools`], declared with `#[rpc_service(schema)]`:
//! `tools/list` is made from its descriptions (the doc comment's first paragraph is the tool's
//! title, the rest its description, the argument struct's JSON Schema its `inputSchema`), and
//! `tools/call` calls it in-process, with the arguments as its params.
//!
//! Tool failures (an unknown tool, arguments that do not fit the tool's schema, a sum too large to
//! be a number) are answered as results with `"isError": true`, so that the model can read them
//! and try again; params that are not a `tools/call` at all are `-32602`.

use jrpc_runtime::{
    Batches, Caller as _, Cancellation, ClientError, ErrorCode, Framing, Methods, PeerConfig,
    RpcError, rpc_service,
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
}

/// The arguments of the `add` tool.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddArguments {
    /// The first addend
    a: f64,
    /// The second addend
    b: f64,
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

    /// Runs a tool: calls it in-process, its arguments as the params.
    #[rpc(name = "tools/call", params = whole)]
    async fn call_tool(&self, params: CallToolParams) -> Value {
        let name = params.name;
        match self.tools.call::<String>(&name, params.arguments).await {
            Ok(text) => json!({ "content": [{ "type": "text", "text": text }] }),
            Err(ClientError::Failed(err)) if err.code() == ErrorCode::METHOD_NOT_FOUND => {
                let known: Vec<String> = self.tools.names().map(|n| format!("`{n}`")).collect();
                tool_error(format!(
                    "unknown tool `{name}`; the tools are {}",
                    known.join(", ")
                ))
            }
            Err(ClientError::Failed(err)) if err.code() == ErrorCode::INVALID_PARAMS => {
                let reason = match err.data_as::<String>() {
                    Some(Ok(reason)) => reason,
                    _ => err.message().to_owned(),
                };
                tool_error(format!("invalid arguments for `{name}`: {reason}"))
            }
            Err(ClientError::Failed(err)) => tool_error(err.message().to_owned()),
            Err(err) => tool_error(format!("`{name}` failed: {err}")),
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
    let server = Server {
        tools: Tools.into_methods(),
    };
    let mut methods = server.into_methods();
    methods.batches(Batches::Refused).on_error(|report| {
        eprintln!("mcp_server: {} failed: {}", report.method, report.reason);
    });
    let config = PeerConfig::builder()
        .framing(Framing::Lines)
        .cancellation(Cancellation::Mcp)
        .build();
    let served = match config {
        Ok(config) => jrpc_runtime::stdio::serve(methods, config).await,
        Err(err) => Err(std::io::Error::other(err)),
    };
    if let Err(err) = served {
        eprintln!("mcp_server: {err}");
        std::process::exit(1);
    }
}
