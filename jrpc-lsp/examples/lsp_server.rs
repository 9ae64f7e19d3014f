//! A small language server: Content-Length framing on stdio, as editors speak to servers.
//!
//! ```text
//! cargo run --example lsp_server
//! ```
//!
//! It keeps the text of open documents (full sync) and answers `textDocument/hover` with the
//! word under the cursor. On `initialized` it logs a greeting to the client and, when the client
//! says it can (`capabilities.workspace.configuration`), asks it for the `example` settings
//! section and logs the answer (to the client and on stderr).
//!
//! Lifecycle, as the LSP specification has it: requests before `initialize` are answered
//! `-32002`; `shutdown` answers `null`; `exit` ends the process with status 0 after a
//! `shutdown`, 1 without one (also when input ends without an `exit`). Positions are UTF-16 code
//! units, the protocol's default encoding. `$/cancelRequest` is honoured by the connection
//! ([`Cancellation::Lsp`]). Logs go to stderr only: stdout carries the protocol.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jrpc_runtime::{Caller as _, Context, Peer, RpcError, rpc_service};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// LSP's `ServerNotInitialized`: a request came before `initialize`.
const SERVER_NOT_INITIALIZED: i32 = -32002;
/// LSP's `RequestFailed`: the request was valid but cannot be served (here: after `shutdown`).
/// The protocol asks for `-32600` there, but the dispatcher turns a handler's reserved code into
/// `-32603`, so this server answers the LSP code for a failed request instead.
const REQUEST_FAILED: i32 = -32803;
/// `MessageType` of `window/logMessage`.
const LOG_ERROR: u8 = 1;
const LOG_INFO: u8 = 3;

/// The members of `initialize`'s params this server reads; the others are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    capabilities: Option<ClientCapabilities>,
    #[serde(default)]
    client_info: Option<ClientInfo>,
}

#[derive(Debug, Default, Deserialize)]
struct ClientCapabilities {
    #[serde(default)]
    workspace: Option<WorkspaceCapabilities>,
}

#[derive(Debug, Default, Deserialize)]
struct WorkspaceCapabilities {
    #[serde(default)]
    configuration: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct ClientInfo {
    name: String,
    #[serde(default)]
    version: Option<String>,
}

/// `textDocument/hover`'s params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextDocumentPositionParams {
    text_document: TextDocumentIdentifier,
    position: Position,
}

#[derive(Debug, Deserialize)]
struct TextDocumentIdentifier {
    uri: String,
}

/// A position: zero-based line, and column in UTF-16 code units.
#[derive(Clone, Copy, Debug, Deserialize)]
struct Position {
    line: u32,
    character: u32,
}

#[derive(Debug, Deserialize)]
struct Range {
    start: Position,
    end: Position,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidOpenParams {
    text_document: TextDocumentItem,
}

#[derive(Debug, Deserialize)]
struct TextDocumentItem {
    uri: String,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidChangeParams {
    text_document: TextDocumentIdentifier,
    content_changes: Vec<ContentChange>,
}

#[derive(Debug, Deserialize)]
struct ContentChange {
    #[serde(default)]
    range: Option<Range>,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidCloseParams {
    text_document: TextDocumentIdentifier,
}

/// The server's state, shared by every handler.
#[derive(Default)]
struct Server {
    documents: Mutex<HashMap<String, String>>,
    initialized: AtomicBool,
    /// Whether the client can answer `workspace/configuration`.
    configuration: AtomicBool,
    shut_down: AtomicBool,
    /// Wakes `main` on `exit`.
    exit: Notify,
}

/// The handle the method table owns.
struct Handle(Arc<Server>);

impl Server {
    fn documents(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // Poisoning needs a panic while the lock is held; even then each document is whole (it
        // is replaced or edited in one step), so serving goes on.
        self.documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The process's exit status as the protocol wants it.
    fn exit_code(&self) -> i32 {
        if self.shut_down.load(Ordering::SeqCst) {
            0
        } else {
            1
        }
    }
}

/// The methods of the language server; `into_methods` makes them a method table.
#[rpc_service]
impl Handle {
    /// Answers the server's capabilities and name.
    #[rpc(params = whole)]
    async fn initialize(&self, params: InitializeParams) -> Value {
        if let Some(client) = &params.client_info {
            eprintln!(
                "lsp_server: initialize from {} {}",
                client.name,
                client.version.as_deref().unwrap_or("(no version)")
            );
        }
        let configuration = params
            .capabilities
            .and_then(|c| c.workspace)
            .and_then(|w| w.configuration)
            .unwrap_or(false);
        self.0.configuration.store(configuration, Ordering::SeqCst);
        self.0.initialized.store(true, Ordering::SeqCst);
        json!({
            "capabilities": {
                // 1 = Full: every change carries the whole text.
                "textDocumentSync": 1,
                "hoverProvider": true,
            },
            "serverInfo": {
                "name": "jrpc-lsp-example",
                "version": env!("CARGO_PKG_VERSION"),
            },
        })
    }

    /// The client is ready: logs a greeting and asks for the `example` configuration section.
    #[notification]
    #[rpc(params = whole)]
    async fn initialized(&self, ctx: &Context, _params: Value) {
        let Some(peer) = ctx.peer().cloned() else {
            eprintln!("lsp_server: no connection to talk back on");
            return;
        };
        log(&peer, LOG_INFO, "jrpc-lsp-example is ready").await;
        if !self.0.configuration.load(Ordering::SeqCst) {
            eprintln!("lsp_server: the client cannot answer workspace/configuration; not asking");
            return;
        }
        // A notification handler holds up reading until it returns, and the answer to this call
        // is read by that same loop: awaiting it here would wait forever. Run it on its own.
        tokio::spawn(async move {
            let asked = peer
                .with_timeout(Some(Duration::from_secs(30)))
                .call::<Value>(
                    "workspace/configuration",
                    json!({ "items": [{ "section": "example" }] }),
                )
                .await;
            match asked {
                Ok(answer) => {
                    let message = format!("configuration of \"example\": {answer}");
                    eprintln!("lsp_server: {message}");
                    log(&peer, LOG_INFO, &message).await;
                }
                Err(err) => {
                    let message = format!("workspace/configuration failed: {err}");
                    eprintln!("lsp_server: {message}");
                    log(&peer, LOG_ERROR, &message).await;
                }
            }
        });
    }

    /// Keeps the text of a newly opened document.
    #[notification]
    #[rpc(name = "textDocument/didOpen", params = whole)]
    async fn did_open(&self, params: Value) {
        let Some(params) = decode::<DidOpenParams>("textDocument/didOpen", params) else {
            return;
        };
        let doc = params.text_document;
        self.0.documents().insert(doc.uri, doc.text);
    }

    /// Replaces (or patches, for ranged changes) the text of an open document.
    #[notification]
    #[rpc(name = "textDocument/didChange", params = whole)]
    async fn did_change(&self, params: Value) {
        let Some(params) = decode::<DidChangeParams>("textDocument/didChange", params) else {
            return;
        };
        let mut documents = self.0.documents();
        let Some(text) = documents.get_mut(&params.text_document.uri) else {
            eprintln!(
                "lsp_server: textDocument/didChange of {}, which is not open; ignored",
                params.text_document.uri
            );
            return;
        };
        for change in params.content_changes {
            match change.range {
                None => *text = change.text,
                Some(range) => {
                    let start = offset_of(text, range.start);
                    let end = offset_of(text, range.end).max(start);
                    text.replace_range(start..end, &change.text);
                }
            }
        }
    }

    /// Forgets a closed document.
    #[notification]
    #[rpc(name = "textDocument/didClose", params = whole)]
    async fn did_close(&self, params: Value) {
        if let Some(params) = decode::<DidCloseParams>("textDocument/didClose", params) {
            self.0.documents().remove(&params.text_document.uri);
        }
    }

    /// The word under the position, as inline code, or `null`.
    #[rpc(name = "textDocument/hover", params = whole)]
    async fn hover(&self, params: TextDocumentPositionParams) -> Result<Option<Value>, RpcError> {
        if !self.0.initialized.load(Ordering::SeqCst) {
            return Err(RpcError::new(
                SERVER_NOT_INITIALIZED,
                "the server is not initialized: send `initialize` first",
            ));
        }
        if self.0.shut_down.load(Ordering::SeqCst) {
            return Err(RpcError::new(REQUEST_FAILED, "the server is shutting down"));
        }
        let documents = self.0.documents();
        let word = documents
            .get(&params.text_document.uri)
            .and_then(|text| word_at(text, params.position));
        Ok(word.map(
            |word| json!({ "contents": { "kind": "markdown", "value": format!("`{word}`") } }),
        ))
    }

    /// Agrees to stop; `exit` follows.
    async fn shutdown(&self) {
        self.0.shut_down.store(true, Ordering::SeqCst);
    }

    /// Ends the process.
    #[notification]
    async fn exit(&self) {
        self.0.exit.notify_one();
    }
}

/// Decodes a notification's params, or says on stderr why not (a notification has no answer to
/// carry the error).
fn decode<T: DeserializeOwned>(method: &str, params: Value) -> Option<T> {
    match serde_json::from_value(params) {
        Ok(params) => Some(params),
        Err(err) => {
            eprintln!("lsp_server: {method} ignored: invalid params: {err}");
            None
        }
    }
}

/// Sends `window/logMessage`; a closed connection is only worth a line on stderr.
async fn log(peer: &Peer, kind: u8, message: &str) {
    let params = json!({ "type": kind, "message": message });
    if let Err(err) = peer.notify("window/logMessage", params).await {
        eprintln!("lsp_server: could not log to the client: {err}");
    }
}

/// The byte offset of an LSP position in `text`; past the end of a line means its end, past the
/// last line means the end of the text. Lines end at `\n`, `\r\n` or `\r`.
fn offset_of(text: &str, position: Position) -> usize {
    let mut line_start = 0;
    let mut line = 0;
    let mut chars = text.char_indices().peekable();
    while line < position.line {
        let Some((at, c)) = chars.next() else {
            return text.len();
        };
        let next = match c {
            '\n' => at + 1,
            '\r' if chars.peek().map(|&(_, c)| c) == Some('\n') => {
                chars.next();
                at + 2
            }
            '\r' => at + 1,
            _ => continue,
        };
        line_start = next;
        line += 1;
    }
    let mut units = 0;
    for (at, c) in text[line_start..].char_indices() {
        if units >= position.character || c == '\n' || c == '\r' {
            return line_start + at;
        }
        units += c.len_utf16() as u32;
    }
    text.len()
}

/// The word (letters, digits, `_`) that touches the position, if any.
fn word_at(text: &str, position: Position) -> Option<&str> {
    let at = offset_of(text, position);
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word(c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = text[at..]
        .char_indices()
        .find(|&(_, c)| !is_word(c))
        .map_or(text.len(), |(i, _)| at + i);
    (start < end).then(|| &text[start..end])
}

#[tokio::main]
async fn main() {
    // Editors' language clients often pass `--stdio`; stdio is the only transport here.
    let mut args = jrpc_examples::Args::from_env("lsp_server", "lsp_server [--stdio]");
    let _stdio = args.flag("--stdio");
    args.finish();
    let server = Arc::new(Server::default());
    let mut methods = Handle(Arc::clone(&server)).into_methods();
    methods.on_error(|report| {
        eprintln!("lsp_server: {} failed: {}", report.method, report.reason);
    });
    let config = jrpc_lsp::peer_config().build();
    let config = match config {
        Ok(config) => config,
        Err(err) => {
            eprintln!("lsp_server: {err}");
            std::process::exit(2);
        }
    };
    let served = jrpc_runtime::stdio::serve(methods, config);
    tokio::select! {
        outcome = served => {
            if let Err(err) = outcome {
                // A broken connection, or calls dropped when the drain time ran out.
                eprintln!("lsp_server: {err}");
                std::process::exit(1);
            } else {
                eprintln!("lsp_server: input ended without `exit`");
            }
        }
        () = server.exit.notified() => {}
    }
    // Exit right away: a read of stdin may still be pending, and it cannot be cancelled.
    std::process::exit(server.exit_code());
}
