//! Items the `#[rpc_service]` expansion names; not a public API.

use std::io::Write as _;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::{ClientError, Methods, ParamEncoding, RegisterError, RpcError};

/// Registration results of generated code: names were checked when the macro ran.
#[inline]
pub fn discard(result: Result<&mut Methods, RegisterError>) {
    debug_assert!(result.is_ok(), "{:?}", result.err());
}

/// Types a method parameter may have.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a jrpc method parameter",
    label = "this type does not implement `serde::Deserialize` (owned)",
    note = "parameters are decoded from the request: derive `serde::Deserialize` for `{Self}` and give it no borrowed fields"
)]
pub trait RpcParam: DeserializeOwned + Send + 'static {}
impl<T: DeserializeOwned + Send + 'static> RpcParam for T {}

/// Types a method may answer with.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a jrpc method result",
    label = "this type does not implement `serde::Serialize`",
    note = "results are encoded into the response: derive `serde::Serialize` for `{Self}`"
)]
pub trait RpcResult: Serialize + Send + 'static {}
impl<T: Serialize + Send + 'static> RpcResult for T {}

/// Error types a method may fail with.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a jrpc method error",
    label = "this type does not implement `Into<jrpc_runtime::RpcError>`",
    note = "implement `From<{Self}> for jrpc_runtime::RpcError` to say which code and message each error answers"
)]
pub trait IntoRpcError: Into<RpcError> + 'static {}
#[diagnostic::do_not_recommend]
impl<E: Into<RpcError> + 'static> IntoRpcError for E {}

/// Checks a parameter type where the user wrote it.
#[inline]
pub fn assert_param<T: RpcParam>() {}

/// Checks a result type where the user wrote it.
#[inline]
pub fn assert_result<T: RpcResult>() {}

/// Checks an error type where the user wrote it.
#[inline]
pub fn assert_error<E: IntoRpcError>() {}

/// Builds a stub's `params`, positional or named.
pub struct ParamsBuilder {
    encoding: ParamEncoding,
    out: Vec<u8>,
    count: usize,
}

impl ParamsBuilder {
    /// An empty parameter list.
    pub fn new(encoding: ParamEncoding, capacity: usize) -> Self {
        Self {
            encoding,
            out: Vec::with_capacity(16 * capacity + 2),
            count: 0,
        }
    }

    /// Adds one parameter; a named `None` is left out.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    pub fn push<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), ClientError> {
        let mark = self.out.len();
        self.out
            .push(if self.count == 0 { self.open() } else { b',' });
        if self.encoding == ParamEncoding::Named {
            let _ = write!(self.out, "{}:", serde_json::Value::from(name));
        }
        let start = self.out.len();
        serde_json::to_writer(&mut self.out, value)
            .map_err(|err| ClientError::Encode(format!("parameter \"{name}\": {err}")))?;
        if self.encoding == ParamEncoding::Named && &self.out[start..] == b"null" {
            self.out.truncate(mark);
            return Ok(());
        }
        self.count += 1;
        Ok(())
    }

    fn open(&self) -> u8 {
        match self.encoding {
            ParamEncoding::Named => b'{',
            _ => b'[',
        }
    }

    /// The params; `None` when there are no parameters at all.
    pub fn finish(mut self, declared: usize) -> Option<Box<RawValue>> {
        if declared == 0 {
            return None;
        }
        if self.count == 0 {
            self.out.clear();
            self.out.push(self.open());
        }
        self.out.push(match self.encoding {
            ParamEncoding::Named => b'}',
            _ => b']',
        });
        String::from_utf8(self.out)
            .ok()
            .and_then(|text| RawValue::from_string(text).ok())
    }

    /// The whole params value of a `params = whole` method.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    pub fn whole<T: Serialize + ?Sized>(value: &T) -> Result<Option<Box<RawValue>>, ClientError> {
        serde_json::value::to_raw_value(value)
            .map(Some)
            .map_err(|err| ClientError::Encode(format!("params: {err}")))
    }
}

/// Decodes a call's result into the stub's return type.
///
/// # Errors
///
/// [`ClientError::Malformed`] when the result does not decode into `T`.
pub fn decode_result<T: DeserializeOwned>(raw: &RawValue) -> Result<T, ClientError> {
    crate::caller::decode_result(raw)
}
