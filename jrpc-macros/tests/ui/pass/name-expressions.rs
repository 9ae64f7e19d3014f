//! `#[rpc(name = EXPR)]`: a wire name given by a constant, as protocol crates
//! publish them (lsp-types' `Request::METHOD`, ACP's `AGENT_METHOD_NAMES`).
#![deny(warnings)]

use jrpc_runtime::{ParamEncoding, rpc_service};

/// A protocol crate's methods, each naming itself with an associated constant.
mod protocol {
    pub trait Request {
        const METHOD: &'static str;
    }

    pub enum Hover {}

    impl Request for Hover {
        const METHOD: &'static str = "textDocument/hover";
    }

    pub enum Shutdown {}

    impl Request for Shutdown {
        const METHOD: &'static str = "shutdown";
    }

    /// A table of names, as a constant struct.
    pub struct MethodNames {
        pub initialize: &'static str,
        pub session_new: &'static str,
    }

    pub const AGENT_METHOD_NAMES: MethodNames = MethodNames {
        initialize: "initialize",
        session_new: "session/new",
    };
}

use protocol::{AGENT_METHOD_NAMES, Request as _};

const EXIT: &str = "exit";

/// Names from constants, beside names the macro knows.
#[rpc_service(rename_all = "camelCase")]
pub trait Editor {
    /// An associated constant, through the type.
    #[rpc(name = protocol::Hover::METHOD)]
    async fn hover(&self, line: u32) -> Option<String>;
    /// An associated constant, through the trait.
    #[rpc(name = <protocol::Shutdown as protocol::Request>::METHOD)]
    fn shutdown(&self);
    /// A field of a constant struct.
    #[rpc(name = AGENT_METHOD_NAMES.initialize)]
    #[rpc(params = whole)]
    async fn initialize(&self, client: String) -> u8;
    /// A plain constant, for a notification.
    #[notification]
    #[rpc(name = EXIT)]
    async fn exit(&self);
    /// A constant expression.
    #[rpc(name = concat!("$/", "cancel_request"))]
    fn cancel_request(&self, id: u64);
    /// `rename_all` still names the others.
    async fn did_open(&self, uri: String);
}

/// With a namespace, prefixed as to a literal name.
#[rpc_service(namespace = "acp", separator = "/")]
pub trait Agent {
    /// `acp/session/new`.
    #[rpc(name = AGENT_METHOD_NAMES.session_new)]
    async fn new_session(&self) -> String;
}

/// On an inherent `impl` block.
pub struct Inherent;

#[rpc_service]
impl Inherent {
    /// A method named by a constant.
    #[rpc(name = protocol::Hover::METHOD)]
    pub fn hover(&self) -> u8 {
        0
    }
}

struct Impl;

impl Editor for Impl {
    async fn hover(&self, line: u32) -> Option<String> {
        Some(line.to_string())
    }
    fn shutdown(&self) {}
    async fn initialize(&self, client: String) -> u8 {
        u8::try_from(client.len()).unwrap_or(u8::MAX)
    }
    async fn exit(&self) {}
    fn cancel_request(&self, _id: u64) {}
    async fn did_open(&self, _uri: String) {}
}

impl Agent for Impl {
    async fn new_session(&self) -> String {
        String::new()
    }
}

fn main() {
    let _ = Editor::into_methods(Impl);
    let _ = Agent::into_methods(Impl);
    let _ = Inherent.into_methods();
    let client = EditorClient::new(Editor::into_methods(Impl)).with_encoding(ParamEncoding::Named);
    let _ = client.hover(1);
    let _ = client.batch().exit();
    let _ = AgentClient::new(Agent::into_methods(Impl)).new_session();
}
