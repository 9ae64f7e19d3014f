//! Describes a request as MCP's handlers see it ([`McpRequest`], in the handler's [`Context`]): its
//! era, revision and the client's capabilities, read from its `_meta` (modern) or from what
//! `initialize` said on its session or connection (legacy, [`LegacyState`]); and what a handler
//! sends through its context: progress and log messages, each as its era wants.

use crate::McpContext as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Core;
use super::result::{Hint, Stamped};
use crate::protocol::era::{self, RequestMeta};
use crate::protocol::state::{self, Bound};
use crate::protocol::types::{Era, LogLevel};
use crate::protocol::version::LEGACY_VERSIONS;
use jrpc_runtime::Caller as _;
use jrpc_runtime::ClientError;
use jrpc_runtime::Context;
use jrpc_runtime::Peer;
use jrpc_runtime::wire::{ErrorCode, RpcError};

use futures_util::future::BoxFuture;

use super::tasks::TaskLink;
use crate::store::SessionChange;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // What these locks hold stays consistent whatever panicked while holding them.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps what `initialize` said for a legacy session (HTTP) or connection (stdio): the legacy
/// era's requests read the client's capabilities and log level here. An HTTP session keeps its
/// state in a store too ([`SessionHooks`]), where every replica reads it.
#[derive(Default)]
pub(crate) struct LegacyState(Mutex<Legacy>, Option<Arc<dyn SessionHooks>>);

/// Keeps a legacy session's changes where every replica serving it reads them (an HTTP
/// session's store), and has its GET stream follow what it asks for, wherever that stream is.
/// Without hooks (stdio), the state is the connection's, and its connection follows.
pub(crate) trait SessionHooks: Send + Sync {
    /// Stores `change` (and, for a change of what the session follows, has its GET stream
    /// follow it).
    fn changed(&self, change: SessionChange) -> BoxFuture<'_, Result<(), RpcError>>;
}

#[derive(Default)]
struct Legacy {
    version: Option<&'static str>,
    capabilities: Option<Value>,
    client_info: Option<Value>,
    log_level: Option<LogLevel>,
    /// Where the session's notifications that belong to no request go: an HTTP session's GET
    /// stream, or the stdio connection.
    push: Option<Peer>,
}

impl LegacyState {
    /// Returns a state for a session or connection that has not initialized yet; `push` is where
    /// its notifications outside requests go, when known now (an HTTP session's GET stream).
    pub(crate) fn new(push: Option<Peer>) -> Arc<Self> {
        Self::with_hooks(push, None)
    }

    /// Returns [`new`](Self::new)'s state, keeping its changes with `hooks` too.
    pub(crate) fn with_hooks(
        push: Option<Peer>,
        hooks: Option<Arc<dyn SessionHooks>>,
    ) -> Arc<Self> {
        let legacy = Legacy {
            push,
            ..Legacy::default()
        };
        Arc::new(Self(Mutex::new(legacy), hooks))
    }

    /// Returns the hooks that keep the state's changes, when a store keeps them.
    pub(crate) fn hooks(&self) -> Option<&Arc<dyn SessionHooks>> {
        self.1.as_ref()
    }

    /// Takes what the store says of the session (another replica may have changed it).
    #[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's sessions"))]
    pub(crate) fn refresh(&self, record: &crate::store::SessionRecord) {
        let mut state = lock(&self.0);
        state.version = record
            .version
            .as_deref()
            .and_then(|v| LEGACY_VERSIONS.iter().copied().find(|known| *known == v));
        state.capabilities.clone_from(&record.capabilities);
        state.client_info.clone_from(&record.client_info);
        state.log_level = record.log_level;
    }

    /// Records what `initialize` agreed on; a connection without a push target yet pushes on
    /// `peer` (the one `initialize` came over). Gives the push target.
    pub(crate) fn initialized(
        &self,
        version: &'static str,
        capabilities: Option<Value>,
        client_info: Option<Value>,
        peer: Option<&Peer>,
    ) -> Option<Peer> {
        let mut state = lock(&self.0);
        state.version = Some(version);
        state.capabilities = capabilities;
        state.client_info = client_info;
        if state.push.is_none() {
            state.push = peer.cloned();
        }
        state.push.clone()
    }

    /// Returns where notifications outside any request go.
    pub(crate) fn push(&self) -> Option<Peer> {
        lock(&self.0).push.clone()
    }

    /// Returns the revision `initialize` agreed on.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "HTTP checks its header")
    )]
    pub(crate) fn version(&self) -> Option<&'static str> {
        lock(&self.0).version
    }

    /// Sets the lowest level of log messages sent (`logging/setLevel`).
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        lock(&self.0).log_level = Some(level);
    }
}

/// Describes the MCP request a handler serves, as its [`Context`] carries it ([`Context::mcp`]):
/// its era, protocol revision, and what the client said of itself (its capabilities for this
/// request, in the modern era; those it declared at `initialize`, in the legacy era).
///
/// ```
/// use jrpc_mcp::{Era, McpContext as _};
/// use jrpc_runtime::Context;
///
/// fn can_sample(ctx: &Context) -> bool {
///     ctx.mcp().is_some_and(|req| req.client_capabilities().get("sampling").is_some())
/// }
/// # assert!(!can_sample(&Context::new(jrpc_runtime::Transport::InProcess)));
/// ```
#[derive(Clone)]
pub struct McpRequest {
    pub(crate) inner: Arc<RequestInner>,
}

pub(crate) struct RequestInner {
    pub(crate) era: Era,
    pub(crate) version: &'static str,
    pub(crate) capabilities: Value,
    pub(crate) client_info: Option<Value>,
    pub(crate) progress_token: Option<Value>,
    /// The modern era's `logLevel`; the legacy era's is read from its state when a log is sent.
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) legacy: Option<Arc<LegacyState>>,
    pub(crate) core: Arc<Core>,
    /// The last progress sent: progress must increase.
    last_progress: Mutex<Option<f64>>,
    /// Where its questions to the client stand.
    pub(crate) asks: Mutex<Asks>,
    /// Whether it runs as a task, or may start one.
    pub(crate) task: Mutex<TaskMode>,
}

/// Says whether a request runs as a task (SEP-2663).
#[derive(Default)]
pub(crate) enum TaskMode {
    /// Not a task, and it may not start one.
    #[default]
    None,
    /// Not a task yet: its handler may start one ([`McpRequest::start_task`]), which asks this
    /// sender for it and waits for the task's link.
    Startable(tokio::sync::mpsc::Sender<tokio::sync::oneshot::Sender<Option<TaskLink>>>),
    /// A task: its questions wait for the client's `tasks/update`.
    Task(TaskLink),
}

/// Tracks where a request's questions to its client stand (see [`ask`](super::ask)).
#[derive(Default)]
pub(crate) struct Asks {
    /// Whether it may ask (a `tools/call`, `prompts/get` or `resources/read`).
    pub(crate) open: bool,
    /// The answers a modern retry brought: earlier rounds' (from its state) and this one's.
    pub(crate) given: Map<String, Value>,
    /// Those the handler took, kept in the next state.
    pub(crate) used: Map<String, Value>,
    /// The questions left for the client, by key.
    pub(crate) pending: Map<String, Value>,
    /// A capability the client did not declare, when a question needed it.
    pub(crate) missing: Option<Value>,
    /// The request, as its state binds it.
    binding: Option<Binding>,
}

/// Holds the params of a `tools/call` or `prompts/get`: a name, its arguments, and what a retry
/// brought (modern era).
#[derive(serde::Deserialize)]
pub(crate) struct NamedParams<'a> {
    pub(crate) name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", default)]
    pub(crate) meta: RequestMeta,
    #[serde(rename = "inputResponses", default)]
    responses: Option<Value>,
    #[serde(rename = "requestState", default)]
    state: Option<String>,
}

/// Names a request that may ask, as its state binds it: the digest of its arguments is made only
/// when a state is checked or made.
pub(crate) struct Binding {
    pub(crate) method: &'static str,
    pub(crate) name: String,
    pub(crate) arguments: Option<Box<RawValue>>,
}

impl Binding {
    fn bound(&self) -> Bound {
        let arguments = self
            .arguments
            .as_deref()
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .unwrap_or_default();
        Bound {
            method: self.method.to_owned(),
            name: self.name.clone(),
            digest: state::digest(&arguments),
        }
    }
}

/// Holds what a modern request whose questions are not all answered is answered (its body).
#[derive(Serialize)]
pub(crate) struct InputRequired {
    #[serde(rename = "inputRequests")]
    requests: Map<String, Value>,
    #[serde(rename = "requestState")]
    state: String,
}

impl McpRequest {
    /// Reads the request whose `_meta` is `meta`, arriving with `ctx`.
    ///
    /// # Errors
    ///
    /// For a modern request whose `_meta` does not hold what it must: `-32602`, or `-32022` for a
    /// revision not spoken here.
    pub(crate) fn read(
        meta: RequestMeta,
        ctx: &Context,
        core: &Arc<Core>,
    ) -> Result<McpRequest, RpcError> {
        let inner = if meta.is_modern() {
            let modern = meta.check()?;
            RequestInner {
                era: Era::Modern,
                version: modern.version,
                capabilities: modern.capabilities,
                client_info: modern.client_info,
                progress_token: meta.progress_token,
                log_level: modern.log_level,
                legacy: None,
                core: Arc::clone(core),
                last_progress: Mutex::new(None),
                asks: Mutex::default(),
                task: Mutex::default(),
            }
        } else {
            let legacy = ctx.extension::<Arc<LegacyState>>().cloned();
            let (version, capabilities, client_info) = match &legacy {
                Some(state) => {
                    let state = lock(&state.0);
                    (
                        state.version,
                        state.capabilities.clone(),
                        state.client_info.clone(),
                    )
                }
                None => (None, None, None),
            };
            RequestInner {
                era: Era::Legacy,
                version: version.unwrap_or(LEGACY_VERSIONS[0]),
                capabilities: capabilities.unwrap_or_else(|| Value::Object(Map::new())),
                client_info,
                progress_token: meta.progress_token,
                log_level: None,
                legacy,
                core: Arc::clone(core),
                last_progress: Mutex::new(None),
                asks: Mutex::default(),
                task: Mutex::default(),
            }
        };
        Ok(McpRequest {
            inner: Arc::new(inner),
        })
    }

    /// Returns the era the request belongs to.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// Returns the protocol revision: the request's own (modern), or the one `initialize` agreed on
    /// (legacy; the newest legacy revision when none did).
    pub fn protocol_version(&self) -> &str {
        self.inner.version
    }

    /// Returns the client's capabilities (a `ClientCapabilities` object; `{}` for none).
    pub fn client_capabilities(&self) -> &Value {
        &self.inner.capabilities
    }

    /// Returns the client's name and version, when it gave them.
    pub fn client_info(&self) -> Option<&Value> {
        self.inner.client_info.as_ref()
    }

    /// Returns the progress token of the request, when it asks for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.inner.progress_token.as_ref()
    }

    /// Returns whether the client takes tasks for this request: a modern request whose
    /// capabilities declare the extension `io.modelcontextprotocol/tasks`.
    pub(crate) fn takes_tasks(&self) -> bool {
        self.inner.era == Era::Modern
            && self
                .inner
                .capabilities
                .get("extensions")
                .and_then(|extensions| extensions.get(super::tasks::EXTENSION))
                .is_some()
    }

    /// Returns the id of the task the request runs as, when it runs as one.
    pub fn task_id(&self) -> Option<String> {
        match &*lock(&self.inner.task) {
            TaskMode::Task(link) => Some(link.id().to_owned()),
            _ => None,
        }
    }

    /// Returns the task the request runs as, when it runs as one.
    pub(crate) fn task_link(&self) -> Option<TaskLink> {
        match &*lock(&self.inner.task) {
            TaskMode::Task(link) => Some(link.clone()),
            _ => None,
        }
    }

    /// Starts running this `tools/call` as a task, from its handler (SEP-2663): the call is
    /// answered at once with the task (`CreateTaskResult`) and the handler goes on, its result
    /// the task's; its questions from now on wait for the client's `tasks/update`. Returns
    /// `true` once it runs as a task (at once when it did already); `false` when it cannot (a
    /// tool not declared [`tool_task_deferred`](crate::McpBuilder::tool_task_deferred), a
    /// client that does not take tasks, a legacy request), and the handler goes on as a
    /// plain call.
    ///
    /// # Errors
    ///
    /// [`McpError::NoTask`] when the task could not be made (the store failed or is full).
    pub async fn start_task(&self) -> Result<bool, McpError> {
        let ask = match &*lock(&self.inner.task) {
            TaskMode::Task(_) => return Ok(true),
            TaskMode::None => return Ok(false),
            TaskMode::Startable(ask) => ask.clone(),
        };
        let (reply, made) = tokio::sync::oneshot::channel();
        if ask.send(reply).await.is_err() {
            return Ok(false);
        }
        match made.await {
            Ok(Some(link)) => {
                *lock(&self.inner.task) = TaskMode::Task(link);
                Ok(true)
            }
            _ => Err(McpError::NoTask(
                "the store of tasks failed or is full".to_owned(),
            )),
        }
    }

    /// Fails with `-32601` unless the request is legacy: for the methods the modern era removed.
    pub(crate) fn legacy_only(&self, method: &str) -> Result<(), RpcError> {
        match self.inner.era {
            Era::Legacy => Ok(()),
            _ => Err(super::lifecycle::removed(method, self.inner.version)),
        }
    }

    /// Runs the method `params.name` of `methods` for this `tools/call` or `prompts/get`
    /// (`method`): its asks opened ([`open_asks`](Self::open_asks)), bound to the method, the
    /// name and the arguments, and this request in the method's context. The method's answer is
    /// the `Ok`.
    ///
    /// # Errors
    ///
    /// As [`open_asks`](Self::open_asks).
    pub(crate) async fn run_named(
        &self,
        method: &'static str,
        methods: &jrpc_runtime::Methods,
        params: NamedParams<'_>,
        ctx: Context,
    ) -> Result<Result<Box<RawValue>, RpcError>, RpcError> {
        let binding = Binding {
            method,
            name: params.name.clone(),
            arguments: params.arguments.map(ToOwned::to_owned),
        };
        self.open_asks(binding, params.responses, params.state.as_deref())?;
        let ctx = ctx.with_extension(self.clone());
        Ok(methods.invoke(&params.name, params.arguments, &ctx).await)
    }

    /// Opens the asks of this `tools/call` or `prompts/get` (`method`) as
    /// [`run_named`](Self::run_named) does, and gives the name and arguments to run.
    ///
    /// # Errors
    ///
    /// As [`open_asks`](Self::open_asks).
    pub(crate) fn open_named(
        &self,
        method: &'static str,
        params: NamedParams<'_>,
    ) -> Result<(String, Option<Box<RawValue>>), RpcError> {
        let arguments = params.arguments.map(ToOwned::to_owned);
        let binding = Binding {
            method,
            name: params.name.clone(),
            arguments: arguments.clone(),
        };
        self.open_asks(binding, params.responses, params.state.as_deref())?;
        Ok((params.name, arguments))
    }

    /// Lets the request ask its client ([`Context::ask`]): `binding` names it; in the modern era
    /// `responses` (`inputResponses`) and `state` (`requestState`) are what a retry brought.
    ///
    /// # Errors
    ///
    /// `-32602` for a state that does not verify (changed, another request's, expired) or
    /// `inputResponses` that are not an object of answer objects.
    pub(crate) fn open_asks(
        &self,
        binding: Binding,
        responses: Option<Value>,
        state: Option<&str>,
    ) -> Result<(), RpcError> {
        let mut given = Map::new();
        if self.inner.era != Era::Legacy {
            if let Some(state) = state {
                let bound = binding.bound();
                given =
                    state::open(&self.inner.core.state_keys, state, &bound).ok_or_else(|| {
                        RpcError::new(
                            ErrorCode::INVALID_PARAMS,
                            "requestState integrity check failed",
                        )
                    })?;
            }
            match responses {
                None | Some(Value::Null) => {}
                Some(Value::Object(answers)) => {
                    for (key, answer) in answers {
                        if !answer.is_object() {
                            return Err(RpcError::invalid_params(format!(
                                "inputResponses: `{key}` is not an answer (an object)"
                            )));
                        }
                        given.insert(key, answer);
                    }
                }
                Some(_) => {
                    return Err(RpcError::invalid_params(
                        "inputResponses must be an object of answers by key",
                    ));
                }
            }
        }
        let mut asks = lock(&self.inner.asks);
        asks.open = true;
        asks.given = given;
        asks.binding = Some(binding);
        Ok(())
    }

    /// Returns what the request's questions left once its handler ran (`failed`: with an error):
    /// the questions still to answer, when there are (modern); else `-32021` for a capability a
    /// question needed, when the handler failed for want of it.
    ///
    /// # Errors
    ///
    /// `-32021` naming the capability.
    pub(crate) fn close_asks(&self, failed: bool) -> Result<Option<InputRequired>, RpcError> {
        let mut asks = lock(&self.inner.asks);
        if !asks.pending.is_empty()
            && let Some(binding) = &asks.binding
        {
            let core = &self.inner.core;
            let state = state::seal(
                &core.state_keys,
                &binding.bound(),
                &asks.used,
                core.state_ttl,
            );
            let requests = std::mem::take(&mut asks.pending);
            return Ok(Some(InputRequired { requests, state }));
        }
        match asks.missing.take() {
            Some(required) if failed => Err(era::missing_capability(required)),
            _ => Ok(None),
        }
    }

    /// Stamps `body` as its era wants: in the modern era `resultType`, the server's name in
    /// `_meta`, and the caching `hint` of a cacheable result; nothing in the legacy era.
    pub(crate) fn stamp<T: Serialize>(&self, body: T, hint: Option<Hint>) -> Stamped<T> {
        match self.inner.era {
            Era::Legacy => Stamped::plain(body),
            _ => Stamped::modern(body, &self.inner.core, hint),
        }
    }
}

/// Says why a handler's message to its client (progress, a log, a question) did not go, or what it
/// needs first.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The message could not be sent (the request's stream or connection is closed), or the
    /// client failed to answer.
    #[error("not sent: {0}")]
    NotSent(#[from] ClientError),
    /// The client did not declare the capability a question needs (`{"sampling": {}}`...): the
    /// request is answered `-32021` naming it, if the handler fails.
    #[error("the client did not declare the capability {0}")]
    MissingCapability(Value),
    /// A question's answer has yet to come (the modern era): the request is answered
    /// `input_required`, and its retry runs the handler again.
    #[error("input is required from the client first")]
    InputRequired,
    /// The legacy era, without a stream to ask on (an HTTP request that accepts no event
    /// stream).
    #[error("no stream to ask the client on: the request does not accept an event stream")]
    NoStream,
    /// Not an MCP request, or a modern one that may not ask (only `tools/call`, `prompts/get`
    /// and `resources/read` may).
    #[error("questions to the client are asked in tools/call, prompts/get and resources/read")]
    NotHere,
    /// The user declined (or cancelled) an elicitation.
    #[error("the user declined")]
    Declined,
    /// The client's answer is not one to the question.
    #[error("invalid answer: {0}")]
    InvalidAnswer(String),
    /// A task could not be made ([`McpRequest::start_task`]), or its store failed.
    #[error("no task: {0}")]
    NoTask(String),
}

impl From<McpError> for RpcError {
    /// `-32021` with `requiredCapabilities` for a missing capability; else `-32000` with the
    /// reason as its message (a tool's result then says it).
    fn from(err: McpError) -> Self {
        match err {
            McpError::MissingCapability(required) => era::missing_capability(required),
            other => RpcError::new(ErrorCode::SERVER_ERROR, other.to_string()),
        }
    }
}

/// Ends the event stream a request answers on, for its client to poll for the rest: put in
/// the request's context by the transport that can (legacy HTTP sessions).
#[derive(Clone)]
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "HTTP's sessions close streams")
)]
pub(crate) struct StreamCloser(Arc<dyn Fn() -> bool + Send + Sync>);

impl StreamCloser {
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "HTTP's sessions close streams")
    )]
    pub(crate) fn new(close: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(close))
    }
}

/// `notifications/progress` params.
#[derive(Serialize)]
struct Progress<'a> {
    #[serde(rename = "progressToken")]
    token: &'a Value,
    progress: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

/// `notifications/message` params.
#[derive(Serialize)]
struct LogMessage<'a, T> {
    level: LogLevel,
    logger: &'a str,
    data: T,
}

/// Returns a number as JSON, written as an integer when it is one (`3`, not `3.0`).
fn number(x: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if x.fract() == 0.0 && x.abs() < EXACT {
        #[allow(clippy::cast_possible_truncation, reason = "integral and within 2^53")]
        return Value::from(x as i64);
    }
    Value::from(x)
}

pub(crate) fn mcp(ctx: &Context) -> Option<&McpRequest> {
    ctx.extension::<McpRequest>()
}

pub(crate) async fn progress(
    ctx: &Context,
    progress: f64,
    total: Option<f64>,
    message: Option<&str>,
) -> Result<(), McpError> {
    let (Some(req), Some(peer)) = (ctx.mcp(), ctx.peer()) else {
        return Ok(());
    };
    let Some(token) = &req.inner.progress_token else {
        return Ok(());
    };
    {
        let mut last = lock(&req.inner.last_progress);
        if last.is_some_and(|last| progress <= last) {
            return Ok(());
        }
        *last = Some(progress);
    }
    let params = Progress {
        token,
        progress: number(progress),
        total: total.map(number),
        message,
    };
    peer.notify("notifications/progress", params).await?;
    Ok(())
}

pub(crate) fn close_stream_for_polling(ctx: &Context) -> bool {
    ctx.extension::<StreamCloser>()
        .is_some_and(|closer| (closer.0)())
}

pub(crate) async fn log(
    ctx: &Context,
    level: LogLevel,
    data: impl Serialize,
) -> Result<(), McpError> {
    let (Some(req), Some(peer)) = (ctx.mcp(), ctx.peer()) else {
        return Ok(());
    };
    let wanted = match (req.inner.era, &req.inner.legacy) {
        (Era::Legacy, Some(state)) => lock(&state.0).log_level.unwrap_or(LogLevel::Debug),
        (Era::Legacy, None) => LogLevel::Debug,
        _ => match req.inner.log_level {
            Some(level) => level,
            None => return Ok(()),
        },
    };
    if level < wanted {
        return Ok(());
    }
    let params = LogMessage {
        level,
        logger: &req.inner.core.info.name,
        data,
    };
    peer.notify("notifications/message", params).await?;
    Ok(())
}

/// Returns `-32602` naming a `_meta` key: for checks the handlers make themselves.
pub(crate) fn meta_error(what: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "{what}: send `_meta` with `{}` and `{}`",
        era::PROTOCOL_VERSION,
        era::CLIENT_CAPABILITIES
    ))
}

#[cfg(test)]
mod tests {
    use super::number;

    #[test]
    fn whole_numbers_are_written_as_integers() {
        assert_eq!(number(3.0).to_string(), "3");
        assert_eq!(number(-2.0).to_string(), "-2");
        assert_eq!(number(0.5).to_string(), "0.5");
        assert_eq!(number(1e300).to_string(), "1e+300");
    }
}
