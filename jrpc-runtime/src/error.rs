//! Defines the errors users handle: a registration refused, a client call failed, a setting
//! refused.

use std::time::Duration;

use crate::wire::{MessageError, RpcError};

/// Refuses a registration: a method name registered twice or reserved, or a description of a method
/// that is not there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The name is taken.
    #[error("method `{0}` is already registered")]
    Duplicate(String),
    /// Names starting with `rpc.` are reserved by the specification.
    #[error("method `{0}` uses the reserved `rpc.` prefix")]
    Reserved(String),
    /// No method of that name is registered (to describe).
    #[error("no method `{0}` is registered")]
    Unknown(String),
}

/// Says what a client call can fail with.
///
/// ```
/// use jrpc_runtime::{ClientError, RpcError};
///
/// let err = ClientError::Failed(RpcError::new(1, "division by zero"));
/// assert_eq!(err.to_string(), "error 1: division by zero");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with an error object.
    #[error("{0}")]
    Failed(RpcError),
    /// No answer came within the call's time limit.
    #[error("`{method}` timed out after {limit:?}")]
    TimedOut {
        /// The method called.
        method: String,
        /// The limit that passed.
        limit: Duration,
    },
    /// The connection closed before the answer came.
    #[error("the connection closed before `{method}` was answered")]
    Closed {
        /// The method called.
        method: String,
    },
    /// A message was larger than the configured cap.
    #[error("message of {got} bytes exceeds the limit of {limit} bytes")]
    TooLong {
        /// The cap.
        limit: usize,
        /// The size seen.
        got: usize,
    },
    /// The answer was not a valid response, or its result did not decode into the expected type.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// The call's own params could not be encoded as JSON (a map with non-string keys, a
    /// `Serialize` impl that failed); nothing was sent.
    #[error("params could not be encoded: {0}")]
    Encode(String),
    /// The server ran the call, but its answer was larger than the server's
    /// `max_message_size`, so it answered this error instead
    /// ([`ErrorCode::RESPONSE_TOO_LARGE`](crate::wire::ErrorCode::RESPONSE_TOO_LARGE)): ask for less, or
    /// raise the server's limit.
    #[error("the answer was too large to send: {0}")]
    AnswerTooLarge(RpcError),
    /// The transport failed (I/O, HTTP status, connection refused, ...).
    #[error("transport: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ClientError {
    /// Returns the server's error object, when the call failed with one.
    pub fn rpc_error(&self) -> Option<&RpcError> {
        match self {
            Self::Failed(err) | Self::AnswerTooLarge(err) => Some(err),
            _ => None,
        }
    }
}

impl From<RpcError> for ClientError {
    /// [`AnswerTooLarge`](Self::AnswerTooLarge) for the server's "answer too large" code, else
    /// [`Failed`](Self::Failed).
    fn from(err: RpcError) -> Self {
        if err.code() == crate::wire::ErrorCode::RESPONSE_TOO_LARGE {
            Self::AnswerTooLarge(err)
        } else {
            Self::Failed(err)
        }
    }
}

/// An answer that is not a JSON-RPC message is a malformed answer, with the same reason.
impl From<MessageError> for ClientError {
    fn from(err: MessageError) -> Self {
        Self::Malformed(err.into_reason())
    }
}

/// Names a setting that a builder refused, and why.
///
/// Every builder of this crate ([`PeerConfig`](crate::peer::PeerConfig)'s and the servers' and
/// clients') checks each value when it builds, and names the first one out of range by the
/// method that sets it; none clamps a value silently.
///
/// ```
/// use jrpc_runtime::PeerConfig;
///
/// let err = PeerConfig::builder().max_in_flight(0).build().unwrap_err();
/// assert_eq!(err.key(), "max_in_flight");
/// assert_eq!(err.to_string(), "invalid `max_in_flight`: must be at least 1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid `{key}`: {reason}")]
pub struct ConfigError {
    key: &'static str,
    reason: String,
}

impl ConfigError {
    /// Returns the error naming the setting `key` (as the builder method that sets it is named)
    /// and why it is out of range: what the builders of protocols on the crate return too.
    pub fn new(key: &'static str, reason: impl Into<String>) -> Self {
        Self {
            key,
            reason: reason.into(),
        }
    }

    /// Returns the setting's name, as the builder method that sets it is named.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Returns what is wrong with the value.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Holds the checks builders share, each failing with the key it names.
#[cfg_attr(
    not(any(feature = "http", feature = "ws")),
    allow(dead_code, reason = "the servers' builders use the rest")
)]
pub(crate) mod check {
    use std::time::Duration;

    use super::ConfigError;

    /// Refuses zero, which would refuse every call, every message, every byte: a mistake, never a
    /// policy.
    pub(crate) fn at_least_one(key: &'static str, value: usize) -> Result<(), ConfigError> {
        if value == 0 {
            return Err(ConfigError::new(key, "must be at least 1"));
        }
        Ok(())
    }

    /// Checks a count that becomes the size of a Tokio channel or semaphore, which has a ceiling.
    pub(crate) fn permits(key: &'static str, value: usize) -> Result<(), ConfigError> {
        let max = tokio::sync::Semaphore::MAX_PERMITS;
        if value == 0 || value > max {
            return Err(ConfigError::new(
                key,
                format!("must be between 1 and {max}"),
            ));
        }
        Ok(())
    }

    /// Checks a limit that may be turned off with `None`; zero would fire at once (or spin).
    pub(crate) fn optional_limit(
        key: &'static str,
        limit: Option<Duration>,
    ) -> Result<(), ConfigError> {
        if limit.is_some_and(|limit| limit.is_zero()) {
            return Err(ConfigError::new(
                key,
                "must be above zero; use `None` to turn it off",
            ));
        }
        Ok(())
    }

    /// Checks a limit that cannot be turned off.
    pub(crate) fn limit(key: &'static str, limit: Duration) -> Result<(), ConfigError> {
        if limit.is_zero() {
            return Err(ConfigError::new(key, "must be above zero"));
        }
        Ok(())
    }
}
