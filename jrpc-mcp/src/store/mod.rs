//! Keeps what must outlive a request, so that any replica serves any request: the keys that sign
//! `requestState`, legacy sessions, and tasks. Each kind of state sits behind a trait with a
//! store in this process and, with `redis`, one on Redis ([`RedisStore`]) that replicas share.

#[cfg(feature = "redis")]
mod redis;
mod session;
mod task;

#[cfg(feature = "redis")]
pub use self::redis::{RedisStore, RedisStoreBuilder};
#[cfg_attr(
    not(feature = "http"),
    allow(unused_imports, reason = "HTTP's sessions")
)]
pub(crate) use session::SharedSessions;
pub use session::{MemorySessions, SessionChange, SessionLimits, SessionRecord, SessionStore};
pub use task::{MemoryTasks, TaskChange, TaskRecord, TaskStatus, TaskStore};

/// Says why a store could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached, or did not answer in time.
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// The store holds what this crate cannot read (written by another program, or by a
    /// version of this crate that wrote it otherwise).
    #[error("the store holds what cannot be read: {0}")]
    Invalid(String),
}

impl From<StoreError> for jrpc_runtime::RpcError {
    /// `-32603`, with the reason as its data.
    fn from(err: StoreError) -> Self {
        jrpc_runtime::RpcError::internal().with_data(&err.to_string())
    }
}

/// Returns `bytes` as lowercase hex.
#[cfg_attr(
    not(feature = "redis"),
    allow(dead_code, reason = "Redis stores keys as hex")
)]
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Returns the bytes a hex string spells; `None` for one that is not hex.
#[cfg_attr(
    not(feature = "redis"),
    allow(dead_code, reason = "Redis stores keys as hex")
)]
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_goes_both_ways() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(unhex("000fff"), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }
}
