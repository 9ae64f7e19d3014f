//! Keeps what replicas share in Redis: the keys that sign `requestState` (a list, newest first),
//! legacy sessions and tasks. Every change that reads before it writes is one Lua script (sent by
//! its hash, its text only to a Redis that does not hold it), so that two replicas never
//! interleave inside it; times that replicas compare (a key's start, a task's lease) are Redis's
//! own clock (`TIME`), so that the replicas' clocks need not agree.
//!
//! | key | holds |
//! | --- | --- |
//! | `PREFIX state-keys` | the `requestState` keys, newest first, each `HEX:SIGNS_FROM_MS` |
//! | `PREFIX sessions` | a sorted set: each open session's id, scored by when it was last used |
//! | `PREFIX tasks` | a sorted set: each task's id, scored by when it expires (what caps them) |
//! | `PREFIX task-leases` | a sorted set: each task not over, scored by when its lease runs out (what the sweep reads) |
//! | `PREFIX task:ID` | a hash: `status`, `created`, `updated`, `ttl`, `poll`, `lease`, `owner`, `result` or `error`, `req:KEY` for each question asked, `resp:KEY` for each answer not yet taken; it expires `ttl` after the last change |
//! | `PREFIX session:ID` | a hash: `base` (JSON: revision, capabilities, client, identity), `level`, `listener`, and `f:URI` for each resource followed; it expires when idle |

use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{FromRedisValue, Script, ToRedisArgs};
use tokio::sync::Mutex;

mod sessions;
mod tasks;

use super::{StoreError, hex, unhex};
use crate::protocol::state::{StateKey, StateKeyRing, now_ms};

/// Keeps the state that replicas share in Redis: the keys that sign `requestState`
/// ([`state_keys`](Self::state_keys)), legacy sessions and tasks. Every replica connects to the
/// same Redis with the same [`prefix`](RedisStoreBuilder::prefix).
///
/// A command that fails or takes longer than
/// [`call_timeout`](RedisStoreBuilder::call_timeout) fails the request that needed it
/// (`-32603`); the next command connects again.
///
/// What reads before it writes runs as a Lua script, sent by its hash (`EVALSHA`): its text goes
/// only to a Redis that does not hold it yet (`SCRIPT LOAD`, once a script after Redis starts).
/// A Redis user with an ACL needs those two commands, and the hash, set, sorted-set, list and
/// key commands the scripts call.
///
/// ```no_run
/// use jrpc_mcp::{Mcp, RedisStore};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisStore::builder("redis://127.0.0.1:6379").prefix("my-server:").connect().await?;
/// let mcp = Mcp::builder("my-server", "1.0.0")
///     .request_state_key_ring(store.state_keys().await?)
///     .build()?;
/// # drop(mcp);
/// # Ok(()) }
/// ```
///
/// Cloning is cheap: clones share the connection.
#[derive(Clone)]
pub struct RedisStore {
    pub(crate) link: Arc<Link>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.link.prefix)
            .finish_non_exhaustive()
    }
}

/// Builds a [`RedisStore`]; [`connect`](Self::connect) checks the URL and connects.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    call_timeout: Duration,
    key_refresh: Duration,
    max_tasks: usize,
}

impl RedisStore {
    /// Returns a builder of a store in the Redis at `url`
    /// (`redis://[user][:password@]host[:port][/db]`).
    pub fn builder(url: impl Into<String>) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.into(),
            prefix: "mcp:".to_owned(),
            call_timeout: Duration::from_secs(5),
            key_refresh: Duration::from_secs(30),
            max_tasks: 100_000,
        }
    }

    /// Returns the keys that sign and check `requestState`, as every replica on this store sees
    /// them: made (32 random bytes) by the first replica that asks, read by the others, and
    /// read again every [`key_refresh`](RedisStoreBuilder::key_refresh), so that a rotation
    /// ([`rotate_state_key`](Self::rotate_state_key)) reaches every replica.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when Redis cannot be read, or holds keys this crate did not write.
    pub async fn state_keys(&self) -> Result<StateKeyRing, StoreError> {
        let ring = StateKeyRing::of(self.load_state_keys().await?);
        let refresh = self.link.key_refresh;
        let store = Arc::downgrade(&self.link);
        let weak = ring.downgrade();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(refresh).await;
                let (Some(link), Some(ring)) = (Weak::upgrade(&store), weak.upgrade()) else {
                    return;
                };
                match (RedisStore { link }).load_state_keys().await {
                    Ok(keys) => ring.set(keys),
                    Err(err) => tracing::warn!(%err, "could not read the requestState keys"),
                }
            }
        });
        Ok(ring)
    }

    /// Adds a new key (32 random bytes) to the `requestState` keys: every replica checks with it
    /// once it has read it, and signs with it from twice the
    /// [`key_refresh`](RedisStoreBuilder::key_refresh) later (by then every replica has read
    /// it). The three newest keys are kept, so a state signed with the key before still checks;
    /// rotate no more often than the states' lifetime
    /// ([`request_state_ttl`](crate::McpBuilder::request_state_ttl)).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when Redis cannot be written, or when the system gives no random bytes.
    pub async fn rotate_state_key(&self) -> Result<(), StoreError> {
        static ROTATE: LazyLock<Script> = LazyLock::new(|| {
            Script::new(
                r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('LPUSH', KEYS[1], ARGV[1] .. ':' .. (now + tonumber(ARGV[2])))
redis.call('LTRIM', KEYS[1], 0, 2)
return 1",
            )
        });
        let key = StateKey::random().map_err(StoreError::Unavailable)?;
        let delay = u64::try_from((self.link.key_refresh * 2).as_millis()).unwrap_or(u64::MAX);
        let key_name = self.link.key("state-keys");
        self.link
            .eval::<i64>(&ROTATE, &[key_name.as_str()], (hex(key.bytes()), delay))
            .await?;
        Ok(())
    }

    /// Loads the keys in Redis (made if there are none), newest first, each signing from its time
    /// on this replica's clock.
    async fn load_state_keys(&self) -> Result<Vec<(StateKey, u64)>, StoreError> {
        static LOAD: LazyLock<Script> = LazyLock::new(|| {
            Script::new(
                r"
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('RPUSH', KEYS[1], ARGV[1] .. ':0') end
local t = redis.call('TIME')
local out = redis.call('LRANGE', KEYS[1], 0, -1)
table.insert(out, 1, tostring(t[1] * 1000 + math.floor(t[2] / 1000)))
return out",
            )
        });
        let fresh = StateKey::random().map_err(StoreError::Unavailable)?;
        let key_name = self.link.key("state-keys");
        let mut listed: Vec<String> = self
            .link
            .eval(&LOAD, &[key_name.as_str()], hex(fresh.bytes()))
            .await?;
        let invalid = || StoreError::Invalid(format!("{key_name}: not a list of keys"));
        if listed.len() < 2 {
            return Err(invalid());
        }
        let redis_now: u64 = listed.remove(0).parse().map_err(|_| invalid())?;
        // Redis's clock ahead of this one by `skew`: a key's start, on this clock.
        let skew = i128::from(redis_now) - i128::from(now_ms());
        listed
            .iter()
            .map(|entry| {
                let (key, from) = entry.split_once(':').ok_or_else(invalid)?;
                let key = unhex(key)
                    .filter(|key| key.len() >= StateKey::MIN_LEN)
                    .ok_or_else(invalid)?;
                let from: i128 = from.parse::<u64>().map_err(|_| invalid())?.into();
                let local = u64::try_from((from - skew).max(0)).unwrap_or(u64::MAX);
                Ok((StateKey::new(key), local))
            })
            .collect()
    }
}

impl RedisStoreBuilder {
    /// Sets what every key this store writes starts with (default `mcp:`): replicas of one
    /// server share it; another server on the same Redis takes another.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets how long a command may take before it fails (default 5 s).
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = limit;
        self
    }

    /// Sets how often the `requestState` keys are read again (default 30 s): how soon a rotation
    /// reaches every replica.
    pub fn key_refresh(mut self, every: Duration) -> Self {
        self.key_refresh = every;
        self
    }

    /// Sets how many tasks the store holds at most (default 100 000); past it a task-supporting
    /// tool is refused (those past their `ttlMs` make room).
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks;
        self
    }

    /// Checks the settings and connects.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] for a URL that is not one, a zero `call_timeout`,
    /// `key_refresh` or `max_tasks`, or a Redis that does not answer `PING` within `call_timeout`.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        if self.call_timeout.is_zero() || self.key_refresh.is_zero() || self.max_tasks == 0 {
            return Err(StoreError::Unavailable(
                "`call_timeout`, `key_refresh` and `max_tasks` must be above zero".to_owned(),
            ));
        }
        let client = redis::Client::open(self.url.as_str())
            .map_err(|err| StoreError::Unavailable(format!("{}: {err}", shown(&self.url))))?;
        let link = Link {
            client,
            conn: Mutex::new(None),
            prefix: self.prefix,
            call_timeout: self.call_timeout,
            key_refresh: self.key_refresh,
            max_tasks: self.max_tasks,
        };
        let pong: String = link.run(&redis::cmd("PING")).await?;
        if pong != "PONG" {
            return Err(StoreError::Invalid(format!("PING answered {pong:?}")));
        }
        Ok(RedisStore {
            link: Arc::new(link),
        })
    }
}

/// Holds the connection to Redis, made again after a failure.
pub(crate) struct Link {
    client: redis::Client,
    conn: Mutex<Option<MultiplexedConnection>>,
    pub(crate) prefix: String,
    call_timeout: Duration,
    key_refresh: Duration,
    pub(crate) max_tasks: usize,
}

impl Link {
    /// Returns the key `name` under the prefix.
    pub(crate) fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Returns the connection, made now when there is none.
    async fn connection(&self) -> Result<MultiplexedConnection, StoreError> {
        let mut conn = self.conn.lock().await;
        if let Some(conn) = &*conn {
            return Ok(conn.clone());
        }
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.call_timeout))
            .set_response_timeout(Some(self.call_timeout));
        let made = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|err| StoreError::Unavailable(err.to_string()))?;
        *conn = Some(made.clone());
        Ok(made)
    }

    /// Runs `cmd`; a failure to reach Redis drops the connection, so that the next command
    /// connects again.
    pub(crate) async fn run<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, StoreError> {
        let mut conn = self.connection().await?;
        let result = tokio::time::timeout(self.call_timeout, cmd.query_async(&mut conn)).await;
        self.settle(result).await
    }

    /// Runs `pipe`, as [`run`](Self::run).
    pub(crate) async fn run_pipe<T: FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection().await?;
        let result = tokio::time::timeout(self.call_timeout, pipe.query_async(&mut conn)).await;
        self.settle(result).await
    }

    /// Returns what a command's `result` gives; a failure to reach Redis drops the connection.
    async fn settle<T>(
        &self,
        result: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, StoreError> {
        let failed = match result {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(err)) if !(err.is_io_error() || err.is_connection_dropped()) => {
                return Err(StoreError::Unavailable(err.to_string()));
            }
            Ok(Err(err)) => StoreError::Unavailable(err.to_string()),
            Err(_) => StoreError::Unavailable(format!("no answer within {:?}", self.call_timeout)),
        };
        self.conn.lock().await.take();
        Err(failed)
    }

    /// Runs the Lua `script` with `keys` and `args`: by its hash (`EVALSHA`), the script's text
    /// sent only to a Redis that does not hold it yet (new, restarted, or its scripts flushed).
    pub(crate) async fn eval<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: impl ToRedisArgs,
    ) -> Result<T, StoreError> {
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        invocation.arg(args);
        let mut conn = self.connection().await?;
        let result =
            tokio::time::timeout(self.call_timeout, invocation.invoke_async(&mut conn)).await;
        self.settle(result).await
    }
}

/// `url` without its password, to show in an error.
fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}
