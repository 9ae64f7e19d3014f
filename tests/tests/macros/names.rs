//! Wire names given by constants (`#[rpc(name = EXPR)]`), as protocol crates publish them
//! (lsp-types' `Request::METHOD`, ACP's `AGENT_METHOD_NAMES`): served in process, called
//! through the stub, and a clash with another method's name found when the table is built.
#![deny(warnings)]
#![warn(clippy::pedantic)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

use jrpc_runtime::{Methods, ParamEncoding, rpc_service};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A protocol crate's names, as lsp-types and ACP's schema crate publish them.
mod protocol {
    /// A request type names its method with an associated constant.
    pub trait Request {
        const METHOD: &'static str;
    }

    pub enum Hover {}

    impl Request for Hover {
        const METHOD: &'static str = "textDocument/hover";
    }

    /// The names of a side's methods, as one constant struct.
    pub struct MethodNames {
        pub initialize: &'static str,
        pub session_new: &'static str,
    }

    pub const AGENT_METHOD_NAMES: MethodNames = MethodNames {
        initialize: "initialize",
        session_new: "session/new",
    };

    pub const EXIT: &str = "exit";
}

use protocol::{AGENT_METHOD_NAMES, Request as _};

/// What `initialize` takes, whole.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The client's name.
    pub client_name: String,
}

/// Names from constants, beside names the macro knows.
#[rpc_service(rename_all = "camelCase")]
pub trait Editor {
    /// `textDocument/hover`: an associated constant.
    #[rpc(name = protocol::Hover::METHOD)]
    async fn hover(&self, line: u32, #[rpc(name = "character")] column: u32) -> String;
    /// `initialize`: a field of a constant struct, with the whole params.
    #[rpc(name = AGENT_METHOD_NAMES.initialize)]
    #[rpc(params = whole)]
    async fn initialize(&self, params: InitializeParams) -> String;
    /// `exit`: a constant, for a notification.
    #[notification]
    #[rpc(name = protocol::EXIT)]
    fn exit(&self);
    /// `hasExited`: `rename_all` still names the methods it names.
    fn has_exited(&self) -> bool;
}

#[derive(Default)]
struct Session {
    exited: AtomicBool,
}

impl Editor for Session {
    async fn hover(&self, line: u32, column: u32) -> String {
        format!("{line}:{column}")
    }
    async fn initialize(&self, params: InitializeParams) -> String {
        format!("hello {}", params.client_name)
    }
    fn exit(&self) {
        self.exited.store(true, Ordering::SeqCst);
    }
    fn has_exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }
}

/// A namespace is prefixed to a name from a constant, as to a literal one.
#[rpc_service(namespace = "acp", separator = "/")]
pub trait Agent {
    /// `acp/session/new`.
    #[rpc(name = AGENT_METHOD_NAMES.session_new)]
    async fn new_session(&self) -> u32;
}

impl Agent for Session {
    async fn new_session(&self) -> u32 {
        7
    }
}

async fn call(methods: &Methods, method: &str, params: &Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = methods
        .handle(&request.to_string())
        .await
        .expect("a call is answered");
    serde_json::from_str(&answer).unwrap()
}

#[tokio::test]
async fn served_under_the_constants_value() {
    let m = Editor::into_methods(Session::default());
    let hover = call(&m, "textDocument/hover", &json!([3, 4])).await;
    assert_eq!(hover["result"], "3:4");
    let hover = call(
        &m,
        "textDocument/hover",
        &json!({"line": 3, "character": 5}),
    )
    .await;
    assert_eq!(hover["result"], "3:5");
    let hello = call(&m, "initialize", &json!({"clientName": "vim"})).await;
    assert_eq!(hello["result"], "hello vim");
    assert_eq!(
        call(&m, "hasExited", &json!([])).await["result"],
        false,
        "rename_all applies to the other methods"
    );
    let exit = json!({"jsonrpc": "2.0", "method": "exit"}).to_string();
    assert_eq!(m.handle(&exit).await, None, "a notification");
    assert_eq!(call(&m, "hasExited", &json!([])).await["result"], true);
    // Neither the Rust name nor `rename_all`'s name of it is served.
    for unknown in ["hover", "Hover", "exit_", "session/new"] {
        let answer = call(&m, unknown, &json!([])).await;
        assert_eq!(answer["error"]["code"], -32601, "{unknown}");
    }
    let described: Vec<&str> = m.descriptions().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        described,
        ["textDocument/hover", "initialize", "exit", "hasExited"]
    );

    let m = Agent::into_methods(Session::default());
    assert_eq!(call(&m, "acp/session/new", &json!([])).await["result"], 7);
}

#[tokio::test]
async fn the_stub_sends_the_constants_value() {
    for encoding in [ParamEncoding::Positional, ParamEncoding::Named] {
        let client =
            EditorClient::new(Editor::into_methods(Session::default())).with_encoding(encoding);
        assert_eq!(client.hover(1, 2).await.unwrap(), "1:2");
        let params = InitializeParams {
            client_name: "emacs".to_owned(),
        };
        assert_eq!(client.initialize(params).await.unwrap(), "hello emacs");
        assert!(!client.has_exited().await.unwrap());
        client.exit().await.unwrap();
        assert!(client.has_exited().await.unwrap());

        let mut batch = client.batch();
        let hover = batch.hover(5, 6);
        batch.exit();
        let mut answers = batch.await.unwrap();
        assert_eq!(answers.take(hover).unwrap(), "5:6");
    }
    let agent = AgentClient::new(Agent::into_methods(Session::default()));
    assert_eq!(agent.new_session().await.unwrap(), 7);
}

/// Two methods whose names the macro cannot compare: the constant's value is the other's name.
#[rpc_service(client = false)]
pub trait Clash {
    /// `textDocument/hover`, from the constant.
    #[rpc(name = protocol::Hover::METHOD)]
    fn hover(&self) -> u8;
    /// `textDocument/hover` again, written out.
    #[rpc(name = "textDocument/hover")]
    fn hover_again(&self) -> u8;
}

struct Clashing;

impl Clash for Clashing {
    fn hover(&self) -> u8 {
        1
    }
    fn hover_again(&self) -> u8 {
        2
    }
}

#[test]
fn a_clash_is_found_when_the_table_is_built_naming_both_methods() {
    let panic = catch_unwind(AssertUnwindSafe(|| Clashing.into_methods()))
        .expect_err("a clash in the service's definition panics");
    let message = panic
        .downcast_ref::<String>()
        .expect("the message names the methods");
    assert_eq!(
        message,
        "jrpc service `Clash`: methods `hover` and `hover_again` have the same wire name \
         `textDocument/hover`; give one of them another name with `#[rpc(name = ...)]`"
    );
}
