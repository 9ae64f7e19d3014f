//! Tells requests that they are cancelled instead of dropping them (cooperative cancellation), by
//! their id (a cancel notice, [`Peer::cancel_request`](super::Peer::cancel_request)) or by a key
//! of their own (a session: [`Peer::cancel_key`](super::Peer::cancel_key)), so that they answer
//! (ACP's `session/cancel` ends a prompt turn with `stopReason: "cancelled"`).
//!
//! A request asks through its context ([`Context::told_when_cancelled`],
//! [`Context::cancellable_by_key`]), which registers its cancellation token here for as long as
//! the returned [`CancelGuard`] lives; telling it cancels the token, which resolves the handler's
//! [`Context::cancelled`]. Nothing else changes: the handler runs on, and answers as it sees fit.
//!
//! [`Context::told_when_cancelled`]: crate::Context::told_when_cancelled
//! [`Context::cancellable_by_key`]: crate::Context::cancellable_by_key
//! [`Context::cancelled`]: crate::Context::cancelled

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::wire::Id;

/// Holds the requests of one connection that are told, by id and by key; each entry numbered, so that
/// its guard removes it alone.
#[derive(Debug, Default)]
pub(crate) struct Told {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    next: u64,
    by_id: HashMap<Id, (u64, CancellationToken)>,
    by_key: HashMap<String, Vec<(u64, CancellationToken)>>,
}

impl Told {
    fn lock(&self) -> MutexGuard<'_, Entries> {
        // The maps stay consistent whatever panicked while holding the lock.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells request `id`, when it asked to be told: `true` then.
    pub(crate) fn tell_id(&self, id: &Id) -> bool {
        match self.lock().by_id.get(id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Tells the requests registered under `key`; returns how many.
    pub(crate) fn tell_key(&self, key: &str) -> usize {
        let entries = self.lock();
        let told = entries.by_key.get(key).map_or(&[][..], Vec::as_slice);
        for (_, token) in told {
            token.cancel();
        }
        told.len()
    }

    /// Registers `token` under `id` and, or, `key`, until the guard drops.
    pub(crate) fn register(
        told: &Arc<Self>,
        token: CancellationToken,
        id: Option<Id>,
        key: Option<String>,
    ) -> CancelGuard {
        let mut entries = told.lock();
        let n = entries.next;
        entries.next += 1;
        if let Some(id) = &id {
            entries.by_id.insert(id.clone(), (n, token.clone()));
        }
        if let Some(key) = &key {
            entries
                .by_key
                .entry(key.clone())
                .or_default()
                .push((n, token));
        }
        drop(entries);
        CancelGuard {
            told: Arc::clone(told),
            n,
            id,
            key,
        }
    }
}

/// Keeps a request told when cancelled (by its id, or by a key) while it lives: see
/// [`Context::told_when_cancelled`](crate::Context::told_when_cancelled) and
/// [`Context::cancellable_by_key`](crate::Context::cancellable_by_key). Dropped, the request is
/// dropped again when cancelled, as any other.
#[must_use = "the request is told only while the guard lives"]
pub struct CancelGuard {
    told: Arc<Told>,
    n: u64,
    id: Option<Id>,
    key: Option<String>,
}

impl fmt::Debug for CancelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelGuard")
            .field("id", &self.id)
            .field("key", &self.key)
            .finish()
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let mut entries = self.told.lock();
        if let Some(id) = &self.id
            && entries.by_id.get(id).is_some_and(|(n, _)| *n == self.n)
        {
            entries.by_id.remove(id);
        }
        if let Some(key) = &self.key
            && let Some(list) = entries.by_key.get_mut(key)
        {
            list.retain(|(n, _)| *n != self.n);
            if list.is_empty() {
                entries.by_key.remove(key);
            }
        }
    }
}
