//! Streams SSE answers: a request answered as a Server-Sent Events stream that carries what its
//! handler sends the client while it runs, then the answer. The seam a protocol carried over HTTP
//! builds its event streams on (MCP's Streamable HTTP does): the [`EventLog`] the events wait in
//! (and, to replay them, are kept in), [`SseAnswer`] that runs a request with its handler's peer
//! live, [`Replies`] that hands the answers a client posts back to the calls waiting for them, and
//! the replies that carry them.
//!
//! The request runs in a task of its own, with a [`Peer`] whose writes are the stream's events
//! as its context's [`peer`](crate::Context::peer). That connection reads only the answers the
//! client posts back to the handler's calls ([`Replies`] routes them to it). When the handler
//! ends, its answer is queued behind what it sent, the connection's input ends, and it ends once
//! all is in the log: so the answer is the stream's last event.
//!
//! | the handler sent, before its answer | [`Answered`] | the reply ([`reply`]) |
//! | --- | --- | --- |
//! | nothing | `Json` | `200 application/json`, the answer (an SSE stream would say nothing more) |
//! | something | `Events` | `200 text/event-stream`: what it sent, in order, then the answer |
//! | more than its connection may hold for the client, before anything was sent | `Lost` | `500`, `-32603`: the answer was lost |
//!
//! A log's events and its bodies:
//!
//! | a body of stream `s`, after event `n` | sends |
//! | --- | --- |
//! | an event of `s` numbered above `n` is in the log | that event, `id: s-n'` when the log keeps events |
//! | none, `s` still open | waits |
//! | none, `s` finished | ends |
//! | events of `s` after `n` were pushed out | ends: it cannot go on without a gap |
//! | `s` was cut, and this is the body that answers its request (not a resumption) | ends: what it has not sent waits for a client that resumes |
//!
//! These items are a stable seam within a minor version; see the guide's
//! [Protocols on the runtime](crate::guide::protocols).

pub use super::events::{EventLog, parse_event_id};

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use ::http::{HeaderValue, Response, StatusCode};
use hyper::body::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::events::First;
use crate::dispatch::{Context, Methods};
use crate::framing::Frame;
use crate::limits::Limits;
use crate::limits::{Room, Watermark};
use crate::peer::one_line;
use crate::peer::{Peer, PeerConfig};
use crate::server::ResponseBody as Body;
use crate::server::{closing, envelope, json};
use crate::wire::RpcError;
use crate::wire::{Incoming, id_of, incoming};

/// Returns whether `Accept` asks for an event stream: it names `text/event-stream` (with a `q`
/// above zero). `*/*` and `text/*` do not: curl, `fetch` and `requests` send `*/*` by default and
/// expect plain JSON.
pub fn asks_for_events(headers: &::http::HeaderMap) -> bool {
    headers
        .get_all(::http::header::ACCEPT)
        .iter()
        .any(accepts_events)
}

/// Returns whether one `Accept` value names `text/event-stream` (see [`asks_for_events`]).
pub(crate) fn accepts_events(value: &HeaderValue) -> bool {
    let Ok(text) = value.to_str() else {
        return false;
    };
    text.split(',').any(|range| {
        let mut parts = range.split(';');
        let essence = parts.next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("text/event-stream")
            && parts.all(|param| {
                let (name, value) = param.split_once('=').unwrap_or((param, ""));
                !name.trim().eq_ignore_ascii_case("q")
                    || value.trim().parse::<f32>().is_ok_and(|q| q > 0.0)
            })
    })
}

/// Returns whether `text` holds a call (a request with an id, alone or in a batch): only a call
/// has an answer to stream.
pub fn has_call(text: &str) -> bool {
    if incoming::is_batch(text) {
        return incoming::parse_batch(text).is_some_and(|elements| {
            elements
                .iter()
                .any(|element| element.as_ref().is_ok_and(|req| req.id.is_some()))
        });
    }
    incoming::parse_request(text).is_ok_and(|req| req.id.is_some())
}

/// Routes the answers to calls made from event streams: each call's id names the stream's
/// connection, until the answer comes or the stream ends. Ids come from one counter, so they
/// are distinct among all the streams that share the router; a client posts its answers to the
/// endpoint, which hands them here ([`route`](Self::route)).
#[derive(Debug, Default)]
pub struct Replies {
    ids: Arc<AtomicI64>,
    calls: Mutex<HashMap<i64, mpsc::WeakSender<Frame>>>,
    /// How many calls `calls` holds, set under its lock: what every `POST` looks at, without
    /// the lock.
    awaited: AtomicUsize,
}

impl Replies {
    /// Returns a router whose calls are numbered from 1.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            ids: Arc::new(AtomicI64::new(1)),
            calls: Mutex::default(),
            awaited: AtomicUsize::new(0),
        })
    }

    /// Runs `change` on the calls awaited, under their lock, and counts them after.
    fn change_calls<R>(
        &self,
        change: impl FnOnce(&mut HashMap<i64, mpsc::WeakSender<Frame>>) -> R,
    ) -> R {
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = change(&mut calls);
        // Stored before the event that carries a new call is sent: a client's answer to it
        // comes after, and finds the call counted.
        self.awaited.store(calls.len(), Ordering::Release);
        changed
    }

    /// Hands `text`, when it is one answer to a call an open stream made, to that stream's
    /// connection; `false` when it is not one, or no stream waits for it.
    pub fn route(&self, text: &str) -> bool {
        let Incoming::Response(res) = incoming::parse(text) else {
            return false;
        };
        let Some(id) = res.read().ok().and_then(|(id, _)| id.as_i64()) else {
            return false;
        };
        let Some(input) = self.change_calls(|calls| calls.remove(&id)) else {
            return false;
        };
        // A full input drops the answer: its call then times out, as over any connection.
        input
            .upgrade()
            .is_some_and(|tx| tx.try_send(Frame::Message(text.to_owned())).is_ok())
    }

    /// Returns whether no answer is awaited: a cheap look, for every `POST`.
    pub fn is_empty(&self) -> bool {
        self.awaited.load(Ordering::Acquire) == 0
    }
}

/// Returns the settings an event stream's connection runs with: a server's pushes never wait for room
/// ([`Overflow::Close`](crate::peer::Overflow::Close)), and the room of an event comes back once the
/// body has sent it.
pub(crate) fn stream_config(limits: Limits) -> Result<PeerConfig, crate::error::ConfigError> {
    let mut config = PeerConfig::builder()
        .limits(limits)
        .max_buffered(limits.get_max_buffered())
        .overflow(crate::peer::Overflow::Close)
        .build()?;
    // The body gives back the room of what it sent, and keeps the write deadline.
    config.sink_gives_back = true;
    config.write_timeout = None;
    Ok(config)
}

/// Opens one event stream: a connection whose writes are `stream`'s events in `log` (its calls'
/// answers routed by `replies`), and the sender of its input (the answers to its calls, which
/// [`Replies`] hands it). The connection's loop runs in a task of its own until its input ends;
/// `config` is the connection's (an endpoint's [`stream_config`]), `ctx` its handlers' base.
///
/// [`stream_config`]: crate::http::EndpointRequest::stream_config
pub fn open(
    log: &Arc<EventLog>,
    stream: u64,
    replies: &Arc<Replies>,
    config: &PeerConfig,
    ctx: Context,
) -> (Peer, mpsc::Sender<Frame>) {
    let queue = config.queue();
    let (input, rx) = mpsc::channel(queue);
    log.open(stream);
    let budget = Arc::new(OnceLock::new());
    let outlet = Outlet {
        log: Arc::clone(log),
        stream,
        budget: Arc::clone(&budget),
        replies: Arc::clone(replies),
        input: input.downgrade(),
        calls: VecDeque::new(),
        max_calls: queue,
    };
    let writer = futures_util::sink::unfold(outlet, |mut outlet, text: String| {
        outlet.write(text);
        std::future::ready(Ok::<_, Infallible>(outlet))
    });
    let reader = futures_util::stream::unfold(rx, |mut rx| async move {
        let frame = rx.recv().await?;
        Some((Ok::<_, Infallible>(frame), rx))
    });
    let mut config = config.clone().with_context(ctx);
    config.ids = Some(Arc::clone(&replies.ids));
    let (peer, driver) = Peer::start(reader, writer, Methods::new(), config);
    let _ = budget.set(Arc::clone(&peer.shared.budget));
    tokio::spawn(async move {
        // Its errors (a client that did not read, past the budget) are logged by the loop.
        let _ = driver.await;
    });
    (peer, input)
}

/// Acts as the writer of a stream's connection: each text becomes an event in the log, holding its
/// room in the connection's budget until a body sends it; a call's id is given to [`Replies`].
struct Outlet {
    log: Arc<EventLog>,
    stream: u64,
    /// The connection's budget, known once it is made (before its loop runs).
    budget: Arc<OnceLock<Arc<Watermark>>>,
    replies: Arc<Replies>,
    input: mpsc::WeakSender<Frame>,
    /// The ids of this stream's calls that [`Replies`] holds, oldest first.
    calls: VecDeque<i64>,
    /// How many of them it holds at most; the oldest is forgotten past it.
    max_calls: usize,
}

impl Outlet {
    fn write(&mut self, text: String) {
        // An event's data is one line; a JSON text's raw line ends are only white space.
        let text = one_line(text);
        if let Incoming::Request(req) = incoming::parse(&text)
            && let Some(id) = req.id.map(id_of).and_then(|id| id.as_i64())
        {
            let oldest = (self.calls.len() == self.max_calls)
                .then(|| self.calls.pop_front())
                .flatten();
            self.replies.change_calls(|calls| {
                if let Some(oldest) = oldest {
                    calls.remove(&oldest);
                }
                calls.insert(id, self.input.clone());
            });
            self.calls.push_back(id);
        }
        let bytes = text.len();
        match self.budget.get() {
            Some(budget) => {
                self.log
                    .push(self.stream, Bytes::from(text), Room::taken(budget, bytes))
            }
            None => tracing::error!("event stream written before its budget was set"),
        }
    }
}

impl Drop for Outlet {
    fn drop(&mut self) {
        self.log.finish(self.stream);
        let ids = &mut self.calls;
        self.replies.change_calls(|calls| {
            for id in ids.drain(..) {
                calls.remove(&id);
            }
        });
    }
}

/// Says how a request run by [`SseAnswer::run`] is answered.
#[derive(Debug)]
pub enum Answered {
    /// The handler sent nothing: its answer, as JSON.
    Json(Bytes),
    /// An event stream of what it sent, then its answer.
    Events(Body),
    /// The stream ended before anything was sent, without the answer: its connection closed (a
    /// handler that sent more than its client took, past `max_buffered` or `queue`).
    Lost,
}

/// Says what cancels a request answered as an event stream, besides a shutdown's drain budget.
#[derive(Debug)]
pub enum Cancel {
    /// Its client going away before the answer (the body dropped).
    IfGone,
    /// Only this signal, if any (a cancel notice naming it): it runs on when its client goes,
    /// its events kept in the log for a client that resumes.
    On(Option<WaitForCancellationFutureOwned>),
}

/// Runs a request with its handlers' [`Context::peer`](crate::Context::peer) writing a stream
/// of an [`EventLog`], and answers as the [module docs](self) say.
///
/// ```
/// use std::sync::Arc;
/// use jrpc_runtime::http::sse::{Answered, Cancel, EventLog, Replies, SseAnswer};
/// use jrpc_runtime::{Caller as _, Context, Methods, PeerConfig, RpcError, Transport};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut methods = Methods::new();
/// methods.register("count", &[], |(): (), ctx: Context| async move {
///     let peer = ctx.peer().ok_or_else(RpcError::internal)?;
///     peer.notify("tick", [1]).await.map_err(|_| RpcError::internal())?;
///     Ok::<_, RpcError>(1)
/// })?;
/// let (log, replies) = (EventLog::new(0), Replies::new());
/// let config = PeerConfig::builder().build()?;
/// let answer = SseAnswer { methods: &methods, log: &log, stream: 1, replies: &replies, config: &config };
/// let text = r#"{"jsonrpc":"2.0","method":"count","id":1}"#.to_owned();
/// let answered = answer.run(Context::new(Transport::Http), text, (), Cancel::IfGone).await;
/// assert!(matches!(answered, Answered::Events(_)));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SseAnswer<'a> {
    /// The table the request runs on.
    pub methods: &'a Methods,
    /// The log its events go to.
    pub log: &'a Arc<EventLog>,
    /// Its stream in the log: a number distinct from the log's other streams.
    pub stream: u64,
    /// Where the answers to its handler's calls come back.
    pub replies: &'a Arc<Replies>,
    /// The settings of its connection (an endpoint's
    /// [`stream_config`](crate::http::EndpointRequest::stream_config)).
    pub config: &'a PeerConfig,
}

impl SseAnswer<'_> {
    /// Runs `text` (holding a call) with `ctx` as its handlers' base, in a task of its own that
    /// holds `guard` (a shutdown's count of it, say) until `cancel` says otherwise; a request
    /// cancelled so is not answered: its stream ends.
    pub async fn run(
        self,
        ctx: Context,
        text: String,
        guard: impl Send + 'static,
        cancel: Cancel,
    ) -> Answered {
        let Self {
            methods,
            log,
            stream,
            replies,
            config,
        } = self;
        // A subscription opened by a request answered as an event stream lives as long as the
        // stream: its client going away ends it.
        let mut config = config.clone();
        config.subscriptions_outlive_input = matches!(cancel, Cancel::IfGone);
        let (peer, input) = open(log, stream, replies, &config, ctx.clone());
        let subscribed = peer.clone();
        let ctx = peer.own_context(ctx);
        let answer_text = Arc::new(OnceLock::new());
        let methods = methods.clone();
        let answer_slot = Arc::clone(&answer_text);
        let (cancel_if_gone, stop) = match cancel {
            Cancel::IfGone => (true, None),
            Cancel::On(stop) => (false, stop),
        };
        // The request's span (its tag, its peer) goes with it into its task.
        let task = tokio::spawn(tracing::Instrument::in_current_span(async move {
            let _guard = guard;
            let answered = methods.handle_in(&text, &ctx);
            let answered = match stop {
                None => answered.await,
                Some(stop) => tokio::select! {
                    answered = answered => answered,
                    () = stop => None,
                },
            };
            if let Some(answer) = answered {
                let answer = one_line(answer);
                let _ = answer_slot.set(Bytes::from(answer.clone()));
                // Queued behind what the handler sent; a text that finds no room closes the stream.
                let _ = peer.send_text("(answer)", answer, true).await;
            }
            // The end of input: the loop writes what is queued, then ends, finishing the stream.
            drop(input);
        }));
        let abort = cancel_if_gone.then(|| AbortOnDrop(task.abort_handle(), subscribed.clone()));
        match log.first(stream).await {
            First::Nothing => Answered::Lost,
            First::Event(first)
                if answer_text.get() == Some(&first)
                    && !subscribed.shared.subscriptions.ever_opened() =>
            {
                log.take_first(stream);
                Answered::Json(first)
            }
            First::Event(_) | First::Cut => Answered::Events(log.answer_body(stream, abort)),
        }
    }
}

/// Aborts a task when dropped, and ends the subscriptions of its stream's connection: a request
/// whose client went away.
struct AbortOnDrop(tokio::task::AbortHandle, Peer);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
        self.1.shared.subscriptions.close();
    }
}

/// Returns `200 text/event-stream` with `body` (and `Cache-Control: no-cache`, so that proxies
/// pass events on as they come).
pub fn events_reply(body: Body) -> Response<Body> {
    let mut res = Response::new(body);
    *res.status_mut() = StatusCode::OK;
    let headers = res.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    // Proxies must pass events on as they come, not store or gather them.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// Returns the reply for what [`SseAnswer::run`] gave: `500` with `-32603` for a lost answer.
pub fn reply(answered: Answered) -> Response<Body> {
    match answered {
        Answered::Json(bytes) => json(StatusCode::OK, bytes),
        Answered::Events(body) => events_reply(body),
        Answered::Lost => closing(envelope(
            StatusCode::INTERNAL_SERVER_ERROR,
            &RpcError::internal().with_data(
                "the answer was lost: the handler sent more than the connection may hold for its client (`max_buffered`, `queue`)",
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::http::HeaderMap;
    use ::http::header::ACCEPT;

    fn accept(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn only_an_accept_naming_event_streams_asks_for_them() {
        for yes in [
            "text/event-stream",
            "application/json, text/event-stream",
            "Text/Event-Stream; q=0.5",
        ] {
            assert!(asks_for_events(&accept(yes)), "{yes}");
        }
        for no in [
            "*/*",
            "text/*",
            "application/json",
            "text/event-stream;q=0",
            "text/event-streams",
        ] {
            assert!(!asks_for_events(&accept(no)), "{no}");
        }
        assert!(!asks_for_events(&HeaderMap::new()));
    }

    #[test]
    fn calls_are_told_from_notifications() {
        assert!(has_call(r#"{"jsonrpc":"2.0","method":"a","id":1}"#));
        assert!(has_call(
            r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b","id":null}]"#
        ));
        assert!(!has_call(r#"{"jsonrpc":"2.0","method":"a"}"#));
        assert!(!has_call(r#"{"jsonrpc":"2.0","result":1,"id":1}"#));
        assert!(!has_call("not json"));
    }
}
