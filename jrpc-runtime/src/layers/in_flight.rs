//! Limits the calls running at once, per key, with [`InFlightLimit`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use tower_layer::Layer;
use tower_service::Service;

use super::{Keyer, lock};
use crate::caller::BoxFuture;
use crate::dispatch::{Answer, Call};
use crate::wire::{ErrorCode, RpcError};

/// Acts as a call layer that lets each key (by default, each peer's IP address) have at most `max`
/// calls running at once; a call past that is answered `-32000` "Server busy" at once (as a
/// connection's in-flight cap answers), with `data` `{"limit": "in_flight", "per": "peer",
/// "max": N}`. A call counts from the moment the layer lets it through until its answer is made
/// or its future dropped (a cancelled call, a timeout outside).
///
/// All clones of the layer share the counts. A key is kept only while one of its calls runs.
/// To queue calls rather than refuse them, use tower's `ConcurrencyLimit` (one limit for all).
///
/// ```
/// use jrpc_runtime::layers::InFlightLimit;
/// use jrpc_runtime::Methods;
///
/// let mut methods = Methods::new();
/// // 8 calls at once per peer, and 2 `export` calls at once in all.
/// methods
///     .layer(InFlightLimit::new(8))
///     .layer(InFlightLimit::new(2).per("export", |call| call.method() == "export"));
/// ```
#[derive(Clone, Debug)]
pub struct InFlightLimit {
    max: usize,
    keyer: Keyer,
    counts: Arc<Mutex<Counts>>,
}

/// Each key's calls running, for the keys that have some.
type Counts = HashMap<u64, usize>;

impl InFlightLimit {
    /// Allows at most `max` calls at once for each peer's IP address (zero refuses every call).
    pub fn new(max: usize) -> Self {
        Self {
            max,
            keyer: Keyer::peer(),
            counts: Arc::default(),
        }
    }

    super::key_setters!();

    /// Counts a call of key `key` in, unless `max` of them run.
    fn admit(&self, key: u64) -> Option<Running> {
        let mut counts = lock(&self.counts);
        let count = counts.entry(key).or_insert(0);
        if *count >= self.max {
            if *count == 0 {
                counts.remove(&key);
            }
            return None;
        }
        *count += 1;
        Some(Running {
            counts: Arc::clone(&self.counts),
            key,
        })
    }
}

/// A call counted in: counted out when dropped.
struct Running {
    counts: Arc<Mutex<Counts>>,
    key: u64,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        if let Some(count) = counts.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

impl<S> Layer<S> for InFlightLimit {
    type Service = InFlightLimited<S>;

    fn layer(&self, inner: S) -> InFlightLimited<S> {
        InFlightLimited {
            inner,
            limit: self.clone(),
        }
    }
}

/// Serves as the service [`InFlightLimit`] makes of the one it wraps.
#[derive(Clone, Debug)]
pub struct InFlightLimited<S> {
    inner: S,
    limit: InFlightLimit,
}

impl<S> Service<Call> for InFlightLimited<S>
where
    S: Service<Call, Response = Answer>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Answer;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Answer, S::Error>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let Some(running) = self.limit.admit(self.limit.keyer.of(&call)) else {
            let busy = Answer::error(busy(self.limit.keyer.name, self.limit.max));
            return Box::pin(std::future::ready(Ok(busy)));
        };
        let answering = self.inner.call(call);
        Box::pin(async move {
            let answer = answering.await;
            drop(running);
            answer
        })
    }
}

/// `-32000` "Server busy", saying which limit.
fn busy(per: &str, max: usize) -> RpcError {
    #[derive(serde::Serialize)]
    struct Data<'a> {
        limit: &'static str,
        per: &'a str,
        max: usize,
    }
    let data = Data {
        limit: "in_flight",
        per,
        max,
    };
    RpcError::new(ErrorCode::SERVER_ERROR, "Server busy").with_data(&data)
}
