//! Cancels a request: its handler's future is dropped, and the token behind
//! [`Context::cancelled`](super::Context::cancelled) is cancelled, for the work it handed to other
//! tasks.
//!
//! A request costs nothing here until someone asks: its context holds an empty cell, and the
//! token is made on the first [`cancelled`](super::Context::cancelled) or clone of that context
//! (so that every clone shares it). The dispatcher keeps no handle on it: the handler's own
//! future holds the context, and when the dispatcher drops that future before it finished it
//! says so in a thread-local flag ([`dropping`]) for the duration of the drop; a request's
//! context dropped while the flag is up cancels its token. A future that finished has dropped its
//! context already, in its last poll, with the flag down.
//!
//! | the context | `cancelled()` |
//! | --- | --- |
//! | a request's, or a clone of it | resolves once the request's future is dropped unfinished (a caller gone, a cancel notice, a closed connection, the handler timeout, the drain budget spent) |
//! | any other (a connection's, one made with [`Context::new`](super::Context::new)) | never resolves |
//!
//! So a handler that hands work to another task gives it `ctx.cancelled()`, or a clone of its
//! context, while its own future keeps the context (as every method the macro makes does).

use std::cell::Cell;
use std::future::Future;
use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

thread_local! {
    /// Up while the dispatcher drops the future of a request that did not finish.
    static DROPPING_UNFINISHED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `drop` (which drops an unfinished request's future) with the flag up, so that the
/// request contexts it drops cancel their tokens; the flag is put back as it was (drops nest).
pub(super) fn dropping(drop: impl FnOnce()) {
    let was = DROPPING_UNFINISHED.replace(true);
    // Put back even if a drop panics: the flag must not stay up for the thread's next drops.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DROPPING_UNFINISHED.set(self.0);
        }
    }
    let _restore = Restore(was);
    drop();
}

/// Holds a context's share in its request's cancellation: the request's token, once asked for. (A
/// context that is no request's never makes one: its `cancelled()` never resolves.)
///
/// Dropping a context finds the cell empty in the common case, and has nothing else to do.
pub(super) struct Slot(OnceLock<Armed>);

/// Holds a request's token as its contexts hold it: dropped while the dispatcher drops the
/// request's future unfinished, it cancels the token.
struct Armed(CancellationToken);

impl Drop for Armed {
    fn drop(&mut self) {
        if DROPPING_UNFINISHED.get() {
            self.0.cancel();
        }
    }
}

impl Slot {
    /// Returns an empty slot.
    #[inline]
    pub(super) const fn new() -> Self {
        Self(OnceLock::new())
    }

    /// Returns the request's token, made now if it was not; `None` for a context that is no
    /// request's.
    pub(super) fn token(&self, request: bool) -> Option<&CancellationToken> {
        request.then(|| &self.0.get_or_init(|| Armed(CancellationToken::new())).0)
    }

    /// Returns the slot of a clone: the same token (made now: a clone must see the cancellation of
    /// the request it was cloned from).
    pub(super) fn share(&self, request: bool) -> Self {
        let slot = Self::new();
        if let Some(token) = self.token(request) {
            let _ = slot.0.set(Armed(token.clone()));
        }
        slot
    }

    /// Returns a future that resolves once the request is cancelled; never, for a context that is
    /// no request's.
    pub(super) fn cancelled(
        &self,
        request: bool,
    ) -> impl Future<Output = ()> + Send + 'static + use<> {
        let token = self.token(request).cloned();
        async move {
            match token {
                Some(token) => token.cancelled_owned().await,
                None => std::future::pending().await,
            }
        }
    }

    /// Returns whether the request is cancelled.
    pub(super) fn is_cancelled(&self) -> bool {
        self.0.get().is_some_and(|armed| armed.0.is_cancelled())
    }
}
