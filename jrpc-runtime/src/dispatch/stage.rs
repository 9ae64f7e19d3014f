//! Tracks where a started request stands, and polls its handler's call once: with panics contained,
//! its result written within the answer limit, under the handler deadline (past it, the call is
//! dropped as cancelled).

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::Poll;

use super::Outcome;
use super::methods::{BoxCall, Failure, Output};

/// A call that waited, under its deadline.
struct Timed {
    /// The call; taken (dropped as cancelled) when the deadline passes.
    call: Option<BoxCall>,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl super::methods::Work for Timed {
    fn poll_into(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<Output> {
        self.poll_capped(cx, out, usize::MAX)
    }

    fn poll_capped(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Poll<Output> {
        let this = &mut *self;
        if let Some(call) = &mut this.call {
            let polled = if limit == usize::MAX {
                call.as_mut().poll_into(cx, out)
            } else {
                call.as_mut().poll_capped(cx, out, limit)
            };
            if let Poll::Ready(output) = polled {
                return Poll::Ready(output);
            }
            if this.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let call = this.call.take();
            super::cancel::dropping(move || drop(call));
        }
        Poll::Ready(Err(Failure::Internal("handler timed out".into())))
    }
}

/// Drops the call of `state`, if it did not finish, as cancelled (see [`cancel`](super::cancel)).
#[cold]
pub(super) fn cancel_call(state: &mut Stage) {
    if let Stage::Running(_) = state {
        let call = std::mem::replace(state, Stage::Done(None, Outcome::Cancelled));
        super::cancel::dropping(move || drop(call));
    }
}

/// Says where a request stands once started.
pub(super) enum Stage {
    /// Its handler's call, to run.
    Running(BoxCall),
    /// Answered already (with nothing, for a notification), with this outcome.
    Done(Option<Vec<u8>>, Outcome),
}

impl Stage {
    /// Gives a running call that waits its deadline: past it, the call is dropped as cancelled
    /// and fails (`handler timed out`).
    #[cold]
    pub(super) fn time(&mut self, deadline: tokio::time::Instant, cx: &mut std::task::Context<'_>) {
        let Stage::Running(call) = std::mem::replace(self, Stage::Done(None, Outcome::Success))
        else {
            return;
        };
        let mut timer = Box::pin(tokio::time::sleep_until(deadline));
        // The timer wakes the task when it rings; one that rang already, at once.
        if timer.as_mut().poll(cx).is_ready() {
            cx.waker().wake_by_ref();
        }
        let call = Some(call);
        *self = Stage::Running(Box::pin(Timed { call, timer }));
    }

    /// Polls a running call once, with panics contained, its result written to `out` up to
    /// `limit` bytes (`Ready` at once, with nothing written, for a request answered already). A
    /// call that is done is dropped there, so that a panic in its drop is contained as one in its
    /// poll is.
    #[inline]
    pub(super) fn poll_once(
        &mut self,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> std::task::Poll<Output> {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let Stage::Running(call) = self else {
                return std::task::Poll::Ready(Ok(()));
            };
            // In process there is no limit, and nothing to look at on the way.
            let polled = if limit == usize::MAX {
                call.as_mut().poll_into(cx, out)
            } else {
                call.as_mut().poll_capped(cx, out, limit)
            };
            if polled.is_ready() {
                *self = Stage::Done(None, Outcome::Success);
            }
            polled
        }));
        polled.unwrap_or_else(|panic| {
            // The call that panicked goes, as a cancelled one does (the work it handed out
            // stops), a panic in its drop contained too.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| cancel_call(self)));
            std::task::Poll::Ready(Err(Failure::Internal(panicked(&*panic))))
        })
    }
}

/// Runs a request's call with panics contained and the deadline applied (past it, the call is
/// dropped as cancelled), its result written to `out` whole: the innermost call of a table's
/// layers, whose answer is held to the limit where the layers' own is written.
pub(super) async fn run_call(
    state: &mut Stage,
    out: &mut Vec<u8>,
    mut deadline: Option<tokio::time::Instant>,
) -> Output {
    std::future::poll_fn(|cx| {
        let polled = state.poll_once(cx, out, usize::MAX);
        if polled.is_pending()
            && let Some(deadline) = deadline.take()
        {
            state.time(deadline, cx);
        }
        polled
    })
    .await
}

/// Returns why a handler that panicked failed, for the log and the error hook.
pub(super) fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    format!("handler panicked: {}", panic_message(panic))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload")
}
