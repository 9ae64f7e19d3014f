//! Keeps tasks in Redis: a hash per task (its status, times, lease, result or error, and a field
//! per question asked, `req:KEY`, and per answer not yet taken, `resp:KEY`, and the replica that
//! runs it, `owner`), which expires `ttlMs` after the task's last change; a sorted set of the
//! tasks by when they expire, which caps them; and a sorted set of the tasks not over by when
//! their lease runs out, which the sweep reads. Every change is one Lua script that first fails
//! a task whose lease ran out (on Redis's clock), so that every replica sees the same; the sweep
//! takes such a task out of the leases' set, so that one replica alone announces it.

use std::sync::LazyLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::Script;
use serde_json::{Map, Value};

use super::RedisStore;
use crate::store::StoreError;
use crate::store::task::{TaskChange, TaskRecord, TaskStatus, TaskStore, lost_error, ms};

/// Begins every script: Redis's time, and the check of a task's lease.
const PRELUDE: &str = r"
local function now()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local function terminal(s)
  return s == 'completed' or s == 'failed' or s == 'cancelled'
end
local function clear_asked(key)
  for _, field in ipairs(redis.call('HKEYS', key)) do
    if string.sub(field, 1, 4) == 'req:' then redis.call('HDEL', key, field) end
  end
end
-- Whether the task exists; one whose lease ran out fails now.
local function live(key, lost)
  local s = redis.call('HGET', key, 'status')
  if not s then return false end
  if not terminal(s) and tonumber(redis.call('HGET', key, 'lease')) <= now() then
    redis.call('HSET', key, 'status', 'failed', 'error', lost, 'updated', tostring(now()))
    clear_asked(key)
  end
  return true
end
";

/// Returns the script of `body` after the prelude.
fn after_prelude(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}{body}"))
}

/// Makes a task unless the store is full.
static CREATE: LazyLock<Script> = LazyLock::new(|| {
    after_prelude(
        r"
local at = now()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], 'status', 'working', 'created', tostring(at), 'updated', tostring(at),
  'ttl', ARGV[4], 'poll', ARGV[5], 'lease', tostring(at + tonumber(ARGV[3])), 'owner', ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[1], at + tonumber(ARGV[4]), ARGV[1])
redis.call('ZADD', KEYS[3], at + tonumber(ARGV[3]), ARGV[1])
return 1",
    )
});

/// Reads a task.
static GET: LazyLock<Script> = LazyLock::new(|| {
    after_prelude(
        r"
if not live(KEYS[1], ARGV[1]) then return {} end
return redis.call('HGETALL', KEYS[1])",
    )
});

/// Changes a task (ARGV: the lost error, the task's id, the kind of change, then its values).
static UPDATE: LazyLock<Script> = LazyLock::new(|| {
    after_prelude(
        r"
if not live(KEYS[2], ARGV[1]) then return {} end
local key = KEYS[2]
local s = redis.call('HGET', key, 'status')
if not terminal(s) then
  local kind = ARGV[3]
  if kind == 'ask' then
    for i = 4, #ARGV, 2 do redis.call('HSET', key, 'req:' .. ARGV[i], ARGV[i + 1]) end
    redis.call('HSET', key, 'status', 'input_required')
  elseif kind == 'answer' then
    for i = 4, #ARGV, 2 do
      if redis.call('HDEL', key, 'req:' .. ARGV[i]) == 1 then
        redis.call('HSET', key, 'resp:' .. ARGV[i], ARGV[i + 1])
      end
    end
    local left = false
    for _, field in ipairs(redis.call('HKEYS', key)) do
      if string.sub(field, 1, 4) == 'req:' then left = true end
    end
    if not left then redis.call('HSET', key, 'status', 'working') end
  elseif kind == 'complete' then
    redis.call('HSET', key, 'status', 'completed', 'result', ARGV[4])
    clear_asked(key)
  elseif kind == 'fail' then
    redis.call('HSET', key, 'status', 'failed', 'error', ARGV[4])
    clear_asked(key)
  else
    redis.call('HSET', key, 'status', 'cancelled')
    clear_asked(key)
  end
  local at = now()
  local ttl = tonumber(redis.call('HGET', key, 'ttl'))
  if terminal(redis.call('HGET', key, 'status')) then redis.call('ZREM', KEYS[3], ARGV[2]) end
  redis.call('HSET', key, 'updated', tostring(at))
  redis.call('PEXPIRE', key, ttl)
  redis.call('ZADD', KEYS[1], at + ttl, ARGV[2])
end
return redis.call('HGETALL', key)",
    )
});

/// Takes the answers to the questions named.
static TAKE: LazyLock<Script> = LazyLock::new(|| {
    after_prelude(
        r"
local out = {}
for i = 1, #ARGV do
  local answer = redis.call('HGET', KEYS[1], 'resp:' .. ARGV[i])
  if answer then
    redis.call('HDEL', KEYS[1], 'resp:' .. ARGV[i])
    table.insert(out, ARGV[i])
    table.insert(out, answer)
  end
end
return out",
    )
});

/// Renews the leases of the tasks named that are not over.
static RENEW: LazyLock<Script> = LazyLock::new(|| {
    after_prelude(
        r"
local lease_end = now() + tonumber(ARGV[1])
for i = 3, #ARGV do
  local key = ARGV[2] .. ARGV[i]
  local s = redis.call('HGET', key, 'status')
  if s and not terminal(s) then
    redis.call('HSET', key, 'lease', tostring(lease_end))
    redis.call('ZADD', KEYS[1], lease_end, ARGV[i])
  end
end
return 1",
    )
});

/// Takes the tasks whose lease ran out out of the leases' set (ARGV: the lost error, the
/// prefix of a task's key, how many at most), failing those not over; returns those failed so,
/// each as its id then its hash's pairs.
static SWEEP: LazyLock<Script> = LazyLock::new(|| {
    after_prelude(
        r"
local at = now()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', at, 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local key = ARGV[2] .. id
  if live(key, ARGV[1]) then
    local s = redis.call('HGET', key, 'status')
    local lease = tonumber(redis.call('HGET', key, 'lease'))
    if not terminal(s) then
      redis.call('ZADD', KEYS[1], lease, id)
    elseif s == 'failed' and lease <= at then
      local fields = redis.call('HGETALL', key)
      table.insert(fields, 1, id)
      table.insert(out, fields)
    end
  end
end
return out",
    )
});

impl RedisStore {
    fn tasks_key(&self) -> String {
        self.link.key("tasks")
    }

    fn leases_key(&self) -> String {
        self.link.key("task-leases")
    }

    fn task_prefix(&self) -> String {
        self.link.key("task:")
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}{id}", self.task_prefix())
    }

    async fn task_script<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: impl redis::ToRedisArgs,
    ) -> Result<T, StoreError> {
        self.link.eval(script, keys, args).await
    }
}

/// Reads a task's hash (`HGETALL`'s pairs); `None` for none.
fn record_of(id: &str, fields: &[String]) -> Result<Option<TaskRecord>, StoreError> {
    if fields.is_empty() {
        return Ok(None);
    }
    let invalid = |what: &str| StoreError::Invalid(format!("task {id}: {what}"));
    let number = |value: &str, what: &str| value.parse::<u64>().map_err(|_| invalid(what));
    let json =
        |value: &str, what: &str| serde_json::from_str::<Value>(value).map_err(|_| invalid(what));
    let mut record = TaskRecord::working(id, Duration::from_millis(1), Duration::from_millis(1));
    for pair in fields.chunks(2) {
        let [name, value] = pair else {
            return Err(invalid("not a hash"));
        };
        match name.as_str() {
            "status" => {
                record.status = TaskStatus::parse(value).ok_or_else(|| invalid("its status"))?;
            }
            "message" => record.status_message = Some(value.clone()),
            "created" => record.created_at = number(value, "its creation")?,
            "updated" => record.updated_at = number(value, "its last change")?,
            "ttl" => record.ttl_ms = number(value, "its ttl")?,
            "poll" => record.poll_interval_ms = number(value, "its poll interval")?,
            "owner" => record.owner = number(value, "its owner")?,
            "result" => record.result = Some(json(value, "its result")?),
            "error" => record.error = Some(json(value, "its error")?),
            other => {
                if let Some(key) = other.strip_prefix("req:") {
                    record
                        .input_requests
                        .insert(key.to_owned(), json(value, "a question")?);
                } else if let Some(key) = other.strip_prefix("resp:") {
                    record
                        .input_responses
                        .insert(key.to_owned(), json(value, "an answer")?);
                }
            }
        }
    }
    Ok(Some(record))
}

/// Returns `(key, JSON)` pairs as a flat list of arguments.
fn pairs(map: &Map<String, Value>) -> Vec<String> {
    map.iter()
        .flat_map(|(key, value)| [key.clone(), value.to_string()])
        .collect()
}

impl TaskStore for RedisStore {
    fn create_task(
        &self,
        record: TaskRecord,
        lease: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let (set, key, leases) = (
                self.tasks_key(),
                self.task_key(&record.id),
                self.leases_key(),
            );
            let args = (
                &record.id,
                self.link.max_tasks,
                ms(lease),
                record.ttl_ms,
                record.poll_interval_ms,
                record.owner,
            );
            let made: i64 = self
                .task_script(&CREATE, &[&set, &key, &leases], args)
                .await?;
            Ok(made == 1)
        })
    }

    fn task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let key = self.task_key(id);
            let lost = lost_error().to_string();
            let fields: Vec<String> = self.task_script(&GET, &[&key], lost).await?;
            record_of(id, &fields)
        })
    }

    fn update_task<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let (set, key, leases) = (self.tasks_key(), self.task_key(id), self.leases_key());
            let mut args = vec![lost_error().to_string(), id.to_owned()];
            match change {
                TaskChange::Ask(asked) => {
                    args.push("ask".into());
                    args.extend(pairs(&asked));
                }
                TaskChange::Answer(answers) => {
                    args.push("answer".into());
                    args.extend(pairs(&answers));
                }
                TaskChange::Complete(result) => {
                    args.extend(["complete".into(), result.to_string()]);
                }
                TaskChange::Fail(error) => args.extend(["fail".into(), error.to_string()]),
                TaskChange::Cancel => args.push("cancel".into()),
            }
            let fields: Vec<String> = self
                .task_script(&UPDATE, &[&set, &key, &leases], args)
                .await?;
            record_of(id, &fields)
        })
    }

    fn take_answers<'a>(
        &'a self,
        id: &'a str,
        keys: &'a [String],
    ) -> BoxFuture<'a, Result<Map<String, Value>, StoreError>> {
        Box::pin(async move {
            if keys.is_empty() {
                return Ok(Map::new());
            }
            let key = self.task_key(id);
            let taken: Vec<String> = self.task_script(&TAKE, &[&key], keys).await?;
            let mut answers = Map::new();
            for pair in taken.chunks(2) {
                if let [name, value] = pair {
                    let value = serde_json::from_str(value)
                        .map_err(|_| StoreError::Invalid(format!("task {id}: an answer")))?;
                    answers.insert(name.clone(), value);
                }
            }
            Ok(answers)
        })
    }

    fn renew_tasks<'a>(
        &'a self,
        ids: &'a [String],
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if ids.is_empty() {
                return Ok(());
            }
            let args = (ms(lease), self.task_prefix(), ids);
            let _: i64 = self
                .task_script(&RENEW, &[&self.leases_key()], args)
                .await?;
            Ok(())
        })
    }

    fn sweep_lost(&self, limit: usize) -> BoxFuture<'_, Result<Vec<TaskRecord>, StoreError>> {
        Box::pin(async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let args = (lost_error().to_string(), self.task_prefix(), limit);
            let swept: Vec<Vec<String>> = self
                .task_script(&SWEEP, &[&self.leases_key()], args)
                .await?;
            let mut lost = Vec::with_capacity(swept.len());
            for fields in swept {
                let Some((id, fields)) = fields.split_first() else {
                    continue;
                };
                lost.extend(record_of(id, fields)?);
            }
            Ok(lost)
        })
    }
}
