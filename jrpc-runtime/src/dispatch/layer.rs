//! Runs call layers: tower layers around one call, run for every request and every element of a
//! batch, on every transport (each reaches the handlers through `Methods::start_body` or
//! `Methods::start`).
//!
//! A table with layers answers each call through them: `Methods::start` makes a [`Call`] of
//! the request (its method and params owned, its context stamped with its id) and runs the
//! stack; the innermost service, [`CallService`], decodes the params, runs the handler under the
//! table's deadline with panics contained, and answers an [`Answer`]. The answer goes back out
//! through the layers, and is written as any other. A table without layers never comes here.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Poll, ready};

use serde::Serialize;
use serde_json::value::RawValue;
use tower_layer::Layer;
use tower_service::Service;

use super::context::Context;
use super::handle::Started;
use super::methods::Methods;
use super::methods::{BoxCall, Failure, Output, Work};
use super::params::{FromParams as _, Params};
use super::stage::{Stage, panicked, run_call};
use crate::caller::BoxFuture;
use crate::wire::{ErrorCode, Id, RpcError, incoming, write};

/// Names the error a call layer may fail a call with (tower's `BoxError`); [`Methods::layer`] says
/// how each is answered.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Names the layered stack's futures.
type CallFuture = BoxFuture<'static, Result<Answer, BoxError>>;

/// Holds one call as a layer sees it: a request, or one element of a batch, before its params are
/// decoded.
///
/// It gives the method, the id (`None` for a notification), the raw params and the request's
/// [`Context`] (its transport, peer address, the request's or the upgrade's headers, and the
/// extensions the transport or a layer outside added); a layer adds extensions for the handler
/// with [`insert_extension`](Self::insert_extension).
pub struct Call {
    method: Box<str>,
    params: Option<Box<RawValue>>,
    /// The request's context, stamped with its id.
    ctx: Context,
    /// The table the innermost service answers from.
    methods: Methods,
    /// The table's deadline for the request (a batch's elements share one).
    deadline: Option<tokio::time::Instant>,
}

impl Call {
    /// Returns the method the call names.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Returns the call's id; `None` for a notification (whose answer nobody sees).
    pub fn id(&self) -> Option<&Id> {
        self.ctx.id()
    }

    /// Returns the params as they arrived (an array or an object); `None` when the request has
    /// none.
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }

    /// Returns what the handler will know of its request.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Adds a typed value to the call's context, for the handler (as
    /// [`Context::extension`](super::Context::extension)) and the layers inside this one; one
    /// value per type, replacing one of the same type. The transport's context is not changed:
    /// the value is this call's.
    pub fn insert_extension<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.ctx.insert_extension(value);
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.method)
            .field("id", &self.id())
            .field("params", &self.params)
            .field("transport", &self.ctx.transport())
            .finish_non_exhaustive()
    }
}

/// Holds what a call ended with, as the layers see it on the way out: its result, encoded, or an
/// error.
///
/// A layer answers in the call's place with [`Answer::error`] (or [`Answer::result`]). The
/// answer to a notification is never sent, whatever it is.
pub struct Answer(Reply);

enum Reply {
    /// [`RESULT_PREFIX`](write::RESULT_PREFIX), then the result: what the answer's text begins
    /// with, so that it is written without a copy.
    Result(Vec<u8>),
    Error(RpcError),
    /// The table's own error below the layers, reported there already.
    Reported(RpcError),
}

impl Answer {
    /// Returns an error answer, sent as it is: a layer may answer any code (unlike a handler, whose
    /// protocol codes are replaced by `-32603`).
    pub fn error(err: RpcError) -> Self {
        Self(Reply::Error(err))
    }

    /// Returns a successful answer with `value` as its result.
    ///
    /// # Errors
    ///
    /// serde's, when `value` cannot be encoded.
    pub fn result<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(write::RESULT_PREFIX);
        serde_json::to_writer(&mut out, value)?;
        Ok(Self(Reply::Result(out)))
    }

    /// Returns the error, when the call failed.
    pub fn as_error(&self) -> Option<&RpcError> {
        match &self.0 {
            Reply::Error(err) | Reply::Reported(err) => Some(err),
            Reply::Result(_) => None,
        }
    }

    /// Returns the result's JSON text, when the call succeeded.
    pub fn result_json(&self) -> Option<&str> {
        match &self.0 {
            Reply::Result(out) => std::str::from_utf8(&out[write::RESULT_PREFIX.len()..]).ok(),
            Reply::Error(_) | Reply::Reported(_) => None,
        }
    }

    /// Writes the answer where the request's goes: its result after `out`'s (taken whole when
    /// `out` is empty), or the error for the writer to answer.
    fn written(self, out: &mut Vec<u8>) -> Output {
        match self.0 {
            Reply::Result(result) if out.is_empty() => *out = result,
            Reply::Result(result) => out.extend_from_slice(&result),
            Reply::Error(err) => return Err(Failure::Answered(err)),
            Reply::Reported(err) => return Err(Failure::Reported(err)),
        }
        Ok(())
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Reply::Result(_) => f
                .debug_tuple("Answer::Result")
                .field(&self.result_json().unwrap_or_default())
                .finish(),
            Reply::Error(err) | Reply::Reported(err) => {
                f.debug_tuple("Answer::Error").field(err).finish()
            }
        }
    }
}

/// Answers a call as the service a layer wraps: the table's own answer to a call (params decoded,
/// the handler run under the table's deadline with panics contained), or, below a layer added
/// later, the layers added before it.
///
/// It never fails: every problem is an [`Answer::error`]. It is cheap to clone.
#[derive(Clone)]
pub struct CallService {
    /// The layers added before, when there are some.
    below: Option<Stack>,
}

impl std::fmt::Debug for CallService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallService")
            .field("layered", &self.below.is_some())
            .finish()
    }
}

impl Service<Call> for CallService {
    type Response = Answer;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Answer, BoxError>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), BoxError>> {
        match &mut self.below {
            Some(below) => below.0.poll_ready(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, call: Call) -> Self::Future {
        match &mut self.below {
            Some(below) => below.0.call(call),
            None => Box::pin(answer(call)),
        }
    }
}

/// Serves a layered service, its type erased.
trait Erased: Send + Sync {
    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), BoxError>>;
    fn call(&mut self, call: Call) -> CallFuture;
    fn clone_box(&self) -> Box<dyn Erased>;
}

impl<S> Erased for S
where
    S: Service<Call, Response = Answer> + Clone + Send + Sync + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), BoxError>> {
        Service::poll_ready(self, cx).map_err(Into::into)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let answering = Service::call(self, call);
        Box::pin(async move { answering.await.map_err(Into::into) })
    }

    fn clone_box(&self) -> Box<dyn Erased> {
        Box::new(self.clone())
    }
}

/// Holds the layers of a table, all of them, outermost first: each call runs on a clone.
pub(super) struct Stack(Box<dyn Erased>);

impl Clone for Stack {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl Methods {
    /// Adds a call layer: a [`tower_layer::Layer`] over the [`CallService`], which every request
    /// and every element of a batch goes through, on every transport, before its params are
    /// decoded. Each `layer` wraps what is there, so the layer added last runs first (as axum's
    /// `Router::layer`); a `tower::ServiceBuilder` stack is one layer, its first layer outermost.
    ///
    /// A layer may answer in the call's place ([`Answer::error`]), add extensions the handler
    /// reads ([`Call::insert_extension`]), wrap the call's future (deadlines, limits, timing),
    /// and see its [`Answer`]. An error it fails the call with is answered by its type:
    ///
    /// | the layer's error | the answer |
    /// | --- | --- |
    /// | an [`RpcError`] | that error, as it is |
    /// | tower's `timeout::error::Elapsed` | `-32603`, as the handler timeout, the reason reported to [`on_error`](Self::on_error) |
    /// | tower's `load_shed::error::Overloaded` | `-32000` "Server busy", as a connection's in-flight cap answers |
    /// | anything else | `-32603`, the error reported to [`on_error`](Self::on_error) |
    ///
    /// Each call runs on a clone of the stack, so a layer that keeps its state per clone (tower's
    /// `RateLimit`) limits nothing: share the state (tower's `ConcurrencyLimit` does;
    /// [`layers`](crate::layers) has rate and in-flight limits that do). The table's
    /// [`handler_timeout`](Self::handler_timeout) bounds the layers too. A table without layers
    /// costs nothing for them.
    ///
    /// ```
    /// use jrpc_runtime::{Answer, Call, ErrorCode, Methods, RpcError};
    /// use tower::service_fn;
    /// use tower::ServiceExt as _;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut methods = Methods::new();
    /// methods.register("one", &[], |(): (), _| async { Ok::<_, RpcError>(1) }).unwrap();
    /// // Refuses every method but `one`.
    /// methods.layer(tower::layer::layer_fn(|inner: jrpc_runtime::CallService| {
    ///     service_fn(move |call: Call| {
    ///         let inner = inner.clone();
    ///         async move {
    ///             if call.method() != "one" {
    ///                 return Ok(Answer::error(RpcError::new(ErrorCode::FORBIDDEN, "Forbidden")));
    ///             }
    ///             inner.oneshot(call).await
    ///         }
    ///     })
    /// }));
    /// let answer = methods.handle(r#"[{"jsonrpc":"2.0","method":"one","id":1},{"jsonrpc":"2.0","method":"two","id":2}]"#).await;
    /// assert_eq!(answer.as_deref(), Some(concat!(
    ///     r#"[{"jsonrpc":"2.0","result":1,"id":1},"#,
    ///     r#"{"jsonrpc":"2.0","error":{"code":-32003,"message":"Forbidden"},"id":2}]"#,
    /// )));
    /// # });
    /// ```
    pub fn layer<L>(&mut self, layer: L) -> &mut Self
    where
        L: Layer<CallService>,
        L::Service: Service<Call, Response = Answer> + Clone + Send + Sync + 'static,
        <L::Service as Service<Call>>::Error: Into<BoxError>,
        <L::Service as Service<Call>>::Future: Send + 'static,
    {
        let inner = self.inner_mut();
        let below = CallService {
            below: inner.layers.take(),
        };
        inner.layers = Some(Stack(Box::new(layer.layer(below))));
        self
    }

    /// Does what [`start_body`](Self::start_body) does, on a table with layers: the request read as
    /// usual (its params left raw for the layers), then started; `None` for what is not a request,
    /// and for one naming `except`. Kept out of line: tables without layers never come here.
    #[cold]
    pub(super) fn start_body_layered<'a>(
        &self,
        body: &'a str,
        ctx: &Context,
        except: Option<&str>,
    ) -> Option<Started<'a>> {
        let req = incoming::parse_request(body).ok()?;
        if except == Some(&*req.method) {
            return None;
        }
        Some(self.start(req, ctx))
    }

    /// Returns the call of a request on a table with layers: the stack run on a [`Call`] of it, its
    /// answer written as a handler's result is.
    pub(super) fn layered(
        &self,
        layers: &Stack,
        method: &str,
        params: Option<&RawValue>,
        ctx: Context,
    ) -> BoxCall {
        let call = Call {
            method: method.into(),
            params: params.map(ToOwned::to_owned),
            ctx,
            methods: self.clone(),
            deadline: self.deadline(),
        };
        Box::pin(Layered {
            service: layers.clone(),
            state: State::Ready(call),
        })
    }

    /// Returns the handler's call for `method`, started (its params decoded), or why there is none.
    fn begin(
        &self,
        method: &str,
        params: Option<&RawValue>,
        ctx: Context,
    ) -> Result<BoxCall, Failure> {
        let Some(entry) = self.inner.table.get(method) else {
            if self.serves_discover(method) {
                return self.discover(params).map_err(Failure::Answered);
            }
            let Some(fallback) = &self.inner.fallback else {
                return Err(Failure::Answered(RpcError::method_not_found()));
            };
            let params = Params::from_params(params, &[]).unwrap_or_default();
            return Ok(fallback(method.to_owned(), params, ctx));
        };
        match catch_unwind(AssertUnwindSafe(|| entry.handler.start(params, ctx))) {
            Ok(Ok(call)) => Ok(call),
            Ok(Err(err)) => Err(Failure::Answered(err)),
            Err(panic) => Err(Failure::Internal(panicked(&*panic))),
        }
    }
}

/// Returns the innermost service's answer to a call: the handler run under the deadline, panics
/// contained, failures answered as without layers.
async fn answer(call: Call) -> Result<Answer, BoxError> {
    let Call {
        method,
        params,
        ctx,
        methods,
        deadline,
    } = call;
    let id = ctx.id().cloned();
    let mut out = Vec::new();
    let output = match methods.begin(&method, params.as_deref(), ctx) {
        Ok(call) => run_call(&mut Stage::Running(call), &mut out, deadline).await,
        Err(failure) => Err(failure),
    };
    Ok(match output {
        Ok(()) => Answer(Reply::Result(out)),
        // Reported here, once: the layers above may look at the error, not report it again.
        Err(failure) => Answer(Reply::Reported(methods.failed(
            failure,
            &method,
            id.as_ref(),
        ))),
    })
}

/// Calls a request on a table with layers: the stack, ready, then called.
struct Layered {
    service: Stack,
    state: State,
}

enum State {
    /// Waiting for the stack to be ready.
    Ready(Call),
    Running(CallFuture),
    Done,
}

impl Work for Layered {
    fn poll_into(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<Output> {
        let this = self.get_mut();
        if let State::Ready(_) = this.state {
            if let Err(err) = ready!(this.service.0.poll_ready(cx)) {
                this.state = State::Done;
                return Poll::Ready(Err(refusal(err)));
            }
            if let State::Ready(call) = std::mem::replace(&mut this.state, State::Done) {
                this.state = State::Running(this.service.0.call(call));
            }
        }
        let State::Running(running) = &mut this.state else {
            return Poll::Ready(Ok(()));
        };
        let answered = ready!(running.as_mut().poll(cx));
        this.state = State::Done;
        Poll::Ready(match answered {
            Ok(answer) => answer.written(out),
            Err(err) => Err(refusal(err)),
        })
    }
}

/// How the error a layer failed a call with is answered (the table in [`Methods::layer`]).
fn refusal(err: BoxError) -> Failure {
    let err = match err.downcast::<RpcError>() {
        Ok(err) => return Failure::Answered(*err),
        Err(err) => err,
    };
    if err.is::<tower::timeout::error::Elapsed>() {
        return Failure::Internal("a layer's timeout elapsed".into());
    }
    if err.is::<tower::load_shed::error::Overloaded>() {
        return Failure::Answered(
            RpcError::new(ErrorCode::SERVER_ERROR, "Server busy")
                .with_data("a layer shed the call: too many in flight"),
        );
    }
    Failure::Internal(format!("a layer failed the call: {err}"))
}
