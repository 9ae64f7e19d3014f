//! Futures a loop waits on in every turn, polled again only once they have woken.
//!
//! A connection's loop selects over many sources, and every turn polls each one that is not
//! ready. Some are dear to poll even when nothing happened: a `Notify` or a cancellation token
//! takes a lock per poll. [`Woken`] gives the wrapped future a waker of its own and, in a turn
//! where that waker was not called, answers `Pending` at the cost of two atomic operations.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// A future polled only in the turns after its own waker was called (and in the first).
pub(crate) struct Woken<F> {
    inner: Pin<Box<F>>,
    flag: Arc<Flag>,
    waker: Waker,
}

/// Whether the inner future has woken since it was last polled, and whom to wake then.
struct Flag {
    woken: AtomicBool,
    outer: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.outer.wake();
    }
}

impl<F: Future> Woken<F> {
    pub(crate) fn new(inner: F) -> Self {
        let flag = Arc::new(Flag {
            woken: AtomicBool::new(true),
            outer: AtomicWaker::new(),
        });
        Self {
            inner: Box::pin(inner),
            waker: Waker::from(Arc::clone(&flag)),
            flag,
        }
    }
}

#[cfg(feature = "http")]
impl<F> Woken<F> {
    /// The inner future, to change (a sleep reset, say); it is polled again in the next turn.
    pub(crate) fn inner_mut(&mut self) -> Pin<&mut F> {
        self.flag.woken.store(true, Ordering::Release);
        self.inner.as_mut()
    }
}

impl<F: Future> Future for Woken<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Registered before the flag is read: a wake in between is not lost.
        self.flag.outer.register(cx.waker());
        if !self.flag.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let this = &mut *self;
        this.inner
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Notify;

    #[tokio::test]
    async fn it_ends_when_the_inner_future_wakes_and_only_then() {
        let notify = Arc::new(Notify::new());
        let waiting = Arc::clone(&notify);
        let mut woken = Box::pin(Woken::new(async move { waiting.notified().await }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        // Not woken: the inner future is not polled again, and stays pending.
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        assert!(!woken.flag.woken.load(Ordering::Acquire));
        notify.notify_one();
        assert!(woken.flag.woken.load(Ordering::Acquire));
        assert!(woken.as_mut().poll(&mut cx).is_ready());
    }

    #[tokio::test]
    async fn it_wakes_the_task_that_awaits_it() {
        let notify = Arc::new(Notify::new());
        let waiting = Arc::clone(&notify);
        let task = tokio::spawn(Woken::new(async move { waiting.notified().await }));
        tokio::task::yield_now().await;
        notify.notify_one();
        assert!(task.await.is_ok());
    }
}
