//! Shares topics among every replica of a service through Redis pub/sub: the builder, the link's
//! status, and the task that keeps the link (connects, re-subscribes, sends what was published).
//!
//! The task's states:
//!
//! | state | what it does | leaves for |
//! | --- | --- | --- |
//! | linked | subscribes the channels of topics with local subscribers and unsubscribes the rest, sends queued publishes (pipelined), delivers what Redis sends, pings | waiting, when a command fails or times out, or the connection closes |
//! | waiting | publishes queue up (the oldest dropped past `queue`); after a delay (doubling, up to `max_reconnect_delay`) it connects again | linked, with every channel subscribed anew |
//!
//! It ends when the last clone of its [`Topics`] is dropped.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasher as _, Hasher as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures_util::StreamExt as _;
use redis::aio::{MultiplexedConnection, PubSubSink, PubSubStream};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::{Registry, State, Topics};
use crate::error::check;
use crate::error::{ClientError, ConfigError};

/// Sets the first wait before connecting again after the link is lost; it doubles with each
/// failure.
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(50);
/// Caps the publishes sent in one pipeline.
const PIPELINE: usize = 256;

impl Topics {
    /// Returns a builder for a registry shared through Redis pub/sub, at `url`
    /// (`redis://[user][:password@]host[:port][/db]`), by every replica that connects to it with
    /// the same [`channel_prefix`](RedisTopicsBuilder::channel_prefix).
    ///
    /// # Across replicas
    ///
    /// - **Delivery.** A [`publish`](Topics::publish) on any replica reaches every subscribed
    ///   connection on every replica, once each. The publishing replica's own subscribers get it
    ///   at once, locally (not through Redis: its echo from Redis is recognised and dropped), so
    ///   they get it while Redis is unreachable too; the other replicas' get it through Redis.
    /// - **Subscriptions.** A replica subscribes to a topic's channel (`channel_prefix` + topic)
    ///   while at least one of its connections is subscribed to the topic, and unsubscribes when
    ///   the last one leaves (or closes). [`Topics::ready`] waits for the channel subscription.
    /// - **Messages** travel as JSON, `{"origin": "...", "method": "...", "params": ...}`
    ///   (`origin` names the replica, and may be left out by other publishers), at most
    ///   [`max_message_size`](RedisTopicsBuilder::max_message_size) bytes: a larger publish is
    ///   refused, a larger message from Redis dropped.
    ///
    /// # When Redis goes away
    ///
    /// - Calls and this replica's own topics keep working.
    /// - The link is lost when a command fails or times out, the connection closes, or a ping
    ///   goes unanswered. It is connected again after 50 ms, then after twice as long each time,
    ///   up to [`max_reconnect_delay`](RedisTopicsBuilder::max_reconnect_delay); once connected,
    ///   every channel with local subscribers is subscribed again.
    /// - Publishes made meanwhile are held, up to [`queue`](RedisTopicsBuilder::queue) of them,
    ///   and sent on reconnection; past that the oldest is dropped, counted in
    ///   [`RedisStatus::dropped`], and logged (a `tracing` warning per drop).
    /// - Redis keeps no message for a replica that is not subscribed: what is published while a
    ///   replica is not (yet) subscribed again does not reach its connections. So after Redis
    ///   comes back, a publish made before every replica has re-subscribed may be lost for some
    ///   of them (held publishes included: they are sent as soon as their own replica is back,
    ///   which may be before the others are). A publish cut off by the fault is sent again on
    ///   reconnection, so one that Redis had taken may, rarely, arrive twice.
    ///
    /// ```no_run
    /// use jrpc_runtime::server::Topics;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let topics = Topics::redis("redis://127.0.0.1:6379")
    ///     .channel_prefix("prices:")
    ///     .connect()
    ///     .await?; // fails at once, naming the URL, if Redis cannot be reached
    /// topics.publish("ACME", "price", ("ACME", 12.5))?;
    /// # Ok(()) }
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis(url: impl Into<String>) -> RedisTopicsBuilder {
        RedisTopicsBuilder {
            url: url.into(),
            settings: Settings {
                channel_prefix: "jrpc:".to_owned(),
                max_message_size: 1024 * 1024,
                queue: 1024,
                connect_timeout: Duration::from_secs(5),
                call_timeout: Duration::from_secs(5),
                ping_interval: Some(Duration::from_secs(5)),
                max_reconnect_delay: Duration::from_secs(1),
            },
        }
    }

    /// Returns the state of the link to Redis; `None` for a registry local to the process.
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis_status(&self) -> Option<RedisStatus> {
        let bridge = self.inner.bridge.as_ref()?;
        let link = bridge.link.borrow();
        Some(RedisStatus {
            connected: link.connected,
            channels: link.subscribed.len(),
            queued: bridge.outbox().len(),
            dropped: bridge.dropped.load(Ordering::Relaxed),
        })
    }
}

/// Builds a [`Topics`] registry shared through Redis; [`connect`](Self::connect) checks every
/// value, then connects.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct RedisTopicsBuilder {
    url: String,
    settings: Settings,
}

#[derive(Clone, Debug)]
struct Settings {
    channel_prefix: String,
    max_message_size: usize,
    queue: usize,
    connect_timeout: Duration,
    call_timeout: Duration,
    ping_interval: Option<Duration>,
    max_reconnect_delay: Duration,
}

impl RedisTopicsBuilder {
    /// Sets what every channel name starts with, the topic following (default `"jrpc:"`): services
    /// that share one Redis keep apart by prefix; replicas of one service share it.
    pub fn channel_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.settings.channel_prefix = prefix.into();
        self
    }

    /// Sets the largest message, in bytes, as it travels through Redis (default 1 MiB): a larger
    /// publish fails with [`ClientError::TooLong`] and reaches no one; a larger message from
    /// Redis is dropped.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.settings.max_message_size = bytes;
        self
    }

    /// Sets how many publishes may wait to be sent to Redis (default 1 024), while it is
    /// unreachable or slower than the publishers; past that the oldest is dropped.
    pub fn queue(mut self, messages: usize) -> Self {
        self.settings.queue = messages;
        self
    }

    /// Sets how long connecting may take, at start-up and on each reconnection (default 5 s).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.settings.connect_timeout = limit;
        self
    }

    /// Sets how long a command to Redis (subscribe, publish, ping) may wait for its answer before
    /// the link counts as lost (default 5 s).
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.settings.call_timeout = limit;
        self
    }

    /// Sets how often an idle link is pinged, to notice a Redis that stopped answering (default
    /// 5 s); `None` never pings, and a Redis that stops answering without closing the connection
    /// is noticed only by the next publish.
    pub fn ping_interval(mut self, every: Option<Duration>) -> Self {
        self.settings.ping_interval = every;
        self
    }

    /// Sets the longest wait between two attempts to connect again (default 1 s).
    pub fn max_reconnect_delay(mut self, limit: Duration) -> Self {
        self.settings.max_reconnect_delay = limit;
        self
    }

    /// Checks the settings, connects to Redis, and returns the registry; the link is kept from
    /// then on by a task of its own (on the current Tokio runtime), until the last clone of the
    /// registry is dropped.
    ///
    /// # Errors
    ///
    /// [`RedisConnectError::Config`] naming the first setting out of range (a zero
    /// `max_message_size`, `queue`, `connect_timeout`, `call_timeout`, `ping_interval` or
    /// `max_reconnect_delay`); [`RedisConnectError::InvalidUrl`] and
    /// [`RedisConnectError::Unreachable`], each naming the URL (its password hidden).
    pub async fn connect(self) -> Result<Topics, RedisConnectError> {
        let settings = self.settings;
        check::at_least_one("max_message_size", settings.max_message_size)?;
        check::at_least_one("queue", settings.queue)?;
        check::limit("connect_timeout", settings.connect_timeout)?;
        check::limit("call_timeout", settings.call_timeout)?;
        check::optional_limit("ping_interval", settings.ping_interval)?;
        check::limit("max_reconnect_delay", settings.max_reconnect_delay)?;
        let url = shown(&self.url);
        let client = redis::Client::open(self.url.as_str()).map_err(|err| {
            RedisConnectError::InvalidUrl {
                url: url.clone(),
                reason: err.to_string(),
            }
        })?;
        let link = Link::open(&client, &settings).await.map_err(|reason| {
            RedisConnectError::Unreachable {
                url: url.clone(),
                reason,
            }
        })?;
        let bridge = Arc::new(Bridge::new(url, settings));
        let registry = Arc::new(Registry {
            state: Mutex::new(State::default()),
            bridge: Some(Arc::clone(&bridge)),
        });
        tokio::spawn(keep_link(bridge, Arc::downgrade(&registry), client, link));
        Ok(Topics { inner: registry })
    }
}

/// Says why [`RedisTopicsBuilder::connect`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedisConnectError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The URL is not one the Redis client takes.
    #[error("invalid Redis URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, its password hidden.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No connection to Redis could be made.
    #[error("cannot reach Redis at {url}: {reason}")]
    Unreachable {
        /// The URL, its password hidden.
        url: String,
        /// Why (refused, timed out, authentication failed...).
        reason: String,
    },
}

/// Reports the state of a registry's link to Redis ([`Topics::redis_status`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisStatus {
    /// Whether the link is up.
    pub connected: bool,
    /// How many channels this replica is subscribed to in Redis (none while the link is down).
    pub channels: usize,
    /// How many publishes wait to be sent.
    pub queued: usize,
    /// How many publishes were dropped, oldest first, because `queue` were waiting already.
    pub dropped: u64,
}

/// Holds what a registry and its link task share.
pub(super) struct Bridge {
    /// The URL as it may be shown (no password).
    url: String,
    /// This replica's name in the messages it publishes, to recognise their echo.
    origin: String,
    settings: Settings,
    /// Publishes waiting to be sent, oldest first.
    outbox: Mutex<VecDeque<Outgoing>>,
    dropped: AtomicU64,
    /// Signalled when a topic gains its first subscriber or loses its last.
    topics_changed: Notify,
    /// Signalled when a publish is queued.
    published: Notify,
    /// Whether the link is up and which channels are subscribed, for status and `ready`.
    link: watch::Sender<LinkState>,
    /// Cancelled when the registry is dropped: the task ends.
    stop: CancellationToken,
}

#[derive(Default)]
struct LinkState {
    connected: bool,
    /// The topics whose channels are subscribed.
    subscribed: HashSet<String>,
}

struct Outgoing {
    channel: String,
    payload: String,
}

/// Carries a message as it travels through Redis.
#[derive(Serialize, Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    origin: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    params: Option<&'a RawValue>,
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(bridge) = &self.bridge {
            bridge.stop.cancel();
        }
    }
}

impl Bridge {
    fn new(url: String, settings: Settings) -> Self {
        Self {
            url,
            origin: origin(),
            settings,
            outbox: Mutex::default(),
            dropped: AtomicU64::new(0),
            topics_changed: Notify::new(),
            published: Notify::new(),
            link: watch::Sender::new(LinkState::default()),
            stop: CancellationToken::new(),
        }
    }

    pub(super) fn topics_changed(&self) {
        self.topics_changed.notify_one();
    }

    fn outbox(&self) -> MutexGuard<'_, VecDeque<Outgoing>> {
        self.outbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn channel(&self, topic: &str) -> String {
        format!("{}{topic}", self.settings.channel_prefix)
    }

    /// Queues a publish for the other replicas.
    pub(super) fn publish(
        &self,
        topic: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), ClientError> {
        let envelope = Envelope {
            origin: Some(Cow::Borrowed(&self.origin)),
            method: Cow::Borrowed(method),
            params,
        };
        let payload = serde_json::to_string(&envelope)
            .map_err(|err| ClientError::Encode(format!("message: {err}")))?;
        let limit = self.settings.max_message_size;
        if payload.len() > limit {
            return Err(ClientError::TooLong {
                limit,
                got: payload.len(),
            });
        }
        let outgoing = Outgoing {
            channel: self.channel(topic),
            payload,
        };
        {
            let mut outbox = self.outbox();
            outbox.push_back(outgoing);
            self.trim(&mut outbox);
        }
        self.published.notify_one();
        Ok(())
    }

    /// Drops the oldest publishes past `queue`, counting and logging each.
    fn trim(&self, outbox: &mut VecDeque<Outgoing>) {
        while outbox.len() > self.settings.queue {
            let Some(oldest) = outbox.pop_front() else {
                break;
            };
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(
                url = %self.url,
                channel = %oldest.channel,
                dropped,
                queue = self.settings.queue,
                "Redis publish queue full; dropped the oldest publish"
            );
        }
    }

    /// Puts back, at the front, publishes that could not be sent.
    fn requeue(&self, batch: Vec<Outgoing>) {
        let mut outbox = self.outbox();
        for outgoing in batch.into_iter().rev() {
            outbox.push_front(outgoing);
        }
        self.trim(&mut outbox);
    }

    fn take_batch(&self) -> Vec<Outgoing> {
        let mut outbox = self.outbox();
        let n = outbox.len().min(PIPELINE);
        outbox.drain(..n).collect()
    }

    /// Hands a message from Redis to the local subscribers of its topic.
    fn receive(&self, registry: &Registry, msg: &redis::Msg) {
        let channel = msg.get_channel_name();
        let Some(topic) = channel.strip_prefix(self.settings.channel_prefix.as_str()) else {
            return;
        };
        let payload = msg.get_payload_bytes();
        let limit = self.settings.max_message_size;
        if payload.len() > limit {
            tracing::warn!(
                channel,
                size = payload.len(),
                limit,
                "message from Redis over max_message_size; dropped"
            );
            return;
        }
        let envelope = std::str::from_utf8(payload)
            .map_err(|err| err.to_string())
            .and_then(|text| {
                serde_json::from_str::<Envelope<'_>>(text).map_err(|err| err.to_string())
            });
        let envelope = match envelope {
            Ok(envelope) => envelope,
            Err(why) => {
                tracing::warn!(channel, %why, "unreadable message from Redis; dropped");
                return;
            }
        };
        // This replica's own publish: its subscribers had it when it was published.
        if envelope.origin.as_deref() == Some(self.origin.as_str()) {
            return;
        }
        registry.deliver(topic, &envelope.method, envelope.params);
    }

    /// Waits until `topic`'s channel is subscribed, the link is down, or `wanted` says no local
    /// connection is subscribed to it any more.
    pub(super) async fn ready(&self, topic: &str, wanted: impl Fn() -> bool) {
        let mut link = self.link.subscribe();
        loop {
            {
                let state = link.borrow_and_update();
                if !state.connected || state.subscribed.contains(topic) || !wanted() {
                    return;
                }
            }
            // The task marks a change after each pass over the subscriptions, so a topic that
            // came and went between two passes still wakes this.
            if link.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Holds the connections of a live link: one subscribed (RESP2 allows nothing else on it), one that
/// publishes.
struct Link {
    sink: PubSubSink,
    stream: PubSubStream,
    publisher: MultiplexedConnection,
}

impl Link {
    async fn open(client: &redis::Client, settings: &Settings) -> Result<Link, String> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(settings.connect_timeout))
            .set_response_timeout(Some(settings.call_timeout));
        let publisher = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|err| err.to_string())?;
        let pubsub = within(settings.connect_timeout, client.get_async_pubsub()).await?;
        let (sink, stream) = pubsub.split();
        Ok(Link {
            sink,
            stream,
            publisher,
        })
    }
}

/// Runs a Redis command, failing past `limit`.
async fn within<T>(
    limit: Duration,
    command: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, command).await {
        Ok(result) => result.map_err(|err| err.to_string()),
        Err(_) => Err(format!("no answer within {limit:?}")),
    }
}

/// Runs the link task: serves the link while it is up, connects again when it is lost.
async fn keep_link(
    bridge: Arc<Bridge>,
    registry: Weak<Registry>,
    client: redis::Client,
    first: Link,
) {
    let mut link = Some(first);
    loop {
        if let Some(live) = link.take() {
            match serve(&bridge, &registry, live).await {
                Ok(()) => return,
                Err(why) => {
                    tracing::warn!(url = %bridge.url, %why, "Redis link lost; reconnecting");
                    bridge.link.send_modify(|state| {
                        state.connected = false;
                        state.subscribed.clear();
                    });
                }
            }
        }
        let mut delay = FIRST_RECONNECT_DELAY;
        loop {
            tokio::select! {
                () = bridge.stop.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            match Link::open(&client, &bridge.settings).await {
                Ok(live) => {
                    tracing::info!(url = %bridge.url, "Redis link back; subscribing again");
                    link = Some(live);
                    break;
                }
                Err(why) => {
                    tracing::debug!(url = %bridge.url, %why, ?delay, "Redis still unreachable");
                    delay = (delay * 2).min(bridge.settings.max_reconnect_delay);
                }
            }
        }
    }
}

/// Serves a live link until the registry is gone (`Ok`) or the link fails (`Err`, why).
async fn serve(bridge: &Bridge, registry: &Weak<Registry>, link: Link) -> Result<(), String> {
    let Link {
        mut sink,
        mut stream,
        mut publisher,
    } = link;
    let limit = bridge.settings.call_timeout;
    let mut subscribed: HashSet<String> = HashSet::new();
    let mut ping = bridge.settings.ping_interval.map(|every| {
        let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ping
    });
    bridge.link.send_modify(|state| state.connected = true);
    let mut resync = true;
    loop {
        if resync {
            resync = false;
            let Some(wanted) = registry.upgrade().map(|registry| registry.names()) else {
                return Ok(());
            };
            let wanted: HashSet<String> = wanted.into_iter().collect();
            for topic in wanted.difference(&subscribed).cloned().collect::<Vec<_>>() {
                within(limit, sink.subscribe(bridge.channel(&topic))).await?;
                subscribed.insert(topic.clone());
                bridge.link.send_modify(|state| {
                    state.subscribed.insert(topic);
                });
            }
            for topic in subscribed.difference(&wanted).cloned().collect::<Vec<_>>() {
                within(limit, sink.unsubscribe(bridge.channel(&topic))).await?;
                subscribed.remove(&topic);
                bridge.link.send_modify(|state| {
                    state.subscribed.remove(&topic);
                });
            }
            bridge.link.send_modify(|_| {});
        }
        loop {
            let batch = bridge.take_batch();
            if batch.is_empty() {
                break;
            }
            let mut pipe = redis::pipe();
            for outgoing in &batch {
                pipe.publish(&outgoing.channel, &outgoing.payload).ignore();
            }
            if let Err(why) = within(limit, pipe.exec_async(&mut publisher)).await {
                bridge.requeue(batch);
                return Err(why);
            }
        }
        tokio::select! {
            biased;
            () = bridge.stop.cancelled() => return Ok(()),
            () = bridge.topics_changed.notified() => resync = true,
            () = bridge.published.notified() => {}
            msg = stream.next() => match msg {
                Some(msg) => match registry.upgrade() {
                    Some(registry) => bridge.receive(&registry, &msg),
                    None => return Ok(()),
                },
                None => return Err("the connection closed".to_owned()),
            },
            _ = tick(&mut ping) => {
                within(limit, sink.ping::<redis::Value>()).await?;
            }
        }
    }
}

async fn tick(ping: &mut Option<tokio::time::Interval>) {
    match ping {
        Some(ping) => {
            ping.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Returns a name for this replica that no other shares: the process id and a random number (std's
/// hasher keys are drawn at random).
fn origin() -> String {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{}-{random:016x}", std::process::id())
}

/// Returns `url` as it may be printed: a password in it replaced by `***`.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = match userinfo.split_once(':') {
        Some((user, _password)) => format!("{user}:***"),
        // `redis://secret@host`: the client reads a lone userinfo as the password.
        None => "***".to_owned(),
    };
    format!("{scheme}://{user}@{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the warnings logged.
    struct Warnings(Arc<AtomicU64>);

    impl tracing::Subscriber for Warnings {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            if *event.metadata().level() == tracing::Level::WARN {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn a_full_queue_drops_the_oldest_counting_and_logging_each() {
        let builder = Topics::redis("redis://127.0.0.1:1").queue(2);
        let bridge = Bridge::new(builder.url, builder.settings);
        let warnings = Arc::new(AtomicU64::new(0));
        tracing::subscriber::with_default(Warnings(Arc::clone(&warnings)), || {
            for n in 1..=5 {
                let params = serde_json::value::to_raw_value(&[n]).unwrap();
                bridge.publish("t", "m", Some(&params)).unwrap();
            }
        });
        assert_eq!(bridge.dropped.load(Ordering::Relaxed), 3);
        assert_eq!(warnings.load(Ordering::Relaxed), 3);
        let kept: Vec<String> = bridge.outbox().iter().map(|o| o.payload.clone()).collect();
        assert_eq!(kept.len(), 2);
        assert!(kept[0].ends_with(r#""params":[4]}"#), "{kept:?}");
        assert!(kept[1].ends_with(r#""params":[5]}"#), "{kept:?}");
        assert!(bridge.outbox().iter().all(|o| o.channel == "jrpc:t"));

        // What could not be sent goes back in front, and the oldest still go first.
        let batch = bridge.take_batch();
        bridge.publish("t", "m", None).unwrap();
        bridge.requeue(batch);
        assert_eq!(bridge.dropped.load(Ordering::Relaxed), 4);
        assert_eq!(bridge.outbox().len(), 2);
        assert!(bridge.outbox()[0].payload.ends_with(r#""params":[5]}"#));
    }

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(shown("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(
            shown("redis://ada:secret@db:6379/2"),
            "redis://ada:***@db:6379/2"
        );
        assert_eq!(shown("redis://:secret@db"), "redis://:***@db");
        assert_eq!(shown("redis://secret@db/0"), "redis://***@db/0");
        assert_eq!(shown("not a url"), "not a url");
    }

    #[test]
    fn envelopes_read_back_and_others_may_leave_origin_out() {
        let params = serde_json::value::to_raw_value(&serde_json::json!({"a": [1, 2]})).unwrap();
        let envelope = Envelope {
            origin: Some(Cow::Borrowed("r1")),
            method: Cow::Borrowed("news"),
            params: Some(&params),
        };
        let text = serde_json::to_string(&envelope).unwrap();
        assert_eq!(
            text,
            r#"{"origin":"r1","method":"news","params":{"a":[1,2]}}"#
        );
        let read: Envelope<'_> = serde_json::from_str(r#"{"method":"n\"ews"}"#).unwrap();
        assert_eq!((read.origin, read.method.as_ref()), (None, "n\"ews"));
        assert!(read.params.is_none());
    }
}
