//! Keeps tasks (SEP-2663): a `tools/call` answered at once with a task, whose handler runs on the
//! replica that made it while any replica reads, updates and cancels it. A task is kept for its
//! `ttlMs` after its last change; the replica running it renews a lease on it, and a task whose
//! lease runs out (its replica died) reads as failed, and is handed once to a replica that
//! sweeps the store ([`TaskStore::sweep_lost`]), which announces it. [`MemoryTasks`] keeps them
//! in this process; with `redis`, `RedisStore` keeps them for every replica.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::StoreError;
use crate::protocol::state::now_ms;

/// Says where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Its handler runs.
    Working,
    /// Its handler waits for the client's answers (`tasks/update`).
    InputRequired,
    /// Its handler answered: the tool's result (an error the tool reported included).
    Completed,
    /// It failed short of a result: a protocol error, or its replica stopped.
    Failed,
    /// The client cancelled it.
    Cancelled,
}

impl TaskStatus {
    /// Returns whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// Returns its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Returns the status this name is; `None` for another.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Working,
            Self::InputRequired,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }
}

/// Holds a task as the store keeps it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// Its id.
    pub id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A word for people on where it stands.
    pub status_message: Option<String>,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When it last changed, in milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// How long it is kept after its last change, in milliseconds.
    pub ttl_ms: u64,
    /// How often a client should poll it, in milliseconds.
    pub poll_interval_ms: u64,
    /// The replica that runs its handler (a number each replica draws), to which its
    /// cancellation and answers go.
    pub owner: u64,
    /// The questions its handler waits on, by key (`{method, params}` each).
    pub input_requests: Map<String, Value>,
    /// The client's answers not yet taken by the handler, by key.
    pub input_responses: Map<String, Value>,
    /// The tool's result, once completed.
    pub result: Option<Value>,
    /// The error, once failed (a JSON-RPC error object).
    pub error: Option<Value>,
}

impl TaskRecord {
    /// Returns a task `id` that starts working now, kept `ttl` after its last change, polled every
    /// `poll`.
    pub fn working(id: impl Into<String>, ttl: Duration, poll: Duration) -> Self {
        let now = now_ms();
        Self {
            id: id.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl_ms: ms(ttl),
            poll_interval_ms: ms(poll),
            owner: 0,
            input_requests: Map::new(),
            input_responses: Map::new(),
            result: None,
            error: None,
        }
    }
}

/// Says how a task changes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskChange {
    /// Its handler asks these questions (by key), and waits: `input_required`.
    Ask(Map<String, Value>),
    /// The client answers (`tasks/update`): the answers to questions asked are kept for the
    /// handler and the questions dropped (others ignored); once none is left, `working`.
    Answer(Map<String, Value>),
    /// Its handler answered with the tool's result.
    Complete(Value),
    /// It failed with this error (a JSON-RPC error object).
    Fail(Value),
    /// The client cancelled it.
    Cancel,
}

/// Keeps tasks for the replicas that serve them: [`MemoryTasks`] in this process, `RedisStore`
/// (with `redis`) shared by every replica.
///
/// A change never moves a task out of a terminal status (`completed`, `failed`, `cancelled`). A
/// task not terminal whose lease ran out (its replica stopped renewing it) reads as `failed`,
/// and [`sweep_lost`](Self::sweep_lost) hands it once to one of the replicas that sweep.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task, its lease running `lease` from now; `false` when the store is full.
    fn create_task(
        &self,
        record: TaskRecord,
        lease: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// Returns task `id`; `None` when there is none (never was, or past its `ttlMs`).
    fn task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Applies `change` to task `id` and returns it changed (unchanged when it is terminal);
    /// `None` when there is no such task.
    fn update_task<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Takes (and forgets) the client's answers to the questions `keys` of task `id`.
    fn take_answers<'a>(
        &'a self,
        id: &'a str,
        keys: &'a [String],
    ) -> BoxFuture<'a, Result<Map<String, Value>, StoreError>>;

    /// Renews the lease of tasks `ids` (those running on this replica) for `lease` from now.
    fn renew_tasks<'a>(
        &'a self,
        ids: &'a [String],
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Fails the tasks whose lease ran out (their replica stopped), and returns them, at most
    /// `limit`, together with those a read already failed so: each such task is returned once,
    /// to one caller, whichever replica calls, so that one replica announces it
    /// (`notifications/tasks`). Every replica serving tasks calls it every third of the lease.
    ///
    /// The default returns none: a store without it fails such a task when it is next read,
    /// and no listen stream hears of it.
    fn sweep_lost(&self, limit: usize) -> BoxFuture<'_, Result<Vec<TaskRecord>, StoreError>> {
        let _ = limit;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// Keeps tasks in this process: the store of a server that runs alone, at most `max` at once.
#[derive(Debug)]
pub struct MemoryTasks {
    map: Mutex<HashMap<String, Entry>>,
    max: usize,
}

#[derive(Debug)]
struct Entry {
    record: TaskRecord,
    /// When its lease runs out.
    lease: Instant,
    /// When it is dropped, unless it changes before.
    expires: Instant,
    /// Whether it failed because its lease ran out, and no sweep has returned it yet.
    unannounced: bool,
}

impl MemoryTasks {
    /// Returns an empty store of at most `max` tasks (those past their `ttlMs` make room).
    pub fn new(max: usize) -> Self {
        Self {
            map: Mutex::default(),
            max,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // The map stays consistent whatever panicked while holding it.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns how many tasks it holds (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Returns whether it holds no task.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Returns the live entry of `id`, its lease checked: a task whose lease ran out fails.
    fn live<'m>(map: &'m mut HashMap<String, Entry>, id: &str) -> Option<&'m mut Entry> {
        let now = Instant::now();
        if map.get(id).is_some_and(|entry| entry.expires <= now) {
            map.remove(id);
            return None;
        }
        let entry = map.get_mut(id)?;
        if !entry.record.status.is_terminal() && entry.lease <= now {
            fail_lost(&mut entry.record);
            entry.expires = now + Duration::from_millis(entry.record.ttl_ms);
            entry.unannounced = true;
        }
        Some(entry)
    }
}

impl Default for MemoryTasks {
    /// Returns a store of at most 10 000 tasks.
    fn default() -> Self {
        Self::new(10_000)
    }
}

/// Milliseconds, at least one.
pub(crate) fn ms(time: Duration) -> u64 {
    u64::try_from(time.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Returns the error of a task whose replica stopped.
pub(crate) fn lost_error() -> Value {
    json!({ "code": -32603, "message": "Internal error",
            "data": "the replica running the task stopped (its lease ran out)" })
}

/// Marks `record` failed: its replica stopped.
fn fail_lost(record: &mut TaskRecord) {
    record.status = TaskStatus::Failed;
    record.error = Some(lost_error());
    record.input_requests.clear();
    record.updated_at = now_ms();
}

/// Applies `change` to `record` (nothing on a terminal one).
pub(crate) fn apply(record: &mut TaskRecord, change: TaskChange) {
    if record.status.is_terminal() {
        return;
    }
    match change {
        TaskChange::Ask(requests) => {
            record.input_requests.extend(requests);
            record.status = TaskStatus::InputRequired;
        }
        TaskChange::Answer(answers) => {
            for (key, answer) in answers {
                if record.input_requests.remove(&key).is_some() {
                    record.input_responses.insert(key, answer);
                }
            }
            if record.input_requests.is_empty() {
                record.status = TaskStatus::Working;
            }
        }
        TaskChange::Complete(result) => {
            record.status = TaskStatus::Completed;
            record.result = Some(result);
            record.input_requests.clear();
        }
        TaskChange::Fail(error) => {
            record.status = TaskStatus::Failed;
            record.error = Some(error);
            record.input_requests.clear();
        }
        TaskChange::Cancel => {
            record.status = TaskStatus::Cancelled;
            record.input_requests.clear();
        }
    }
    record.updated_at = now_ms();
}

impl TaskStore for MemoryTasks {
    fn create_task(
        &self,
        record: TaskRecord,
        lease: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut map = self.lock();
        let now = Instant::now();
        if map.len() >= self.max {
            map.retain(|_, entry| entry.expires > now);
        }
        let made = map.len() < self.max;
        if made {
            let expires = now + Duration::from_millis(record.ttl_ms);
            let id = record.id.clone();
            let lease = now + lease;
            map.insert(
                id,
                Entry {
                    record,
                    lease,
                    expires,
                    unannounced: false,
                },
            );
        }
        Box::pin(std::future::ready(Ok(made)))
    }

    fn task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let mut map = self.lock();
        let found = Self::live(&mut map, id).map(|entry| entry.record.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update_task<'a>(
        &'a self,
        id: &'a str,
        change: TaskChange,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let mut map = self.lock();
        let found = Self::live(&mut map, id).map(|entry| {
            apply(&mut entry.record, change);
            entry.expires = Instant::now() + Duration::from_millis(entry.record.ttl_ms);
            entry.record.clone()
        });
        Box::pin(std::future::ready(Ok(found)))
    }

    fn take_answers<'a>(
        &'a self,
        id: &'a str,
        keys: &'a [String],
    ) -> BoxFuture<'a, Result<Map<String, Value>, StoreError>> {
        let mut map = self.lock();
        let mut taken = Map::new();
        if let Some(entry) = Self::live(&mut map, id) {
            for key in keys {
                if let Some(answer) = entry.record.input_responses.remove(key) {
                    taken.insert(key.clone(), answer);
                }
            }
        }
        Box::pin(std::future::ready(Ok(taken)))
    }

    fn renew_tasks<'a>(
        &'a self,
        ids: &'a [String],
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut map = self.lock();
        let until = Instant::now() + lease;
        for id in ids {
            if let Some(entry) = Self::live(&mut map, id)
                && !entry.record.status.is_terminal()
            {
                entry.lease = until;
            }
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn sweep_lost(&self, limit: usize) -> BoxFuture<'_, Result<Vec<TaskRecord>, StoreError>> {
        let mut map = self.lock();
        let now = Instant::now();
        let lapsed: Vec<String> = map
            .iter()
            .filter(|(_, entry)| {
                entry.unannounced || (!entry.record.status.is_terminal() && entry.lease <= now)
            })
            .map(|(id, _)| id.clone())
            .take(limit)
            .collect();
        let mut lost = Vec::with_capacity(lapsed.len());
        for id in lapsed {
            if let Some(entry) = Self::live(&mut map, &id)
                && std::mem::take(&mut entry.unannounced)
            {
                lost.push(entry.record.clone());
            }
        }
        Box::pin(std::future::ready(Ok(lost)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> TaskRecord {
        TaskRecord::working(id, Duration::from_secs(60), Duration::from_secs(1))
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_asks_takes_answers_and_ends_once() {
        let store = MemoryTasks::new(10);
        let lease = Duration::from_secs(10);
        assert!(store.create_task(task("t"), lease).await.unwrap());
        let asked = serde_json::from_value(json!({
            "a": { "method": "elicitation/create" }, "b": { "method": "elicitation/create" },
        }))
        .unwrap();
        let record = store
            .update_task("t", TaskChange::Ask(asked))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.status, TaskStatus::InputRequired);
        let one = serde_json::from_value(json!({ "a": { "action": "accept" }, "z": {} })).unwrap();
        let record = store
            .update_task("t", TaskChange::Answer(one))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.status, TaskStatus::InputRequired, "b is still asked");
        assert_eq!(record.input_requests.keys().collect::<Vec<_>>(), ["b"]);
        let keys = ["a".to_owned(), "b".to_owned()];
        let taken = store.take_answers("t", &keys).await.unwrap();
        assert_eq!(
            taken,
            serde_json::from_value::<Map<_, _>>(json!({ "a": { "action": "accept" } })).unwrap()
        );
        let two = serde_json::from_value(json!({ "b": { "action": "decline" } })).unwrap();
        let record = store
            .update_task("t", TaskChange::Answer(two))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.status, TaskStatus::Working);
        let done = store.update_task("t", TaskChange::Complete(json!({ "content": [] })));
        assert_eq!(done.await.unwrap().unwrap().status, TaskStatus::Completed);
        let late = store
            .update_task("t", TaskChange::Cancel)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(late.status, TaskStatus::Completed, "terminal stays");
        assert!(
            store
                .update_task("u", TaskChange::Cancel)
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_sweep_fails_a_task_whose_lease_ran_out_once() {
        let store = MemoryTasks::new(10);
        let lease = Duration::from_secs(10);
        assert!(store.create_task(task("lost"), lease).await.unwrap());
        assert!(store.create_task(task("done"), lease).await.unwrap());
        store
            .update_task("done", TaskChange::Complete(json!({})))
            .await
            .unwrap();
        assert!(store.sweep_lost(10).await.unwrap().is_empty(), "in time");
        tokio::time::advance(Duration::from_secs(11)).await;
        let swept = store.sweep_lost(10).await.unwrap();
        assert_eq!(swept.len(), 1, "{swept:?}");
        assert_eq!(
            (swept[0].id.as_str(), swept[0].status),
            ("lost", TaskStatus::Failed)
        );
        assert_eq!(swept[0].error, Some(lost_error()));
        assert!(store.sweep_lost(10).await.unwrap().is_empty(), "once");
        let read = store.task("lost").await.unwrap().unwrap();
        assert_eq!(read.status, TaskStatus::Failed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_whose_lease_runs_out_fails_and_expires_after_its_ttl() {
        let store = MemoryTasks::new(1);
        let lease = Duration::from_secs(10);
        assert!(store.create_task(task("t"), lease).await.unwrap());
        assert!(!store.create_task(task("u"), lease).await.unwrap(), "full");
        tokio::time::advance(Duration::from_secs(8)).await;
        store.renew_tasks(&["t".to_owned()], lease).await.unwrap();
        tokio::time::advance(Duration::from_secs(8)).await;
        let record = store.task("t").await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Working, "renewed");
        tokio::time::advance(Duration::from_secs(3)).await;
        let record = store.task("t").await.unwrap().unwrap();
        assert_eq!(
            record.status,
            TaskStatus::Failed,
            "its replica stopped renewing"
        );
        assert_eq!(record.error, Some(lost_error()));
        let swept = store.sweep_lost(10).await.unwrap();
        assert_eq!(swept, [record], "a read failed it; the sweep announces it");
        assert!(store.sweep_lost(10).await.unwrap().is_empty(), "once");
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(store.task("t").await.unwrap().is_none(), "past its ttl");
        assert!(
            store.create_task(task("u"), lease).await.unwrap(),
            "room again"
        );
    }
}
