//! The one parsed form of an incoming message, borrowing from its text.
//!
//! A message is read once, into [`Members`]: each member kept as raw JSON text (`jsonrpc` and
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
//! pass with its params ([`parse_request_with`], [`parse_batch_with`]): written compactly, as
//! writers write it, by matching its members as bytes ([`compact`]); else by serde_json. Either
//! only ever declines, and the full read then says what the text is.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{Id, RawId, RpcError, write};

mod compact;

/// The members of a message object as written, each kept as raw JSON text.
///
/// A member that is present is `Some` even when it is `null`, so `"id": null` (a call) differs from
/// no `id` (a notification).
#[derive(Default)]
pub(crate) struct Members<'a> {
    pub(super) jsonrpc: Option<Text<'a>>,
    pub(super) method: Option<Text<'a>>,
    pub(super) params: Option<&'a RawValue>,
    pub(super) id: Option<&'a RawValue>,
    pub(super) result: Option<&'a RawValue>,
    pub(super) error: Option<&'a RawValue>,
    /// The first member found written twice.
    pub(super) repeated: Option<Key>,
}

/// A member that [`Members`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
pub(super) enum Key {
    Jsonrpc,
    Method,
    Params,
    Id,
    Result,
    Error,
    #[serde(other)]
    Other,
}

/// `jsonrpc` and `method`, read as the strings they should be (borrowed when they hold no
/// escape), or as something else, which makes the message invalid but keeps the rest readable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Text<'a> {
    Str(Cow<'a, str>),
    NotAString,
}

impl<'a> Text<'a> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            Self::NotAString => None,
        }
    }

    /// The string, if it is one.
    pub(super) fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Self::Str(text) => Some(text),
            Self::NotAString => None,
        }
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Owned(text)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_unit<E>(self) -> Result<Text<'de>, E> {
        Ok(Text::NotAString)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text::NotAString)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text::NotAString)
    }
}

/// The members of a well-formed message, read by serde's derived code: the fastest read, and
/// the one every valid message takes. It fails on what [`Members`]' own reader takes (a member
/// written twice, an escaped or non-string `jsonrpc` or `method`), which is then read again by
/// that reader.
#[derive(Deserialize)]
struct Plain<'a> {
    #[serde(default, borrow, deserialize_with = "present_str")]
    jsonrpc: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "present_str")]
    method: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// For `#[serde(default, deserialize_with = "present")]`: a member that is there is `Some` even
/// when it is `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn present_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    <&str>::deserialize(d).map(Some)
}

impl<'a> From<Plain<'a>> for Members<'a> {
    fn from(plain: Plain<'a>) -> Self {
        let text = |s: &'a str| Text::Str(Cow::Borrowed(s));
        Self {
            jsonrpc: plain.jsonrpc.map(text),
            method: plain.method.map(text),
            params: plain.params,
            id: plain.id,
            result: plain.result,
            error: plain.error,
            repeated: None,
        }
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
        let mut members = Members::default();
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Jsonrpc | Key::Method => {
                    let value = map.next_value::<Text<'de>>()?;
                    let slot = if key == Key::Jsonrpc {
                        &mut members.jsonrpc
                    } else {
                        &mut members.method
                    };
                    if slot.is_some() {
                        members.repeated.get_or_insert(key);
                    } else {
                        *slot = Some(value);
                    }
                    continue;
                }
                Key::Params => &mut members.params,
                Key::Id => &mut members.id,
                Key::Result => &mut members.result,
                Key::Error => &mut members.error,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let value = map.next_value::<&'de RawValue>()?;
            if slot.is_some() {
                members.repeated.get_or_insert(key);
            } else {
                *slot = Some(value);
            }
        }
        Ok(members)
    }
}

/// What an incoming message is, as a peer (which both calls and answers) sees it.
pub(crate) enum Incoming<'a> {
    /// A valid request object: a call or a notification.
    Request(Request<'a>),
    /// An answer: no `method`, and a `result` or an `error`; it wakes its caller.
    Response(Response<'a>),
    /// Not a request or an answer: answered at once.
    Rejected(Rejection<'a>),
}

/// Why a message is not a request, and the id to answer it with.
pub(crate) enum Rejection<'a> {
    /// Not JSON at all: `-32700`, id `null`.
    Unparsable,
    /// JSON, but not a valid request: `-32600`, with the id when it is a valid one.
    Invalid { id: Option<&'a RawValue> },
}

impl Rejection<'_> {
    /// The answer: always sent, even without an id.
    pub(crate) fn answer(&self) -> Vec<u8> {
        match self {
            Self::Unparsable => write::error_bytes(&RpcError::parse_error(), &None::<&Id>),
            Self::Invalid { id } => write::error_bytes(&RpcError::invalid_request(), id),
        }
    }
}

/// A request object that passed validation.
pub(crate) struct Request<'a> {
    pub(crate) method: Cow<'a, str>,
    pub(crate) params: Option<&'a RawValue>,
    /// `None` for a notification; the id's raw text otherwise.
    pub(crate) id: Option<&'a RawValue>,
}

/// A response object, read leniently (as answers from servers we did not write must be).
pub(crate) struct Response<'a>(Members<'a>);

impl<'a> Response<'a> {
    /// The answer's id and outcome.
    ///
    /// # Errors
    ///
    /// Why it is not an answer: a `jsonrpc` other than `"2.0"` (a missing one is taken), an
    /// invalid id, both `result` and `error`, or an `error` that is not an error object.
    pub(crate) fn read(&self) -> Result<(Id, Result<&'a RawValue, RpcError>), String> {
        self.0.answer()
    }
}

impl<'a> Members<'a> {
    /// Reads the members of one message (not a batch).
    #[inline]
    pub(crate) fn read(text: &'a str) -> Result<Self, serde_json::Error> {
        match serde_json::from_str::<Plain<'_>>(text) {
            Ok(plain) => Ok(plain.into()),
            Err(_) => serde_json::from_str(text),
        }
    }

    /// What the message is to a peer, by the rules in the [module docs](self).
    pub(crate) fn classify(self) -> Incoming<'a> {
        if self.repeated.is_none()
            && self.method.is_none()
            && (self.result.is_some() || self.error.is_some())
        {
            return Incoming::Response(Response(self));
        }
        match self.into_request() {
            Ok(req) => Incoming::Request(req),
            Err(rejection) => Incoming::Rejected(rejection),
        }
    }

    /// The request a server takes, or why it takes none, by the rules in the
    /// [module docs](self). A server sends no calls, so an answer is one more object it cannot
    /// take as a request.
    #[inline]
    pub(crate) fn into_request(self) -> Result<Request<'a>, Rejection<'a>> {
        let valid_id = || self.id.filter(|raw| is_valid_id(raw));
        if let Some(key) = self.repeated {
            let id = if key == Key::Id { None } else { valid_id() };
            return Err(Rejection::Invalid { id });
        }
        let id = match self.id {
            Some(raw) if !is_valid_id(raw) => return Err(Rejection::Invalid { id: None }),
            id => id,
        };
        let invalid = Rejection::Invalid { id };
        if !self.jsonrpc.as_ref().is_some_and(is_version) {
            return Err(invalid);
        }
        let Some(method) = self.method.and_then(Text::into_str) else {
            return Err(invalid);
        };
        if !self.params.is_none_or(is_structured) {
            return Err(invalid);
        }
        Ok(Request {
            method,
            params: self.params,
            id,
        })
    }

    /// The id and outcome of an answer, read leniently; see [`Response::read`].
    pub(super) fn answer(&self) -> Result<(Id, Result<&'a RawValue, RpcError>), String> {
        if let Some(key) = self.repeated {
            return Err(format!("`{}` is written twice", key.name()));
        }
        self.check_version()?;
        let id = self.id()?.unwrap_or(Id::NULL);
        match (self.result, self.error) {
            (Some(result), None) => Ok((id, Ok(result))),
            (None, Some(error)) => {
                let error = serde_json::from_str::<RpcError>(error.get())
                    .map_err(|err| format!("`error` is not an error object: {err}"))?;
                Ok((id, Err(error)))
            }
            _ => Err("not a request, a notification or a response".into()),
        }
    }

    /// A missing `jsonrpc` is taken (some servers leave it out); another version is not.
    pub(super) fn check_version(&self) -> Result<(), String> {
        match &self.jsonrpc {
            Some(version) if !is_version(version) => Err("`jsonrpc` is not \"2.0\"".into()),
            _ => Ok(()),
        }
    }

    pub(super) fn id(&self) -> Result<Option<Id>, String> {
        self.id
            .map(|raw| Id::from_json(raw.get()).ok_or_else(|| format!("invalid id {}", raw.get())))
            .transpose()
    }
}

impl Key {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Jsonrpc => "jsonrpc",
            Self::Method => "method",
            Self::Params => "params",
            Self::Id => "id",
            Self::Result => "result",
            Self::Error => "error",
            Self::Other => "a member",
        }
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
pub(crate) fn parse(text: &str) -> Incoming<'_> {
    match members(text) {
        Ok(members) => members.classify(),
        Err(rejection) => Incoming::Rejected(rejection),
    }
}

/// Reads one request (never a batch) as a server sees it.
#[inline]
pub(crate) fn parse_request(text: &str) -> Result<Request<'_>, Rejection<'_>> {
    members(text)?.into_request()
}

/// Reads the elements of a batch (`text` starts with `[`) as a server sees them, each on its
/// own; `None` when `text` is not JSON.
///
/// A batch of objects is read in one pass; only when that fails (an element that is not an
/// object) is each element read on its own, so one bad element cannot spoil the others.
pub(crate) fn parse_batch(text: &str) -> Option<Vec<Result<Request<'_>, Rejection<'_>>>> {
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

/// The method a request's text names, found without reading the rest: the value of its first
/// top-level `method` member when every member before it is a plain scalar (a string, a number,
/// `true`, `false` or `null`) and no key or name on the way holds an escape.
///
/// It is a guess, made to choose a handler before the request is read: a text that is not
/// JSON, or has a second `method`, may still give one. [`parse_request_with`] reads the text
/// and checks that it names this method.
#[inline]
pub(crate) fn peek_method(text: &str) -> Option<&str> {
    // As the writers (and most clients) write a request, its id first or not: at once, without
    // a scan of the keys.
    if let Some(rest) = text.strip_prefix(r#"{"jsonrpc":"2.0","#) {
        if let Some(name) = rest.strip_prefix(r#""method":""#) {
            return name.get(..plain_len(name.as_bytes())?);
        }
        if let Some(id) = rest.strip_prefix(r#""id":"#)
            && let Some(end) = skip_scalar(id.as_bytes(), 0)
            && let Some(name) = id.get(end..).and_then(|r| r.strip_prefix(r#","method":""#))
        {
            return name.get(..plain_len(name.as_bytes())?);
        }
    }
    let bytes = text.as_bytes();
    let mut at = skip_blank(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    loop {
        at = skip_blank(bytes, at + 1);
        let (key, end) = plain_string(bytes, at)?;
        at = skip_blank(bytes, end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_blank(bytes, at + 1);
        if key == b"method" {
            let (name, _) = plain_string(bytes, at)?;
            // The name's bytes lie between two quotes of a `str`, so they are whole characters.
            return text.get(at + 1..at + 1 + name.len());
        }
        at = skip_blank(bytes, skip_scalar(bytes, at)?);
        if bytes.get(at) != Some(&b',') {
            return None;
        }
    }
}

/// The index of the first byte at or after `at` that is not JSON white space.
#[inline]
fn skip_blank(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The contents of the string starting at `at` and the index past it, when it holds no escape
/// and no control character.
#[inline]
fn plain_string(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let rest = bytes.get(at + 1..)?;
    let len = plain_len(rest)?;
    Some((&rest[..len], at + len + 2))
}

/// The length of a string's contents (`bytes` starts after its opening quote) when they hold
/// no escape and no control character.
#[inline]
fn plain_len(bytes: &[u8]) -> Option<usize> {
    let len = bytes
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    (bytes[len] == b'"').then_some(len)
}

/// The index past the scalar value starting at `at` (a string, escapes and all, or a number or
/// literal); `None` for an object or an array.
#[inline]
fn skip_scalar(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => {
            let mut i = at + 1;
            loop {
                match bytes.get(i)? {
                    b'"' => return Some(i + 1),
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
        }
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let rest = &bytes[at..];
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            Some(at + len)
        }
        _ => None,
    }
}

/// Reads one request (never a batch) naming `method`, its params decoded by `seed` in the same
/// pass.
///
/// `None` when the text is anything but a valid request for `method` whose params `seed` took
/// (not JSON, a member written twice, an escaped `jsonrpc` or `method`, a `result` or an `error`
/// member, params `seed` refused...): [`parse_request`] then reads it, and says what it is.
pub(crate) fn parse_request_with<'a, S>(
    text: &'a str,
    method: &str,
    seed: S,
) -> Option<Decoded<'a, S::Value>>
where
    S: DeserializeSeed<'a> + Copy,
{
    if let Some((decoded, end)) = compact::request(text, 0, method, seed)
        && text[end..].trim_start_matches(BLANK).is_empty()
    {
        return Some(decoded);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let read = WithParams { seed, after: None }
        .deserialize(&mut de)
        .and_then(|read| de.end().map(|()| read))
        .ok()?;
    let params = match read.params {
        Some(ParamsRead::Decoded(params)) => Some(params),
        Some(ParamsRead::Raw(_)) => return None,
        None => None,
    };
    let valid = read.jsonrpc == Some("2.0")
        && read.method == Some(method)
        && read.id.is_none_or(is_valid_id);
    valid.then(|| Decoded {
        method: read.method.unwrap_or_default(),
        id: read.id.map(RawId::from),
        params,
    })
}

/// Reads a batch (`text` starts with `[`) whose elements are all valid requests, those naming
/// `method` with their params decoded by `seed` in the same pass (when their `method` comes
/// before their params, as writers put it), the others with their params raw.
///
/// `None` when the text is anything else (not JSON, an element that is not a valid request, a
/// member written twice, params `seed` refused...): [`parse_batch`] then reads it.
pub(crate) fn parse_batch_with<'a, S>(
    text: &'a str,
    method: &str,
    seed: S,
) -> Option<Vec<Element<'a, S::Value>>>
where
    S: DeserializeSeed<'a> + Copy,
{
    if let Some(elements) = compact_batch(text, method, seed) {
        return Some(elements);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_seq(Elements { seed, method })
        .and_then(|elements| de.end().map(|()| elements))
        .ok()
}

/// A batch all of whose elements are requests naming `method` written compactly (see
/// [`compact`]), between brackets and commas with no white space but around the batch.
fn compact_batch<'a, S>(text: &'a str, method: &str, seed: S) -> Option<Vec<Element<'a, S::Value>>>
where
    S: DeserializeSeed<'a> + Copy,
{
    let bytes = text.as_bytes();
    let mut at = text.len() - text.trim_start_matches(BLANK).len() + 1;
    if bytes.get(at - 1) != Some(&b'[') {
        return None;
    }
    let mut elements = Vec::with_capacity(16);
    loop {
        let (decoded, end) = compact::request(text, at, method, seed)?;
        elements.push(Element::Decoded(decoded));
        match bytes.get(end)? {
            b',' => at = end + 1,
            b']' if text[end + 1..].trim_start_matches(BLANK).is_empty() => return Some(elements),
            _ => return None,
        }
    }
}

/// A request read by [`parse_request_with`], its params decoded.
pub(crate) struct Decoded<'a, T> {
    pub(crate) method: &'a str,
    /// `None` for a notification.
    pub(crate) id: Option<RawId<'a>>,
    /// `None` when the request has no params.
    pub(crate) params: Option<T>,
}

/// An element of a batch read by [`parse_batch_with`].
pub(crate) enum Element<'a, T> {
    /// A request naming the method asked for, its params decoded.
    Decoded(Decoded<'a, T>),
    /// Any other request, its params raw.
    Request(Request<'a>),
}

/// What [`WithParams`] reads: the members a request has, its params decoded or raw.
struct ReadWith<'a, T> {
    jsonrpc: Option<&'a str>,
    method: Option<&'a str>,
    params: Option<ParamsRead<'a, T>>,
    id: Option<&'a RawValue>,
}

enum ParamsRead<'a, T> {
    Decoded(T),
    Raw(&'a RawValue),
}

impl<'a, T> ReadWith<'a, T> {
    /// The batch element read (by [`WithParams`] with `after` set to `method`), if it is a
    /// valid request: [`Element::Decoded`] when it names `method` and its params (if any) were
    /// decoded, which they are only after a `method` naming it.
    #[inline]
    fn into_element(self, method: &str) -> Option<Element<'a, T>> {
        let valid = self.jsonrpc == Some("2.0") && self.id.is_none_or(is_valid_id);
        let name = self.method.filter(|_| valid)?;
        let (named, id) = (name == method, self.id);
        Some(match self.params {
            Some(ParamsRead::Decoded(params)) => Element::Decoded(Decoded {
                method: name,
                id: id.map(RawId::from),
                params: Some(params),
            }),
            None if named => Element::Decoded(Decoded {
                method: name,
                id: id.map(RawId::from),
                params: None,
            }),
            Some(ParamsRead::Raw(raw)) if !is_structured(raw) => return None,
            Some(ParamsRead::Raw(raw)) => Element::Request(Request {
                method: Cow::Borrowed(name),
                params: Some(raw),
                id,
            }),
            None => Element::Request(Request {
                method: Cow::Borrowed(name),
                params: None,
                id,
            }),
        })
    }
}

/// Reads a request object with its params decoded by `seed`: always, or, with `after` set,
/// only when a `method` naming `after` came before them (else they are kept raw).
struct WithParams<'m, S> {
    seed: S,
    after: Option<&'m str>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for WithParams<'_, S> {
    type Value = ReadWith<'de, S::Value>;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for WithParams<'_, S> {
    type Value = ReadWith<'de, S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let mut read = ReadWith {
            jsonrpc: None,
            method: None,
            params: None,
            id: None,
        };
        let mut seed = Some(self.seed);
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Jsonrpc if read.jsonrpc.is_none() => read.jsonrpc = Some(map.next_value()?),
                Key::Method if read.method.is_none() => read.method = Some(map.next_value()?),
                Key::Id if read.id.is_none() => read.id = Some(map.next_value()?),
                Key::Params if read.params.is_none() => {
                    let decoded = self.after.is_none_or(|after| read.method == Some(after));
                    read.params = Some(match seed.take() {
                        Some(seed) if decoded => ParamsRead::Decoded(map.next_value_seed(seed)?),
                        _ => ParamsRead::Raw(map.next_value()?),
                    });
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
                // Written twice, or an answer's member: for the full reader to judge.
                _ => return Err(A::Error::custom("a member written twice")),
            }
        }
        Ok(read)
    }
}

/// The visitor of [`parse_batch_with`]: each element read by [`WithParams`] with a copy of
/// the seed.
struct Elements<'m, S> {
    seed: S,
    method: &'m str,
}

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for Elements<'_, S> {
    type Value = Vec<Element<'de, S::Value>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of JSON-RPC request objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let mut elements = Vec::with_capacity(seq.size_hint().unwrap_or(16).min(16));
        let element = || WithParams {
            seed: self.seed,
            after: Some(self.method),
        };
        while let Some(read) = seq.next_element_seed(element())? {
            let element = read
                .into_element(self.method)
                .ok_or_else(|| A::Error::custom("not a valid request"))?;
            elements.push(element);
        }
        Ok(elements)
    }
}

/// `"2.0"`, written plainly or with escapes.
fn is_version(version: &Text<'_>) -> bool {
    version.as_str() == Some("2.0")
}

/// `params` are an array or an object.
fn is_structured(raw: &RawValue) -> bool {
    matches!(raw.get().as_bytes().first(), Some(b'[' | b'{'))
}

/// Ids are numbers, strings or `null`; objects, arrays and booleans are not.
pub(super) fn is_valid_id(raw: &RawValue) -> bool {
    matches!(
        raw.get().as_bytes().first(),
        Some(b'"' | b'n' | b'-' | b'0'..=b'9')
    )
}

/// JSON's white space.
const BLANK: [char; 4] = [' ', '\t', '\n', '\r'];

/// Whether a body is a batch: its first non-blank character is `[`.
#[inline]
pub(crate) fn is_batch(text: &str) -> bool {
    text.trim_start_matches(BLANK).starts_with('[')
}

/// The method a batch's first element names, found as [`peek_method`] finds it.
#[inline]
pub(crate) fn peek_batch_method(text: &str) -> Option<&str> {
    let first = text.trim_start_matches(BLANK).strip_prefix('[')?;
    peek_method(first.trim_start_matches(BLANK))
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
