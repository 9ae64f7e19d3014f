//! The client side: what generated stubs call through.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::value::RawValue;

use crate::message::call_text;
use crate::{ClientError, Id, Message, Methods};

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
/// clients, a [`Peer`](crate::Peer), or a [`Methods`] table in-process. Generated stubs
/// (`FooClient<C: Caller>`) work over any of them.
///
/// ```
/// use jrpc_runtime::{Caller, Methods, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut methods = Methods::new();
/// methods.register("neg", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(-x) }).unwrap();
/// let params = serde_json::value::to_raw_value(&[5]).ok();
/// let result = methods.call_raw("neg", params).await.unwrap();
/// assert_eq!(result.get(), "-5");
/// # });
/// ```
pub trait Caller: Send + Sync {
    /// Calls `method` and waits for its result.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] with the server's error object, or the transport's failure.
    fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<Box<RawValue>, ClientError>> + Send;

    /// Sends a notification; nothing comes back.
    ///
    /// # Errors
    ///
    /// The transport's failure.
    fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;
}

impl<C: Caller + ?Sized> Caller for &C {
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

impl<C: Caller + ?Sized> Caller for Arc<C> {
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

/// Ids for in-process calls; they only need to be distinct while a call runs.
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

/// In-process calls: the request goes through [`Methods::handle`] as text, exactly as it would
/// arrive over a transport, and handlers see [`Transport::InProcess`](crate::Transport::InProcess).
impl Caller for Methods {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = Id::from(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let body = call_text(Some(&id), method, params.as_deref());
        match self.handle(&body).await {
            Some(answer) => Message::parse(&answer)?.into_result(),
            None => Err(ClientError::Malformed("no answer to a call".into())),
        }
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let body = call_text(None, method, params.as_deref());
        self.handle(&body).await;
        Ok(())
    }
}
