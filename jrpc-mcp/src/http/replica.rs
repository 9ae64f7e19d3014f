//! Carries what goes between the replicas that serve one legacy session, on the session's topic
//! (`mcp/session/ID` on the server's [`Topics`](jrpc_runtime::server::Topics): through Redis
//! with `Topics::redis`). Each replica that holds a part of the session watches the topic; a
//! message names the replica it is for (by tag) where only one should act.
//!
//! | message | sent by | acted on by |
//! | --- | --- | --- |
//! | `answer` | the replica a client posted an answer to that no call of its own awaits | the replica whose call it answers |
//! | `cancel` | the replica a `notifications/cancelled` was posted to | every replica running a request of that id |
//! | `push` | a replica whose handler sent on [`McpSession::peer`](super::McpSession::peer) | the replica holding the GET stream (the session's listener, in the store) |
//! | `pushed` | the listener, when the push was a call | the replica that made it: the client's answer |
//! | `follow` | the replica serving `resources/subscribe` or `unsubscribe` | the listener |
//! | `end` | the replica a `DELETE` reached | every replica: its part ends |
//! | `replay` | a replica a client resumed a stream on (`Last-Event-ID`) that another numbered | the replica that numbered it (its tag is the stream's high half) |
//! | `replayed` | that replica: the stream's events after the one named, as they come | the replica that asked, which sends them to its client |
//! | `replay_stop` | the replica that asked, when its client goes | the replica replaying |
//!
//! Calls to the client are numbered by each replica on its own, so two replicas calling one
//! session's client at the same moment may give two calls one id; its answer then goes to both
//! (the guide says so, and what would lift it).

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures_util::Stream;
use hyper::body::{Body, Bytes, Frame as BodyFrame};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use jrpc_runtime::framing::Frame;
use jrpc_runtime::http::reply::ResponseBody;
use jrpc_runtime::server::TopicWatch;
use jrpc_runtime::wire::incoming::{self, Incoming};
use jrpc_runtime::wire::{self, RpcError};
use jrpc_runtime::{Caller as _, Cancellation, Methods, Peer, PeerConfig};

use super::session::{Listening, Session, Sessions, lock, stream_tag};
use crate::store::SessionChange;

/// How long a replica waits for the one that numbered a stream to start replaying it; past it,
/// that replica is taken as gone, and its stream's events with it.
const REPLAY_WAIT: Duration = Duration::from_secs(3);

/// Names the one method every message of a session's topic goes as.
const METHOD: &str = "mcp/session";

/// Says what goes between replicas for a session (see the module docs).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "m", rename_all = "snake_case")]
enum Message {
    Answer {
        text: String,
    },
    Cancel {
        params: Box<RawValue>,
    },
    Push {
        to: u64,
        from: u64,
        text: String,
    },
    Pushed {
        to: u64,
        text: String,
    },
    Follow {
        to: u64,
        uri: String,
        on: bool,
    },
    End,
    Replay {
        from: u64,
        stream: u64,
        after: Option<u64>,
        replay: u64,
    },
    Replayed {
        to: u64,
        replay: u64,
        part: Part,
    },
    ReplayStop {
        replay: u64,
    },
}

/// Says which part of a replay a `replayed` message carries.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Part {
    /// The stream is known: its events follow.
    Start,
    /// Some of its bytes, as the stream's body sent them.
    Chunk(String),
    /// The stream ended.
    End,
    /// The stream is the session's GET stream, read by a client already.
    Refused,
    /// The replica does not know the stream (it ended, and its events were pushed out).
    Unknown,
}

/// Says how a resumption from another replica went.
pub(crate) enum Replayed {
    /// The stream's events, as the replica that numbered it sends them.
    Body(ResponseBody),
    /// That replica refused: the stream is the GET stream, read by a client already.
    Refused,
    /// No replica knows the stream (or the one that did is gone).
    Unknown,
}

/// Holds the replays a replica waits for, by number.
type Waiting = Arc<Mutex<HashMap<u64, mpsc::Sender<Part>>>>;

/// Holds what a replica's part of a session needs to reach the other replicas.
pub(crate) struct Replica {
    topic: String,
    sessions: Weak<Sessions>,
    /// The input of the relay connection (what [`McpSession::peer`](super::McpSession::peer)
    /// is): the client's answers to its calls.
    relay_input: mpsc::Sender<Frame>,
    replays: Waiting,
    /// The replays this replica streams to others, by number.
    serving: Mutex<HashMap<u64, CancellationToken>>,
    /// The resources the GET stream here follows, while this replica is the listener.
    following: Mutex<BTreeSet<String>>,
    /// How many events a replay holds for a client that reads slowly.
    queue: usize,
}

impl Replica {
    /// Returns the replica part of session `id` (whose part is `session`, being made), the
    /// relay connection its handlers send on, and the watch of the session's topic: hand it to
    /// [`watch`](Self::watch) once the part is made.
    pub(crate) fn new(
        session: Weak<Session>,
        sessions: &Arc<Sessions>,
        id: &str,
        streams: &PeerConfig,
    ) -> (Replica, Peer, TopicWatch) {
        let queue = streams.queue();
        let (relay_input, relay) = relay(session, Arc::downgrade(sessions), streams);
        let topic = format!("mcp/session/{id}");
        let watch = sessions.mcp.topics().watch([topic.clone()], queue);
        let replica = Replica {
            topic,
            sessions: Arc::downgrade(sessions),
            relay_input,
            replays: Waiting::default(),
            serving: Mutex::default(),
            following: Mutex::default(),
            queue,
        };
        (replica, relay, watch)
    }

    /// Acts on what `watch` (the session's topic) brings for the part `session`, until it ends.
    pub(crate) fn watch(watch: TopicWatch, session: &Arc<Session>, sessions: &Arc<Sessions>) {
        let (session, sessions) = (Arc::downgrade(session), Arc::downgrade(sessions));
        tokio::spawn(watch_topic(watch, session, sessions));
    }

    /// Waits until what other replicas publish on the session's topic reaches this one.
    pub(crate) async fn ready(&self, sessions: &Sessions) {
        sessions.mcp.topics().ready(&self.topic).await;
    }

    /// Sends `message` to the other replicas' parts of the session.
    fn publish(&self, sessions: &Sessions, message: &Message) {
        if let Err(err) = sessions.mcp.topics().publish(&self.topic, METHOD, message) {
            tracing::warn!(%err, "could not send to the session's other replicas");
        }
    }

    /// Hands the client's answer `text`, which no call here awaits, to the other replicas.
    pub(crate) fn answer(&self, sessions: &Sessions, text: &str) {
        let text = text.to_owned();
        self.publish(sessions, &Message::Answer { text });
    }

    /// Has the other replicas cancel what `notifications/cancelled` with `params` names.
    pub(crate) fn cancel(&self, sessions: &Sessions, params: &RawValue) {
        let params = params.to_owned();
        self.publish(sessions, &Message::Cancel { params });
    }

    /// Ends the session's parts on every other replica.
    pub(crate) fn end(&self, sessions: &Sessions) {
        self.publish(sessions, &Message::End);
    }

    /// Has the GET stream follow (`on`) or leave `uri`, on whichever replica holds it.
    pub(crate) async fn follow(
        &self,
        session: &Session,
        sessions: &Sessions,
        uri: &str,
        on: bool,
    ) -> Result<(), RpcError> {
        let record = sessions
            .store
            .session(&session.id, sessions.limits.idle)
            .await?;
        match record.and_then(|record| record.listener) {
            Some(tag) if tag == sessions.tag => self.follow_here(session, sessions, uri, on),
            Some(to) => {
                let uri = uri.to_owned();
                self.publish(sessions, &Message::Follow { to, uri, on });
            }
            // No GET stream: the next one follows what the store says.
            None => {}
        }
        Ok(())
    }

    /// Has this replica's GET stream follow (`on`) or leave `uri`.
    fn follow_here(&self, session: &Session, sessions: &Sessions, uri: &str, on: bool) {
        let core = &sessions.mcp.core;
        crate::data::follow_resource(core, &session.standalone, uri, on);
        let mut following = lock(&self.following);
        if on {
            following.insert(uri.to_owned());
        } else {
            following.remove(uri);
        }
    }

    /// Makes this replica the session's listener: its GET stream follows the lists and the
    /// resources of `followed`.
    pub(crate) async fn start_listening(
        &self,
        session: &Session,
        sessions: &Sessions,
        followed: &BTreeSet<String>,
    ) -> Result<(), RpcError> {
        let change = SessionChange::Listener {
            now: Some(sessions.tag),
            was: None,
        };
        let store = &sessions.store;
        store
            .update_session(&session.id, change, sessions.limits.idle)
            .await?;
        let core = &sessions.mcp.core;
        crate::data::follow_lists(core, &session.standalone);
        for uri in followed {
            self.follow_here(session, sessions, uri, true);
        }
        // What another replica publishes from now on reaches the stream.
        for topic in sessions.mcp.topics().names() {
            sessions.mcp.topics().ready(&topic).await;
        }
        Ok(())
    }

    /// Stops being the session's listener (its GET stream's client went): the GET stream here
    /// follows nothing, so that changes do not pile up here for no one, and the store forgets
    /// this replica as the listener (unless another took over).
    pub(crate) fn stop_listening(&self, session: &Session) {
        let Some(sessions) = self.sessions.upgrade() else {
            return;
        };
        let core = &sessions.mcp.core;
        crate::data::unfollow_lists(core, &session.standalone);
        let following = std::mem::take(&mut *lock(&self.following));
        for uri in following {
            crate::data::follow_resource(core, &session.standalone, &uri, false);
        }
        let change = SessionChange::Listener {
            now: None,
            was: Some(sessions.tag),
        };
        let id = session.id.to_string();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let (store, idle) = (&sessions.store, sessions.limits.idle);
                if let Err(err) = store.update_session(&id, change, idle).await {
                    tracing::warn!(%err, "could not clear the session's listener");
                }
            });
        }
    }

    /// Resumes `stream` after event `after` from the replica that numbered it.
    pub(crate) async fn replay(
        &self,
        sessions: &Sessions,
        stream: u64,
        after: Option<u64>,
    ) -> Replayed {
        let mut number = [0u8; 8];
        let _ = getrandom::fill(&mut number);
        let replay = u64::from_le_bytes(number);
        let (tx, mut rx) = mpsc::channel(self.queue.max(2));
        lock(&self.replays).insert(replay, tx);
        let mut guard = ReplayGuard {
            replays: Arc::clone(&self.replays),
            replay,
            stop: None,
        };
        let from = sessions.tag;
        let ask = Message::Replay {
            from,
            stream,
            after,
            replay,
        };
        self.publish(sessions, &ask);
        match tokio::time::timeout(REPLAY_WAIT, rx.recv()).await {
            Ok(Some(Part::Start)) => {}
            Ok(Some(Part::Refused)) => return Replayed::Refused,
            _ => return Replayed::Unknown,
        }
        guard.stop = Some((sessions.mcp.clone(), self.topic.clone()));
        let parts = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
            match rx.recv().await? {
                Part::Chunk(text) => {
                    let frame = BodyFrame::data(Bytes::from(text));
                    Some((Ok::<_, Infallible>(frame), (rx, guard)))
                }
                _ => None,
            }
        });
        Replayed::Body(ResponseBody::streamed(StreamBody(Box::pin(parts))))
    }
}

/// Forgets a replay waited for when dropped; once it started, tells the replica replaying it to
/// stop.
struct ReplayGuard {
    replays: Waiting,
    replay: u64,
    stop: Option<(crate::data::Mcp, String)>,
}

impl Drop for ReplayGuard {
    fn drop(&mut self) {
        lock(&self.replays).remove(&self.replay);
        if let Some((mcp, topic)) = &self.stop {
            let message = Message::ReplayStop {
                replay: self.replay,
            };
            let _ = mcp.topics().publish(topic, METHOD, &message);
        }
    }
}

/// Watches a session's topic for this replica's part, until the part ends.
async fn watch_topic(mut watch: TopicWatch, session: Weak<Session>, sessions: Weak<Sessions>) {
    let Some(ended) = session.upgrade().map(|session| session.ended()) else {
        return;
    };
    tokio::pin!(ended);
    loop {
        let published = tokio::select! {
            published = watch.recv() => published,
            () = &mut ended => None,
        };
        let Some(published) = published else {
            return;
        };
        let message = published
            .params
            .and_then(|raw| serde_json::from_str::<Message>(raw.get()).ok());
        let (Some(session), Some(sessions), Some(message)) =
            (session.upgrade(), sessions.upgrade(), message)
        else {
            continue;
        };
        handle(&session, &sessions, message).await;
    }
}

/// Acts on `message`, when it is this replica's to act on.
async fn handle(session: &Arc<Session>, sessions: &Arc<Sessions>, message: Message) {
    let me = sessions.tag;
    let Some(replica) = &session.replica else {
        return;
    };
    match message {
        Message::Answer { text } => {
            session.replies.route(&text);
        }
        Message::Cancel { params } => {
            if let Some(id) = Cancellation::target(Some(&params)) {
                session.cancel(&id);
            }
        }
        Message::Push { to, from, text } if to == me => {
            let reply = ReplyTo::Replica {
                sessions: Arc::downgrade(sessions),
                session: Arc::downgrade(session),
                to: from,
            };
            deliver(session, &text, reply).await;
        }
        Message::Pushed { to, text } if to == me => {
            let _ = replica.relay_input.try_send(Frame::Message(text));
        }
        Message::Follow { to, uri, on } if to == me => {
            replica.follow_here(session, sessions, &uri, on);
        }
        Message::End => {
            sessions.drop_part(&session.id);
        }
        Message::Replay {
            from,
            stream,
            after,
            replay,
        } if stream_tag(stream) == me && from != me => {
            serve_replay(session, sessions, stream, after, (from, replay)).await;
        }
        Message::Replayed { to, replay, part } if to == me => {
            let waiting = lock(&replica.replays).get(&replay).cloned();
            // A client that reads too slowly for the replay loses it: its stream ends, and it
            // may resume again.
            if let Some(waiting) = waiting
                && waiting.try_send(part).is_err()
            {
                lock(&replica.replays).remove(&replay);
            }
        }
        Message::ReplayStop { replay } => {
            if let Some(token) = lock(&replica.serving).remove(&replay) {
                token.cancel();
            }
        }
        _ => {}
    }
}

/// Streams this replica's `stream` after `after` to the replica `to.0`, as replay `to.1`.
async fn serve_replay(
    session: &Arc<Session>,
    sessions: &Arc<Sessions>,
    stream: u64,
    after: Option<u64>,
    (to, replay): (u64, u64),
) {
    let Some(replica) = &session.replica else {
        return;
    };
    let say = |part| {
        let message = Message::Replayed { to, replay, part };
        replica.publish(sessions, &message);
    };
    let body = if stream == session.get_stream {
        if session
            .listening
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return say(Part::Refused);
        }
        let listening = Listening(Arc::clone(session));
        let followed = match sessions
            .store
            .session(&session.id, sessions.limits.idle)
            .await
        {
            Ok(Some(record)) => record.followed,
            _ => BTreeSet::new(),
        };
        if replica
            .start_listening(session, sessions, &followed)
            .await
            .is_err()
        {
            drop(listening);
            return say(Part::Unknown);
        }
        session.log.body_holding(stream, after, listening)
    } else if session.log.knows(stream) {
        session.log.body(stream, after)
    } else {
        return say(Part::Unknown);
    };
    let stop = CancellationToken::new();
    lock(&replica.serving).insert(replay, stop.clone());
    say(Part::Start);
    let (session, sessions) = (Arc::downgrade(session), Arc::downgrade(sessions));
    tokio::spawn(async move {
        let mut body = body;
        loop {
            let frame = tokio::select! {
                frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)) => frame,
                () = stop.cancelled() => return,
            };
            let Some(bytes) = frame.and_then(|f| f.ok()?.into_data().ok()) else {
                break;
            };
            let (Some(session), Some(sessions)) = (session.upgrade(), sessions.upgrade()) else {
                return;
            };
            let Some(replica) = &session.replica else {
                return;
            };
            let part = Part::Chunk(String::from_utf8_lossy(&bytes).into_owned());
            replica.publish(&sessions, &Message::Replayed { to, replay, part });
        }
        if let (Some(session), Some(sessions)) = (session.upgrade(), sessions.upgrade())
            && let Some(replica) = &session.replica
        {
            lock(&replica.serving).remove(&replay);
            let part = Part::End;
            replica.publish(&sessions, &Message::Replayed { to, replay, part });
        }
    });
}

/// Says where the client's answer to a call delivered on the GET stream goes.
enum ReplyTo {
    /// To this replica's relay connection.
    Relay(mpsc::WeakSender<Frame>),
    /// To the relay of another replica, through the topic.
    Replica {
        sessions: Weak<Sessions>,
        session: Weak<Session>,
        to: u64,
    },
}

impl ReplyTo {
    fn send(self, answer: String) {
        match self {
            Self::Relay(input) => {
                if let Some(input) = input.upgrade() {
                    let _ = input.try_send(Frame::Message(answer));
                }
            }
            Self::Replica {
                sessions,
                session,
                to,
            } => {
                let (Some(sessions), Some(session)) = (sessions.upgrade(), session.upgrade())
                else {
                    return;
                };
                if let Some(replica) = &session.replica {
                    let message = Message::Pushed { to, text: answer };
                    replica.publish(&sessions, &message);
                }
            }
        }
    }
}

/// Sends `text` (a notification or a call a handler made) on this replica's GET stream; a call's
/// answer goes where `reply` says.
async fn deliver(session: &Session, text: &str, reply: ReplyTo) {
    let Incoming::Request(req) = incoming::parse(text) else {
        return;
    };
    let method = req.method.clone().into_owned();
    let params = req.params.map(ToOwned::to_owned);
    let Some(id) = req.id.map(ToOwned::to_owned) else {
        let _ = session.standalone.notify_raw(&method, params).await;
        return;
    };
    let standalone = session.standalone.clone();
    tokio::spawn(async move {
        let answer = match standalone.call_raw(&method, params).await {
            Ok(result) => format!(
                r#"{{"jsonrpc":"2.0","result":{},"id":{}}}"#,
                result.get(),
                id.get()
            ),
            Err(err) => {
                let err = err
                    .rpc_error()
                    .cloned()
                    .unwrap_or_else(|| RpcError::internal().with_data(&err.to_string()));
                String::from_utf8_lossy(&wire::error_answer(&err, Some(&id))).into_owned()
            }
        };
        reply.send(answer);
    });
}

/// Holds what the relay connection's writer needs.
struct RelayLink {
    session: Weak<Session>,
    sessions: Weak<Sessions>,
    input: mpsc::WeakSender<Frame>,
}

impl RelayLink {
    /// Sends `text` to the GET stream: here when this replica is the listener (or none is),
    /// else to the listener.
    async fn forward(&self, text: String) {
        let (Some(session), Some(sessions)) = (self.session.upgrade(), self.sessions.upgrade())
        else {
            return;
        };
        let record = sessions
            .store
            .session(&session.id, sessions.limits.idle)
            .await;
        match record.ok().flatten().and_then(|record| record.listener) {
            Some(to) if to != sessions.tag => {
                if let Some(replica) = &session.replica {
                    let from = sessions.tag;
                    replica.publish(&sessions, &Message::Push { to, from, text });
                }
            }
            _ => deliver(&session, &text, ReplyTo::Relay(self.input.clone())).await,
        }
    }
}

/// Returns the relay connection of a session's part: what its handlers send on it goes to the
/// GET stream wherever it is held; and the sender of its input (the answers to its calls).
fn relay(
    session: Weak<Session>,
    sessions: Weak<Sessions>,
    streams: &PeerConfig,
) -> (mpsc::Sender<Frame>, Peer) {
    let (input, rx) = mpsc::channel(streams.queue());
    let link = RelayLink {
        session,
        sessions,
        input: input.downgrade(),
    };
    let writer = futures_util::sink::unfold(link, |link, text: String| async move {
        link.forward(text).await;
        Ok::<_, Infallible>(link)
    });
    let reader = futures_util::stream::unfold(rx, |mut rx| async move {
        let frame = rx.recv().await?;
        Some((Ok::<_, Infallible>(frame), rx))
    });
    // The stream's own limits, checked already; the defaults should they not be.
    let config = PeerConfig::builder()
        .max_message_size(streams.max_message_size())
        .queue(streams.queue())
        .build()
        .unwrap_or_default();
    let (peer, driver) = Peer::start(reader, writer, Methods::new(), config);
    tokio::spawn(async move {
        let _ = driver.await;
    });
    (input, peer)
}

/// Serves a stream of frames as a response body.
struct StreamBody(Pin<Box<dyn Stream<Item = Result<BodyFrame<Bytes>, Infallible>> + Send>>);

impl Body for StreamBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        self.get_mut().0.as_mut().poll_next(cx)
    }
}
