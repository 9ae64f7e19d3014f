//! Decides who may call which method, with [`Authorize`].

use std::sync::Arc;

use tower_layer::Layer;

use super::checked::{Check, Checked};
use crate::dispatch::{Call, Context};
use crate::wire::{ErrorCode, RpcError};

type Allow = dyn Fn(&str, &Context) -> bool + Send + Sync;

/// Acts as a call layer that lets each call through, or answers it `-32003` "Forbidden" with `data`
/// `{"method": <the method>}`, as `allow` decides from the method and the call's
/// [`Context`] (typically an identity the transport's authentication put there). It decides for
/// each call on its own: in a batch, the elements it refuses are answered so and the others run.
///
/// ```
/// use jrpc_runtime::layers::Authorize;
/// use jrpc_runtime::{Context, Methods, RpcError};
///
/// #[derive(Clone)]
/// enum Access { Full, Read }
///
/// let mut methods = Methods::new();
/// methods.register("read", &[], |(): (), _| async { Ok::<_, RpcError>(1) })?;
/// methods.register("write", &[], |(): (), _| async { Ok::<_, RpcError>(2) })?;
/// methods.layer(Authorize::new(|method, ctx: &Context| match ctx.extension::<Access>() {
///     Some(Access::Full) => true,
///     Some(Access::Read) => method == "read",
///     None => false,
/// }));
/// # let ctx = Context::new(jrpc_runtime::Transport::Http).with_extension(Access::Read);
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// #     let answer = methods.handle_in(r#"{"jsonrpc":"2.0","method":"write","id":1}"#, &ctx).await;
/// #     assert_eq!(answer.as_deref(), Some(r#"{"jsonrpc":"2.0","error":{"code":-32003,"message":"Forbidden","data":{"method":"write"}},"id":1}"#));
/// # });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Authorize {
    allow: Arc<Allow>,
}

impl Authorize {
    /// Lets a call through when `allow(method, ctx)` is true.
    pub fn new<F>(allow: F) -> Self
    where
        F: Fn(&str, &Context) -> bool + Send + Sync + 'static,
    {
        Self {
            allow: Arc::new(allow),
        }
    }
}

impl std::fmt::Debug for Authorize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorize").finish_non_exhaustive()
    }
}

impl<S> Layer<S> for Authorize {
    type Service = Authorized<S>;

    fn layer(&self, inner: S) -> Authorized<S> {
        Checked::new(inner, self.clone())
    }
}

impl Check for Authorize {
    fn check(&mut self, call: &Call) -> Result<(), RpcError> {
        if (self.allow)(call.method(), call.context()) {
            return Ok(());
        }
        Err(forbidden(call.method()))
    }
}

/// Names the service [`Authorize`] makes of the one it wraps.
pub type Authorized<S> = Checked<S, Authorize>;

/// `-32003` "Forbidden", naming the method.
fn forbidden(method: &str) -> RpcError {
    #[derive(serde::Serialize)]
    struct Data<'a> {
        method: &'a str,
    }
    RpcError::new(ErrorCode::FORBIDDEN, "Forbidden").with_data(&Data { method })
}
