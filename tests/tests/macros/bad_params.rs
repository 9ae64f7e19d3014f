//! What `-32602`'s `data` says of params that do not decode: the parameter by its wire name
//! (the name a client uses in by-name params), or, for `params = whole`, where no parameter name
//! is on the wire, the path into the value from `params`.
#![deny(warnings)]
#![warn(clippy::pedantic)]

use jrpc_runtime::{Methods, rpc_service};
use serde::Deserialize;
use serde_json::{Value, json};

/// A document, named by its URI.
#[derive(Debug, Deserialize)]
pub struct TextDocumentIdentifier {
    /// The document's URI.
    pub uri: String,
}

/// A place in a document.
#[derive(Debug, Deserialize)]
pub struct Position {
    /// From 0.
    pub line: u32,
    /// From 0.
    pub character: u32,
}

/// A document and a place in it, as LSP sends them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextDocumentPositionParams {
    /// The document.
    pub text_document: TextDocumentIdentifier,
    /// The place.
    pub position: Position,
}

/// Parameters by position or by name, and whole.
#[rpc_service(client = false)]
pub trait Editor {
    /// The whole params are one struct.
    #[rpc(params = whole)]
    fn hover(&self, params: TextDocumentPositionParams) -> u32;
    /// The whole params are a list.
    #[rpc(params = whole)]
    fn count(&self, positions: Vec<Position>) -> usize;
    /// Parameters renamed on the wire, one of them by its raw identifier.
    fn locate(
        &self,
        #[rpc(name = "textDocument")] text_document: TextDocumentIdentifier,
        r#type: u8,
    ) -> String;
}

struct Server;

impl Editor for Server {
    fn hover(&self, params: TextDocumentPositionParams) -> u32 {
        let _ = params.text_document.uri;
        params.position.line + params.position.character
    }
    fn count(&self, positions: Vec<Position>) -> usize {
        positions.len()
    }
    fn locate(&self, text_document: TextDocumentIdentifier, r#type: u8) -> String {
        format!("{}#{type}", text_document.uri)
    }
}

/// The `data` of the `-32602` answering `method` with `params` (absent when `None`).
async fn data(methods: &Methods, method: &str, params: Option<Value>) -> String {
    let mut request = json!({"jsonrpc": "2.0", "id": 1, "method": method});
    if let Some(params) = params {
        request["params"] = params;
    }
    let answer = methods.handle(&request.to_string()).await.unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    answer["error"]["data"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn whole_params_give_the_path_into_the_value() {
    let m = Server.into_methods();
    let place = json!({"line": 1, "character": 2});
    let cases = [
        (
            json!({"position": place}),
            "params: missing field `textDocument`",
        ),
        (
            json!({"textDocument": {}, "position": place}),
            "params.textDocument: missing field `uri`",
        ),
        (
            json!({"textDocument": {"uri": "file:///a"}, "position": {"line": "x", "character": 2}}),
            r#"params.position.line: invalid type: string "x", expected u32"#,
        ),
        (
            json!([{"uri": 5}, place]),
            "params[0].uri: invalid type: integer `5`, expected a string",
        ),
        (
            json!([]),
            "params: invalid length 0, expected struct TextDocumentPositionParams with 2 elements",
        ),
    ];
    for (params, want) in cases {
        assert_eq!(
            data(&m, "hover", Some(params.clone())).await,
            want,
            "{params}"
        );
    }
    assert_eq!(data(&m, "hover", None).await, "params: missing");
    assert_eq!(
        data(
            &m,
            "count",
            Some(json!([place, {"line": 3, "character": -1}]))
        )
        .await,
        "params[1].character: invalid value: integer `-1`, expected u32"
    );
}

#[tokio::test]
async fn parameters_are_named_by_their_wire_names() {
    let m = Server.into_methods();
    let by_name = json!({"text_document": {"uri": "a"}, "type": 1});
    assert_eq!(
        data(&m, "locate", Some(by_name)).await,
        r#"parameter "textDocument" is missing"#,
        "the Rust name is no parameter's name on the wire"
    );
    assert_eq!(
        data(&m, "locate", Some(json!({"textDocument": {"uri": "a"}}))).await,
        r#"parameter "type" is missing"#
    );
    assert_eq!(
        data(&m, "locate", Some(json!([{"uri": "a"}, "x"]))).await,
        r#"parameter "type": invalid type: string "x", expected u8"#
    );
    assert_eq!(
        data(&m, "locate", Some(json!({"textDocument": {}, "type": 1}))).await,
        r#"parameter "textDocument": missing field `uri`"#
    );
}
