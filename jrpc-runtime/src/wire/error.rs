//! Defines error codes and the error object of a response.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Holds a JSON-RPC error code: an open set, so any `i32` is a valid code.
///
/// ```
/// use jrpc_runtime::ErrorCode;
///
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND.code(), -32601);
/// assert!(ErrorCode::new(-32000).is_server_error());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Says that invalid JSON was received.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// Says that the JSON sent is not a valid request object.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// Says that the method does not exist or is not available.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Says that the method parameters are invalid.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// Says that an internal JSON-RPC error occurred.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// Opens the implementation-defined server range (`-32099..=-32000`) as its first code; jrpc
    /// answers it when a call is refused for load (too many calls in flight).
    pub const SERVER_ERROR: Self = Self(-32000);
    /// Refuses a call for who makes it (in the server range): what
    /// [`Authorize`](crate::layers::Authorize) answers, with `data` naming the method.
    pub const FORBIDDEN: Self = Self(-32003);
    /// Says a call was cancelled by the client (the LSP `RequestCancelled` code).
    pub const REQUEST_CANCELLED: Self = Self(-32800);
    /// Says an answer was larger than the server's `max_message_size` (in the server range, the
    /// code jsonrpsee answers too): the call ran, but its answer was not sent.
    pub const RESPONSE_TOO_LARGE: Self = Self(-32008);

    /// Wraps a raw code.
    pub const fn new(code: i32) -> Self {
        Self(code)
    }

    /// Returns the raw code.
    pub const fn code(self) -> i32 {
        self.0
    }

    /// Returns whether the code lies in the implementation-defined server range `-32099..=-32000`.
    pub const fn is_server_error(self) -> bool {
        self.0 >= -32099 && self.0 <= -32000
    }

    /// Returns whether the specification reserves this code for protocol failures that a handler
    /// must not claim: `-32768..=-32000`, less `-32602`, `-32603` and the server range.
    pub const fn is_reserved(self) -> bool {
        self.0 >= -32768
            && self.0 <= -32000
            && self.0 != -32602
            && self.0 != -32603
            && !self.is_server_error()
    }

    /// Returns the specification's message for its own codes, else `None`.
    pub const fn standard_message(self) -> Option<&'static str> {
        match self.0 {
            -32700 => Some("Parse error"),
            -32600 => Some("Invalid Request"),
            -32601 => Some("Method not found"),
            -32602 => Some("Invalid params"),
            -32603 => Some("Internal error"),
            _ => None,
        }
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        Self(code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Holds the `error` member of a JSON-RPC response: a code, a message and optional data.
///
/// Handlers return it (or any `E: Into<RpcError>`) to answer an application error; clients see it
/// in [`ClientError::Failed`](crate::error::ClientError::Failed).
///
/// ```
/// use jrpc_runtime::RpcError;
///
/// let err = RpcError::new(1, "division by zero").with_data(&[1, 0]);
/// assert_eq!(err.code().code(), 1);
/// assert_eq!(err.data().map(|d| d.get()), Some("[1,0]"));
/// ```
#[derive(Clone, Debug)]
pub struct RpcError {
    code: ErrorCode,
    message: Cow<'static, str>,
    data: Option<Box<RawValue>>,
    /// Answered by a layer of this crate in a handler's place (MCP's "method not found" for a
    /// method its era removed): a reserved code is then kept, not taken for impersonation.
    by_runtime: bool,
}

impl RpcError {
    /// Returns an error with a code and a message and no data.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            data: None,
            by_runtime: false,
        }
    }

    /// Returns this error marked as a protocol's own answer, not a handler's failure: its code
    /// is kept even when the specification reserves it (`-32768..-32000`), which a handler's is
    /// not. For a protocol built on the crate (MCP's `-32601` for a method its revision removed,
    /// LSP's lifecycle errors).
    #[must_use]
    pub fn with_reserved_code(mut self) -> Self {
        self.by_runtime = true;
        self
    }

    /// Returns whether it is a protocol's own answer (see
    /// [`with_reserved_code`](Self::with_reserved_code)).
    pub(crate) fn is_by_runtime(&self) -> bool {
        self.by_runtime
    }

    /// Attaches `data`; a value that cannot be encoded leaves the data out.
    #[must_use]
    pub fn with_data<T: Serialize + ?Sized>(mut self, data: &T) -> Self {
        self.data = serde_json::value::to_raw_value(data).ok();
        self
    }

    /// Attaches already encoded `data`.
    #[must_use]
    pub fn with_raw_data(mut self, data: Box<RawValue>) -> Self {
        self.data = Some(data);
        self
    }

    /// Returns `-32700 Parse error`.
    pub fn parse_error() -> Self {
        Self::standard(ErrorCode::PARSE_ERROR)
    }

    /// Returns `-32600 Invalid Request`.
    pub fn invalid_request() -> Self {
        Self::standard(ErrorCode::INVALID_REQUEST)
    }

    /// Returns `-32601 Method not found`.
    pub fn method_not_found() -> Self {
        Self::standard(ErrorCode::METHOD_NOT_FOUND)
    }

    /// Returns `-32602 Invalid params`, with `data` a string saying what is wrong.
    pub fn invalid_params(reason: impl Into<String>) -> Self {
        Self::standard(ErrorCode::INVALID_PARAMS).with_data(&reason.into())
    }

    /// Returns `-32603 Internal error`, with no detail (the reason belongs in logs, not on the
    /// wire).
    pub fn internal() -> Self {
        Self::standard(ErrorCode::INTERNAL_ERROR)
    }

    fn standard(code: ErrorCode) -> Self {
        Self::new(code, code.standard_message().unwrap_or("Server error"))
    }

    /// Returns the code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// Returns the message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Returns the data, as JSON text.
    pub fn data(&self) -> Option<&RawValue> {
        self.data.as_deref()
    }

    /// Decodes the data into `T`; `None` when there is no data.
    ///
    /// # Errors
    ///
    /// When the data does not decode into `T`.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.data
            .as_deref()
            .map(|raw| serde_json::from_str(raw.get()))
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " ({})", data.get())?;
        }
        Ok(())
    }
}

impl std::error::Error for RpcError {}

impl PartialEq for RpcError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_deref().map(RawValue::get) == other.data.as_deref().map(RawValue::get)
    }
}

impl Serialize for RpcError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s =
            serializer.serialize_struct("RpcError", 2 + usize::from(self.data.is_some()))?;
        s.serialize_field("code", &self.code.0)?;
        s.serialize_field("message", &self.message)?;
        if let Some(data) = &self.data {
            s.serialize_field("data", data)?;
        }
        s.end()
    }
}

impl<'de> Deserialize<'de> for RpcError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ErrorVisitor;
        impl<'de> Visitor<'de> for ErrorVisitor {
            type Value = RpcError;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC error object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RpcError, A::Error> {
                let (mut code, mut message, mut data) = (None, None, None);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "code" => code = Some(map.next_value::<i32>()?),
                        "message" => message = Some(map.next_value::<String>()?),
                        "data" => data = Some(map.next_value::<Box<RawValue>>()?),
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                let code = code.ok_or_else(|| de::Error::missing_field("code"))?;
                // Some servers leave the message out; an empty one is kinder than a failure.
                let message = message.unwrap_or_default();
                Ok(RpcError {
                    code: ErrorCode(code),
                    message: message.into(),
                    data,
                    by_runtime: false,
                })
            }
        }
        deserializer.deserialize_map(ErrorVisitor)
    }
}

impl From<std::convert::Infallible> for RpcError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}
