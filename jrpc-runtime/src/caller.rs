//! The client side: what generated stubs and applications call through.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::ClientError;

/// How a stub sends its parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParamEncoding {
    /// An array, in declaration order (the default: every server takes it).
    #[default]
    Positional,
    /// An object keyed by the parameters' wire names; `None` values are left out.
    Named,
}

/// Something that sends calls and notifications to a JSON-RPC server: the HTTP and WebSocket
/// clients, a [`Peer`](crate::Peer), or a [`Methods`](crate::Methods) table in-process.
/// Generated stubs (`FooClient<C: Caller>`) work over any of them.
///
/// An implementation provides the two raw methods; [`call`](Caller::call) and
/// [`notify`](Caller::notify), which encode the params and decode the result, come with the
/// trait, so they are written once for every caller. Bring the trait into scope to use them.
///
/// ```
/// use jrpc_runtime::{Caller, Methods, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut methods = Methods::new();
/// methods.register("neg", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(-x) }).unwrap();
/// let neg: i64 = methods.call("neg", [5]).await.unwrap();
/// assert_eq!(neg, -5);
/// let raw = methods.call_raw("neg", serde_json::value::to_raw_value(&[6]).ok()).await.unwrap();
/// assert_eq!(raw.get(), "-6");
/// # });
/// ```
pub trait Caller: Send + Sync {
    /// Calls `method` with params already encoded, and waits for its result.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] with the server's error object, or the transport's failure.
    fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<Box<RawValue>, ClientError>> + Send;

    /// Sends a notification with params already encoded; nothing comes back.
    ///
    /// # Errors
    ///
    /// The transport's failure.
    fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;

    /// Calls `method` and decodes its result. `params` that encode as `null` (such as `()`) are
    /// left out of the request.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when `params` cannot be encoded, [`ClientError::Malformed`] when
    /// the result does not decode into `R`, and whatever [`call_raw`](Caller::call_raw) fails
    /// with.
    fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> impl Future<Output = Result<R, ClientError>> + Send {
        let params = encode_params(&params);
        async move {
            let raw = self.call_raw(method, params?).await?;
            decode_result(&raw)
        }
    }

    /// Sends the notification `method`. `params` that encode as `null` are left out.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when `params` cannot be encoded, and whatever
    /// [`notify_raw`](Caller::notify_raw) fails with.
    fn notify(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        let params = encode_params(&params);
        async move { self.notify_raw(method, params?).await }
    }
}

/// Forwards the raw methods to the caller behind a pointer.
macro_rules! forward_caller {
    ($($pointer:ty),*) => {$(
        impl<C: Caller + ?Sized> Caller for $pointer {
            fn call_raw(
                &self,
                method: &str,
                params: Option<Box<RawValue>>,
            ) -> impl Future<Output = Result<Box<RawValue>, ClientError>> + Send {
                (**self).call_raw(method, params)
            }

            fn notify_raw(
                &self,
                method: &str,
                params: Option<Box<RawValue>>,
            ) -> impl Future<Output = Result<(), ClientError>> + Send {
                (**self).notify_raw(method, params)
            }
        }
    )*};
}

forward_caller!(&C, Arc<C>);

/// Encodes the params of a call or a notification: `None` for params that encode as `null`
/// (such as `()`), which are left out of the request.
///
/// # Errors
///
/// [`ClientError::Encode`] when `params` cannot be encoded.
pub(crate) fn encode_params(params: &impl Serialize) -> Result<Option<Box<RawValue>>, ClientError> {
    let raw = serde_json::value::to_raw_value(params)
        .map_err(|err| ClientError::Encode(format!("params: {err}")))?;
    Ok((raw.get() != "null").then_some(raw))
}

/// Decodes a call's result into the type the caller expects.
///
/// # Errors
///
/// [`ClientError::Malformed`] when the result does not decode into `T`.
pub(crate) fn decode_result<T: DeserializeOwned>(raw: &RawValue) -> Result<T, ClientError> {
    serde_json::from_str(raw.get()).map_err(|err| ClientError::Malformed(format!("result: {err}")))
}
