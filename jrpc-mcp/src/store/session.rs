//! Keeps legacy sessions: what any replica needs to serve a session's request (the revision its
//! `initialize` agreed on, the client's capabilities, the identity that opened it, its log
//! level, the resources it follows, the replica that holds its GET stream), capped and expired
//! when idle. [`MemorySessions`] keeps them in this process; with `redis`, `RedisStore` keeps them
//! for every replica.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::StoreError;
use crate::protocol::types::LogLevel;

/// Holds what any replica needs to serve a legacy session's request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The revision `initialize` agreed on; `None` before it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The client's capabilities, as `initialize` declared them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Value>,
    /// The client's name and version, as `initialize` gave them.
    #[serde(
        rename = "clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Value>,
    /// The identity that opened the session
    /// ([`session_identity`](crate::McpServerBuilder::session_identity)); only it is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The lowest level of log messages sent (`logging/setLevel`).
    #[serde(skip)]
    pub log_level: Option<LogLevel>,
    /// The resources whose updates the session follows (`resources/subscribe`).
    #[serde(skip)]
    pub followed: BTreeSet<String>,
    /// The replica whose GET stream a client reads (a number each replica draws), if any.
    #[serde(skip)]
    pub listener: Option<u64>,
}

impl SessionRecord {
    /// Returns the record of a session opened by `identity`, before `initialize` answered.
    pub fn opened_by(identity: Option<String>) -> Self {
        Self {
            identity,
            ..Self::default()
        }
    }
}

/// Says what changed in a session (each a change of its own, so that two replicas changing a
/// session at once change different things, and both changes stay).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SessionChange {
    /// `initialize` agreed on `version` with a client that declared `capabilities`.
    Initialized {
        /// The revision.
        version: String,
        /// The client's capabilities.
        capabilities: Option<Value>,
        /// The client's name and version.
        client_info: Option<Value>,
    },
    /// `logging/setLevel`.
    LogLevel(LogLevel),
    /// `resources/subscribe` (`true`) or `resources/unsubscribe` of a URI.
    Follow(String, bool),
    /// The replica holding the GET stream is now this one (`Some`), or none: cleared only while
    /// it is still `was`.
    Listener {
        /// The replica that holds it now.
        now: Option<u64>,
        /// For a clear, the replica that must still hold it.
        was: Option<u64>,
    },
}

/// Says how many sessions may be open and how long one lives unused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    /// The most sessions open at once.
    pub max: usize,
    /// How long a session lives without being used.
    pub idle: Duration,
}

impl SessionLimits {
    /// Returns limits of `max` sessions, each ended after `idle` unused.
    pub fn new(max: usize, idle: Duration) -> Self {
        Self { max, idle }
    }
}

/// Keeps legacy sessions for the replicas that serve them: [`MemorySessions`] in this process,
/// `RedisStore` (with `redis`) shared by every replica.
///
/// A store ends a session unused for [`SessionLimits::idle`]; the replica holding a session's
/// GET stream, or running one of its requests, [`touch_sessions`](Self::touch_sessions)es it meanwhile.
pub trait SessionStore: Send + Sync + 'static {
    /// Stores a new session `id` with `record`, unless `limits.max` are open once those idle past
    /// `limits.idle` are ended; `false` when full.
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: SessionRecord,
        limits: SessionLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Returns the record of session `id`, marking it used; `None` when there is none (never
    /// was, ended, or idle past `idle`).
    fn session<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>>;

    /// Applies `change` to session `id`; `false` when there is no such session.
    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
        idle: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Marks sessions `ids` used (those in use on a replica that no request touches: a GET
    /// stream read, a request running long).
    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Ends session `id`; `false` when there was none.
    fn remove_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Returns whether other processes share the store (so that a session's requests may reach
    /// any replica): `false` for [`MemorySessions`].
    fn is_shared(&self) -> bool;
}

/// Keeps legacy sessions in this process: the store of a server that runs alone.
#[derive(Debug, Default)]
pub struct MemorySessions {
    map: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    record: SessionRecord,
    last_used: Instant,
}

impl MemorySessions {
    /// Returns an empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // The map stays consistent whatever panicked while holding it.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns how many sessions it holds (idle ones not yet ended included).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Returns whether it holds no session.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Returns whether an entry used at `last_used` is idle past `idle` at `now`.
fn idle_past(last_used: Instant, now: Instant, idle: Duration) -> bool {
    now.saturating_duration_since(last_used) >= idle
}

impl SessionStore for MemorySessions {
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: SessionRecord,
        limits: SessionLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut map = self.lock();
        let now = Instant::now();
        if map.len() >= limits.max {
            map.retain(|_, entry| !idle_past(entry.last_used, now, limits.idle));
        }
        let made = map.len() < limits.max;
        if made {
            map.insert(
                id.to_owned(),
                Entry {
                    record,
                    last_used: now,
                },
            );
        }
        Box::pin(std::future::ready(Ok(made)))
    }

    fn session<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        let mut map = self.lock();
        let now = Instant::now();
        let found = match map.get_mut(id) {
            Some(entry) if idle_past(entry.last_used, now, idle) => {
                map.remove(id);
                None
            }
            Some(entry) => {
                entry.last_used = now;
                Some(entry.record.clone())
            }
            None => None,
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
        _idle: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut map = self.lock();
        let found = map
            .get_mut(id)
            .map(|entry| apply(&mut entry.record, change));
        Box::pin(std::future::ready(Ok(found.is_some())))
    }

    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        _idle: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut map = self.lock();
        let now = Instant::now();
        for id in ids {
            if let Some(entry) = map.get_mut(id) {
                entry.last_used = now;
            }
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn remove_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let removed = self.lock().remove(id).is_some();
        Box::pin(std::future::ready(Ok(removed)))
    }

    fn is_shared(&self) -> bool {
        false
    }
}

/// Applies `change` to `record`.
pub(crate) fn apply(record: &mut SessionRecord, change: SessionChange) {
    match change {
        SessionChange::Initialized {
            version,
            capabilities,
            client_info,
        } => {
            record.version = Some(version);
            record.capabilities = capabilities;
            record.client_info = client_info;
        }
        SessionChange::LogLevel(level) => record.log_level = Some(level),
        SessionChange::Follow(uri, true) => {
            record.followed.insert(uri);
        }
        SessionChange::Follow(uri, false) => {
            record.followed.remove(&uri);
        }
        SessionChange::Listener { now: Some(tag), .. } => record.listener = Some(tag),
        SessionChange::Listener { now: None, was } => {
            if record.listener == was {
                record.listener = None;
            }
        }
    }
}

/// Keeps a store shared by the clones of an endpoint.
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's sessions"))]
pub(crate) type SharedSessions = Arc<dyn SessionStore>;

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize) -> SessionLimits {
        SessionLimits::new(max, Duration::from_secs(60))
    }

    #[tokio::test(start_paused = true)]
    async fn sessions_are_capped_and_expire_when_idle() {
        let store = MemorySessions::new();
        let idle = Duration::from_secs(60);
        let record = SessionRecord::opened_by(None);
        assert!(
            store
                .create_session("a", record.clone(), limits(2))
                .await
                .unwrap()
        );
        assert!(
            store
                .create_session("b", record.clone(), limits(2))
                .await
                .unwrap()
        );
        assert!(
            !store
                .create_session("c", record.clone(), limits(2))
                .await
                .unwrap()
        );
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(
            store.session("a", idle).await.unwrap().is_some(),
            "used: its clock starts again"
        );
        tokio::time::advance(Duration::from_secs(45)).await;
        // b has been idle 75 s: it makes room; a (45 s) stays.
        assert!(store.create_session("c", record, limits(2)).await.unwrap());
        assert_eq!(store.len(), 2);
        assert!(store.session("a", idle).await.unwrap().is_some());
        assert!(store.remove_session("c").await.unwrap());
        assert!(store.session("c", idle).await.unwrap().is_none());
        assert!(!store.remove_session("c").await.unwrap());
    }

    #[tokio::test]
    async fn changes_apply_one_by_one() {
        let store = MemorySessions::new();
        let idle = Duration::from_secs(60);
        assert!(
            store
                .create_session("s", SessionRecord::opened_by(Some("ann".into())), limits(1))
                .await
                .unwrap()
        );
        let changes = [
            SessionChange::Initialized {
                version: "2025-11-25".into(),
                capabilities: Some(serde_json::json!({ "sampling": {} })),
                client_info: None,
            },
            SessionChange::LogLevel(LogLevel::Warning),
            SessionChange::Follow("test://a".into(), true),
            SessionChange::Follow("test://b".into(), true),
            SessionChange::Follow("test://a".into(), false),
            SessionChange::Listener {
                now: Some(7),
                was: None,
            },
            // Cleared only by the replica that holds it.
            SessionChange::Listener {
                now: None,
                was: Some(8),
            },
        ];
        for change in changes {
            assert!(store.update_session("s", change, idle).await.unwrap());
        }
        let record = store.session("s", idle).await.unwrap().unwrap();
        assert_eq!(record.identity.as_deref(), Some("ann"));
        assert_eq!(record.version.as_deref(), Some("2025-11-25"));
        assert_eq!(record.log_level, Some(LogLevel::Warning));
        assert_eq!(record.followed, BTreeSet::from(["test://b".to_owned()]));
        assert_eq!(record.listener, Some(7));
        let none = SessionChange::LogLevel(LogLevel::Debug);
        assert!(!store.update_session("t", none, idle).await.unwrap());
    }
}
