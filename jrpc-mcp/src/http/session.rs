//! Keeps sessions: their ids, what each holds (its event log, its GET stream's connection, the
//! router of answers to its calls), and the store that caps and expires them.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use jrpc_runtime::framing::Frame;
use jrpc_runtime::http::sse::{self, EventLog, Replies};
use jrpc_runtime::{Context, Id, Peer, PeerConfig, Transport};

use crate::data::LegacyState;

/// Numbers a session's GET stream; its requests' streams count from 1.
pub(crate) const GET_STREAM: u64 = 0;

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
    /// client's POSTs.
    pub fn peer(&self) -> &Peer {
        &self.inner.standalone
    }
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSession")
            .field("id", &self.inner.id)
            .finish_non_exhaustive()
    }
}

/// Holds one session's state.
pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    /// The events of all its streams, kept a while for replay.
    pub(crate) log: Arc<EventLog>,
    /// Answers to the calls its handlers made.
    pub(crate) replies: Arc<Replies>,
    /// What `initialize` said.
    pub(crate) legacy: Arc<LegacyState>,
    standalone: Peer,
    /// The input of the GET stream's connection: dropped when the session ends, which ends it.
    standalone_input: Mutex<Option<mpsc::Sender<Frame>>>,
    next_stream: AtomicU64,
    last_used: Mutex<Instant>,
    /// Whether a client reads the GET stream now.
    pub(crate) listening: AtomicBool,
    /// Requests running.
    running: AtomicUsize,
    /// The requests running under an id, each with what cancels it (the client's
    /// `notifications/cancelled` naming it) and how many run under it.
    cancels: Mutex<HashMap<Id, (CancellationToken, usize)>>,
}

impl Session {
    /// Returns a stream number for a request's events.
    pub(crate) fn next_stream(&self) -> u64 {
        self.next_stream.fetch_add(1, Ordering::Relaxed)
    }

    /// Returns the session's handle for handlers' contexts.
    pub(crate) fn handle(self: &Arc<Self>) -> McpSession {
        McpSession {
            inner: Arc::clone(self),
        }
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    fn idle_since(&self) -> Instant {
        *lock(&self.last_used)
    }

    /// Ends the session's GET stream (its client sees the stream end) and its connection.
    fn end(&self) {
        lock(&self.standalone_input).take();
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
}

impl Session {
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
    /// there was one.
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
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Marks a session's GET stream as read by a client while held.
pub(crate) struct Listening(pub(crate) Arc<Session>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.touch();
        self.0.listening.store(false, Ordering::Release);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The data behind these locks stays consistent whatever panicked while holding them.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Says why a session could not be made.
#[derive(Debug)]
pub(crate) enum Refused {
    /// `max_sessions` are open.
    Full(usize),
    /// The operating system gave no random bytes for its id.
    NoRandom(String),
}

/// Holds the open sessions, at most `max`, each ended after `idle` without a request (unless a
/// client reads its GET stream).
pub(crate) struct Sessions {
    map: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    max: usize,
    idle: Duration,
    retain: usize,
    /// The `retry` of each stream's priming event.
    retry: Option<Duration>,
}

impl Sessions {
    /// Returns a store of sessions, at most `max`, each ended after `idle` unused, keeping
    /// `replay.0` bytes of its events, its streams primed with `replay.1` as their `retry`.
    pub(crate) fn new(max: usize, idle: Duration, replay: (usize, Option<Duration>)) -> Self {
        Self {
            map: Mutex::default(),
            max,
            idle,
            retain: replay.0,
            retry: replay.1,
        }
    }

    /// Returns a new session with a fresh id, its GET stream's connection running with
    /// `streams`; expired sessions are ended first to make room.
    pub(crate) fn create(&self, streams: &PeerConfig) -> Result<Arc<Session>, Refused> {
        let id = session_id().map_err(Refused::NoRandom)?;
        let log = EventLog::primed(self.retain, self.retry);
        let replies = Replies::new();
        let ctx = Context::new(Transport::Http);
        let (standalone, input) = sse::open(&log, GET_STREAM, &replies, streams, ctx);
        let session = Arc::new(Session {
            id: id.into(),
            log,
            replies,
            legacy: LegacyState::new(Some(standalone.clone())),
            standalone,
            standalone_input: Mutex::new(Some(input)),
            next_stream: AtomicU64::new(GET_STREAM + 1),
            last_used: Mutex::new(Instant::now()),
            listening: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            cancels: Mutex::default(),
        });
        let mut map = lock(&self.map);
        if map.len() >= self.max {
            let now = Instant::now();
            map.retain(|_, s| {
                let keep = !self.expired(s, now);
                if !keep {
                    s.end();
                }
                keep
            });
        }
        if map.len() >= self.max {
            session.end();
            return Err(Refused::Full(self.max));
        }
        map.insert(Arc::clone(&session.id), Arc::clone(&session));
        Ok(session)
    }

    fn expired(&self, session: &Session, now: Instant) -> bool {
        !session.listening.load(Ordering::Acquire)
            && session.running.load(Ordering::Acquire) == 0
            && now.saturating_duration_since(session.idle_since()) >= self.idle
    }

    /// Returns the open session `id`, marked used; `None` when there is none (never was, ended, or
    /// expired: an expired one is ended now).
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let mut map = lock(&self.map);
        let session = map.get(id)?;
        if self.expired(session, Instant::now()) {
            if let Some(session) = map.remove(id) {
                session.end();
            }
            return None;
        }
        session.touch();
        Some(Arc::clone(session))
    }

    /// Ends session `id`; `false` when there is none.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let removed = lock(&self.map).remove(id);
        removed.map(|session| session.end()).is_some()
    }

    /// Ends every session (a shutdown): their GET streams end, so connections can drain.
    pub(crate) fn end_all(&self) {
        for (_, session) in lock(&self.map).drain() {
            session.end();
        }
    }

    /// Returns how many sessions are open (expired ones not yet ended included).
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

/// 128 bits from the operating system's random source, as 32 hex digits: not guessable, and
/// visible ASCII as MCP asks of a session id.
fn session_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| err.to_string())?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(max: usize, idle: Duration) -> Sessions {
        Sessions::new(max, idle, (1024, None))
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

    #[tokio::test(start_paused = true)]
    async fn sessions_are_capped_and_expire_when_idle() {
        let store = sessions(2, Duration::from_secs(60));
        let a = store.create(&streams()).unwrap();
        let _b = store.create(&streams()).unwrap();
        assert!(matches!(store.create(&streams()), Err(Refused::Full(2))));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(store.get(&a.id).is_some(), "used: its clock starts again");
        tokio::time::advance(Duration::from_secs(45)).await;
        // b has been idle 75 s: it makes room; a (45 s) stays.
        let c = store.create(&streams()).unwrap();
        assert_eq!(store.len(), 2);
        assert!(store.get(&a.id).is_some());
        assert!(store.remove(&c.id));
        assert!(store.get(&c.id).is_none());
        assert!(!store.remove(&c.id));
    }

    #[tokio::test]
    async fn requests_are_capped_per_session() {
        let store = sessions(1, Duration::from_secs(60));
        let s = store.create(&streams()).unwrap();
        let first = s.start_request(1).unwrap();
        assert!(s.start_request(1).is_none());
        drop(first);
        assert!(s.start_request(1).is_some());
    }
}
