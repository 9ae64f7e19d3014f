//! A small language server on `jrpc-lsp`: Content-Length framing on stdio, as editors speak to
//! servers.
//!
//! ```text
//! cargo run --example lsp_server
//! ```
//!
//! It keeps the text of open documents (full sync; ranged changes are applied too) and answers
//! `textDocument/hover` with the word under the cursor. On `initialized` it logs a greeting to
//! the client and, when the client says it can (`capabilities.workspace.configuration`), asks it
//! for the `example` settings section, awaiting the answer in the handler, and logs it (to the
//! client and on stderr).
//!
//! The lifecycle is `jrpc-lsp`'s: requests before `initialize` are answered `-32002`, after
//! `shutdown` `-32600`; `exit` ends the process with status 0 after a `shutdown`, 1 without one
//! (also when input ends without `exit`, or the client's process is gone). `"params": null` is
//! taken as no params. Positions are UTF-16 code units, the protocol's default. Logs go to stderr
//! only: stdout carries the protocol.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jrpc_lsp::lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification,
};
use jrpc_lsp::lsp_types::request::{HoverRequest, Request};
use jrpc_lsp::lsp_types::*;
use jrpc_lsp::{LspContext as _, LspServer, PositionEncoding, TextDocument};
use jrpc_runtime::{Context, rpc_service};

/// The server's state, shared by every handler.
#[derive(Default)]
struct Server {
    documents: Mutex<HashMap<Uri, TextDocument>>,
    /// Whether the client can answer `workspace/configuration`.
    configuration: AtomicBool,
}

impl Server {
    fn documents(&self) -> MutexGuard<'_, HashMap<Uri, TextDocument>> {
        // Poisoning needs a panic while the lock is held; even then each document is whole (an
        // edit is applied in one step), so serving goes on.
        self.documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The methods of the language server; `into_methods` makes them a method table.
#[rpc_service]
impl Server {
    /// Answers the server's capabilities and name.
    #[rpc(params = whole)]
    async fn initialize(&self, params: InitializeParams) -> InitializeResult {
        if let Some(client) = &params.client_info {
            let version = client.version.as_deref().unwrap_or("(no version)");
            eprintln!("lsp_server: initialize from {} {version}", client.name);
        }
        let workspace = params.capabilities.workspace;
        let configuration = workspace.and_then(|w| w.configuration).unwrap_or(false);
        self.configuration.store(configuration, Ordering::SeqCst);
        let capabilities = ServerCapabilities {
            text_document_sync: Some(TextDocumentSyncKind::FULL.into()),
            hover_provider: Some(true.into()),
            ..ServerCapabilities::default()
        };
        let name = "jrpc-lsp-example".to_owned();
        let version = Some(env!("CARGO_PKG_VERSION").to_owned());
        let server_info = Some(ServerInfo { name, version });
        InitializeResult {
            capabilities,
            server_info,
        }
    }

    /// The client is ready: logs a greeting, asks for the `example` configuration section and
    /// logs the answer. Answers are read while it awaits; other messages wait for it.
    #[notification]
    #[rpc(params = whole)]
    async fn initialized(&self, ctx: &Context, _params: InitializedParams) {
        let client = ctx.client().with_timeout(Some(Duration::from_secs(30)));
        let _ = client
            .log_message(MessageType::INFO, "jrpc-lsp-example is ready")
            .await;
        if !self.configuration.load(Ordering::SeqCst) {
            eprintln!("lsp_server: the client cannot answer workspace/configuration; not asking");
            return;
        }
        let item = ConfigurationItem {
            scope_uri: None,
            section: Some("example".to_owned()),
        };
        let answer = client.configuration(vec![item]).await;
        let (kind, message) = match answer.map(serde_json::Value::from) {
            Ok(answer) => (
                MessageType::INFO,
                format!("configuration of \"example\": {answer}"),
            ),
            Err(err) => (
                MessageType::ERROR,
                format!("workspace/configuration failed: {err}"),
            ),
        };
        eprintln!("lsp_server: {message}");
        let _ = client.log_message(kind, message).await;
    }

    /// Keeps the text of a newly opened document.
    #[notification]
    #[rpc(name = <DidOpenTextDocument as Notification>::METHOD, params = whole)]
    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        let text = TextDocument::new(doc.text, doc.version, PositionEncoding::Utf16);
        self.documents().insert(doc.uri, text);
    }

    /// Replaces (or patches, for ranged changes) the text of an open document.
    #[notification]
    #[rpc(name = <DidChangeTextDocument as Notification>::METHOD, params = whole)]
    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let (uri, version) = (params.text_document.uri, params.text_document.version);
        match self.documents().get_mut(&uri) {
            Some(doc) => doc.apply(params.content_changes, version),
            None => eprintln!(
                "lsp_server: textDocument/didChange of {}, which is not open; ignored",
                uri.as_str()
            ),
        }
    }

    /// Forgets a closed document.
    #[notification]
    #[rpc(name = <DidCloseTextDocument as Notification>::METHOD, params = whole)]
    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.documents().remove(&params.text_document.uri);
    }

    /// The word under the position, as inline code, or `null`.
    #[rpc(name = <HoverRequest as Request>::METHOD, params = whole)]
    async fn hover(&self, params: HoverParams) -> Option<Hover> {
        let at = params.text_document_position_params;
        let documents = self.documents();
        let word = word_at(documents.get(&at.text_document.uri)?, at.position)?;
        let value = format!("`{word}`");
        let contents = HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        });
        Some(Hover {
            contents,
            range: None,
        })
    }
}

/// The word (letters, digits, `_`) that touches the position, if any.
fn word_at(doc: &TextDocument, position: Position) -> Option<&str> {
    let (text, at) = (doc.text(), doc.offset_at(position));
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
    let mut methods = Server::default().into_methods();
    methods.on_error(|report| {
        eprintln!("lsp_server: {} failed: {}", report.method, report.reason);
    });
    match LspServer::new(methods).serve_stdio().await {
        Ok(exit) => {
            eprintln!("lsp_server: {exit}");
            // Exit right away: a read of stdin may still be pending, and it cannot be cancelled.
            exit.exit_process()
        }
        Err(err) => {
            // A broken connection, or calls dropped when the drain time ran out.
            eprintln!("lsp_server: {err}");
            std::process::exit(1);
        }
    }
}
