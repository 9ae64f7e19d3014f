//! Limits the calls per period, per key, with [`RateLimit`]: a token bucket on Tokio's clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tower_layer::Layer;

use super::checked::{Check, Checked};
use super::{Keyer, lock};
use crate::dispatch::Call;
use crate::wire::{ErrorCode, RpcError};

/// Acts as a call layer that lets each key (by default, each peer's IP address) make `calls` calls
/// per `per`, in bursts of up to `calls` (or [`burst`](Self::burst)); a call past that is answered
/// `-32000` "Rate limited" at once, with `data`
/// `{"limit": "rate", "per": "peer", "retry_after_ms": N}`, N the milliseconds until a call of
/// that key would be taken.
///
/// The bucket is a generic cell rate algorithm: one instant per key, refilled continuously (a
/// call every `per / calls`). Time is Tokio's ([`tokio::time::Instant`]), so tests run it on
/// paused time. All clones of the layer share one set of buckets. A key is forgotten once its
/// bucket is full again, and at most [`max_keys`](Self::max_keys) are kept: past that the one
/// nearest to full is forgotten (it gets a full bucket back).
///
/// `calls` of zero refuses every call; `per` of zero limits nothing.
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::layers::RateLimit;
/// use jrpc_runtime::Methods;
///
/// let mut methods = Methods::new();
/// // 100 calls a second per peer, in bursts of up to 20; and 1 000 a second of `search` in all.
/// methods
///     .layer(RateLimit::new(100, Duration::from_secs(1)).burst(20))
///     .layer(RateLimit::new(1000, Duration::from_secs(1)).per("search", |call| call.method() == "search"));
/// ```
#[derive(Clone, Debug)]
pub struct RateLimit {
    calls: u32,
    per: Duration,
    burst: u32,
    max_keys: usize,
    keyer: Keyer,
    buckets: Arc<Mutex<Buckets>>,
}

/// Each key's theoretical arrival time: the instant its bucket is full again.
type Buckets = HashMap<u64, Instant>;

impl RateLimit {
    /// Allows `calls` calls per `per` for each peer's IP address, in bursts of up to `calls`.
    pub fn new(calls: u32, per: Duration) -> Self {
        Self {
            calls,
            per,
            burst: calls,
            max_keys: 10_000,
            keyer: Keyer::peer(),
            buckets: Arc::default(),
        }
    }

    super::key_setters!();

    /// Sets how many calls a key may make at once after a pause (default: `calls`); at least one.
    #[must_use]
    pub fn burst(mut self, calls: u32) -> Self {
        self.burst = calls.max(1);
        self
    }

    /// Sets how many keys are kept at most (default 10 000); at least one.
    #[must_use]
    pub fn max_keys(mut self, keys: usize) -> Self {
        self.max_keys = keys.max(1);
        self
    }

    /// Takes a call of key `key` at `now`, or says how long until one would be taken (`None`:
    /// never, at a rate of zero).
    fn admit(&self, key: u64, now: Instant) -> Result<(), Option<Duration>> {
        if self.calls == 0 {
            return Err(None);
        }
        let interval = self.per / self.calls;
        if interval.is_zero() {
            return Ok(());
        }
        // A burst of `burst` calls at once leaves the bucket this far ahead of now.
        let tolerance = interval.saturating_mul(self.burst.saturating_sub(1));
        let mut buckets = lock(&self.buckets);
        let known = buckets.get(&key).copied();
        let due = known.map_or(now, |due| due.max(now));
        let ahead = due - now;
        if ahead > tolerance {
            return Err(Some(ahead - tolerance));
        }
        if known.is_none() && buckets.len() >= self.max_keys {
            make_room(&mut buckets, now, self.max_keys);
        }
        buckets.insert(key, due + interval);
        Ok(())
    }
}

/// Forgets the keys whose buckets are full again, and if that frees nothing, the one nearest to
/// full: room for one more key.
#[cold]
fn make_room(buckets: &mut Buckets, now: Instant, max: usize) {
    buckets.retain(|_, due| *due > now);
    if buckets.len() < max {
        return;
    }
    if let Some(nearest) = buckets
        .iter()
        .min_by_key(|(_, due)| **due)
        .map(|(key, _)| *key)
    {
        buckets.remove(&nearest);
    }
}

impl<S> Layer<S> for RateLimit {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        Checked::new(inner, self.clone())
    }
}

impl Check for RateLimit {
    fn check(&mut self, call: &Call) -> Result<(), RpcError> {
        let key = self.keyer.of(call);
        self.admit(key, Instant::now())
            .map_err(|wait| limited(self.keyer.name, wait))
    }
}

/// Names the service [`RateLimit`] makes of the one it wraps.
pub type RateLimited<S> = Checked<S, RateLimit>;

/// `-32000` "Rate limited", saying which limit and when to retry.
fn limited(per: &str, wait: Option<Duration>) -> RpcError {
    #[derive(serde::Serialize)]
    struct Data<'a> {
        limit: &'static str,
        per: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u128>,
    }
    let data = Data {
        limit: "rate",
        per,
        // Rounded up: a client that waits this long is taken.
        retry_after_ms: wait.map(|wait| wait.as_nanos().div_ceil(1_000_000)),
    };
    RpcError::new(ErrorCode::SERVER_ERROR, "Rate limited").with_data(&data)
}
