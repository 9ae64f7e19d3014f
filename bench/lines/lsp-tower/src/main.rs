//! lsp_server's behaviour on tower-lsp-server 0.23, for the lines comparison in bench/README.md:
//! hover on the word under the cursor, the `initialized` greeting and its
//! `workspace/configuration` question for section `example`, full and ranged document sync in
//! UTF-16 positions, exit status 0 after `shutdown` and 1 otherwise, the client's process
//! watched. tower-lsp-server answers `-32002` before `initialize` and `-32600` after `shutdown`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

struct Backend {
    client: Client,
    documents: Mutex<HashMap<Uri, String>>,
    /// Whether the client can answer `workspace/configuration`.
    configuration: AtomicBool,
    shut_down: Arc<AtomicBool>,
}

impl Backend {
    fn documents(&self) -> MutexGuard<'_, HashMap<Uri, String>> {
        self.documents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        if let Some(client) = &params.client_info {
            let version = client.version.as_deref().unwrap_or("(no version)");
            eprintln!("lsp_server: initialize from {} {version}", client.name);
        }
        let workspace = params.capabilities.workspace;
        let configuration = workspace.and_then(|w| w.configuration).unwrap_or(false);
        self.configuration.store(configuration, Ordering::SeqCst);
        if let Some(pid) = params.process_id {
            tokio::spawn(watch_client(pid));
        }
        let capabilities = ServerCapabilities {
            text_document_sync: Some(TextDocumentSyncKind::FULL.into()),
            hover_provider: Some(true.into()),
            ..ServerCapabilities::default()
        };
        let name = "jrpc-lsp-example".to_owned();
        let version = Some(env!("CARGO_PKG_VERSION").to_owned());
        let server_info = Some(ServerInfo { name, version });
        Ok(InitializeResult {
            capabilities,
            server_info,
            ..InitializeResult::default()
        })
    }

    async fn initialized(&self, _params: InitializedParams) {
        let client = self.client.clone();
        client
            .log_message(MessageType::INFO, "jrpc-lsp-example is ready")
            .await;
        if !self.configuration.load(Ordering::SeqCst) {
            eprintln!("lsp_server: the client cannot answer workspace/configuration; not asking");
            return;
        }
        // On its own task: `exit` waits for the notifications still running, and this one
        // would wait for an answer that is no longer read.
        tokio::spawn(async move {
            let item = ConfigurationItem {
                scope_uri: None,
                section: Some("example".to_owned()),
            };
            let asked = client.configuration(vec![item]);
            let answer = tokio::time::timeout(Duration::from_secs(30), asked).await;
            let (kind, message) = match answer {
                Ok(Ok(answer)) => {
                    let answer = serde_json::Value::from(answer);
                    let message = format!("configuration of \"example\": {answer}");
                    (MessageType::INFO, message)
                }
                Ok(Err(err)) => (
                    MessageType::ERROR,
                    format!("workspace/configuration failed: {err}"),
                ),
                Err(_) => (
                    MessageType::ERROR,
                    "workspace/configuration timed out".to_owned(),
                ),
            };
            eprintln!("lsp_server: {message}");
            client.log_message(kind, message).await;
        });
    }

    async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        self.documents().insert(doc.uri, doc.text);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let mut documents = self.documents();
        let Some(text) = documents.get_mut(&uri) else {
            eprintln!(
                "lsp_server: textDocument/didChange of {}, which is not open; ignored",
                uri.as_str()
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

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.documents().remove(&params.text_document.uri);
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let at = params.text_document_position_params;
        let documents = self.documents();
        let word = documents
            .get(&at.text_document.uri)
            .and_then(|text| word_at(text, at.position));
        Ok(word.map(|word| {
            let value = format!("`{word}`");
            let contents = HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            });
            Hover {
                contents,
                range: None,
            }
        }))
    }
}

/// Exits with status 1 once the client's process is gone (checked every 3 s).
async fn watch_client(pid: u32) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    loop {
        tokio::time::sleep(Duration::from_secs(3)).await;
        if let Err(err) = rustix::process::test_kill_process(pid)
            && err == rustix::io::Errno::SRCH
        {
            eprintln!("lsp_server: the client's process is gone");
            std::process::exit(1);
        }
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
    for arg in std::env::args().skip(1) {
        if arg != "--stdio" {
            eprintln!("lsp_server: unknown argument `{arg}`\nusage: lsp_server [--stdio]");
            std::process::exit(2);
        }
    }
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&shut_down);
    let (service, socket) = LspService::new(move |client| Backend {
        client,
        documents: Mutex::default(),
        configuration: AtomicBool::new(false),
        shut_down: flag,
    });
    Server::new(tokio::io::stdin(), tokio::io::stdout(), socket)
        .serve(service)
        .await;
    // `exit` and the end of input both end `serve`; the status says whether `shutdown` came.
    let code = if shut_down.load(Ordering::SeqCst) {
        0
    } else {
        1
    };
    std::process::exit(code);
}
