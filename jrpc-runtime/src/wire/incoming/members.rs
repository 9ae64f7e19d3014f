//! Implements the member reader: a message object read once, each member kept as raw JSON text,
//! with a note of any member written twice.

use std::borrow::Cow;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{
    Incoming, Rejection, Request, Response, is_null, is_structured, is_valid_id, is_version,
};
use crate::wire::error::RpcError;
use crate::wire::id::Id;

/// Holds the members of a message object as written, each kept as raw JSON text.
///
/// A member that is present is `Some` even when it is `null`, so `"id": null` (a call) differs from
/// no `id` (a notification).
#[derive(Default)]
pub(crate) struct Members<'a> {
    pub(in crate::wire) jsonrpc: Option<Text<'a>>,
    pub(in crate::wire) method: Option<Text<'a>>,
    pub(in crate::wire) params: Option<&'a RawValue>,
    pub(in crate::wire) id: Option<&'a RawValue>,
    pub(in crate::wire) result: Option<&'a RawValue>,
    pub(in crate::wire) error: Option<&'a RawValue>,
    /// The first member found written twice.
    pub(in crate::wire) repeated: Option<Key>,
}

/// Names a member that [`Members`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
pub(in crate::wire) enum Key {
    Jsonrpc,
    Method,
    Params,
    Id,
    Result,
    Error,
    #[serde(other)]
    Other,
}

/// Holds `jsonrpc` and `method`, read as the strings they should be (borrowed when they hold no
/// escape), or as something else, which makes the message invalid but keeps the rest readable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::wire) enum Text<'a> {
    Str(Cow<'a, str>),
    NotAString,
}

impl<'a> Text<'a> {
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            Self::NotAString => None,
        }
    }

    /// Returns the string, if it is one.
    pub(in crate::wire) fn into_str(self) -> Option<Cow<'a, str>> {
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

/// Holds the members of a well-formed message, read by serde's derived code: the fastest read, and
/// the one every valid message takes. It fails on what [`Members`]' own reader takes (a member
/// written twice, an escaped or non-string `jsonrpc` or `method`), which is then read again by
/// that reader.
#[derive(Deserialize)]
pub(super) struct Plain<'a> {
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

impl<'a> Members<'a> {
    /// Reads the members of one message (not a batch).
    #[inline]
    pub(crate) fn read(text: &'a str) -> Result<Self, serde_json::Error> {
        match serde_json::from_str::<Plain<'_>>(text) {
            Ok(plain) => Ok(plain.into()),
            Err(_) => serde_json::from_str(text),
        }
    }

    /// Returns what the message is to a peer, by the rules in the [module docs](self).
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

    /// Returns the request a server takes, or why it takes none, by the rules in the
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
            if self.params.is_some_and(is_null) {
                // Valid but for it: a table that reads `null` as absent takes it so.
                return Err(Rejection::NullParams(Request {
                    method,
                    params: None,
                    id,
                }));
            }
            return Err(invalid);
        }
        Ok(Request {
            method,
            params: self.params,
            id,
        })
    }

    /// Returns the id and outcome of an answer, read leniently; see [`Response::read`].
    pub(in crate::wire) fn answer(&self) -> Result<(Id, Result<&'a RawValue, RpcError>), String> {
        if let Some(key) = self.repeated {
            return Err(format!("`{}` is written twice", key.name()));
        }
        self.check_version()?;
        let id = self.id()?.unwrap_or(Id::NULL);
        // Both members are forbidden, but `"error": null` beside a result (or `"result": null`
        // beside an error) says there is none: lsp4j and others write it.
        let (result, error) = match (self.result, self.error) {
            (Some(result), Some(error)) if is_null(error) => (Some(result), None),
            (Some(result), Some(error)) if is_null(result) => (None, Some(error)),
            both => both,
        };
        match (result, error) {
            (Some(result), None) => Ok((id, Ok(result))),
            (None, Some(error)) => {
                let error = serde_json::from_str::<RpcError>(error.get())
                    .map_err(|err| format!("`error` is not an error object: {err}"))?;
                Ok((id, Err(error)))
            }
            _ => Err("not a request, a notification or a response".into()),
        }
    }

    /// Checks the version: a missing `jsonrpc` is taken (some servers leave it out); another
    /// version is not.
    pub(in crate::wire) fn check_version(&self) -> Result<(), String> {
        match &self.jsonrpc {
            Some(version) if !is_version(version) => Err("`jsonrpc` is not \"2.0\"".into()),
            _ => Ok(()),
        }
    }

    pub(in crate::wire) fn id(&self) -> Result<Option<Id>, String> {
        self.id
            .map(|raw| Id::from_json(raw.get()).ok_or_else(|| format!("invalid id {}", raw.get())))
            .transpose()
    }
}

impl Key {
    pub(in crate::wire) fn name(self) -> &'static str {
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
