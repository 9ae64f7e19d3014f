//! Keeps what a replica holds of the legacy sessions it serves: each one's event log, its GET
//! stream's connection, the router of answers to its calls, its requests running. What any
//! replica needs of a session (its record: revision, capabilities, identity, log level, what it
//! follows, who holds its GET stream) is in the [`SessionStore`](crate::SessionStore); a replica
//! makes its own part of a session when it first serves one of its requests, and drops it once
//! idle.
//!
//! | a session's | kept |
//! | --- | --- |
//! | record | in the store, read by each request |
//! | event log, streams, answers awaited, requests running | by the replica that runs the request or holds the GET stream |
//!
//! Across replicas (a shared store), what goes between the parts of one session travels on its
//! topic (`replica` module).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use jrpc_runtime::framing::Frame;
use jrpc_runtime::http::sse::{self, EventLog, Replies};
use jrpc_runtime::{Context, Id, Peer, PeerConfig, RpcError, Transport};

use super::replica::Replica;
use crate::data::{LegacyState, Mcp, SessionHooks};
use crate::store::{SessionChange, SessionLimits, SessionRecord, SharedSessions, StoreError};

/// Numbers a replica's streams: its tag in the high half, so that a stream's number says which
/// replica keeps its events; `0` alone (the GET stream of a server without replicas) stays `0`.
pub(crate) fn stream_number(tag: u64, n: u64) -> u64 {
    (tag << 32) | n
}

/// Returns the tag of the replica that numbered `stream`.
pub(crate) fn stream_tag(stream: u64) -> u64 {
    stream >> 32
}

/// Holds a session, as a handler sees it in its [`Context`]: its id, and the connection of its GET
/// stream, to notify or call the client outside any request (sampling, roots, elicitation).
///
/// ```
/// use jrpc_runtime::Context;
/// use jrpc_mcp::McpSession;
///
/// fn session_of(ctx: &Context) -> Option<&str> {
///     ctx.extension::<McpSession>().map(McpSession::id)
/// }
/// # assert_eq!(session_of(&Context::new(jrpc_runtime::Transport::Http)), None);
/// ```
#[derive(Clone)]
pub struct McpSession {
    inner: Arc<Session>,
}

impl McpSession {
    /// Returns the session's id, as sent in `Mcp-Session-Id`.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Returns the connection of the session's GET stream: what it sends goes out there, in order,
    /// once the client opens the stream (it waits in the session's log until then, within
    /// `max_buffered` and `queue`: past them this connection closes for the rest of the
    /// session, as for a client that does not read); answers to its calls come back as the
    /// client's POSTs. On replicas sharing a store it reaches the GET stream whichever replica
    /// holds it (through the server's topics); while none does, what it sends waits on this one.
    pub fn peer(&self) -> &Peer {
        &self.inner.push
    }
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSession")
            .field("id", &self.inner.id)
            .finish_non_exhaustive()
    }
}

/// Holds this replica's part of one session.
pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    /// The events of its streams on this replica, kept a while for replay.
    pub(crate) log: Arc<EventLog>,
    /// Answers to the calls its handlers made here.
    pub(crate) replies: Arc<Replies>,
    /// What `initialize` said, as the store has it, and the hooks that store changes.
    pub(crate) legacy: Arc<LegacyState>,
    /// The connection of the GET stream, on this replica.
    pub(crate) standalone: Peer,
    /// What a handler's [`McpSession::peer`] sends on: `standalone`, or, across replicas, a
    /// relay to whichever replica holds the GET stream.
    push: Peer,
    /// The input of the GET stream's connection: dropped when the session ends, which ends it.
    standalone_input: Mutex<Option<mpsc::Sender<Frame>>>,
    /// The number of this replica's GET stream of the session.
    pub(crate) get_stream: u64,
    next_stream: AtomicU64,
    last_used: Mutex<Instant>,
    /// Whether a client reads the GET stream here now.
    pub(crate) listening: AtomicBool,
    /// Requests running here.
    running: AtomicUsize,
    /// The requests running under an id, each with what cancels it (the client's
    /// `notifications/cancelled` naming it) and how many run under it.
    cancels: Mutex<HashMap<Id, (CancellationToken, usize)>>,
    /// What goes between replicas for this session, when the store is shared.
    pub(crate) replica: Option<Replica>,
    /// Ended: dropped from this replica.
    ended: CancellationToken,
}

impl Session {
    /// Returns a stream number for a request's events.
    pub(crate) fn next_stream(&self) -> u64 {
        stream_number(
            stream_tag(self.get_stream),
            self.next_stream.fetch_add(1, Ordering::Relaxed),
        )
    }

    /// Returns the session's handle for handlers' contexts.
    pub(crate) fn handle(self: &Arc<Self>) -> McpSession {
        McpSession {
            inner: Arc::clone(self),
        }
    }

    pub(crate) fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    fn idle_since(&self) -> Instant {
        *lock(&self.last_used)
    }

    /// Returns whether the session is in use here without requests touching it: its GET stream
    /// read, a request running.
    pub(crate) fn in_use(&self) -> bool {
        self.listening.load(Ordering::Acquire) || self.running.load(Ordering::Acquire) > 0
    }

    /// Ends this replica's part: its GET stream ends (its client sees the stream end), and its
    /// connection.
    pub(crate) fn end(&self) {
        lock(&self.standalone_input).take();
        self.ended.cancel();
    }

    /// Resolves once this replica's part has ended.
    pub(crate) fn ended(&self) -> WaitForCancellationFutureOwned {
        self.ended.clone().cancelled_owned()
    }

    /// Counts a request as running, unless `max` are; the count goes down when the guard drops.
    pub(crate) fn start_request(self: &Arc<Self>, max: usize) -> Option<Running> {
        let mut now = self.running.load(Ordering::Acquire);
        loop {
            if now >= max {
                return None;
            }
            match self
                .running
                .compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(Running(Arc::clone(self))),
                Err(seen) => now = seen,
            }
        }
    }

    /// Makes request `id` cancellable by the client's `notifications/cancelled` while the guard
    /// is held.
    pub(crate) fn cancellable(self: &Arc<Self>, id: Id) -> Cancellable {
        let token = {
            let mut cancels = lock(&self.cancels);
            let (token, count) = cancels.entry(id.clone()).or_default();
            *count += 1;
            token.clone()
        };
        Cancellable {
            session: Arc::clone(self),
            id,
            token,
        }
    }

    /// Cancels the running requests of id `id` (a client's `notifications/cancelled`); whether
    /// there was one here.
    pub(crate) fn cancel(&self, id: &Id) -> bool {
        lock(&self.cancels)
            .get(id)
            .map(|(token, _)| token.cancel())
            .is_some()
    }
}

/// Marks a request of a session as one the client may cancel, while held.
pub(crate) struct Cancellable {
    session: Arc<Session>,
    id: Id,
    token: CancellationToken,
}

impl Cancellable {
    /// Resolves once the client cancels the request.
    pub(crate) fn cancelled(&self) -> WaitForCancellationFutureOwned {
        self.token.clone().cancelled_owned()
    }
}

impl Drop for Cancellable {
    fn drop(&mut self) {
        let mut cancels = lock(&self.session.cancels);
        if let Some((_, count)) = cancels.get_mut(&self.id) {
            *count -= 1;
            if *count == 0 {
                cancels.remove(&self.id);
            }
        }
    }
}

/// Counts a request as running in its session.
pub(crate) struct Running(Arc<Session>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.touch();
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Marks a session's GET stream as read by a client while held; across replicas, this replica
/// is the session's listener meanwhile.
pub(crate) struct Listening(pub(crate) Arc<Session>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.touch();
        self.0.listening.store(false, Ordering::Release);
        if let Some(replica) = &self.0.replica {
            replica.stop_listening(&self.0);
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The data behind these locks stays consistent whatever panicked while holding them.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Says why a session could not be made or found.
#[derive(Debug)]
pub(crate) enum Refused {
    /// `max_sessions` are open.
    Full(usize),
    /// The operating system gave no random bytes for its id.
    NoRandom(String),
    /// The store failed.
    Store(StoreError),
}

/// Holds this replica's parts of sessions, and what makes them: the store, the limits, this
/// replica's tag and the server (for its topics).
pub(crate) struct Sessions {
    map: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    pub(crate) store: SharedSessions,
    pub(crate) limits: SessionLimits,
    retain: usize,
    /// The `retry` of each stream's priming event.
    retry: Option<Duration>,
    /// This replica's tag: its streams' high half (zero without replicas).
    pub(crate) tag: u64,
    pub(crate) mcp: Mcp,
}

impl Sessions {
    /// Returns the parts of sessions kept in `store`, at most `limits.max` here, each ended after
    /// `limits.idle` unused, keeping `replay.0` bytes of its events, its streams primed with
    /// `replay.1` as their `retry`.
    pub(crate) fn new(
        store: SharedSessions,
        limits: SessionLimits,
        replay: (usize, Option<Duration>),
        mcp: Mcp,
    ) -> Self {
        // A tag tells replicas' streams apart: random, never zero, under 2^31.
        let tag = if store.is_shared() {
            let mut bytes = [0u8; 4];
            let _ = getrandom::fill(&mut bytes);
            u64::from(u32::from_le_bytes(bytes) >> 1).max(1)
        } else {
            0
        };
        Self {
            map: Mutex::default(),
            store,
            limits,
            retain: replay.0,
            retry: replay.1,
            tag,
            mcp,
        }
    }

    /// Returns whether other replicas share the store.
    pub(crate) fn shared(&self) -> bool {
        self.tag != 0
    }

    /// Makes a new session in the store, opened by `identity`: its id, or why not.
    pub(crate) async fn create(&self, identity: Option<String>) -> Result<String, Refused> {
        let id = session_id().map_err(Refused::NoRandom)?;
        let record = SessionRecord::opened_by(identity);
        match self.store.create_session(&id, record, self.limits).await {
            Ok(true) => Ok(id),
            Ok(false) => Err(Refused::Full(self.limits.max)),
            Err(err) => Err(Refused::Store(err)),
        }
    }

    /// Returns this replica's part of session `id` as `record` has it (made now when there is
    /// none, after ending idle parts to make room).
    pub(crate) async fn part(
        self: &Arc<Self>,
        id: &str,
        record: &SessionRecord,
        streams: &PeerConfig,
    ) -> Result<Arc<Session>, Refused> {
        let found = lock(&self.map).get(id).cloned();
        let session = match found {
            Some(session) => session,
            None => {
                let (session, made) = self.insert(self.make(id, streams))?;
                match &session.replica {
                    // What other replicas send it reaches it from now on.
                    Some(replica) if made => replica.ready(self).await,
                    // A part made again (its last dropped while idle) of a session that
                    // initialized: its GET stream follows what the session follows.
                    None if made && record.version.is_some() => {
                        let core = &self.mcp.core;
                        crate::data::follow_lists(core, &session.standalone);
                        for uri in &record.followed {
                            crate::data::follow_resource(core, &session.standalone, uri, true);
                        }
                    }
                    _ => {}
                }
                session
            }
        };
        session.touch();
        session.legacy.refresh(record);
        Ok(session)
    }

    /// Keeps `made` as its session's part here, unless one is kept already (then that one),
    /// after ending idle parts to make room; whether `made` was kept.
    fn insert(&self, made: Arc<Session>) -> Result<(Arc<Session>, bool), Refused> {
        let mut map = lock(&self.map);
        if let Some(raced) = map.get(&made.id) {
            made.end();
            return Ok((Arc::clone(raced), false));
        }
        if map.len() >= self.limits.max {
            let now = Instant::now();
            map.retain(|_, s| {
                let keep = !self.idle(s, now);
                if !keep {
                    s.end();
                }
                keep
            });
        }
        if map.len() >= self.limits.max {
            made.end();
            return Err(Refused::Full(self.limits.max));
        }
        map.insert(Arc::clone(&made.id), Arc::clone(&made));
        Ok((made, true))
    }

    /// Makes this replica's part of session `id`.
    fn make(self: &Arc<Self>, id: &str, streams: &PeerConfig) -> Arc<Session> {
        let log = EventLog::primed(self.retain, self.retry);
        let replies = Replies::new();
        let ctx = Context::new(Transport::Http);
        let get_stream = stream_number(self.tag, 0);
        let (standalone, input) = sse::open(&log, get_stream, &replies, streams, ctx);
        let id: Arc<str> = id.into();
        let mut watch = None;
        let session = Arc::new_cyclic(|weak: &Weak<Session>| {
            let hooks: Arc<dyn SessionHooks> = Arc::new(Hooks {
                session: weak.clone(),
                sessions: Arc::downgrade(self),
            });
            let (push, replica) = match self.shared() {
                true => {
                    let (replica, relay, watching) = Replica::new(weak.clone(), self, &id, streams);
                    watch = Some(watching);
                    (relay, Some(replica))
                }
                false => (standalone.clone(), None),
            };
            // Without replicas the GET stream's connection is known at once, and follows the
            // lists from `initialize` on; across replicas, the one holding it follows them.
            let legacy_push = (!self.shared()).then(|| standalone.clone());
            Session {
                id,
                log,
                replies,
                legacy: LegacyState::with_hooks(legacy_push, Some(hooks)),
                standalone,
                push,
                standalone_input: Mutex::new(Some(input)),
                get_stream,
                next_stream: AtomicU64::new(1),
                last_used: Mutex::new(Instant::now()),
                listening: AtomicBool::new(false),
                running: AtomicUsize::new(0),
                cancels: Mutex::default(),
                replica,
                ended: CancellationToken::new(),
            }
        });
        // Watched once made: the task that watches holds the part weakly.
        if let Some(watch) = watch {
            Replica::watch(watch, &session, self);
        }
        session
    }

    fn idle(&self, session: &Session, now: Instant) -> bool {
        !session.in_use() && now.saturating_duration_since(session.idle_since()) >= self.limits.idle
    }

    /// Returns this replica's part of session `id`, if it has one.
    #[cfg(test)]
    pub(crate) fn local(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.map).get(id).cloned()
    }

    /// Drops this replica's part of session `id`, ending it; whether there was one.
    pub(crate) fn drop_part(&self, id: &str) -> bool {
        let removed = lock(&self.map).remove(id);
        removed.map(|session| session.end()).is_some()
    }

    /// Ends every session's part here (a shutdown): their GET streams end, so connections can
    /// drain. Without replicas the sessions end in the store too; across replicas they live on
    /// elsewhere.
    pub(crate) async fn end_all(&self) {
        let parts: Vec<Arc<Session>> = lock(&self.map).drain().map(|(_, s)| s).collect();
        for session in parts {
            session.end();
            if !self.shared() {
                let _ = self.store.remove_session(&session.id).await;
            }
        }
    }

    /// Marks the sessions in use here used in the store, and drops the parts idle here: what
    /// runs every third of `idle`.
    pub(crate) async fn sweep(&self) {
        let now = Instant::now();
        let (in_use, idle): (Vec<_>, Vec<_>) = {
            let map = lock(&self.map);
            let in_use = map
                .values()
                .filter(|s| s.in_use())
                .map(|s| s.id.to_string())
                .collect();
            let idle = map
                .values()
                .filter(|s| self.idle(s, now))
                .map(|s| Arc::clone(&s.id))
                .collect();
            (in_use, idle)
        };
        if let Err(err) = self.store.touch_sessions(&in_use, self.limits.idle).await {
            tracing::warn!(%err, "could not mark the sessions in use");
        }
        for id in idle {
            let mut map = lock(&self.map);
            if map.get(&id).is_some_and(|s| self.idle(s, now))
                && let Some(session) = map.remove(&id)
            {
                session.end();
            }
        }
    }

    /// Returns how many sessions this replica holds a part of.
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

/// Keeps a session's changes in the store, and has its GET stream follow what it asks for:
/// here without replicas; across replicas, on whichever replica holds it.
struct Hooks {
    session: Weak<Session>,
    sessions: Weak<Sessions>,
}

impl SessionHooks for Hooks {
    fn changed(&self, change: SessionChange) -> BoxFuture<'_, Result<(), RpcError>> {
        Box::pin(async move {
            let (Some(session), Some(sessions)) = (self.session.upgrade(), self.sessions.upgrade())
            else {
                return Ok(());
            };
            let followed = match &change {
                SessionChange::Follow(uri, on) => Some((uri.clone(), *on)),
                _ => None,
            };
            let initialized = matches!(change, SessionChange::Initialized { .. });
            let limits = sessions.limits;
            if !sessions
                .store
                .update_session(&session.id, change, limits.idle)
                .await?
            {
                return Err(RpcError::invalid_request().with_data("the session ended"));
            }
            match &session.replica {
                None if initialized => {
                    crate::data::follow_lists(&sessions.mcp.core, &session.standalone)
                }
                None => {
                    if let Some((uri, on)) = followed {
                        crate::data::follow_resource(
                            &sessions.mcp.core,
                            &session.standalone,
                            &uri,
                            on,
                        );
                    }
                }
                Some(replica) => {
                    if let Some((uri, on)) = followed {
                        replica.follow(&session, &sessions, &uri, on).await?;
                    }
                }
            }
            Ok(())
        })
    }
}

/// 128 bits from the operating system's random source, as 32 hex digits: not guessable, and
/// visible ASCII as MCP asks of a session id.
fn session_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| err.to_string())?;
    Ok(crate::store::hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemorySessions;

    fn sessions(max: usize, idle: Duration) -> Arc<Sessions> {
        let mcp = Mcp::raw(jrpc_runtime::Methods::new());
        Arc::new(Sessions::new(
            Arc::new(MemorySessions::new()),
            SessionLimits::new(max, idle),
            (1024, None),
            mcp,
        ))
    }

    fn streams() -> PeerConfig {
        PeerConfig::builder()
            .max_message_size(1024)
            .max_buffered(4096)
            .queue(16)
            .call_timeout(None)
            .build()
            .unwrap()
    }

    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let (a, b) = (session_id().unwrap(), session_id().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn streams_carry_their_replicas_tag() {
        assert_eq!(stream_number(0, 0), 0);
        assert_eq!(stream_number(0, 3), 3);
        let stream = stream_number(7, 3);
        assert_eq!((stream_tag(stream), stream & 0xffff_ffff), (7, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn parts_are_capped_and_dropped_when_idle() {
        let store = sessions(2, Duration::from_secs(60));
        let record = SessionRecord::default();
        let a = store.part("a", &record, &streams()).await.unwrap();
        let _b = store.part("b", &record, &streams()).await.unwrap();
        assert!(matches!(
            store.part("c", &record, &streams()).await,
            Err(Refused::Full(2))
        ));
        tokio::time::advance(Duration::from_secs(30)).await;
        a.touch();
        tokio::time::advance(Duration::from_secs(45)).await;
        // b has been idle 75 s: it makes room; a (45 s) stays.
        store.part("c", &record, &streams()).await.unwrap();
        assert_eq!(store.len(), 2);
        assert!(store.local("a").is_some() && store.local("b").is_none());
        assert!(store.drop_part("c"));
        assert!(!store.drop_part("c"));
    }

    #[tokio::test]
    async fn requests_are_capped_per_session() {
        let store = sessions(1, Duration::from_secs(60));
        let s = store
            .part("s", &SessionRecord::default(), &streams())
            .await
            .unwrap();
        let first = s.start_request(1).unwrap();
        assert!(s.start_request(1).is_none());
        drop(first);
        assert!(s.start_request(1).is_some());
    }
}
