//! Serves the tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`, the modern era's): a
//! `tools/call` of a task-supporting tool, from a client that takes tasks, is answered at once
//! with a task (`resultType: "task"`), whose handler runs on; the client reads it (`tasks/get`),
//! answers its questions (`tasks/update`), or cancels it (`tasks/cancel`), on any replica.
//!
//! | the tool | a client that takes tasks | one that does not |
//! | --- | --- | --- |
//! | no task support (the default) | a plain call | a plain call |
//! | [`TaskSupport::Optional`] | a task | a plain call |
//! | [`TaskSupport::Required`] | a task | `-32021`, naming the extension |
//!
//! A tool set [`tool_task_deferred`](crate::McpBuilder::tool_task_deferred) starts as a plain
//! call (it may ask through `input_required` rounds first), and becomes a task when its handler
//! calls [`McpRequest::start_task`].
//!
//! Its handler runs on the replica that made the task, in a connection of its own that the
//! runtime cancels as any (`notifications/cancelled`): `tasks/cancel` cancels it there, from
//! any replica, through that replica's control topic (`mcp/tasks/OWNER/control`: the task's
//! record names the replica running it). Its questions (`ctx.elicit`...) make the task
//! `input_required` with them; the client's answers (`tasks/update`, on any replica) wake it.
//! Each change of status is published on the task's topic, `mcp/task/ID`, as
//! `notifications/tasks`: a listen stream that names the task (`taskIds`) hears it.
//!
//! | the handler | the task |
//! | --- | --- |
//! | answers | `completed`, the tool's result inlined in `tasks/get` |
//! | fails with the tool's error | `completed`, the result with `isError` |
//! | fails with `-32603` (a panic, a timeout) or `-32021` | `failed`, the error inlined |
//! | is cancelled | `cancelled` |
//! | its replica stops | `failed` once its lease runs out (it renews it every third of [`task_lease`](crate::McpBuilder::task_lease)): whoever reads the task next sees it so, and the next sweep of a replica serving tasks (every third of the lease) announces it |

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::lifecycle::MetaOnly;
use super::request::{McpError, McpRequest, TaskMode, lock};
use super::result::Stamped;
use super::{Core, Params, decode, route};
use crate::protocol::era;
use crate::protocol::types::Era;
use crate::store::{TaskChange, TaskRecord, TaskStatus, TaskStore};
use jrpc_runtime::framing::Frame;
use jrpc_runtime::wire::incoming::{self, Incoming};
use jrpc_runtime::wire::{ErrorCode, RpcError};
use jrpc_runtime::{Cancellation, Context, Methods, Peer, PeerConfig, RegisterError};

/// Names the extension.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Says whether a tool runs as a task (SEP-2663), when the client takes tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: a plain call (the default).
    #[default]
    Forbidden,
    /// A task for a client that takes tasks; a plain call for one that does not.
    Optional,
    /// Only a task: a client that does not take tasks is answered `-32021`.
    Required,
}

impl TaskSupport {
    /// Returns its name in a tool's `execution.taskSupport`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// Holds how a tool runs as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ToolTask {
    pub(crate) support: TaskSupport,
    /// Whether its handler starts the task ([`McpRequest::start_task`]), rather than the call.
    pub(crate) deferred: bool,
}

/// Holds what runs tasks: the store, the settings, and the tasks this process runs.
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) ttl: Duration,
    pub(crate) poll: Duration,
    pub(crate) lease: Duration,
    /// This replica's number: the owner of the tasks it runs.
    tag: u64,
    /// The tasks whose handlers run here: what cancels each, and what wakes its questions.
    running: Mutex<HashMap<String, Running>>,
    /// Whether the loop renewing their leases, and the watch of this replica's control topic,
    /// run.
    started: AtomicBool,
}

/// Holds what cancels a task's handler, and what wakes its questions.
type Running = (CancellationToken, Arc<Notify>);

impl Tasks {
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        ttl: Duration,
        poll: Duration,
        lease: Duration,
    ) -> Self {
        Self {
            store,
            ttl,
            poll,
            lease,
            tag: replica_tag(),
            running: Mutex::default(),
            started: AtomicBool::new(false),
        }
    }
}

/// Links a request that runs as a task to it: its questions go to the task.
#[derive(Clone)]
pub(crate) struct TaskLink {
    id: Arc<str>,
    core: Arc<Core>,
    /// Woken when the client answers (`tasks/update`, here or on another replica).
    answered: Arc<Notify>,
}

impl TaskLink {
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Asks the client `asked` (`{method, params}` by key) through the task and waits for every
    /// answer: the task is `input_required` meanwhile.
    pub(crate) async fn ask(
        &self,
        asked: Map<String, Value>,
    ) -> Result<Map<String, Value>, McpError> {
        let store = &self.core.tasks.store;
        let keys: Vec<String> = asked.keys().cloned().collect();
        let record = store
            .update_task(&self.id, TaskChange::Ask(asked))
            .await
            .map_err(|err| McpError::NoTask(err.to_string()))?
            .ok_or_else(|| McpError::NoTask("the task is gone".to_owned()))?;
        publish_status(&self.core, &record);
        let mut answers = Map::new();
        loop {
            let answered = self.answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            let left: Vec<String> = keys
                .iter()
                .filter(|key| !answers.contains_key(*key))
                .cloned()
                .collect();
            let taken = store
                .take_answers(&self.id, &left)
                .await
                .map_err(|err| McpError::NoTask(err.to_string()))?;
            answers.extend(taken);
            if answers.len() == keys.len() {
                return Ok(answers);
            }
            // An answer posted to another replica wakes this one through the control topic; the
            // poll is for a wake-up lost on the way.
            tokio::select! {
                () = answered => {}
                () = tokio::time::sleep(self.core.tasks.poll) => {}
            }
        }
    }
}

/// Returns the topic a task's changes are published on (`notifications/tasks`).
pub(crate) fn topic(id: &str) -> String {
    format!("mcp/task/{id}")
}

/// Returns the topic of replica `owner`'s tasks: what cancels a task's handler, and wakes its
/// questions, wherever they are asked.
fn control_topic(owner: u64) -> String {
    format!("mcp/tasks/{owner}/control")
}

/// Says what a replica's control topic carries, for one of its tasks.
#[derive(Serialize, Deserialize)]
struct Control {
    #[serde(rename = "taskId")]
    task_id: String,
}

/// Sends `method` (`cancel`, `answered`) for the task `record` to the replica running it.
fn control(core: &Core, record: &TaskRecord, method: &str) {
    let control = Control {
        task_id: record.id.clone(),
    };
    if let Err(err) = core
        .topics
        .publish(&control_topic(record.owner), method, control)
    {
        tracing::warn!(%err, "could not reach the replica running a task");
    }
}

/// Returns a random number, never zero, for this process's tasks.
fn replica_tag() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes).max(1)
}

/// 128 random bits as 32 hex digits.
fn task_id() -> Result<String, RpcError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| RpcError::internal().with_data(&err.to_string()))?;
    Ok(crate::store::hex(&bytes))
}

/// Registers `tasks/get`, `tasks/update` and `tasks/cancel`.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "tasks/get", get)?;
    route(methods, core, "tasks/update", update)?;
    route(methods, core, "tasks/cancel", cancel)
}

/// Holds the params of the tasks methods.
#[derive(Deserialize)]
struct TaskParams {
    #[serde(rename = "taskId")]
    task_id: String,
    #[serde(rename = "inputResponses", default)]
    responses: Option<Value>,
}

/// Returns `-32021` naming the extension.
pub(crate) fn needs_tasks() -> RpcError {
    era::missing_capability(json!({ "extensions": { EXTENSION: {} } }))
}

/// Reads a tasks method's request: modern, from a client that takes tasks.
fn read(
    core: &Arc<Core>,
    params: &Params,
    ctx: &Context,
    method: &str,
) -> Result<(McpRequest, TaskParams), RpcError> {
    let MetaOnly { meta } = decode(params)?;
    let req = McpRequest::read(meta, ctx, core)?;
    if req.era() == Era::Legacy {
        return Err(super::lifecycle::removed(method, req.protocol_version()));
    }
    if !req.takes_tasks() {
        return Err(needs_tasks());
    }
    Ok((req, decode(params)?))
}

/// `-32602` for a task no one knows.
fn unknown(id: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown task: {id}"))
}

async fn get(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let (req, TaskParams { task_id, .. }) = read(&core, &params, &ctx, "tasks/get")?;
    start(&core).await;
    let record = core
        .tasks
        .store
        .task(&task_id)
        .await?
        .ok_or_else(|| unknown(&task_id))?;
    Ok(req.stamp(detailed(&record, true), None))
}

async fn update(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let (req, TaskParams { task_id, responses }) = read(&core, &params, &ctx, "tasks/update")?;
    start(&core).await;
    let answers = match responses {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(answers)) => answers,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "inputResponses must be an object of answers by key",
            ));
        }
    };
    let record = core
        .tasks
        .store
        .update_task(&task_id, TaskChange::Answer(answers))
        .await?
        .ok_or_else(|| unknown(&task_id))?;
    control(&core, &record, "answered");
    publish_status(&core, &record);
    Ok(req.stamp(Map::new(), None))
}

async fn cancel(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let (req, TaskParams { task_id, .. }) = read(&core, &params, &ctx, "tasks/cancel")?;
    start(&core).await;
    let before = core
        .tasks
        .store
        .task(&task_id)
        .await?
        .ok_or_else(|| unknown(&task_id))?;
    if !before.status.is_terminal() {
        let record = core
            .tasks
            .store
            .update_task(&task_id, TaskChange::Cancel)
            .await?
            .ok_or_else(|| unknown(&task_id))?;
        control(&core, &record, "cancel");
        publish_status(&core, &record);
    }
    Ok(req.stamp(Map::new(), None))
}

/// Returns a task as the wire has it: `tasks/get`'s `DetailedTask` (with `detail`: its questions,
/// result or error), or a `CreateTaskResult`'s task.
pub(crate) fn detailed(record: &TaskRecord, detail: bool) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), record.id.clone().into());
    task.insert("status".into(), record.status.as_str().into());
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), message.clone().into());
    }
    task.insert("createdAt".into(), iso8601(record.created_at).into());
    task.insert("lastUpdatedAt".into(), iso8601(record.updated_at).into());
    task.insert("ttlMs".into(), record.ttl_ms.into());
    task.insert("pollIntervalMs".into(), record.poll_interval_ms.into());
    if detail {
        match record.status {
            TaskStatus::InputRequired => {
                task.insert(
                    "inputRequests".into(),
                    Value::Object(record.input_requests.clone()),
                );
            }
            TaskStatus::Completed => {
                if let Some(result) = &record.result {
                    task.insert("result".into(), result.clone());
                }
            }
            TaskStatus::Failed => {
                if let Some(error) = &record.error {
                    task.insert("error".into(), error.clone());
                }
            }
            _ => {}
        }
    }
    task
}

/// Publishes a task's status on its topic (`notifications/tasks`), for the listen streams that
/// name it.
fn publish_status(core: &Core, record: &TaskRecord) {
    let params = detailed(record, record.status.is_terminal());
    if let Err(err) = core
        .topics
        .publish(&topic(&record.id), "notifications/tasks", params)
    {
        tracing::warn!(%err, "could not publish a task's status");
    }
}

/// Says how a task-supporting `tools/call` is answered.
pub(crate) enum Started {
    /// With its task (`CreateTaskResult`).
    Task(Stamped<Map<String, Value>>),
    /// As a plain call (a deferred task its handler did not start): the handler's answer.
    Plain(Result<Box<RawValue>, RpcError>),
}

/// Runs the tool `name` of a `tools/call` as a task (`tool`'s way): `req` is the call, its asks
/// opened; `finish` makes the tool's result of the handler's answer.
pub(crate) async fn call(
    core: &Arc<Core>,
    req: &McpRequest,
    tool: ToolTask,
    (name, arguments): (String, Option<Box<RawValue>>),
    ctx: Context,
    finish: impl FnOnce(Result<Box<RawValue>, RpcError>) -> Result<Value, RpcError> + Send + 'static,
) -> Result<Started, RpcError> {
    let (done_tx, done) = oneshot::channel();
    let stop = CancellationToken::new();
    let start = if tool.deferred {
        let (ask, asked) = mpsc::channel(1);
        *lock(&req.inner.task) = TaskMode::Startable(ask);
        Some(asked)
    } else {
        let link = make_task(core, &stop).await?;
        *lock(&req.inner.task) = TaskMode::Task(link);
        None
    };
    let ctx = ctx.with_extension(req.clone());
    let handler = run_handler(
        core.listen_queue,
        core.tools.methods.clone(),
        name,
        arguments,
        ctx,
        stop.clone(),
    );
    let request = req.clone();
    let weak_core = Arc::downgrade(core);
    tokio::spawn(async move {
        let answered = handler.await;
        match request.task_link() {
            Some(link) => {
                if let Some(core) = weak_core.upgrade() {
                    finished(&core, &link, answered, finish).await;
                }
            }
            None => {
                let answered = answered.unwrap_or_else(|| Err(RpcError::internal()));
                let _ = done_tx.send(answered);
            }
        }
    });
    let Some(mut asked) = start else {
        let link = req
            .task_link()
            .ok_or_else(|| RpcError::internal().with_data("the task vanished"))?;
        return created(core, req, &link).await;
    };
    // A deferred task: the handler answers as a plain call, or starts the task first.
    tokio::select! {
        answered = done => Ok(Started::Plain(answered.unwrap_or_else(|_| Err(RpcError::internal())))),
        reply = asked.recv() => {
            let Some(reply) = reply else {
                return Err(RpcError::internal());
            };
            match make_task(core, &stop).await {
                Ok(link) => {
                    let _ = reply.send(Some(link.clone()));
                    created(core, req, &link).await
                }
                Err(err) => {
                    let _ = reply.send(None);
                    Err(err)
                }
            }
        }
    }
}

/// Makes a task in the store (durably: `tasks/get` finds it from now on), running here: its
/// handler cancelled by `stop`, its lease renewed.
async fn make_task(core: &Arc<Core>, stop: &CancellationToken) -> Result<TaskLink, RpcError> {
    let tasks = &core.tasks;
    start(core).await;
    let id = task_id()?;
    let mut record = TaskRecord::working(&id, tasks.ttl, tasks.poll);
    record.owner = tasks.tag;
    if !tasks.store.create_task(record, tasks.lease).await? {
        return Err(RpcError::new(ErrorCode::SERVER_ERROR, "Too many tasks")
            .with_data("the store of tasks is full; retry later"));
    }
    let link = TaskLink {
        id: id.clone().into(),
        core: Arc::clone(core),
        answered: Arc::new(Notify::new()),
    };
    let running = (stop.clone(), Arc::clone(&link.answered));
    lock(&tasks.running).insert(id, running);
    Ok(link)
}

/// Answers a `tools/call` with the task `link` (a `CreateTaskResult`).
async fn created(core: &Core, req: &McpRequest, link: &TaskLink) -> Result<Started, RpcError> {
    let record = core
        .tasks
        .store
        .task(link.id())
        .await?
        .ok_or_else(|| RpcError::internal().with_data("the task vanished"))?;
    let body = detailed(&record, false);
    Ok(Started::Task(Stamped::of_type(
        "task",
        body,
        &req.inner.core,
        None,
    )))
}

/// How many tasks lost with their replica one sweep fails and announces at most.
const SWEEP_LIMIT: usize = 100;

/// Starts, with the first task this replica runs, reads, answers, cancels or listens to: the loop
/// that every third of the lease renews the leases of its tasks and sweeps the store for tasks
/// whose replica stopped (failed, and announced on their topics), and the watch of its control
/// topic (cancellations, and answers posted to any replica). Once started, what another replica
/// sends its tasks reaches them.
pub(crate) async fn start(core: &Arc<Core>) {
    if core.tasks.started.swap(true, Ordering::AcqRel) {
        return;
    }
    let weak: Weak<Core> = Arc::downgrade(core);
    let every = core.tasks.lease / 3;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(core) = weak.upgrade() else {
                return;
            };
            let ids: Vec<String> = lock(&core.tasks.running).keys().cloned().collect();
            if let Err(err) = core.tasks.store.renew_tasks(&ids, core.tasks.lease).await {
                tracing::warn!(%err, "could not renew the tasks' leases");
            }
            match core.tasks.store.sweep_lost(SWEEP_LIMIT).await {
                Ok(lost) => {
                    for record in &lost {
                        publish_status(&core, record);
                    }
                }
                Err(err) => tracing::warn!(%err, "could not sweep for tasks lost with a replica"),
            }
        }
    });
    let topic = control_topic(core.tasks.tag);
    let mut watch = core.topics.watch([topic.clone()], core.listen_queue);
    core.topics.ready(&topic).await;
    let weak: Weak<Core> = Arc::downgrade(core);
    tokio::spawn(async move {
        while let Some(published) = watch.recv().await {
            let Some(core) = weak.upgrade() else {
                return;
            };
            let task = published
                .params
                .and_then(|raw| serde_json::from_str::<Control>(raw.get()).ok());
            let Some(Control { task_id }) = task else {
                continue;
            };
            let running = lock(&core.tasks.running).get(&task_id).cloned();
            match (published.method.as_str(), running) {
                ("cancel", Some((stop, _))) => stop.cancel(),
                (_, Some((_, answered))) => answered.notify_one(),
                _ => {}
            }
        }
    });
}

/// Ends the task `link` with its handler's answer (`None`: cancelled).
async fn finished(
    core: &Arc<Core>,
    link: &TaskLink,
    answered: Option<Result<Box<RawValue>, RpcError>>,
    finish: impl FnOnce(Result<Box<RawValue>, RpcError>) -> Result<Value, RpcError>,
) {
    lock(&core.tasks.running).remove(link.id());
    let Some(answered) = answered else {
        return;
    };
    let change = match answered {
        Err(err) if is_protocol_error(&err) => TaskChange::Fail(error_object(&err)),
        answered => match finish(answered) {
            Ok(result) => TaskChange::Complete(result),
            Err(err) => TaskChange::Fail(error_object(&err)),
        },
    };
    match core.tasks.store.update_task(link.id(), change).await {
        Ok(Some(record)) => publish_status(core, &record),
        Ok(None) => {}
        Err(err) => tracing::warn!(%err, "could not store a task's result"),
    }
}

/// Returns whether a handler's error is the protocol's (the task fails) rather than the tool's (the
/// task completes with `isError`): an internal error (a panic, a timeout), or a capability the
/// client lacks.
fn is_protocol_error(err: &RpcError) -> bool {
    let code = err.code().code();
    code == ErrorCode::INTERNAL_ERROR.code() || code == era::MISSING_CAPABILITY.code()
}

/// Returns `err` as a JSON-RPC error object.
fn error_object(err: &RpcError) -> Value {
    serde_json::to_value(err)
        .unwrap_or_else(|_| json!({ "code": err.code().code(), "message": err.message() }))
}

/// Runs the method `name` of `methods` with `arguments`, in a connection of its own whose context
/// is `ctx`'s (what the handler writes besides its answer held up to `queue` messages), until it
/// answers or `stop` cancels it (then `None`): cancelled as the runtime
/// cancels any request (`notifications/cancelled`), so that its `ctx.cancelled()` resolves.
async fn run_handler(
    queue: usize,
    methods: Methods,
    name: String,
    arguments: Option<Box<RawValue>>,
    ctx: Context,
    stop: CancellationToken,
) -> Option<Result<Box<RawValue>, RpcError>> {
    // Its input carries two messages at most (the call, its cancellation); what the handler
    // writes is read as soon as it comes, and waits for room meanwhile.
    let (input, rx) = mpsc::channel::<Frame>(2);
    let (out_tx, mut out) = mpsc::channel::<String>(queue);
    let reader = futures_util::stream::unfold(rx, |mut rx| async move {
        let frame = rx.recv().await?;
        Some((Ok::<_, Infallible>(frame), rx))
    });
    let writer = futures_util::sink::unfold(out_tx, |tx, text: String| async move {
        let _ = tx.send(text).await;
        Ok::<_, Infallible>(tx)
    });
    let config = match PeerConfig::builder()
        .cancellation(Cancellation::Mcp)
        .context(ctx)
        .build()
    {
        Ok(config) => config,
        Err(err) => return Some(Err(RpcError::internal().with_data(&err.to_string()))),
    };
    let (_peer, driver) = Peer::start(reader, writer, methods, config);
    tokio::spawn(async move {
        let _ = driver.await;
    });
    let params = arguments.map_or_else(String::new, |raw| format!(r#","params":{}"#, raw.get()));
    let method = serde_json::to_string(&name).unwrap_or_default();
    let request = format!(r#"{{"jsonrpc":"2.0","id":1,"method":{method}{params}}}"#);
    if input.send(Frame::Message(request)).await.is_err() {
        return Some(Err(RpcError::internal()));
    }
    loop {
        tokio::select! {
            text = out.recv() => {
                let Some(text) = text else {
                    return Some(Err(RpcError::internal().with_data("the task's connection closed")));
                };
                if let Incoming::Response(res) = incoming::parse(&text)
                    && let Ok((_, answer)) = res.read()
                {
                    return Some(answer.map(ToOwned::to_owned));
                }
                // What the handler sent besides (progress, logs) goes nowhere.
            }
            () = stop.cancelled() => {
                let notice = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
                let _ = input.send(Frame::Message(notice.to_owned())).await;
                return None;
            }
        }
    }
}

/// Returns `ms` (milliseconds since the Unix epoch) as ISO 8601 in UTC, to the millisecond.
pub(crate) fn iso8601(ms: u64) -> String {
    let (days, rest) = (ms / 86_400_000, ms % 86_400_000);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days.cast_signed() + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_in_iso_8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_796_538_639_274), "2026-12-06T06:30:39.274Z");
    }
}
