//! Says why a call to the client failed ([`AcpError`]), and turns an agent's ACP error into the
//! answer the runtime sends.

use agent_client_protocol_schema::v1::Error;
use jrpc_runtime::{ClientError, RpcError};

/// Says why a message to the client (an update, a permission request, a file or terminal method)
/// did not get its answer.
///
/// A handler's `?` turns it into ACP's [`Error`]: an internal error whose `data` says why, or,
/// when the client answered an error, the client's own.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The client did not offer the method in `initialize` (`fs.readTextFile`,
    /// `fs.writeTextFile`, `terminal`): nothing was sent. ACP forbids calling it.
    #[error("the client does not offer `{0}`")]
    NotOffered(&'static str),
    /// The client answered an error, or the connection failed (closed, timed out, an answer
    /// that did not decode).
    #[error(transparent)]
    Call(#[from] ClientError),
}

impl AcpError {
    /// Returns the error object the client answered, when it answered one.
    pub fn rpc_error(&self) -> Option<&RpcError> {
        match self {
            Self::Call(err) => err.rpc_error(),
            Self::NotOffered(_) => None,
        }
    }
}

impl From<AcpError> for Error {
    /// Returns the client's own error when it answered one (the agent passes it on), else an
    /// internal error whose `data` says why.
    fn from(err: AcpError) -> Self {
        if let Some(answered) = err.rpc_error() {
            let data = answered
                .data()
                .and_then(|raw| serde_json::from_str(raw.get()).ok());
            return Error::new(answered.code().code(), answered.message()).data(data);
        }
        Error::internal_error().data(err.to_string())
    }
}

/// Returns the runtime's error for ACP's `err`, its code kept even where JSON-RPC reserves it
/// (`-32601`, `-32600`): ACP's codes are the protocol's own answers.
pub(crate) fn to_rpc(err: Error) -> RpcError {
    let answer = RpcError::new(i32::from(err.code), err.message).with_reserved_code();
    match err.data {
        Some(data) => answer.with_data(&data),
        None => answer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acp_errors_keep_their_code_and_data() {
        let err = to_rpc(Error::method_not_found().data(serde_json::json!({"x": 1})));
        assert_eq!(err.code().code(), -32601);
        assert_eq!(err.data().map(|d| d.get()), Some(r#"{"x":1}"#));
        let passed_on = Error::from(AcpError::Call(ClientError::Failed(
            RpcError::new(-32002, "Resource not found").with_data(&"f"),
        )));
        assert_eq!(i32::from(passed_on.code), -32002);
        assert_eq!(passed_on.data, Some(serde_json::json!("f")));
        let not_offered = Error::from(AcpError::NotOffered("fs/read_text_file"));
        assert_eq!(i32::from(not_offered.code), -32603);
        assert_eq!(
            not_offered.data,
            Some(serde_json::json!(
                "the client does not offer `fs/read_text_file`"
            ))
        );
    }
}
