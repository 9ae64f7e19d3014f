//! Defines the client side: what generated stubs and applications call through.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tracing::Instrument as _;

use crate::error::ClientError;
use crate::transport::Transport;
use crate::wire::write::call_text;
use crate::wire::{Id, Message};

/// Holds the results of a batch: one per call, in the order the calls were given.
pub type BatchResults = Vec<Result<Box<RawValue>, ClientError>>;

/// Says how a stub sends its parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParamEncoding {
    /// An array, in declaration order (the default: every server takes it).
    #[default]
    Positional,
    /// An object keyed by the parameters' wire names; `None` values are left out.
    Named,
}

/// Sends calls and notifications to a JSON-RPC server: implemented by the HTTP and WebSocket
/// clients, a [`Peer`](crate::peer::Peer), or a [`Methods`](crate::dispatch::Methods) table in-process.
/// Generated stubs (`FooClient<C: Caller>`) work over any of them.
///
/// An implementation provides the two raw methods; [`call`](Caller::call) and
/// [`notify`](Caller::notify), which encode the params and decode the result, come with the
/// trait, so they are written once for every caller, and so does
/// [`batch_raw`](Caller::batch_raw), which a transport with batches of its own replaces. Bring
/// the trait into scope to use them.
///
/// The trait is not dyn-compatible (its methods are generic and return `impl Future`); to hold
/// any caller behind one type, use [`DynCaller`]: `Arc<dyn DynCaller>` is a `Caller`.
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

    /// Sends several calls and notifications together, and returns one result per **call**
    /// (notifications have none), in the order the calls were given. Typed batches
    /// ([`Batch`](crate::batch::Batch), and a generated stub's `client.batch()`) send through it.
    ///
    /// The HTTP client sends one JSON-RPC batch (one request); in-process, the table answers
    /// one batch. This provided version, which a [`Peer`](crate::peer::Peer) (and so a WebSocket or
    /// Unix socket client) uses, sends the elements as separate messages, queued together so
    /// they leave in one write, and waits for every answer: the other side need not take
    /// batches (MCP and ACP servers refuse them), and each call keeps its own timeout.
    ///
    /// # Errors
    ///
    /// The whole batch fails when the exchange does; each call's own failure is in its entry.
    fn batch_raw(
        &self,
        calls: Vec<BatchCall>,
    ) -> impl Future<Output = Result<BatchResults, ClientError>> + Send {
        async move {
            // A notification that cannot be sent fails the batch: the connection is gone.
            let sent = calls.into_iter().map(|entry| async move {
                if entry.notification {
                    self.notify_raw(&entry.method, entry.params)
                        .await
                        .map(|()| None)
                } else {
                    Ok(Some(self.call_raw(&entry.method, entry.params).await))
                }
            });
            let results = futures_util::future::join_all(sent)
                .await
                .into_iter()
                .collect::<Result<Vec<_>, ClientError>>()?;
            Ok(results.into_iter().flatten().collect())
        }
    }
}

/// Holds one element of a batch: a call or a notification, its params already encoded.
#[derive(Clone, Debug)]
pub struct BatchCall {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
    pub(crate) notification: bool,
}

impl BatchCall {
    /// Returns a call, answered in the batch's results.
    pub fn call(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Self {
            method: method.into(),
            params,
            notification: false,
        }
    }

    /// Returns a notification: sent, never answered, and given no entry in the batch's results.
    pub fn notification(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Self {
            method: method.into(),
            params,
            notification: true,
        }
    }

    /// Returns whether this element is a notification.
    pub fn is_notification(&self) -> bool {
        self.notification
    }
}

/// Names the boxed future of a [`DynCaller`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Serves as the dyn-compatible form of [`Caller`]: every caller is one, and `dyn DynCaller`
/// (behind an `Arc` or a `Box`) is a [`Caller`] again, so one type holds any transport.
///
/// ```
/// use std::sync::Arc;
/// use jrpc_runtime::{Caller as _, DynCaller, Methods, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut methods = Methods::new();
/// methods.register("neg", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(-x) }).unwrap();
/// // An HTTP client, a WebSocket client, a `Peer`... any of them fits here.
/// let caller: Arc<dyn DynCaller> = Arc::new(methods);
/// let neg: i64 = caller.call("neg", [5]).await.unwrap();
/// assert_eq!(neg, -5);
/// # });
/// ```
pub trait DynCaller: Send + Sync {
    /// Calls [`Caller::call_raw`], its future boxed.
    fn dyn_call_raw<'a>(
        &'a self,
        method: &'a str,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'a, Result<Box<RawValue>, ClientError>>;

    /// Calls [`Caller::notify_raw`], its future boxed.
    fn dyn_notify_raw<'a>(
        &'a self,
        method: &'a str,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'a, Result<(), ClientError>>;

    /// Calls [`Caller::batch_raw`], its future boxed.
    fn dyn_batch_raw(
        &self,
        calls: Vec<BatchCall>,
    ) -> BoxFuture<'_, Result<BatchResults, ClientError>>;
}

impl<C: Caller> DynCaller for C {
    fn dyn_call_raw<'a>(
        &'a self,
        method: &'a str,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'a, Result<Box<RawValue>, ClientError>> {
        Box::pin(self.call_raw(method, params))
    }

    fn dyn_notify_raw<'a>(
        &'a self,
        method: &'a str,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(self.notify_raw(method, params))
    }

    fn dyn_batch_raw(
        &self,
        calls: Vec<BatchCall>,
    ) -> BoxFuture<'_, Result<BatchResults, ClientError>> {
        Box::pin(self.batch_raw(calls))
    }
}

impl Caller for dyn DynCaller + '_ {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        self.dyn_call_raw(method, params).await
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        self.dyn_notify_raw(method, params).await
    }

    async fn batch_raw(&self, calls: Vec<BatchCall>) -> Result<BatchResults, ClientError> {
        self.dyn_batch_raw(calls).await
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

            fn batch_raw(
                &self,
                calls: Vec<BatchCall>,
            ) -> impl Future<Output = Result<BatchResults, ClientError>> + Send {
                (**self).batch_raw(calls)
            }
        }
    )*};
}

forward_caller!(&C, Arc<C>, Box<C>);

/// Runs one outgoing call in a `call` span (`method`, `id`, `transport`, and its `outcome` once
/// answered), with a DEBUG line at its end: what every client's `call_raw` goes through. While
/// DEBUG is off for this crate it costs one cached check.
pub(crate) async fn traced(
    method: &str,
    id: &(dyn fmt::Display + Sync),
    transport: Transport,
    call: impl Future<Output = Result<Box<RawValue>, ClientError>>,
) -> Result<Box<RawValue>, ClientError> {
    let span = tracing::debug_span!(
        "call",
        method,
        id = %id,
        transport = %transport,
        outcome = tracing::field::Empty,
    );
    if span.is_disabled() {
        return call.await;
    }
    let started = std::time::Instant::now();
    let result = call.instrument(span.clone()).await;
    let outcome: std::borrow::Cow<'_, str> = match &result {
        Ok(_) => "ok".into(),
        Err(ClientError::Failed(err)) => format!("error {}", err.code()).into(),
        Err(ClientError::TimedOut { .. }) => "timed out".into(),
        Err(ClientError::Closed { .. }) => "closed".into(),
        Err(_) => "failed".into(),
    };
    span.record("outcome", &*outcome);
    let _entered = span.enter();
    tracing::debug!(elapsed = ?started.elapsed(), outcome = %outcome, "call answered");
    result
}

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

/// Writes a batch's body, and returns the ids of its calls in order (notifications get none).
pub(crate) fn batch_body(
    calls: &[BatchCall],
    mut next_id: impl FnMut() -> Id,
) -> (String, Vec<Id>) {
    let mut ids = Vec::new();
    let mut body = String::from("[");
    for (n, entry) in calls.iter().enumerate() {
        if n > 0 {
            body.push(',');
        }
        let id = (!entry.notification).then(&mut next_id);
        body.push_str(&call_text(
            id.as_ref(),
            &entry.method,
            entry.params.as_deref(),
        ));
        ids.extend(id);
    }
    body.push(']');
    (body, ids)
}

/// A received answer as a client takes it: this sits with the caller, above the wire, because
/// its errors are a client's.
impl Message {
    /// Returns the answer's outcome, for a response or an error response.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] for an error response, [`ClientError::Malformed`] for a message that
    /// is not an answer.
    pub fn into_result(self) -> Result<Box<RawValue>, ClientError> {
        match self {
            Self::Response { result, .. } => Ok(result),
            Self::ErrorResponse { error, .. } => Err(ClientError::from(error)),
            _ => Err(ClientError::Malformed("expected a response".into())),
        }
    }
}

/// Matches a batch's answer to its calls by id: one result per call, in the calls' order.
///
/// # Errors
///
/// [`ClientError::Failed`] when the batch was answered with one error object (refused, over a
/// cap, not read); [`ClientError::Malformed`] when the answer is not a list of responses. A call
/// the answer leaves out gets [`ClientError::Malformed`] in its own entry.
pub(crate) fn match_answers(ids: Vec<Id>, text: &str) -> Result<BatchResults, ClientError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    if !text.trim_start().starts_with('[') {
        return Err(match Message::parse(text) {
            Ok(Message::ErrorResponse { error, .. }) => ClientError::from(error),
            Ok(_) => ClientError::Malformed("a batch was answered with one response".into()),
            Err(_) if text.trim().is_empty() => {
                ClientError::Malformed(format!("no answer to a batch of {} calls", ids.len()))
            }
            Err(err) => err.into(),
        });
    }
    let mut answers: std::collections::HashMap<Id, Message> = std::collections::HashMap::new();
    for message in Message::parse_many(text)? {
        match &message {
            Message::Response { id, .. } | Message::ErrorResponse { id, .. } => {
                answers.insert(id.clone(), message);
            }
            _ => {
                return Err(ClientError::Malformed(
                    "a batch answer holds a request".into(),
                ));
            }
        }
    }
    Ok(ids
        .into_iter()
        .map(|id| match answers.remove(&id) {
            Some(message) => message.into_result(),
            None => Err(ClientError::Malformed(format!(
                "the batch answer has nothing for id {id}"
            ))),
        })
        .collect())
}
