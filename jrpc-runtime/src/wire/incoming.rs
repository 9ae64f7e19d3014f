//! Reads incoming messages into the one parsed form the crate has, borrowing from their text:
//! what the dispatcher and the peer read, and what a protocol built on the crate peeks with (the
//! method, the id and the params of a body, before or beside dispatching it).
//!
//! A message is read once, into its members: each kept as raw JSON text (`jsonrpc` and
//! `method` as strings), with a note of any member written twice. A server takes it as a request
//! or rejects it ([`parse_request`]); a peer also takes answers ([`parse`]). The rules:
//!
//! | the object | is |
//! | --- | --- |
//! | not JSON (a BOM, an empty text included) | [`Rejection::Unparsable`] (`-32700`) |
//! | JSON, but not an object | [`Rejection::Invalid`], id `null` |
//! | a member written twice | [`Rejection::Invalid`], with the id unless `id` is the one repeated |
//! | no `method`, and a `result` or an `error` | for a peer, [`Incoming::Response`]; for a server, as the rows below (so `-32600`) |
//! | an `id` that is an object, an array or a boolean | [`Rejection::Invalid`], id `null` |
//! | `jsonrpc` not `"2.0"`, `method` missing or not a string, `params` neither array nor object | [`Rejection::Invalid`], with the id |
//! | anything else | a [`Request`]: a call with an `id` member (`null` included), a notification without |
//!
//! `params` are decoded later, by the handler, straight into its Rust types; nothing goes through
//! `serde_json::Value`. A request (or a batch) naming a method in the table is first tried in one
//! pass with its params: written compactly, as writers write it, by matching its members as
//! bytes; else by serde_json. Either
//! only ever declines, and the full read then says what the text is.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::error::RpcError;
use super::id::{Id, RawId};
use super::write;

mod compact;
mod members;
mod one_pass;
mod peek;

pub(crate) use members::Members;
use members::Plain;
pub(in crate::wire) use members::{Key, Text};
pub(crate) use one_pass::{Element, parse_batch_with, parse_request_with};
pub(crate) use peek::{peek_batch_method, peek_method};

/// Holds a request read by [`parse_request_with`], its params decoded.
pub(crate) struct Decoded<'a, T> {
    pub(crate) method: &'a str,
    /// `None` for a notification.
    pub(crate) id: Option<RawId<'a>>,
    /// `None` when the request has no params.
    pub(crate) params: Option<T>,
}

/// Says what an incoming message is, as a peer (which both calls and answers) sees it.
pub enum Incoming<'a> {
    /// A valid request object: a call or a notification.
    Request(Request<'a>),
    /// An answer: no `method`, and a `result` or an `error`; it wakes its caller.
    Response(Response<'a>),
    /// Not a request or an answer: answered at once.
    Rejected(Rejection<'a>),
}

/// Says why a message is not a request, and the id to answer it with.
#[derive(Debug)]
#[non_exhaustive]
pub enum Rejection<'a> {
    /// Not JSON at all: `-32700`, id `null`.
    Unparsable,
    /// JSON, but not a valid request: `-32600`, with the id when it is a valid one.
    Invalid {
        /// The id to answer with, when the message had a valid one.
        id: Option<&'a RawValue>,
    },
    /// A valid request but for its `"params": null`, which the specification does not allow
    /// (`-32600`) and some clients send (lsp4j, Eglot): the request, its params absent, for a
    /// table that reads `null` as absent ([`NullParams`](crate::NullParams)).
    NullParams(Request<'a>),
}

impl Rejection<'_> {
    /// Returns the answer: always sent, even without an id.
    pub fn answer(&self) -> Vec<u8> {
        match self {
            Self::Unparsable => write::error_bytes(&RpcError::parse_error(), &None::<&Id>),
            Self::Invalid { id } => write::error_bytes(&RpcError::invalid_request(), id),
            Self::NullParams(req) => write::error_bytes(&RpcError::invalid_request(), &req.id),
        }
    }
}

/// Holds a request object that passed validation.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request<'a> {
    /// The method's name.
    pub method: Cow<'a, str>,
    /// The params, as written; `None` when absent.
    pub params: Option<&'a RawValue>,
    /// `None` for a notification; the id's raw text otherwise.
    pub id: Option<&'a RawValue>,
}

impl Request<'_> {
    /// Returns the call's id; `None` for a notification.
    pub fn read_id(&self) -> Option<Id> {
        self.id.map(id_of)
    }
}

/// Holds a response object, read leniently (as answers from servers we did not write must be).
pub struct Response<'a>(Members<'a>);

impl<'a> Response<'a> {
    /// Returns the answer's id, when it has a valid one: what a malformed answer's caller is
    /// told by.
    pub fn id(&self) -> Option<Id> {
        self.0.id().ok().flatten()
    }

    /// Returns the answer's id and outcome.
    ///
    /// # Errors
    ///
    /// Why it is not an answer: a `jsonrpc` other than `"2.0"` (a missing one is taken), an
    /// invalid id, both `result` and `error`, or an `error` that is not an error object.
    pub fn read(&self) -> Result<(Id, Result<&'a RawValue, RpcError>), String> {
        self.0.answer()
    }
}

/// Reads the members of `text`, or says why there are none: `-32600` for JSON that is not an
/// object (only valid JSON is "Invalid Request": the text may still be broken further on, as in
/// `1 x`), `-32700` for anything else.
#[inline]
fn members(text: &str) -> Result<Members<'_>, Rejection<'_>> {
    match Members::read(text) {
        Ok(members) => Ok(members),
        Err(err) if err.is_data() && serde_json::from_str::<IgnoredAny>(text).is_ok() => {
            Err(Rejection::Invalid { id: None })
        }
        Err(_) => Err(Rejection::Unparsable),
    }
}

/// Reads one message (never a batch) as a peer sees it.
pub fn parse(text: &str) -> Incoming<'_> {
    match members(text) {
        Ok(members) => members.classify(),
        Err(rejection) => Incoming::Rejected(rejection),
    }
}

/// Reads one request (never a batch) as a server sees it.
///
/// # Errors
///
/// The [`Rejection`] a server answers it with.
#[inline]
pub fn parse_request(text: &str) -> Result<Request<'_>, Rejection<'_>> {
    members(text)?.into_request()
}

/// Reads the elements of a batch (`text` starts with `[`) as a server sees them, each on its
/// own; `None` when `text` is not JSON.
///
/// A batch of objects is read in one pass; only when that fails (an element that is not an
/// object) is each element read on its own, so one bad element cannot spoil the others.
pub fn parse_batch(text: &str) -> Option<Vec<Result<Request<'_>, Rejection<'_>>>> {
    let mut de = serde_json::Deserializer::from_str(text);
    if let Ok(elements) = de.deserialize_seq(PlainRequests).and_then(|elements| {
        de.end()?;
        Ok(elements)
    }) {
        return Some(elements);
    }
    let elements = serde_json::from_str::<Vec<&RawValue>>(text).ok()?;
    // Each element is valid JSON, so it can only be found invalid, never unreadable.
    Some(
        elements
            .into_iter()
            .map(|raw| parse_request(raw.get()))
            .collect(),
    )
}

/// Reads a batch whose elements are all objects, each taken as a request as it is read.
struct PlainRequests;

impl<'de> Visitor<'de> for PlainRequests {
    type Value = Vec<Result<Request<'de>, Rejection<'de>>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of JSON-RPC request objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // serde_json does not know the length: room for a common batch, so that it is not grown
        // from one.
        let mut elements = Vec::with_capacity(seq.size_hint().unwrap_or(16).min(16));
        while let Some(plain) = seq.next_element::<Plain<'de>>()? {
            elements.push(Members::from(plain).into_request());
        }
        Ok(elements)
    }
}

/// `"2.0"`, written plainly or with escapes.
fn is_version(version: &Text<'_>) -> bool {
    version.as_str() == Some("2.0")
}

/// Returns whether `raw` is `null`.
fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

/// `params` are an array or an object.
fn is_structured(raw: &RawValue) -> bool {
    matches!(raw.get().as_bytes().first(), Some(b'[' | b'{'))
}

/// Returns whether `raw` is a valid id: numbers, strings and `null` are; objects, arrays and
/// booleans are not.
pub(super) fn is_valid_id(raw: &RawValue) -> bool {
    matches!(
        raw.get().as_bytes().first(),
        Some(b'"' | b'n' | b'-' | b'0'..=b'9')
    )
}

/// JSON's white space.
const BLANK: [char; 4] = [' ', '\t', '\n', '\r'];

/// Returns whether a body is a batch: its first non-blank character is `[`.
#[inline]
pub fn is_batch(text: &str) -> bool {
    text.trim_start_matches(BLANK).starts_with('[')
}

/// Turns a validated raw id into an [`Id`].
#[inline]
pub(crate) fn id_of(raw: &RawValue) -> Id {
    RawId::from(raw).id()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> Request<'_> {
        match parse(text) {
            Incoming::Request(req) => req,
            _ => panic!("not a request: {text}"),
        }
    }

    fn rejected_id(text: &str) -> Option<Option<String>> {
        match parse_request(text) {
            Ok(_) => None,
            Err(Rejection::Unparsable) => Some(Some("parse".into())),
            Err(Rejection::Invalid { id }) => Some(id.map(|id| id.get().to_owned())),
            Err(Rejection::NullParams(req)) => Some(req.id.map(|id| id.get().to_owned())),
        }
    }

    #[test]
    fn reads_a_call() {
        let req = request(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":7}"#);
        assert_eq!(req.method, "add");
        assert_eq!(req.params.map(RawValue::get), Some("[1,2]"));
        assert_eq!(req.id.map(RawValue::get), Some("7"));
    }

    #[test]
    fn null_id_is_a_call_and_absent_id_a_notification() {
        let call = request(r#"{"jsonrpc":"2.0","method":"a","id":null}"#);
        assert_eq!(call.id.map(RawValue::get), Some("null"));
        let note = request(r#"{"jsonrpc":"2.0","method":"a"}"#);
        assert!(note.id.is_none());
    }

    #[test]
    fn null_params_are_rejected_with_the_request_beside() {
        let text = r#"{"jsonrpc":"2.0","method":"exit","params":null}"#;
        match parse_request(text) {
            Err(Rejection::NullParams(req)) => {
                assert_eq!(req.method, "exit");
                assert!(req.params.is_none() && req.id.is_none());
            }
            other => panic!("not refused for its null params: {other:?}"),
        }
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","params":null,"id":3}"#),
            Some(Some("3".into()))
        );
    }

    #[test]
    fn escaped_method_is_decoded() {
        let req = request(r#"{"jsonrpc":"2\u002e0","method":"a\u0062","id":1}"#);
        assert_eq!(req.method, "ab");
    }

    #[test]
    fn rejections_carry_the_id_when_valid() {
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":1,"id":5}"#),
            Some(Some("5".into()))
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"1.0","method":"a","id":"x"}"#),
            Some(Some(r#""x""#.into()))
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","id":{}}"#),
            Some(None)
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","id":true}"#),
            Some(None)
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","params":null,"id":1}"#),
            Some(Some("1".into()))
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","params":3,"id":1}"#),
            Some(Some("1".into()))
        );
        assert_eq!(rejected_id("1"), Some(None));
        assert_eq!(rejected_id("1 x"), Some(Some("parse".into())));
        assert_eq!(rejected_id("\u{feff}{}"), Some(Some("parse".into())));
        assert_eq!(rejected_id(""), Some(Some("parse".into())));
    }

    #[test]
    fn a_repeated_member_is_invalid_and_keeps_an_id_read_once() {
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","id":1,"result":1,"result":2}"#),
            Some(Some("1".into()))
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","method":"b","id":"x"}"#),
            Some(Some(r#""x""#.into()))
        );
        assert_eq!(
            rejected_id(r#"{"jsonrpc":"2.0","method":"a","id":1,"id":2}"#),
            Some(None)
        );
        // Other members may repeat: they are not read.
        assert!(rejected_id(r#"{"jsonrpc":"2.0","method":"a","x":1,"x":2}"#).is_none());
    }

    #[test]
    fn answers_are_read_leniently() {
        let Incoming::Response(res) = parse(r#"{"result":[1],"id":3}"#) else {
            panic!("an answer");
        };
        let (id, outcome) = res.read().unwrap();
        assert_eq!(id, Id::from(3));
        assert_eq!(outcome.map(RawValue::get).ok(), Some("[1]"));
        let Incoming::Response(res) =
            parse(r#"{"jsonrpc":"2.0","result":1,"error":{"code":1},"id":1}"#)
        else {
            panic!("an answer");
        };
        assert!(res.read().is_err());
    }

    #[test]
    fn the_method_is_peeked_before_the_members_that_nest() {
        let peek = peek_method;
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","method":"add","params":[1]}"#),
            Some("add")
        );
        assert_eq!(
            peek(r#" {"id": -1.5e3, "x": "a\"b", "method" : "m"}"#),
            Some("m")
        );
        assert_eq!(peek(r#"{"id":null,"ok":true,"method":"m"}"#), Some("m"));
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":"a,\"b","method":"m","params":[]}"#),
            Some("m")
        );
        assert_eq!(peek(r#"{"jsonrpc":"2.0","id":7,"method":"a\u0062"}"#), None);
        assert_eq!(peek(r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#), None);
        // Nested values, escapes and missing names are left to the full read.
        assert_eq!(peek(r#"{"params":[1],"method":"add"}"#), None);
        assert_eq!(peek(r#"{"jsonrpc":"2.0","method":"a\u0062"}"#), None);
        assert_eq!(peek(r#"{"me\u0074hod":"a"}"#), None);
        assert_eq!(peek(r#"{"jsonrpc":"2.0"}"#), None);
        assert_eq!(peek(r#"{"jsonrpc":"2.0","method":"add"#), None);
        assert_eq!(peek("[]"), None);
        assert_eq!(peek(""), None);
    }

    #[test]
    fn a_request_is_read_with_its_params() {
        let seed = std::marker::PhantomData::<(i64, i64)>;
        let text = r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":7}"#;
        let read = parse_request_with(text, "add", seed).unwrap();
        assert_eq!((read.method, read.params), ("add", Some((1, 2))));
        assert_eq!(read.id.as_ref().map(RawId::text), Some("7"));
        let read = parse_request_with(r#"{"jsonrpc":"2.0","method":"a"}"#, "a", seed).unwrap();
        assert!(read.params.is_none() && read.id.is_none());
        // Anything the full read would judge is declined.
        for text in [
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":7}"#.replace("add", "sub"),
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"params":[1,2]}"#.into(),
            r#"{"jsonrpc":"2.0","method":"add","id":1,"error":{}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"add","id":[]}"#.into(),
            r#"{"jsonrpc":"2.0","method":"add","params":[1]}"#.into(),
            r#"{"method":"add"}"#.into(),
            r#"{"jsonrpc":"2.0","method":"add"} 1"#.into(),
        ] {
            assert!(parse_request_with(&text, "add", seed).is_none(), "{text}");
        }
    }

    #[test]
    fn a_batch_is_read_element_by_element() {
        let elements =
            parse_batch(r#"[{"jsonrpc":"2.0","method":"a"},1,{"id":1,"result":0}]"#).unwrap();
        assert!(elements[0].is_ok());
        assert!(matches!(elements[1], Err(Rejection::Invalid { id: None })));
        // A server takes an answer as an invalid request, with its id.
        assert!(
            matches!(&elements[2], Err(Rejection::Invalid { id: Some(id) }) if id.get() == "1")
        );
        assert!(parse_batch("[1,").is_none());
    }
}
