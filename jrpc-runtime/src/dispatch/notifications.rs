//! Implements the client half of topics: the notifications of one method, as a typed stream.

use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll};

use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::methods::Methods;
use super::params::Whole;
use crate::error::RegisterError;

/// Streams the notifications of one method a server sends, each decoded into `T`: a `Stream` (and
/// [`next`](Self::next)) that ends when the connection does. Made by
/// [`Methods::notifications`].
///
/// ```
/// use std::num::NonZeroUsize;
/// use jrpc_runtime::Methods;
///
/// #[derive(serde::Deserialize)]
/// struct Price { symbol: String, price: f64 }
///
/// let mut handlers = Methods::new();
/// let prices = handlers.notifications::<Price>("price", NonZeroUsize::new(64).unwrap()).unwrap();
/// // Connect with the handlers (`Client::builder(url).methods(handlers)`, `WsClient::connect`),
/// // then `while let Some(price) = prices.next().await { ... }`.
/// # drop(prices);
/// ```
#[derive(Debug)]
pub struct Notifications<T> {
    rx: mpsc::Receiver<T>,
    missed: Arc<AtomicU64>,
}

impl<T> Notifications<T> {
    /// Returns the next notification; `None` once the connection (and every copy of the table that
    /// registered it) is gone.
    pub async fn next(&mut self) -> Option<T> {
        self.rx.recv().await
    }

    /// Returns how many notifications were dropped because the stream was full (nobody read it fast
    /// enough).
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

impl<T> futures_util::Stream for Notifications<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<T>> {
        self.rx.poll_recv(cx)
    }
}

impl Methods {
    /// Registers the notification `method` and returns its stream: each time the other side
    /// sends it, the whole `params` decode into `T` and the value is queued, up to `capacity`
    /// waiting.
    ///
    /// A full stream drops the newest notification (counted in
    /// [`Notifications::missed`], and logged at WARN) rather than stop reading the connection:
    /// answers to calls on it would wait behind a stream nobody reads. Params that do not
    /// decode into `T` are logged at WARN and skipped, as for every notification.
    ///
    /// # Errors
    ///
    /// [`RegisterError`] when the name is taken or reserved.
    pub fn notifications<T: DeserializeOwned + Send + 'static>(
        &mut self,
        method: &str,
        capacity: NonZeroUsize,
    ) -> Result<Notifications<T>, RegisterError> {
        // tokio's channel takes at most `MAX_PERMITS` (usize::MAX >> 3); it allocates as it
        // fills, so a larger capacity is that bound in practice.
        let capacity = capacity.get().min(tokio::sync::Semaphore::MAX_PERMITS);
        let (tx, rx) = mpsc::channel(capacity);
        let missed = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&missed);
        let name = method.to_owned();
        self.register_notification(method, &["params"], move |Whole(value): Whole<T>, _| {
            if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(value) {
                counter.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(method = %name, "notification stream full; dropped one");
            }
            std::future::ready(())
        })?;
        Ok(Notifications { rx, missed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_full_stream_drops_the_newest_and_counts_it() {
        runtime().block_on(async {
            let mut methods = Methods::new();
            let mut ticks = methods
                .notifications::<[u32; 1]>("tick", NonZeroUsize::new(2).unwrap())
                .unwrap();
            for n in 1..=3 {
                let body = format!(r#"{{"jsonrpc":"2.0","method":"tick","params":[{n}]}}"#);
                assert_eq!(methods.handle(&body).await, None);
            }
            // Params that do not decode are skipped, not counted as missed.
            let bad = r#"{"jsonrpc":"2.0","method":"tick","params":["x"]}"#;
            assert_eq!(methods.handle(bad).await, None);
            assert_eq!(ticks.missed(), 1);
            assert_eq!(ticks.next().await, Some([1]));
            assert_eq!(ticks.next().await, Some([2]));
            drop(methods);
            assert_eq!(ticks.next().await, None);
        });
    }

    #[test]
    fn the_name_is_registered_once() {
        let mut methods = Methods::new();
        let capacity = NonZeroUsize::new(1).unwrap();
        let _ticks = methods.notifications::<u32>("tick", capacity).unwrap();
        assert!(methods.notifications::<u32>("tick", capacity).is_err());
    }
}
