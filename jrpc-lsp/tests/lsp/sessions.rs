//! What a handler does with the editor: a notification handler that awaits the client's answer
//! (while a request waits behind it), typed pushes, the position encoding negotiated; and a
//! session over a real TCP socket.

use std::sync::Mutex;

use jrpc_lsp::lsp_types::{
    ConfigurationItem, Diagnostic, InitializeParams, InitializeResult, InitializedParams,
    MessageType, ServerCapabilities, Uri,
};
use jrpc_lsp::{Exit, LspContext as _, LspServer, PositionEncoding, TextDocument};
use jrpc_runtime::{Context, rpc_service};
use serde_json::{Value, json};

use crate::editor::{Editor, bounded, start};

/// Asks for its configuration in `initialized`, and shows what it got.
#[derive(Default)]
struct Greeter {
    settings: Mutex<Option<Vec<Value>>>,
}

#[rpc_service]
impl Greeter {
    #[rpc(params = whole)]
    async fn initialize(&self, params: InitializeParams) -> InitializeResult {
        let capabilities = ServerCapabilities {
            position_encoding: Some(PositionEncoding::negotiate(&params).kind()),
            ..ServerCapabilities::default()
        };
        InitializeResult {
            capabilities,
            server_info: None,
        }
    }

    #[notification]
    #[rpc(params = whole)]
    async fn initialized(&self, ctx: &Context, _params: InitializedParams) {
        let client = ctx.client();
        let item = ConfigurationItem {
            scope_uri: None,
            section: Some("test".to_owned()),
        };
        let answer = client.configuration(vec![item]).await;
        let shown = match &answer {
            Ok(settings) => format!("settings {}", Value::from(settings.clone())),
            Err(err) => format!("no settings: {err}"),
        };
        *self.settings.lock().unwrap() = answer.ok();
        client.show_message(MessageType::INFO, shown).await.unwrap();
    }

    /// Answers the settings `initialized` got.
    #[rpc(name = "test/settings")]
    async fn settings(&self) -> Option<Vec<Value>> {
        self.settings.lock().unwrap().clone()
    }

    /// Publishes a diagnostic on the `x` of `é😀x`, in the connection's encoding, and answers
    /// the encoding and the transport.
    #[rpc(name = "test/diagnose")]
    async fn diagnose(&self, ctx: &Context) -> String {
        let encoding = ctx.position_encoding();
        let doc = TextDocument::new("é😀x", 1, encoding);
        let diagnostic = Diagnostic {
            range: doc.range_of(6..7),
            message: "an x".to_owned(),
            ..Diagnostic::default()
        };
        let uri: Uri = "file:///x.txt".parse().unwrap();
        let client = ctx.client();
        client
            .publish_diagnostics(uri, vec![diagnostic], Some(1))
            .await
            .unwrap();
        format!("{encoding:?} over {}", ctx.transport())
    }
}

/// `initialize` with `capabilities`, then `initialized`; answers the `workspace/configuration`
/// it asks with `settings`, and checks the message that shows them.
async fn greet(editor: &mut Editor, capabilities: Value, settings: Value) {
    let params = json!({"processId": null, "capabilities": capabilities});
    editor.call(0, "initialize", params).await;
    editor.notify("initialized", json!({})).await;
    let ask = editor.recv().await;
    assert_eq!(ask["method"], "workspace/configuration", "{ask}");
    assert_eq!(ask["params"], json!({"items": [{"section": "test"}]}));
    editor
        .send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": settings}))
        .await;
    let shown = editor.recv().await;
    assert_eq!(shown["method"], "window/showMessage", "{shown}");
    assert_eq!(shown["params"]["message"], format!("settings {settings}"));
}

/// The request sent right behind `initialized` waits for the handler, which awaits the client's
/// answer: read while it runs, so the request is answered without waiting out any timeout (on
/// the paused clock no time passes at all; a stall would pass the 60 s call timeout).
#[tokio::test(start_paused = true)]
async fn a_request_behind_an_awaiting_notification_is_answered_without_a_stall() {
    bounded(async {
        let (mut editor, _serving) = start(LspServer::new(Greeter::default().into_methods()));
        let started = tokio::time::Instant::now();
        let params = json!({"processId": null, "capabilities": {}});
        editor.call(0, "initialize", params).await;
        editor.notify("initialized", json!({})).await;
        editor
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "test/settings"}))
            .await;
        let ask = editor.recv().await;
        assert_eq!(ask["method"], "workspace/configuration", "{ask}");
        editor
            .send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": [{"level": 3}]}))
            .await;
        assert_eq!(editor.recv().await["method"], "window/showMessage");
        let settings = editor.recv().await;
        assert_eq!(settings["id"], 1);
        assert_eq!(
            settings["result"],
            json!([{"level": 3}]),
            "read after the handler"
        );
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn positions_follow_the_encoding_initialize_answered() {
    bounded(async {
        let utf8 = json!({"general": {"positionEncodings": ["utf-16", "utf-8"]}});
        for (capabilities, encoding, range) in
            [(json!({}), "Utf16", [3, 4]), (utf8, "Utf8", [6, 7])]
        {
            let (mut editor, _serving) = start(LspServer::new(Greeter::default().into_methods()));
            greet(&mut editor, capabilities, json!([null])).await;
            editor
                .send(json!({"jsonrpc": "2.0", "id": 1, "method": "test/diagnose"}))
                .await;
            let published = editor.recv().await;
            assert_eq!(published["method"], "textDocument/publishDiagnostics");
            let params = &published["params"];
            assert_eq!(
                (&params["uri"], &params["version"]),
                (&json!("file:///x.txt"), &json!(1))
            );
            let diagnostic = &params["diagnostics"][0];
            assert_eq!(diagnostic["message"], "an x");
            assert_eq!(
                diagnostic["range"],
                json!({"start": {"line": 0, "character": range[0]},
                       "end": {"line": 0, "character": range[1]}})
            );
            let answer = editor.recv().await;
            assert_eq!(answer["result"], format!("{encoding} over stream"));
        }
    })
    .await;
}

/// A session over a loopback TCP socket (real I/O: the clock is not paused).
#[tokio::test]
async fn a_session_over_tcp() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let server = LspServer::new(Greeter::default().into_methods());
        server.serve_tcp(stream).await
    });
    let (read, write) = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap()
        .into_split();
    let mut editor = Editor::over(read, write);
    let run = async {
        greet(&mut editor, json!({}), json!([{"a": 1}])).await;
        editor
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "test/diagnose"}))
            .await;
        let published = editor.recv().await;
        assert_eq!(published["method"], "textDocument/publishDiagnostics");
        let answer = editor.recv().await;
        assert_eq!(answer["result"], "Utf16 over tcp", "{answer}");
        editor.call(2, "shutdown", Value::Null).await;
        editor.notify("exit", Value::Null).await;
        serving.await.unwrap().unwrap()
    };
    let exit = tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the session hung");
    assert_eq!(exit, Exit::Clean);
}
