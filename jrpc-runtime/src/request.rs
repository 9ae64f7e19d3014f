//! Reading one request object out of a body, borrowing from its text.
//!
//! The envelope is read once into borrowed [`RawValue`]s; `params` is decoded later, by the
//! handler, straight into its Rust types. Nothing goes through `serde_json::Value`.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::Id;

/// The members of a request object as written, each kept as raw JSON text.
///
/// A member that is present is `Some` even when it is `null`, so `"id": null` (a call) differs from
/// no `id` (a notification).
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

/// For `#[serde(default, deserialize_with = "present")]`: a member that is there is `Some` even
/// when it is `null`, so `"id": null` differs from no `id`.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A request object that passed validation.
pub(crate) struct Request<'a> {
    pub(crate) method: Cow<'a, str>,
    pub(crate) params: Option<&'a RawValue>,
    /// `None` for a notification; the id's raw text otherwise.
    pub(crate) id: Option<&'a RawValue>,
}

/// Why a body or an element is not a request, and the id to answer it with.
pub(crate) enum Rejection<'a> {
    /// Not JSON at all: `-32700`, id `null`.
    Parse,
    /// JSON, but not a valid request: `-32600`, with the id when it is a valid one.
    Invalid { id: Option<&'a RawValue> },
}

/// The common case, read without keeping `jsonrpc` and `method` as raw text: both are strings
/// without escapes.
/// Anything this does not fit is read again as an [`Envelope`] to say exactly what is wrong.
#[derive(Deserialize)]
struct Plain<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

/// Reads one request object (never a batch) from `text`.
pub(crate) fn parse(text: &str) -> Result<Request<'_>, Rejection<'_>> {
    if let Ok(plain) = serde_json::from_str::<Plain<'_>>(text) {
        return validate_plain(plain);
    }
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => validate(envelope),
        Err(err) if err.is_data() => {
            // The text may still be broken further on (`1 x`): only valid JSON is "Invalid Request".
            if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
                Err(Rejection::Invalid { id: None })
            } else {
                Err(Rejection::Parse)
            }
        }
        Err(_) => Err(Rejection::Parse),
    }
}

fn validate_plain(plain: Plain<'_>) -> Result<Request<'_>, Rejection<'_>> {
    let id = match plain.id {
        Some(raw) if !is_valid_id(raw) => return Err(Rejection::Invalid { id: None }),
        id => id,
    };
    if plain.jsonrpc != "2.0" || !plain.params.is_none_or(is_structured) {
        return Err(Rejection::Invalid { id });
    }
    Ok(Request {
        method: Cow::Borrowed(plain.method),
        params: plain.params,
        id,
    })
}

/// Reads the elements of a batch (`text` starts with `[`), each a request or its rejection.
///
/// A batch of objects is read in one pass; only when that fails (an element that is not an
/// object, a duplicate member) is each element read on its own, so one bad element cannot spoil
/// the others.
pub(crate) fn parse_batch(
    text: &str,
) -> Result<Vec<Result<Request<'_>, Rejection<'_>>>, Rejection<'_>> {
    if let Ok(plain) = serde_json::from_str::<Vec<Plain<'_>>>(text) {
        return Ok(plain.into_iter().map(validate_plain).collect());
    }
    let elements = serde_json::from_str::<Vec<&RawValue>>(text).map_err(|_| Rejection::Parse)?;
    // Each element is valid JSON, so `parse` can only find it invalid, never unreadable.
    Ok(elements.into_iter().map(|raw| parse(raw.get())).collect())
}

fn validate(envelope: Envelope<'_>) -> Result<Request<'_>, Rejection<'_>> {
    let id = match envelope.id {
        None => None,
        Some(raw) if is_valid_id(raw) => Some(raw),
        Some(_) => return Err(Rejection::Invalid { id: None }),
    };
    let invalid = Rejection::Invalid { id };
    match envelope.jsonrpc {
        Some(v) if v.get() == r#""2.0""# => {}
        Some(v)
            if v.get().contains('\\')
                && serde_json::from_str::<Cow<'_, str>>(v.get()).is_ok_and(|s| s == "2.0") => {}
        _ => return Err(invalid),
    }
    let Some(method) = envelope.method.and_then(string_of) else {
        return Err(invalid);
    };
    if !envelope.params.is_none_or(is_structured) {
        return Err(invalid);
    }
    Ok(Request {
        method,
        params: envelope.params,
        id,
    })
}

/// A JSON string's contents, borrowed when it has no escapes.
fn string_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    match text.get(1..text.len() - 1) {
        Some(inner) if !inner.contains('\\') => Some(Cow::Borrowed(inner)),
        _ => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// `params` are an array or an object.
fn is_structured(raw: &RawValue) -> bool {
    matches!(raw.get().as_bytes().first(), Some(b'[' | b'{'))
}

/// Ids are numbers, strings or `null`; objects, arrays and booleans are not.
fn is_valid_id(raw: &RawValue) -> bool {
    matches!(
        raw.get().as_bytes().first(),
        Some(b'"' | b'n' | b'-' | b'0'..=b'9')
    )
}

/// Whether a body is a batch: its first non-blank character is `[`.
pub(crate) fn is_batch(text: &str) -> bool {
    text.trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('[')
}

/// Turns a validated raw id into an [`Id`].
pub(crate) fn id_of(raw: &RawValue) -> Id {
    Id::from_json(raw.get()).unwrap_or(Id::NULL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected_id(text: &str) -> Option<Option<String>> {
        match parse(text) {
            Ok(_) => None,
            Err(Rejection::Parse) => Some(Some("parse".into())),
            Err(Rejection::Invalid { id }) => Some(id.map(|id| id.get().to_owned())),
        }
    }

    #[test]
    fn reads_a_call() {
        let req = parse(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":7}"#)
            .ok()
            .unwrap();
        assert_eq!(req.method, "add");
        assert_eq!(req.params.map(RawValue::get), Some("[1,2]"));
        assert_eq!(req.id.map(RawValue::get), Some("7"));
    }

    #[test]
    fn null_id_is_a_call_and_absent_id_a_notification() {
        let call = parse(r#"{"jsonrpc":"2.0","method":"a","id":null}"#)
            .ok()
            .unwrap();
        assert_eq!(call.id.map(RawValue::get), Some("null"));
        let note = parse(r#"{"jsonrpc":"2.0","method":"a"}"#).ok().unwrap();
        assert!(note.id.is_none());
    }

    #[test]
    fn escaped_method_is_decoded() {
        let req = parse(r#"{"jsonrpc":"2\u002e0","method":"a\u0062","id":1}"#)
            .ok()
            .unwrap();
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
}
