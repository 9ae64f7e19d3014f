//! HTTP's hold on the server's byte budget: a request's body waits for its bytes (an answer
//! counts its own until hyper has written it, with [`ServerBudget::hold`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::peer::shared_budget::{ServerBudget, Waiting};
use crate::server::budget::Held;

impl ServerBudget {
    /// Waits until `ready` holds, looked at each time bytes are given back.
    async fn wait(&self, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = Waiting(&self.waiting);
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so that bytes given back in between are not missed.
            freed.as_mut().enable();
            if ready() {
                return;
            }
            freed.await;
        }
    }

    /// Waits until `bytes` fit, then holds them until the [`Held`] is dropped.
    pub(crate) async fn take(self: &Arc<Self>, bytes: usize) -> Held {
        self.wait(|| self.try_take(bytes)).await;
        self.held_for(bytes)
    }

    /// Waits until the budget is not full (at once if it is not).
    #[cfg_attr(not(test), allow(dead_code, reason = "the tests wait for room"))]
    pub(crate) async fn room(&self) {
        self.wait(|| !self.is_full()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_budget_makes_takers_wait_until_bytes_are_given_back() {
        let budget = ServerBudget::new(100);
        let first = budget.take(80).await;
        let waiting = tokio::spawn({
            let budget = Arc::clone(&budget);
            async move { budget.take(50).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        let second = waiting.await.unwrap();
        assert_eq!(budget.held(), 50);
        drop(second);
        // Alone, more than the budget goes.
        let whole = budget.take(500).await;
        assert!(budget.is_full());
        drop(whole);
        assert_eq!(budget.held(), 0);
        budget.room().await;
    }
}
