//! The byte budget a server's connections share, made for the servers that have one (HTTP,
//! WebSocket): its default size, from the machine's memory, and the bytes a connection holds in
//! it ([`Held`]).

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::peer::shared_budget::ServerBudget;

/// A quarter of the machine's memory, at least 64 MiB and at most 1 GiB; 1 GiB where the memory
/// cannot be read.
pub(crate) fn default_budget() -> usize {
    const MIN: usize = 64 << 20;
    const MAX: usize = 1 << 30;
    total_memory().map_or(MAX, |total| (total / 4).clamp(MIN, MAX))
}

/// The machine's memory in bytes, from `/proc/meminfo` (Linux).
fn total_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: usize = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

impl ServerBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
            freed: Notify::new(),
            waiting: AtomicUsize::new(0),
            wakers: Mutex::new(Vec::new()),
        })
    }

    /// Takes `bytes` if they fit, or if nothing is held (one message larger than the budget goes
    /// alone).
    #[inline]
    pub(crate) fn try_take(&self, bytes: usize) -> bool {
        crate::peer::budget::take_within(&self.held, self.limit, bytes)
    }

    /// Counts `bytes` (whatever is held) until the [`Held`] is dropped.
    pub(crate) fn hold(self: &Arc<Self>, bytes: usize) -> Held {
        self.force(bytes);
        self.held_for(bytes)
    }

    /// The `bytes` counted already, given back when the [`Held`] is dropped.
    pub(crate) fn held_for(self: &Arc<Self>, bytes: usize) -> Held {
        Held {
            budget: Arc::clone(self),
            bytes,
        }
    }
}

/// Bytes held in a [`ServerBudget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<ServerBudget>,
    bytes: usize,
}

#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "a body's bytes are HTTP's")
)]
impl Held {
    /// The bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counts `bytes` more (a chunked body's next frame), whatever is held.
    pub(crate) fn grow(&mut self, bytes: usize) {
        self.budget.force(bytes);
        self.bytes += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_between_64_mib_and_1_gib() {
        let budget = default_budget();
        assert!((64 << 20..=1 << 30).contains(&budget), "{budget}");
    }
}
