//! The timer of one HTTP/1.1 connection's `header_read_timeout`.
//!
//! hyper asks its timer for a new sleep each time it waits for a request head, and drops it once
//! the head is read: with tokio's timer that is a timer made, registered and cancelled for every
//! request on a keep-alive connection.
//! This timer keeps one tokio sleep for the connection and moves it only when it rings before the
//! deadline that is waited for now, so that a busy connection touches tokio's timer about once
//! per timeout rather than once per request. Every deadline is still kept: a sleep is ready once
//! its own deadline has passed, and the connection's sleep never rings later than the earliest
//! deadline being waited for.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// One connection's timer (set on each connection's builder, not shared between connections).
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnTimer {
    clock: Arc<Mutex<Option<Clock>>>,
}

/// The connection's tokio sleep, and the waker it was last polled with (none before its first
/// poll).
#[derive(Debug)]
struct Clock {
    sleep: Pin<Box<tokio::time::Sleep>>,
    waker: Option<Waker>,
}

impl hyper::rt::Timer for ConnTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Deadline {
            clock: Arc::clone(&self.clock),
            at: deadline.into(),
        })
    }

    /// tokio's clock, which the sleeps are measured on (and which a test may pause).
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// A sleep until `at`, woken by the connection's clock.
struct Deadline {
    clock: Arc<Mutex<Option<Clock>>>,
    at: tokio::time::Instant,
}

impl hyper::rt::Sleep for Deadline {}

impl Future for Deadline {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let (at, now) = (self.at, tokio::time::Instant::now());
        if now >= at {
            return Poll::Ready(());
        }
        let mut clock = self.clock.lock().unwrap_or_else(PoisonError::into_inner);
        let clock = clock.get_or_insert_with(|| Clock {
            sleep: Box::pin(tokio::time::sleep_until(at)),
            waker: None,
        });
        let set = clock.sleep.deadline();
        // Set to ring before this deadline, not yet rung, for this task: nothing to do (what
        // nearly every request of a busy connection finds).
        let polled = clock
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()));
        if now < set && set <= at && polled {
            return Poll::Pending;
        }
        // Later than this deadline: brought forward (hyper waits for one head at a time, so
        // this is rare).
        if set > at {
            clock.sleep.as_mut().reset(at);
        }
        if !polled {
            clock.waker = Some(cx.waker().clone());
        }
        // Rung for an earlier deadline, one no longer waited for: moved on to this one.
        while clock.sleep.as_mut().poll(cx).is_ready() {
            if tokio::time::Instant::now() >= at {
                return Poll::Ready(());
            }
            clock.sleep.as_mut().reset(at);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Timer as _;

    #[tokio::test(start_paused = true)]
    async fn a_sleep_wakes_its_task() {
        let (timer, start) = (ConnTimer::default(), tokio::time::Instant::now());
        let slept =
            tokio::time::timeout(Duration::from_secs(10), timer.sleep(Duration::from_secs(5)));
        assert!(slept.await.is_ok());
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn each_deadline_is_kept_with_one_clock() {
        let timer = ConnTimer::default();
        let start = tokio::time::Instant::now();
        // A head waited for, then read: its sleep dropped, the clock left set for it (30 s).
        let mut first = timer.sleep(Duration::from_secs(30));
        assert!(futures_util::poll!(first.as_mut()).is_pending());
        drop(first);
        tokio::time::advance(Duration::from_secs(20)).await;
        // The next head's deadline (50 s) is later: the clock rings at 30 s and moves on to it.
        let mut second = timer.sleep(Duration::from_secs(30));
        assert!(futures_util::poll!(second.as_mut()).is_pending());
        tokio::time::advance(Duration::from_secs(15)).await;
        assert!(futures_util::poll!(second.as_mut()).is_pending());
        tokio::time::advance(Duration::from_secs(15)).await;
        assert!(futures_util::poll!(second.as_mut()).is_ready());
        // A later deadline (110 s) moves the clock on; an earlier one (51 s) brings it forward.
        let mut late = timer.sleep(Duration::from_secs(60));
        assert!(futures_util::poll!(late.as_mut()).is_pending());
        timer.sleep(Duration::from_secs(1)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(51));
        assert!(futures_util::poll!(late.as_mut()).is_pending());
        late.await;
        assert_eq!(start.elapsed(), Duration::from_secs(110));
    }
}
