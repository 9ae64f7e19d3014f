//! Implements the one-pass reader: a request (or a batch) naming a known method read with its
//! params decoded by the handler's seed in the same pass, compactly written text first
//! ([`compact`]), else through serde_json. It only ever declines; the full read then says what the
//! text is.
//!
//! [`compact`]: super::compact

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{BLANK, Decoded, Key, Request, compact, is_structured, is_valid_id};
use crate::wire::id::RawId;

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

/// Reads a batch all of whose elements are requests naming `method` written compactly (see
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

/// Holds an element of a batch read by [`parse_batch_with`].
pub(crate) enum Element<'a, T> {
    /// A request naming the method asked for, its params decoded.
    Decoded(Decoded<'a, T>),
    /// Any other request, its params raw.
    Request(Request<'a>),
}

/// Holds what [`WithParams`] reads: the members a request has, its params decoded or raw.
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
    /// Returns the batch element read (by [`WithParams`] with `after` set to `method`), if it is a
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

/// Visits [`parse_batch_with`]'s elements: each read by [`WithParams`] with a copy of
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
