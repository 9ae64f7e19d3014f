//! Defines owned JSON-RPC messages, for clients and peers.

use serde_json::value::RawValue;

use super::error::RpcError;
use super::id::Id;
use super::incoming::{Members, Text};
use super::write;

/// Holds one JSON-RPC message, owned.
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

impl Message {
    /// Reads one message (not a batch).
    ///
    /// Lenient where other servers differ harmlessly: a missing `jsonrpc` member is accepted.
    ///
    /// # Errors
    ///
    /// [`MessageError`] when the text is not a JSON-RPC message.
    pub fn parse(text: &str) -> Result<Self, MessageError> {
        let mut members = Members::read(text).map_err(|err| MessageError(err.to_string()))?;
        let malformed = MessageError;
        if let Some(method) = members.method.take() {
            if let Some(key) = members.repeated {
                return Err(malformed(format!("`{}` is written twice", key.name())));
            }
            if members.result.is_some() || members.error.is_some() {
                return Err(malformed(
                    "not a request, a notification or a response".into(),
                ));
            }
            members.check_version().map_err(malformed)?;
            let method = Text::into_str(method)
                .ok_or_else(|| malformed("`method` is not a string".into()))?
                .into_owned();
            let params = members.params.map(ToOwned::to_owned);
            return Ok(match members.id().map_err(malformed)? {
                Some(id) => Self::Request { id, method, params },
                None => Self::Notification { method, params },
            });
        }
        let (id, outcome) = members.answer().map_err(malformed)?;
        Ok(match outcome {
            Ok(result) => Self::Response {
                id,
                result: result.to_owned(),
            },
            Err(error) => Self::ErrorResponse { id, error },
        })
    }

    /// Reads a body that may be a batch: one message, or the elements of an array.
    ///
    /// # Errors
    ///
    /// [`MessageError`] when the text or an element is not a JSON-RPC message.
    pub fn parse_many(text: &str) -> Result<Vec<Self>, MessageError> {
        if super::is_batch(text) {
            let elements: Vec<&RawValue> =
                serde_json::from_str(text).map_err(|err| MessageError(err.to_string()))?;
            elements
                .into_iter()
                .map(|raw| Self::parse(raw.get()))
                .collect()
        } else {
            Self::parse(text).map(|msg| vec![msg])
        }
    }

    /// Returns the message's JSON text.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(64);
        self.write_json(&mut out);
        write::text(out)
    }

    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Self::Request { id, method, params } => {
                write::call(out, Some(id), method, params.as_deref());
            }
            Self::Notification { method, params } => {
                write::call(out, None::<&Id>, method, params.as_deref());
            }
            Self::Response { id, result } => write::response(out, result, id),
            Self::ErrorResponse { id, error } => write::error(out, error, id),
        }
    }
}

/// Reports text that is not a JSON-RPC message, and what is wrong with it.
///
/// A client meets it as [`ClientError::Malformed`](crate::error::ClientError::Malformed), which
/// carries the same text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MessageError(String);

impl MessageError {
    /// Returns what is wrong with the text.
    pub fn reason(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_reason(self) -> String {
        self.0
    }
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
