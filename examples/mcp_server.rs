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
//! Tool failures (an unknown tool, arguments that do not fit the tool's schema, a sum too large to
//! be a number) are answered as results with `"isError": true`, so that the model can read them
//! and try again; params that are not a `tools/call` at all are `-32602`.

use jrpc_runtime::{Batches, Cancellation, Framing, PeerConfig, rpc_service};
use serde::Deserialize;
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
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct AddArguments {
    a: f64,
    b: f64,
}

struct Server;

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

    /// Lists the tools (all of them: there is no next page).
    #[rpc(name = "tools/list", params = whole)]
    async fn list_tools(&self, _params: Option<Value>) -> Value {
        json!({
            "tools": [{
                "name": "add",
                "title": "Add",
                "description": "Adds two numbers and answers their sum as text.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "a": { "type": "number", "description": "The first addend" },
                        "b": { "type": "number", "description": "The second addend" },
                    },
                    "required": ["a", "b"],
                },
            }],
        })
    }

    /// Runs a tool.
    #[rpc(name = "tools/call", params = whole)]
    async fn call_tool(&self, params: CallToolParams) -> Value {
        match params.name.as_str() {
            "add" => add(params.arguments.unwrap_or(Value::Null)),
            other => tool_error(format!("unknown tool `{other}`; the only tool is `add`")),
        }
    }

    /// Answers `{}`.
    async fn ping(&self) -> Map<String, Value> {
        Map::new()
    }
}

/// The `add` tool: the sum as text, or why not.
fn add(arguments: Value) -> Value {
    let AddArguments { a, b } = match serde_json::from_value(arguments) {
        Ok(arguments) => arguments,
        Err(err) => return tool_error(format!("invalid arguments for `add`: {err}")),
    };
    let sum = a + b;
    if !sum.is_finite() {
        return tool_error(format!("{a} + {b} is too large to be a number"));
    }
    json!({ "content": [{ "type": "text", "text": sum.to_string() }] })
}

/// A tool's failure, as a result the model can read.
fn tool_error(message: String) -> Value {
    eprintln!("mcp_server: tool error: {message}");
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

#[tokio::main]
async fn main() {
    let mut methods = Server.into_methods();
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
