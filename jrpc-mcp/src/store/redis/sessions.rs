//! Keeps legacy sessions in Redis: a sorted set of the open ones by when each was last used (what
//! caps them), and a hash per session, one field per thing that changes on its own (so that two
//! replicas changing a session at once keep both changes), which expires when the session idles.

use std::sync::LazyLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::Script;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RedisStore;
use crate::store::StoreError;
use crate::store::session::{SessionChange, SessionLimits, SessionRecord, SessionStore};

/// Makes a session unless the store is full once idle sessions are ended.
static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local max = tonumber(ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= max then
  local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[4]))
  for _, id in ipairs(old) do
    redis.call('DEL', ARGV[5] .. id)
    redis.call('ZREM', KEYS[1], id)
  end
  if redis.call('ZCARD', KEYS[1]) >= max then return 0 end
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], 'base', '{}')
if ARGV[2] ~= '' then redis.call('HSET', KEYS[2], 'identity', ARGV[2]) end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1",
    )
});

/// Reads a session, marking it used.
static GET: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local fields = redis.call('HGETALL', KEYS[2])
if #fields == 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return fields
end
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return fields",
    )
});

/// Sets (`set`) or deletes (`del`) a field of a session that exists, or deletes it while it holds
/// a value (`clear`).
static UPDATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == 'set' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
elseif ARGV[1] == 'del' then
  redis.call('HDEL', KEYS[1], ARGV[2])
elseif redis.call('HGET', KEYS[1], ARGV[2]) == ARGV[3] then
  redis.call('HDEL', KEYS[1], ARGV[2])
end
return 1",
    )
});

/// Marks the sessions that exist of those named used.
static TOUCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for i = 3, #ARGV do
  if redis.call('PEXPIRE', ARGV[2] .. ARGV[i], ARGV[1]) == 1 then
    redis.call('ZADD', KEYS[1], now, ARGV[i])
  end
end
return 1",
    )
});

/// Holds the members of the `base` field.
#[derive(Default, Serialize, Deserialize)]
struct Base {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capabilities: Option<Value>,
    #[serde(
        rename = "clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    client_info: Option<Value>,
}

/// Milliseconds, for Redis.
fn ms(time: Duration) -> u64 {
    u64::try_from(time.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    fn sessions_key(&self) -> String {
        self.link.key("sessions")
    }

    fn session_prefix(&self) -> String {
        self.link.key("session:")
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}{id}", self.session_prefix())
    }

    async fn change_field(
        &self,
        id: &str,
        op: &str,
        field: &str,
        value: &str,
    ) -> Result<bool, StoreError> {
        let key = self.session_key(id);
        let done: i64 = self.link.eval(&UPDATE, &[&key], (op, field, value)).await?;
        Ok(done == 1)
    }
}

/// Reads a session's hash (`HGETALL`'s pairs).
fn record_of(id: &str, fields: &[String]) -> Result<SessionRecord, StoreError> {
    let invalid = |what: &str| StoreError::Invalid(format!("session {id}: {what}"));
    let mut record = SessionRecord::default();
    for pair in fields.chunks(2) {
        let [name, value] = pair else {
            return Err(invalid("not a hash"));
        };
        match name.as_str() {
            "base" => {
                let base: Base = serde_json::from_str(value).map_err(|_| invalid("its base"))?;
                record.version = base.version;
                record.capabilities = base.capabilities;
                record.client_info = base.client_info;
            }
            "identity" => record.identity = Some(value.clone()),
            "level" => record.log_level = Some(value.parse().map_err(|_| invalid("its level"))?),
            "listener" => {
                record.listener = Some(value.parse().map_err(|_| invalid("its listener"))?);
            }
            other => {
                if let Some(uri) = other.strip_prefix("f:") {
                    record.followed.insert(uri.to_owned());
                }
            }
        }
    }
    Ok(record)
}

impl SessionStore for RedisStore {
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        record: SessionRecord,
        limits: SessionLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let (set, key) = (self.sessions_key(), self.session_key(id));
            let identity = record.identity.unwrap_or_default();
            let args = (
                id,
                identity,
                limits.max,
                ms(limits.idle),
                self.session_prefix(),
            );
            let made: i64 = self.link.eval(&CREATE, &[&set, &key], args).await?;
            Ok(made == 1)
        })
    }

    fn session<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move {
            let (set, key) = (self.sessions_key(), self.session_key(id));
            let fields: Vec<String> = self.link.eval(&GET, &[&set, &key], (id, ms(idle))).await?;
            if fields.is_empty() {
                return Ok(None);
            }
            record_of(id, &fields).map(Some)
        })
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
        _idle: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            match change {
                SessionChange::Initialized {
                    version,
                    capabilities,
                    client_info,
                } => {
                    let base = Base {
                        version: Some(version),
                        capabilities,
                        client_info,
                    };
                    let base = serde_json::to_string(&base)
                        .map_err(|err| StoreError::Invalid(err.to_string()))?;
                    self.change_field(id, "set", "base", &base).await
                }
                SessionChange::LogLevel(level) => {
                    self.change_field(id, "set", "level", level.as_str()).await
                }
                SessionChange::Follow(uri, on) => {
                    let field = format!("f:{uri}");
                    let op = if on { "set" } else { "del" };
                    self.change_field(id, op, &field, "1").await
                }
                SessionChange::Listener { now: Some(tag), .. } => {
                    self.change_field(id, "set", "listener", &tag.to_string())
                        .await
                }
                SessionChange::Listener { now: None, was } => {
                    let was = was.map(|tag| tag.to_string()).unwrap_or_default();
                    self.change_field(id, "clear", "listener", &was).await
                }
            }
        })
    }

    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if ids.is_empty() {
                return Ok(());
            }
            let set = self.sessions_key();
            let _: i64 = self
                .link
                .eval(&TOUCH, &[&set], (ms(idle), self.session_prefix(), ids))
                .await?;
            Ok(())
        })
    }

    fn remove_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            pipe.zrem(self.sessions_key(), id)
                .ignore()
                .del(self.session_key(id));
            let (removed,): (i64,) = self.link.run_pipe(&pipe).await?;
            Ok(removed == 1)
        })
    }

    fn is_shared(&self) -> bool {
        true
    }
}
