//! The editor's end of a connection, driven by hand, and a small server to drive.

use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt as _};
use jrpc_lsp::lsp_types::{InitializeParams, InitializeResult, ServerCapabilities};
use jrpc_lsp::{Exit, LspServer};
use jrpc_runtime::framing::{ContentLength, Frame};
use jrpc_runtime::{Methods, rpc_service};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, FramedWrite};

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The editor's end: frames in, frames out.
pub(crate) struct Editor {
    reader: FramedRead<Reader, ContentLength>,
    writer: Option<FramedWrite<Writer, ContentLength>>,
}

impl Editor {
    /// The editor's end over `read` and `write`.
    pub(crate) fn over(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        let (read, write): (Reader, Writer) = (Box::new(read), Box::new(write));
        Self {
            reader: FramedRead::new(read, ContentLength::new(1 << 20)),
            writer: Some(FramedWrite::new(write, ContentLength::new(1 << 20))),
        }
    }

    pub(crate) async fn send(&mut self, message: Value) {
        let writer = self.writer.as_mut().expect("input is still open");
        writer.send(message.to_string()).await.unwrap();
    }

    pub(crate) async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next message from the server; `None` once its output ended.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        match self.reader.next().await? {
            Ok(Frame::Message(text)) => Some(serde_json::from_str(&text).unwrap()),
            other => panic!("not a message: {other:?}"),
        }
    }

    pub(crate) async fn recv(&mut self) -> Value {
        self.next().await.expect("the server's output ended")
    }

    /// Sends a request and returns the next message, which must be its answer.
    pub(crate) async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = self.recv().await;
        assert_eq!(answer["id"], id, "expected the answer to {id}: {answer}");
        answer
    }

    /// `initialize` (id 0) naming `process_id`, then `initialized`; returns the result.
    pub(crate) async fn initialize(&mut self, process_id: Option<u32>) -> Value {
        let params = json!({"processId": process_id, "rootUri": null, "capabilities": {}});
        let answer = self.call(0, "initialize", params).await;
        assert!(answer.get("error").is_none(), "{answer}");
        self.notify("initialized", json!({})).await;
        answer["result"].clone()
    }

    /// Ends the server's input.
    pub(crate) async fn close(&mut self) {
        if let Some(mut writer) = self.writer.take() {
            SinkExt::<String>::close(&mut writer).await.unwrap();
        }
    }
}

/// Starts `server` on one end of an in-memory stream; returns the other end, and the task
/// serving, which ends with how serving ended.
pub(crate) fn start(server: LspServer) -> (Editor, JoinHandle<std::io::Result<Exit>>) {
    let (near, far) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(far);
    let serving = tokio::spawn(async move { server.serve(read, write).await });
    let (read, write) = tokio::io::split(near);
    (Editor::over(read, write), serving)
}

/// The error code of an answer.
pub(crate) fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error: {answer}"))
}

/// A server with `initialize` (empty capabilities), an `echo` request and a `note` notification
/// that records its text.
pub(crate) struct Basic {
    pub(crate) notes: Arc<Mutex<Vec<String>>>,
}

#[rpc_service]
impl Basic {
    #[rpc(params = whole)]
    async fn initialize(&self, _params: InitializeParams) -> InitializeResult {
        InitializeResult {
            capabilities: ServerCapabilities::default(),
            server_info: None,
        }
    }

    async fn echo(&self, text: String) -> String {
        text
    }

    #[notification]
    async fn note(&self, text: String) {
        self.notes.lock().unwrap().push(text);
    }
}

/// [`Basic`]'s table, and what its `note` recorded.
pub(crate) fn basic() -> (Methods, Arc<Mutex<Vec<String>>>) {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let methods = Basic {
        notes: Arc::clone(&notes),
    }
    .into_methods();
    (methods, notes)
}

/// Runs a test's body; on the paused clock a body that hangs (every task waiting) fails at once.
pub(crate) async fn bounded<T>(body: impl Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(24 * 3600), body)
        .await
        .expect("the test hung")
}

/// Records the methods `on_error` is told of.
pub(crate) fn reported(methods: &mut Methods) -> Arc<Mutex<Vec<String>>> {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reports);
    methods.on_error(move |report| sink.lock().unwrap().push(report.method.to_owned()));
    reports
}
