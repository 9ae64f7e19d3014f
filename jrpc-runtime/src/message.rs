//! Owned JSON-RPC messages, for clients and peers.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{ClientError, Id, RpcError};

/// One JSON-RPC message, owned.
///
/// ```
/// use jrpc_runtime::{Id, Message};
///
/// let msg = Message::parse(r#"{"jsonrpc":"2.0","result":19,"id":1}"#).unwrap();
/// assert!(matches!(&msg, Message::Response { id, result } if *id == Id::from(1) && result.get() == "19"));
/// assert_eq!(msg.to_json(), r#"{"jsonrpc":"2.0","result":19,"id":1}"#);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Message {
    /// A call: answered with a response carrying the same id.
    Request {
        /// The id.
        id: Id,
        /// The method.
        method: String,
        /// The params, as JSON text.
        params: Option<Box<RawValue>>,
    },
    /// A notification: never answered.
    Notification {
        /// The method.
        method: String,
        /// The params, as JSON text.
        params: Option<Box<RawValue>>,
    },
    /// A successful answer.
    Response {
        /// The id of the call answered.
        id: Id,
        /// The result, as JSON text.
        result: Box<RawValue>,
    },
    /// A failed answer.
    ErrorResponse {
        /// The id of the call answered (`null` when the call could not be read).
        id: Id,
        /// The error.
        error: RpcError,
    },
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::request::present")]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

impl Message {
    /// Reads one message (not a batch).
    ///
    /// Lenient where other servers differ harmlessly: a missing `jsonrpc` member is accepted.
    ///
    /// # Errors
    ///
    /// [`ClientError::Malformed`] when the text is not a JSON-RPC message.
    pub fn parse(text: &str) -> Result<Self, ClientError> {
        let fields: Fields<'_> =
            serde_json::from_str(text).map_err(|err| ClientError::Malformed(err.to_string()))?;
        if fields.jsonrpc.is_some_and(|v| v.get() != r#""2.0""#) {
            return Err(ClientError::Malformed("`jsonrpc` is not \"2.0\"".into()));
        }
        let id = match fields.id {
            Some(raw) => Some(
                Id::from_json(raw.get())
                    .ok_or_else(|| ClientError::Malformed(format!("invalid id {}", raw.get())))?,
            ),
            None => None,
        };
        let params = fields.params.map(ToOwned::to_owned);
        match (fields.method, fields.result, fields.error, id) {
            (Some(method), None, None, Some(id)) => Ok(Self::Request {
                id,
                method: method.into_owned(),
                params,
            }),
            (Some(method), None, None, None) => Ok(Self::Notification {
                method: method.into_owned(),
                params,
            }),
            (None, Some(result), None, id) => Ok(Self::Response {
                id: id.unwrap_or(Id::NULL),
                result: result.to_owned(),
            }),
            (None, None, Some(error), id) => Ok(Self::ErrorResponse {
                id: id.unwrap_or(Id::NULL),
                error,
            }),
            _ => Err(ClientError::Malformed(
                "not a request, a notification or a response".into(),
            )),
        }
    }

    /// Reads a body that may be a batch: one message, or the elements of an array.
    ///
    /// # Errors
    ///
    /// [`ClientError::Malformed`] when the text or an element is not a JSON-RPC message.
    pub fn parse_many(text: &str) -> Result<Vec<Self>, ClientError> {
        if crate::request::is_batch(text) {
            let elements: Vec<&RawValue> = serde_json::from_str(text)
                .map_err(|err| ClientError::Malformed(err.to_string()))?;
            elements
                .into_iter()
                .map(|raw| Self::parse(raw.get()))
                .collect()
        } else {
            Self::parse(text).map(|msg| vec![msg])
        }
    }

    /// The message's JSON text.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(64);
        self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        let id = match self {
            Self::Request { id, method, params } => {
                return write_call(out, Some(id), method, params.as_deref());
            }
            Self::Notification { method, params } => {
                return write_call(out, None, method, params.as_deref());
            }
            Self::Response { id, result } => {
                out.extend_from_slice(br#"{"jsonrpc":"2.0","result":"#);
                out.extend_from_slice(result.get().as_bytes());
                id
            }
            Self::ErrorResponse { id, error } => {
                out.extend_from_slice(br#"{"jsonrpc":"2.0","error":"#);
                let _ = serde_json::to_writer(&mut *out, error);
                id
            }
        };
        out.extend_from_slice(br#","id":"#);
        id.write_json(out);
        out.push(b'}');
    }

    /// The answer's outcome, for a response or an error response.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] for an error response, [`ClientError::Malformed`] for a message that
    /// is not an answer.
    pub fn into_result(self) -> Result<Box<RawValue>, ClientError> {
        match self {
            Self::Response { result, .. } => Ok(result),
            Self::ErrorResponse { error, .. } => Err(ClientError::Failed(error)),
            _ => Err(ClientError::Malformed("expected a response".into())),
        }
    }
}

/// Writes a call (with `id`) or a notification (without).
fn write_call(out: &mut Vec<u8>, id: Option<&Id>, method: &str, params: Option<&RawValue>) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    let _ = serde_json::to_writer(&mut *out, method);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(params.get().as_bytes());
    }
    if let Some(id) = id {
        out.extend_from_slice(br#","id":"#);
        id.write_json(out);
    }
    out.push(b'}');
}

/// The text of a call (with `id`) or a notification (without), written straight from borrowed
/// parts: what clients send, without building an owned [`Message`] first.
pub(crate) fn call_text(id: Option<&Id>, method: &str, params: Option<&RawValue>) -> String {
    let mut out = Vec::with_capacity(48 + method.len() + params.map_or(0, |p| p.get().len()));
    write_call(&mut out, id, method, params);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for text in [
            r#"{"jsonrpc":"2.0","method":"a","params":[1],"id":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"a"}"#,
            r#"{"jsonrpc":"2.0","result":{"k":1},"id":12345678901234567890123}"#,
            r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":[1]},"id":null}"#,
        ] {
            assert_eq!(Message::parse(text).unwrap().to_json(), text);
        }
    }

    #[test]
    fn rejects_what_is_not_a_message() {
        assert!(Message::parse("1").is_err());
        assert!(
            Message::parse(
                r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":""},"id":1}"#
            )
            .is_err()
        );
        assert!(Message::parse(r#"{"jsonrpc":"1.0","result":1,"id":1}"#).is_err());
    }
}
