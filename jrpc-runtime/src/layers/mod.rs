//! Provides call layers to put on a table with [`Methods::layer`](crate::dispatch::Methods::layer):
//! who may call what, and how many calls a peer or a method may make.
//!
//! | layer | what it does | its refusal |
//! | --- | --- | --- |
//! | [`Authorize`] | lets a call through or not, by its method and [`Context`](crate::dispatch::Context) (an identity the transport's authentication put there) | `-32003` "Forbidden", `data` `{"method": ...}` |
//! | [`RateLimit`] | at most so many calls per period, per key (a token bucket, on Tokio's clock) | `-32000` "Rate limited", `data` `{"limit": "rate", "per": ..., "retry_after_ms": ...}` |
//! | [`InFlightLimit`] | at most so many calls running at once, per key | `-32000` "Server busy", `data` `{"limit": "in_flight", "per": ..., "max": ...}` |
//! | [`Checked`] with a [`Check`] of your own | lets a call through or answers it with the error your check gives | yours |
//!
//! A limit counts calls by a key: the peer's IP address ([`per_peer`](RateLimit::per_peer), the
//! default), the method ([`per_method`](RateLimit::per_method)), or what a function of the call
//! gives ([`per`](RateLimit::per): an identity's name, a tenant). Calls whose transport has no
//! peer address (stdio, Unix sockets, in-process) share one key per peer. Each limit is shared by
//! every clone of the layer and every connection of the table (tower's `RateLimit` keeps its
//! state per clone, which a table's layers are per call). Keys come from outside, so the state is
//! bounded: a rate limit forgets a key whose bucket is full again, and keeps at most
//! [`max_keys`](RateLimit::max_keys) (default 10 000); an in-flight limit keeps a key only while
//! one of its calls runs.
//!
//! The refusals answer at once: a call over a limit is not queued. Every piece here depends on
//! the dispatcher alone ([`Methods`](crate::Methods), [`Call`]), and works the same on every
//! transport.

mod authorize;
mod checked;
mod in_flight;
mod rate;

pub use authorize::{Authorize, Authorized};
pub use checked::{Check, Checked};
pub use in_flight::{InFlightLimit, InFlightLimited};
pub use rate::{RateLimit, RateLimited};

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use crate::dispatch::Call;

/// Feeds a call's key to a hasher.
type KeyFn = dyn Fn(&Call, &mut dyn Hasher) + Send + Sync;

/// Makes the key a limit counts a call by, and the name its refusals give it (`per`).
#[derive(Clone)]
struct Keyer {
    name: &'static str,
    key: Arc<KeyFn>,
    /// Random per limit: two keys share a count only if their 64-bit hashes collide, which no
    /// caller can aim for.
    hasher: RandomState,
}

impl Keyer {
    /// By the peer's IP address; calls without one share a key.
    fn peer() -> Self {
        Self::new("peer", |call| {
            call.context().peer_addr().map(|addr| addr.ip())
        })
    }

    /// By method.
    fn method() -> Self {
        Self::new("method", |call| call.method().to_owned())
    }

    fn new<K: Hash>(name: &'static str, key: impl Fn(&Call) -> K + Send + Sync + 'static) -> Self {
        Self {
            name,
            key: Arc::new(move |call, mut hasher| key(call).hash(&mut hasher)),
            hasher: RandomState::new(),
        }
    }

    /// Returns the call's key, hashed.
    fn of(&self, call: &Call) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        (self.key)(call, &mut hasher);
        hasher.finish()
    }
}

impl std::fmt::Debug for Keyer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The setters of what a limit counts calls by, for a type with a `keyer: Keyer`.
macro_rules! key_setters {
    () => {
        /// Counts calls by the peer's IP address (the default); calls without one (stdio, Unix
        /// sockets, in-process) share one key.
        #[must_use]
        pub fn per_peer(mut self) -> Self {
            self.keyer = super::Keyer::peer();
            self
        }

        /// Counts calls by method.
        #[must_use]
        pub fn per_method(mut self) -> Self {
            self.keyer = super::Keyer::method();
            self
        }

        /// Counts calls by what `key` makes of each (an identity from the context, a
        /// tenant...); `name` is what refusals call the key (`per`).
        #[must_use]
        pub fn per<K: std::hash::Hash>(
            mut self,
            name: &'static str,
            key: impl Fn(&Call) -> K + Send + Sync + 'static,
        ) -> Self {
            self.keyer = super::Keyer::new(name, key);
            self
        }
    };
}
use key_setters;

/// Locks `mutex`, through a poisoning (the state a panicking holder left is still counts).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
