//! Keeps the events of Server-Sent Events streams: the log they wait in, and the response body that
//! sends one stream's events from it.
//!
//! A log holds the events of one or more streams (an HTTP request's, or an MCP session's), each
//! numbered in one sequence. An event waits in the log until a body sends it, holding its room in
//! the budget of the connection that wrote it (so what waits for a client that does not read is
//! bounded by `max_buffered`); once sent, it gives that room back and is dropped, or, in a log
//! that keeps events for replay, kept until `retain` bytes of newer sent events push it out.
//!
//! | a body of stream `s`, after event `n` | sends |
//! | --- | --- |
//! | an event of `s` numbered above `n` is in the log | that event, `id: s-n'` when the log keeps events |
//! | none, `s` still open | waits |
//! | none, `s` finished | ends |
//! | events of `s` after `n` were pushed out | ends: it cannot go on without a gap |
//! | `s` was cut, and this is the body that answers its request (not a resumption) | ends: what it has not sent waits for a client that resumes |
//!
//! A log made [`primed`](EventLog::primed) (an MCP session's) opens each stream with a number of
//! its own kept for a priming event: a body that starts at the stream's beginning first sends an
//! event with that id, no data, and the log's `retry`, so that a client can resume from the very
//! start (MCP's SEP-1699).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::stream;
use http_body_util::StreamBody;
use hyper::body::{Bytes, Frame};
use tokio::sync::Notify;

use crate::limits::Room;
use crate::server::ResponseBody as Body;

/// Holds the events of some Server-Sent Events streams, waiting to be sent (and, to replay them
/// to a client that resumes with `Last-Event-ID`, kept a while after): see the
/// [module docs](super::sse).
///
/// Each stream is a number the owner keeps distinct within the log (an MCP session numbers its
/// requests' streams, and keeps `0` for its GET stream). A body ([`body`](Self::body)) sends a
/// stream's events as they come; an [`SseAnswer`](super::sse::SseAnswer) writes a request's.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Log>,
    /// Woken when an event arrives or a stream finishes.
    changed: Notify,
    /// How many bytes of sent events are kept to be replayed; zero keeps none.
    retain: usize,
    /// Whether each stream opens with a priming event, and the `retry` it carries.
    priming: Option<Option<Duration>>,
}

#[derive(Debug, Default)]
struct Log {
    events: VecDeque<Event>,
    /// Bytes of the sent events kept.
    kept: usize,
    next_seq: u64,
    streams: HashMap<u64, Stream>,
}

#[derive(Debug)]
struct Event {
    stream: u64,
    seq: u64,
    json: Bytes,
    /// The room it holds in its connection's budget until it is sent.
    room: Option<Room>,
}

#[derive(Debug, Default)]
struct Stream {
    open: bool,
    /// The last event of the stream a body sent.
    sent: Option<u64>,
    /// The last event of the stream pushed out of the log: a body from before it has a gap.
    pushed_out: Option<u64>,
    /// The number of its priming event, in a primed log.
    primer: Option<u64>,
    /// Whether the body answering its request is to end (the client polls for the rest).
    cut: bool,
}

/// Says what [`EventLog::first`] found.
pub(crate) enum First {
    /// The stream has an event; its JSON text.
    Event(Bytes),
    /// The stream finished without one.
    Nothing,
    /// The stream was cut before its first event: its body is to send its priming event alone.
    Cut,
}

impl EventLog {
    /// Returns a log keeping `retain` bytes of sent events for replay (zero: none).
    pub fn new(retain: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Log::default()),
            changed: Notify::new(),
            retain,
            priming: None,
        })
    }

    /// Returns a log keeping `retain` bytes of sent events (more than zero), whose streams open
    /// with a priming event carrying `retry`: a body that starts at a stream's beginning first
    /// sends an event with an id of its own, no data, and `retry`, so that a client can resume
    /// from the very start (MCP's SEP-1699).
    pub fn primed(retain: usize, retry: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Log::default()),
            changed: Notify::new(),
            retain,
            priming: (retain > 0).then_some(retry),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // A panic while holding the lock leaves plain data behind, still consistent.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens stream `stream` (a number the caller keeps distinct within the log); in a primed
    /// log, with a number kept for its priming event.
    pub fn open(&self, stream: u64) {
        let mut log = self.lock();
        let primer = self.priming.is_some().then(|| {
            let seq = log.next_seq;
            log.next_seq += 1;
            seq
        });
        let state = log.streams.entry(stream).or_default();
        state.open = true;
        state.primer = state.primer.or(primer);
    }

    /// Cuts `stream`: the body answering its request ends (at once, or when it starts), and what
    /// it has not sent waits in the log for a client that resumes with `Last-Event-ID`.
    /// Returns whether `stream` was open.
    pub fn cut(&self, stream: u64) -> bool {
        let mut log = self.lock();
        let Some(state) = log.streams.get_mut(&stream).filter(|s| s.open) else {
            return false;
        };
        state.cut = true;
        drop(log);
        self.changed.notify_waiters();
        true
    }

    /// Returns whether the log knows `stream`: it is open, or has events left.
    pub fn knows(&self, stream: u64) -> bool {
        self.lock().streams.contains_key(&stream)
    }

    /// Adds an event to `stream`, holding `room` until it is sent.
    pub(crate) fn push(&self, stream: u64, json: Bytes, room: Room) {
        let mut log = self.lock();
        let seq = log.next_seq;
        log.next_seq += 1;
        log.events.push_back(Event {
            stream,
            seq,
            json,
            room: Some(room),
        });
        drop(log);
        self.changed.notify_waiters();
    }

    /// Finishes `stream`: a body sends what is left of it, then ends.
    pub fn finish(&self, stream: u64) {
        let mut log = self.lock();
        if let Some(state) = log.streams.get_mut(&stream) {
            state.open = false;
        }
        log.forget_if_done(stream);
        drop(log);
        self.changed.notify_waiters();
    }

    /// Waits for `stream`'s first event not yet sent, or its end.
    pub(crate) async fn first(&self, stream: u64) -> First {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let log = self.lock();
                if let Some(event) = log.events.iter().find(|e| e.stream == stream) {
                    return First::Event(event.json.clone());
                }
                match log.streams.get(&stream) {
                    Some(state) if state.cut => return First::Cut,
                    Some(state) if state.open => {}
                    _ => return First::Nothing,
                }
            }
            changed.await;
        }
    }

    /// Takes `stream`'s first event out of the log unsent (its room given back): it is answered
    /// another way (as a whole JSON reply).
    pub(crate) fn take_first(&self, stream: u64) {
        let mut log = self.lock();
        if let Some(at) = log.events.iter().position(|e| e.stream == stream) {
            log.events.remove(at);
        }
        log.forget_if_done(stream);
    }

    /// Returns the next event of `stream` after `after` for a body to send, marked sent; `Err` when
    /// the body should end (`answering`: the body answering the stream's request, which a cut
    /// ends).
    fn next(
        &self,
        stream: u64,
        after: Option<u64>,
        answering: bool,
    ) -> Result<Option<(u64, Bytes)>, ()> {
        let mut log = self.lock();
        let state = log.streams.get(&stream);
        if state
            .and_then(|s| s.pushed_out)
            .is_some_and(|out| after.is_none_or(|after| out > after))
            || (answering && state.is_some_and(|s| s.cut))
        {
            return Err(());
        }
        let found = log
            .events
            .iter()
            .position(|e| e.stream == stream && after.is_none_or(|after| e.seq > after));
        let Some(at) = found else {
            let open = log.streams.get(&stream).is_some_and(|s| s.open);
            return if open { Ok(None) } else { Err(()) };
        };
        let event = &mut log.events[at];
        // Sent: its room goes back to the connection that wrote it.
        let newly_sent = event.room.take().is_some();
        let (seq, json) = (event.seq, event.json.clone());
        if self.retain == 0 {
            log.events.remove(at);
        } else if newly_sent {
            log.kept += json.len();
            log.push_out(self.retain);
        }
        let state = log.streams.entry(stream).or_default();
        state.sent = Some(state.sent.map_or(seq, |sent| sent.max(seq)));
        log.forget_if_done(stream);
        Ok(Some((seq, json)))
    }

    /// Returns a response body sending `stream`'s events after event `after` (from its first
    /// event not yet sent, when `None`), each with its id when the log keeps events for replay.
    pub fn body(self: &Arc<Self>, stream: u64, after: Option<u64>) -> Body {
        self.body_holding(stream, after, ())
    }

    /// Returns [`body`](Self::body), holding `keep` until the body is dropped (sent, or its
    /// client gone).
    pub fn body_holding<K: Send + 'static>(
        self: &Arc<Self>,
        stream: u64,
        after: Option<u64>,
        keep: K,
    ) -> Body {
        self.body_of(stream, after, keep, false)
    }

    /// Returns the body answering `stream`'s request, from its start: its priming event first in a
    /// primed log, and it ends when the stream is cut.
    pub(crate) fn answer_body<K: Send + 'static>(self: &Arc<Self>, stream: u64, keep: K) -> Body {
        self.body_of(stream, None, keep, true)
    }

    fn body_of<K: Send + 'static>(
        self: &Arc<Self>,
        stream: u64,
        after: Option<u64>,
        keep: K,
        answering: bool,
    ) -> Body {
        let (after, primer) = {
            let log = self.lock();
            let state = log.streams.get(&stream);
            let after = after.or_else(|| state.and_then(|s| s.sent));
            let primer = state
                .and_then(|s| s.primer)
                .filter(|primer| after.is_none_or(|after| after < *primer));
            (after, primer)
        };
        let retry = self.priming.flatten();
        let first = primer.map(|seq| priming_event(&event_id(stream, seq), retry));
        let state = (Arc::clone(self), after, keep, first);
        let events = stream::unfold(state, move |(log, mut after, keep, first)| async move {
            if let Some(primer) = first {
                let frame = Frame::data(primer);
                return Some((Ok::<_, Infallible>(frame), (log, after, keep, None)));
            }
            let (seq, json) = loop {
                let changed = log.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                match log.next(stream, after, answering) {
                    Err(()) => return None,
                    Ok(Some(next)) => break next,
                    Ok(None) => changed.await,
                }
            };
            after = Some(seq);
            let id = (log.retain > 0).then(|| event_id(stream, seq));
            let frame = Frame::data(event(id.as_deref(), &json));
            Some((Ok::<_, Infallible>(frame), (log, after, keep, None)))
        });
        Body::streamed(StreamBody::new(events))
    }
}

impl Log {
    /// Pushes the oldest sent events out until what is kept fits in `retain` bytes.
    fn push_out(&mut self, retain: usize) {
        while self.kept > retain {
            let Some(at) = self.events.iter().position(|e| e.room.is_none()) else {
                break;
            };
            if let Some(event) = self.events.remove(at) {
                self.kept -= event.json.len();
                let state = self.streams.entry(event.stream).or_default();
                state.pushed_out = Some(state.pushed_out.map_or(event.seq, |n| n.max(event.seq)));
                self.forget_if_done(event.stream);
            }
        }
    }

    /// Forgets a finished stream that has no event left.
    fn forget_if_done(&mut self, stream: u64) {
        let done = self.streams.get(&stream).is_some_and(|s| !s.open);
        if done && !self.events.iter().any(|e| e.stream == stream) {
            self.streams.remove(&stream);
        }
    }
}

/// Returns an event's id: its stream and its number, so that `Last-Event-ID` names both.
pub(crate) fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Returns the stream and number an event id names (a `Last-Event-ID` a client resumes with).
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// Returns a priming event: its id, the `retry` the client waits before it reconnects (when set),
/// and no data.
fn priming_event(id: &str, retry: Option<Duration>) -> Bytes {
    let mut out = format!("id: {id}\n");
    if let Some(retry) = retry {
        out.push_str(&format!("retry: {}\n", retry.as_millis()));
    }
    out.push_str("data: \n\n");
    Bytes::from(out)
}

/// Returns one event: `id:` when given, then the JSON text as its `data:` line. The text has no
/// line ends (outgoing texts are made one line, as for line framing), so it is one line.
fn event(id: Option<&str>, json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;
    use http_body_util::BodyExt as _;

    use super::*;
    use crate::limits::Watermark;

    fn room(budget: &Arc<Watermark>, bytes: usize) -> Room {
        assert!(budget.try_take(bytes));
        Room::taken(budget, bytes)
    }

    async fn text(body: Body) -> String {
        let bytes = body.collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_body_sends_its_streams_events_in_order_and_gives_their_room_back() {
        let budget = Arc::new(Watermark::new(1000, None));
        let log = EventLog::new(0);
        log.open(1);
        log.open(2);
        log.push(1, Bytes::from_static(b"{\"a\":1}"), room(&budget, 7));
        log.push(2, Bytes::from_static(b"{\"other\":1}"), room(&budget, 11));
        log.push(1, Bytes::from_static(b"{\"a\":2}"), room(&budget, 7));
        log.finish(1);
        assert_eq!(budget.held(), 25);
        let sent = text(log.body(1, None)).await;
        assert_eq!(sent, "data: {\"a\":1}\n\ndata: {\"a\":2}\n\n");
        assert_eq!(budget.held(), 11, "stream 2's event still waits");
        assert!(
            !log.knows(1),
            "a finished stream with nothing left is forgotten"
        );
        assert!(log.knows(2));
    }

    #[tokio::test]
    async fn a_kept_stream_replays_after_an_event_id_until_pushed_out() {
        let budget = Arc::new(Watermark::new(1000, None));
        let log = EventLog::new(20);
        log.open(0);
        for n in 0..3 {
            log.push(0, Bytes::from(format!("{{\"n\":{n}}}")), room(&budget, 7));
        }
        log.finish(0);
        let all = text(log.body(0, None)).await;
        assert_eq!(
            all,
            "id: 0-0\ndata: {\"n\":0}\n\nid: 0-1\ndata: {\"n\":1}\n\nid: 0-2\ndata: {\"n\":2}\n\n"
        );
        assert_eq!(budget.held(), 0);
        // 21 bytes were sent; 20 are kept, so the first event is gone: replay after it works,
        // replay from before it cannot go on without a gap.
        assert_eq!(
            text(log.body(0, Some(1))).await,
            "id: 0-2\ndata: {\"n\":2}\n\n"
        );
        assert_eq!(parse_event_id("0-1"), Some((0, 1)));
        assert_eq!(parse_event_id("x"), None);
    }

    #[tokio::test]
    async fn a_primed_stream_starts_with_its_priming_event_and_a_cut_ends_its_answer() {
        let budget = Arc::new(Watermark::new(1000, None));
        let log = EventLog::primed(1000, Some(Duration::from_millis(3000)));
        log.open(4);
        assert!(
            log.first(4).now_or_never().is_none(),
            "nothing yet: it waits"
        );
        assert!(log.cut(4));
        assert!(matches!(log.first(4).await, First::Cut));
        let answered = text(log.answer_body(4, ())).await;
        assert_eq!(
            answered, "id: 4-0\nretry: 3000\ndata: \n\n",
            "the primer alone"
        );
        // What comes after waits for a client that resumes after the primer.
        log.push(4, Bytes::from_static(b"{\"a\":1}"), room(&budget, 7));
        log.finish(4);
        assert_eq!(
            text(log.body(4, Some(0))).await,
            "id: 4-1\ndata: {\"a\":1}\n\n"
        );
    }
}
