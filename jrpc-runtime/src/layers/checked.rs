//! Implements the service of a layer that answers some calls in their handler's place: a [`Check`]
//! decides, for each call, whether it goes on.

use std::task::Poll;

use futures_util::future::Either;
use tower_service::Service;

use crate::dispatch::{Answer, Call};
use crate::wire::RpcError;

/// Decides whether a call goes on to its handler, or is answered with an error in its place:
/// what [`Authorize`](super::Authorize) and [`RateLimit`](super::RateLimit) do, and what a check
/// of your own does in a [`Checked`] service.
pub trait Check {
    /// Lets `call` through, or gives the error it is answered with.
    ///
    /// # Errors
    ///
    /// The error that answers the call in its handler's place.
    fn check(&mut self, call: &Call) -> Result<(), RpcError>;
}

/// Wraps a service so that each call passes a [`Check`] first: a call it refuses is answered at
/// once, and the service never sees it.
///
/// ```
/// use jrpc_runtime::layers::{Check, Checked};
/// use jrpc_runtime::{Call, Methods, RpcError};
///
/// /// Refuses every call of a method whose name starts with `admin.`.
/// #[derive(Clone)]
/// struct NoAdmin;
///
/// impl Check for NoAdmin {
///     fn check(&mut self, call: &Call) -> Result<(), RpcError> {
///         if call.method().starts_with("admin.") {
///             return Err(RpcError::new(-32003, "Forbidden"));
///         }
///         Ok(())
///     }
/// }
///
/// let mut methods = Methods::new();
/// methods.layer(tower::layer::layer_fn(|inner| Checked::new(inner, NoAdmin)));
/// ```
#[derive(Clone, Debug)]
pub struct Checked<S, C> {
    inner: S,
    check: C,
}

impl<S, C> Checked<S, C> {
    /// Returns `inner` with each call checked by `check` first.
    pub fn new(inner: S, check: C) -> Self {
        Self { inner, check }
    }
}

impl<S, C> Service<Call> for Checked<S, C>
where
    S: Service<Call, Response = Answer>,
    C: Check,
{
    type Response = Answer;
    type Error = S::Error;
    type Future = Either<std::future::Ready<Result<Answer, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        match self.check.check(&call) {
            Ok(()) => Either::Right(self.inner.call(call)),
            Err(err) => Either::Left(std::future::ready(Ok(Answer::error(err)))),
        }
    }
}
