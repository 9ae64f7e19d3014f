//! Implements the data layer: an MCP server's tools (and, built the same way, the rest of what it
//! serves), and the protocol table that serves them in both eras over any transport.

pub(crate) mod ask;
mod changes;
mod completion;
mod lifecycle;
mod prompts;
pub(crate) mod request;
mod resources;
mod result;
mod skills;
pub(crate) mod tasks;
mod tools;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

pub use ask::{Answers, Ask, Elicited, Form, Root, SampledMessage, Sampling};
#[cfg(feature = "http")]
pub(crate) use changes::{ListenEnd, follow_lists, follow_resource, unfollow_lists};
use completion::Completer;
pub use completion::{CompleteRequest, Completion, CompletionRef};
use prompts::{PromptOverride, PromptSet};
pub(crate) use request::LegacyState;
#[cfg(feature = "http")]
pub(crate) use request::SessionHooks;
#[cfg(feature = "http")]
pub(crate) use request::StreamCloser;
pub use request::{McpError, McpRequest};
use resources::ResourceSet;
pub use resources::{Resource, ResourceRequest, ResourceTemplate};
pub use result::Cached;
use result::{Hint, Hints};
pub use skills::Skill;
use skills::SkillSet;
pub use tasks::TaskSupport;
use tasks::{Tasks, ToolTask};
pub(crate) use tools::ParamHeader;
use tools::{ToolOverride, ToolSet};

use crate::protocol::era::SERVER_INFO;
use crate::protocol::state::StateKeyRing;
use crate::protocol::types::{CacheScope, Implementation};
use crate::store::{MemoryTasks, TaskStore};
use jrpc_runtime::server::Topics;
use jrpc_runtime::wire::RpcError;
use jrpc_runtime::{Batches, Context, Methods, Params};
use jrpc_runtime::{ConfigError, RegisterError};

/// Describes an MCP server: what it serves (tools, from the methods of a `#[rpc_service(schema)]`
/// service), and the protocol table that serves it to clients of both eras. Serve it over stdio
/// ([`serve_stdio`](Mcp::serve_stdio)), over Streamable HTTP
/// ([`McpServer::builder`](crate::McpServer::builder), with `http`), or over any byte
/// stream ([`connect`](Mcp::connect)).
///
/// ```
/// use jrpc_mcp::Mcp;
/// use jrpc_runtime::{RpcError, rpc_service};
///
/// struct Tools;
///
/// #[rpc_service(schema)]
/// impl Tools {
///     /// Adds two numbers and answers their sum as text.
///     fn add(&self, a: f64, b: f64) -> Result<String, RpcError> {
///         Ok((a + b).to_string())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mcp = Mcp::builder("calculator", "1.0.0").tools(Tools.into_methods()).build().unwrap();
/// let answer = mcp.methods().handle(
///     r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
/// ).await;
/// assert_eq!(
///     answer.as_deref(),
///     Some(r#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"5"}]},"id":1}"#)
/// );
/// # });
/// ```
///
/// Cloning is cheap: clones share everything.
#[derive(Clone)]
pub struct Mcp {
    pub(crate) core: Arc<Core>,
    methods: Methods,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcp")
            .field("name", &self.core.info.name)
            .field("tools", &self.core.tools.methods.names().count())
            .finish_non_exhaustive()
    }
}

/// Holds what the protocol's handlers share: the server's identity and content, and its settings.
pub(crate) struct Core {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    /// `{"io.modelcontextprotocol/serverInfo": {name, version}}`: every modern result's `_meta`.
    pub(crate) server_meta: Box<RawValue>,
    pub(crate) capabilities: Value,
    /// What the modern era's `server/discover` says: `capabilities` and the extensions.
    pub(crate) modern_capabilities: Value,
    pub(crate) tools: ToolSet,
    pub(crate) prompts: PromptSet,
    pub(crate) resources: ResourceSet,
    pub(crate) skills: SkillSet,
    pub(crate) completer: Option<Completer>,
    pub(crate) topics: Topics,
    pub(crate) page_size: usize,
    pub(crate) hints: Hints,
    /// How many changes a listen stream holds for a client that reads slowly.
    pub(crate) listen_queue: usize,
    /// What signs the state of a multi round-trip request, and how long the state is good for.
    pub(crate) state_keys: StateKeyRing,
    pub(crate) state_ttl: Duration,
    /// The tasks: their store and settings, and those running here.
    pub(crate) tasks: Tasks,
}

/// How long a multi round-trip request's state is good for, by default.
const STATE_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a task is kept after its last change, by default.
const TASK_TTL: Duration = Duration::from_secs(60 * 60);
/// How often a client should poll a task, by default.
const TASK_POLL: Duration = Duration::from_millis(500);
/// How long a task's replica holds it without renewing, by default.
const TASK_LEASE: Duration = Duration::from_secs(10);

impl Mcp {
    /// Returns a builder of a server named `name` at `version` (what `initialize` and
    /// `server/discover` tell clients), serving nothing yet.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> McpBuilder {
        McpBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            tools: Methods::new(),
            overrides: HashMap::new(),
            prompts: Methods::new(),
            prompt_overrides: HashMap::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            skills: Vec::new(),
            completer: None,
            topics: None,
            page_size: 100,
            hints: Hints::default(),
            listen_queue: 256,
            state_keys: None,
            state_ttl: STATE_TTL,
            task_store: None,
            task_ttl: TASK_TTL,
            task_poll: TASK_POLL,
            task_lease: TASK_LEASE,
            error: None,
        }
    }

    /// Returns a server whose protocol table is `methods`, served as it is: for a table written by
    /// hand (its `initialize`, its `tools/list`...). The transports still choose each request's
    /// era; the table's handlers answer both.
    pub fn raw(methods: Methods) -> Mcp {
        let info = Implementation::new("jrpc", env!("CARGO_PKG_VERSION"));
        let core = Core {
            server_meta: server_meta(&info),
            info,
            instructions: None,
            capabilities: json!({}),
            modern_capabilities: json!({}),
            tools: ToolSet::empty(),
            prompts: PromptSet::empty(),
            resources: ResourceSet::empty(),
            skills: SkillSet::default(),
            completer: None,
            topics: Topics::new(),
            page_size: 100,
            hints: Hints::default(),
            listen_queue: 256,
            // A raw table signs nothing; a key of its own all the same.
            state_keys: StateKeyRing::random().unwrap_or_else(|_| {
                StateKeyRing::of(vec![(
                    crate::protocol::state::StateKey::new(vec![0; 32]),
                    0,
                )])
            }),
            state_ttl: STATE_TTL,
            tasks: Tasks::new(
                Arc::new(MemoryTasks::default()),
                TASK_TTL,
                TASK_POLL,
                TASK_LEASE,
            ),
        };
        Mcp {
            core: Arc::new(core),
            methods,
        }
    }

    /// Returns the protocol table: `initialize`, `tools/call` and the rest. For a transport of your
    /// own, and for calling the server in-process.
    pub fn methods(&self) -> &Methods {
        &self.methods
    }

    /// Returns the topics the server publishes its changes on (list changed, resource updated).
    pub fn topics(&self) -> &Topics {
        &self.core.topics
    }

    /// Returns the arguments of the tool `name` that HTTP headers mirror (`x-mcp-header`).
    #[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP checks them"))]
    pub(crate) fn param_headers(&self, name: &str) -> &[ParamHeader] {
        self.core.tools.param_headers(name)
    }
}

impl From<Methods> for Mcp {
    /// [`Mcp::raw`].
    fn from(methods: Methods) -> Self {
        Mcp::raw(methods)
    }
}

/// `{"io.modelcontextprotocol/serverInfo": info}`, written once.
fn server_meta(info: &Implementation) -> Box<RawValue> {
    serde_json::value::to_raw_value(&json!({ SERVER_INFO: info })).unwrap_or_default()
}

/// Says where the keys that sign `requestState` come from.
enum StateKeys {
    Given(Vec<Vec<u8>>),
    Ring(StateKeyRing),
}

/// Builds an [`Mcp`] server: its identity, its tools, and its settings, checked by
/// [`build`](Self::build).
#[must_use = "a builder does nothing until `build` is called"]
pub struct McpBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Methods,
    overrides: HashMap<String, ToolOverride>,
    prompts: Methods,
    prompt_overrides: HashMap<String, PromptOverride>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    skills: Vec<Skill>,
    completer: Option<Completer>,
    topics: Option<Topics>,
    page_size: usize,
    hints: Hints,
    listen_queue: usize,
    state_keys: Option<StateKeys>,
    state_ttl: Duration,
    task_store: Option<Arc<dyn TaskStore>>,
    task_ttl: Duration,
    task_poll: Duration,
    task_lease: Duration,
    /// The first registration that failed, reported by `build`.
    error: Option<RegisterError>,
}

impl std::fmt::Debug for McpBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpBuilder")
            .field("name", &self.info.name)
            .finish_non_exhaustive()
    }
}

impl McpBuilder {
    /// Sets the name people see (`title` in the server's `Implementation`).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets what the model is told of the server and how to use it.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Serves each method of `methods` as a tool (in the order they were registered; a table
    /// given after another comes after it): its wire name the tool's name, its whole doc comment
    /// the description, its parameters (by name) the input schema, its result the output (see
    /// [`ToolResult`](crate::ToolResult) for how results are written). A service made with
    /// `#[rpc_service(schema)]` describes its types; without `schema` every argument is `{}`.
    ///
    /// Each tool call runs through the call layers ([`Methods::layer`]) and under the settings
    /// (`handler_timeout`...) of the first table given, as [`Methods::merge`] keeps them: a tool's
    /// name is the [`Call`](jrpc_runtime::Call)'s method, and a layer's refusal is the tool's
    /// error (a result with `isError`).
    pub fn tools(mut self, methods: Methods) -> Self {
        if self.tools.names().next().is_none() {
            self.tools = methods;
            return self;
        }
        if let Err(err) = self.tools.merge(methods) {
            self.error.get_or_insert(err);
        }
        self
    }

    /// Sets the title of the tool `name` (a name for people).
    pub fn tool_title(mut self, name: &str, title: impl Into<String>) -> Self {
        self.overrides.entry(name.to_owned()).or_default().title = Some(title.into());
        self
    }

    /// Sets the input schema of the tool `name`, exactly as given, in place of the one made from
    /// its parameters: for JSON Schema a Rust type does not say (`$anchor`, `if`/`then`, ...).
    pub fn tool_schema(mut self, name: &str, schema: Value) -> Self {
        self.overrides
            .entry(name.to_owned())
            .or_default()
            .input_schema = Some(schema);
        self
    }

    /// Sets the annotations of the tool `name` (`readOnlyHint`, `destructiveHint`, ...), as JSON.
    pub fn tool_annotations(mut self, name: &str, annotations: Value) -> Self {
        self.overrides
            .entry(name.to_owned())
            .or_default()
            .annotations = Some(annotations);
        self
    }

    /// Runs the tool `name` as a task (SEP-2663) for a client that takes tasks, as `support`
    /// says: [`TaskSupport::Optional`], a task for such a client and a plain call for another;
    /// [`TaskSupport::Required`], a task, and `-32021` for another. The call is answered at
    /// once with the task; the handler runs on, its questions (`ctx.elicit`...) waiting for the
    /// client's `tasks/update`, its cancellation the client's `tasks/cancel`. The guide's
    /// chapter on tasks says more.
    pub fn tool_task(mut self, name: &str, support: TaskSupport) -> Self {
        self.overrides.entry(name.to_owned()).or_default().task = Some(ToolTask {
            support,
            deferred: false,
        });
        self
    }

    /// Runs the tool `name` as a task (as [`tool_task`](Self::tool_task)) once its handler
    /// starts one ([`McpRequest::start_task`]): until then it is a plain call, which may ask
    /// through `input_required` rounds, or answer without ever being a task.
    pub fn tool_task_deferred(mut self, name: &str, support: TaskSupport) -> Self {
        self.overrides.entry(name.to_owned()).or_default().task = Some(ToolTask {
            support,
            deferred: true,
        });
        self
    }

    /// Keeps the tasks in `store` (default: a [`MemoryTasks`] of this server's own, of at most
    /// 10 000): a store that replicas share (with `redis`, `RedisStore`) lets any replica read,
    /// update and cancel a task another runs. The replicas must share the server's
    /// [`topics`](Self::topics) too: a task's cancellation and answers reach its replica, and
    /// its changes the listen streams, through them.
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Sets how long a task is kept after its last change (`ttlMs`; default 1 hour).
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// Sets how often a client should poll a task (`pollIntervalMs`; default 500 ms); a
    /// handler waiting for an answer looks at the store that often too, should the wake-up
    /// of the answer be lost between replicas.
    pub fn task_poll_interval(mut self, every: Duration) -> Self {
        self.task_poll = every;
        self
    }

    /// Sets how long a task's replica holds it without renewing it (default 10 s): it renews it
    /// every third of that while the handler runs, and a task whose lease runs out (its
    /// replica stopped) reads as `failed`; every replica serving tasks sweeps the store that
    /// often too, and announces such a task `failed` to the listen streams that name it.
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.task_lease = lease;
        self
    }

    /// Serves each method of `methods` as a prompt (in the order they were registered): its wire
    /// name the prompt's name, its whole doc comment the description, its parameters (by name,
    /// strings: MCP's prompt arguments are) the arguments, required unless `Option`. Its result is
    /// a [`PromptResult`](crate::PromptResult), a `Vec<PromptMessage>`, or a string (one
    /// message from the user). As with [`tools`](Self::tools), the first table's call layers
    /// and settings apply to each prompt.
    pub fn prompts(mut self, methods: Methods) -> Self {
        if self.prompts.names().next().is_none() {
            self.prompts = methods;
            return self;
        }
        if let Err(err) = self.prompts.merge(methods) {
            self.error.get_or_insert(err);
        }
        self
    }

    /// Sets the title of the prompt `name` (a name for people).
    pub fn prompt_title(mut self, name: &str, title: impl Into<String>) -> Self {
        self.prompt_overrides
            .entry(name.to_owned())
            .or_default()
            .title = Some(title.into());
        self
    }

    /// Sets the description of the argument `argument` of the prompt `name`.
    pub fn prompt_argument(
        mut self,
        name: &str,
        argument: &str,
        description: impl Into<String>,
    ) -> Self {
        self.prompt_overrides
            .entry(name.to_owned())
            .or_default()
            .arguments
            .insert(argument.to_owned(), description.into());
        self
    }

    /// Serves a resource (listed in the order given).
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Serves the resources a template matches (tried in the order given, after the resources
    /// themselves).
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Serves a skill (SEP-2640, the extension `io.modelcontextprotocol/skills`, in both eras):
    /// its files as resources under `skill://<skill-path>/` (its `SKILL.md` listed), and an
    /// entry in `skills/list` and `skills/get` (its front matter, and each file's digest and
    /// size); its directories are read with `resources/directory/read`.
    pub fn skill(mut self, skill: Skill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Answers `completion/complete` with `complete`: the values an argument of a prompt (or a
    /// variable of a resource template) may take, from what the user typed.
    pub fn completion<F, Fut>(mut self, complete: F) -> Self
    where
        F: Fn(CompleteRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, RpcError>> + Send + 'static,
    {
        self.completer = Some(completion::completer(complete));
        self
    }

    /// Sets the topics the server publishes its changes on (default: a registry of its own, local
    /// to the process); [`Topics::redis`] shares them across replicas.
    pub fn topics(mut self, topics: Topics) -> Self {
        self.topics = Some(topics);
        self
    }

    /// Sets how many items a page of a list holds (default 100).
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = items;
        self
    }

    /// Sets how many changes a modern listen stream (`subscriptions/listen`) holds for a client
    /// that reads them slowly (default 256); past that a change is skipped for it. A running
    /// task's queues (its cancellation and answers from other replicas, what its handler sends
    /// besides its answer) hold as many.
    pub fn listen_queue(mut self, changes: usize) -> Self {
        self.listen_queue = changes;
        self
    }

    /// Sets the caching hints of modern results of `kind`: fresh for `ttl` (millisecond precision),
    /// reusable by `scope`. By default every kind is fresh for no time (`ttlMs` 0), lists and
    /// `server/discover` `public`, reads `private`.
    pub fn cache(mut self, kind: Cached, ttl: Duration, scope: CacheScope) -> Self {
        self.hints.set(kind, Hint::new(ttl, scope));
        self
    }

    /// Sets the key that signs the state a multi round-trip request hands the client (at least 32
    /// bytes; default: 32 random bytes, new each time the server is built). Every replica that
    /// may serve a retry must share it; the state is signed, not encrypted.
    pub fn request_state_key(self, key: impl Into<Vec<u8>>) -> Self {
        self.request_state_keys([key])
    }

    /// Sets the keys that sign and check the state a multi round-trip request hands the client:
    /// the first signs, every one checks (each at least 32 bytes). To rotate without refusing
    /// the states a replica signed with the key before: give every replica the new key after
    /// the old, then (once every replica has it) before it, then drop the old one after
    /// [`request_state_ttl`](Self::request_state_ttl).
    pub fn request_state_keys<I, K>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: Into<Vec<u8>>,
    {
        self.state_keys = Some(StateKeys::Given(keys.into_iter().map(Into::into).collect()));
        self
    }

    /// Signs and checks the state of multi round-trip requests with the keys of `ring`, which
    /// others may replace while the server runs: one a store keeps for every replica (with
    /// `redis`, `RedisStore::state_keys`), or one of your own.
    pub fn request_state_key_ring(mut self, ring: StateKeyRing) -> Self {
        self.state_keys = Some(StateKeys::Ring(ring));
        self
    }

    /// Sets how long the state a multi round-trip request hands the client is good for (default 10
    /// minutes, to the second).
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming what is wrong: `tools` for two tools of one name, a name MCP does
    /// not allow, or arguments that are not an object; `tool_schema` (or `tool_title`,
    /// `tool_annotations`) for a tool that is not there; `skill` for a skill whose name, path,
    /// description or files break SEP-2640's rules, or given twice; `prompts` for a prompt whose result is
    /// not a prompt's, `prompt_title` for one that is not there; `resource` for one without
    /// contents or given twice, `resource_template` for one without a reader; `page_size` for
    /// zero; `task_ttl`, `task_poll_interval` or `task_lease` under 3 ms; `request_state_key`
    /// for no key or a key shorter than 32 bytes (or, with none given, when the
    /// operating system gives no random bytes).
    pub fn build(self) -> Result<Mcp, ConfigError> {
        if let Some(err) = self.error {
            return Err(ConfigError::new("tools", err.to_string()));
        }
        at_least_one("page_size", self.page_size)?;
        at_least_one("listen_queue", self.listen_queue)?;
        for (key, time) in [
            ("task_ttl", self.task_ttl),
            ("task_poll_interval", self.task_poll),
            ("task_lease", self.task_lease),
        ] {
            if time < Duration::from_millis(3) {
                return Err(ConfigError::new(key, "must be at least 3 ms"));
            }
        }
        let state_keys = match self.state_keys {
            Some(StateKeys::Given(keys)) => StateKeyRing::new(keys)?,
            Some(StateKeys::Ring(ring)) => ring,
            None => StateKeyRing::random().map_err(|why| {
                ConfigError::new("request_state_key", format!("no random key: {why}"))
            })?,
        };
        let tools = ToolSet::new(self.tools, self.overrides)?;
        let prompts = PromptSet::new(self.prompts, self.prompt_overrides)?;
        let (skills, mut listed, unlisted) = SkillSet::new(self.skills)?;
        let mut resources = self.resources;
        resources.append(&mut listed);
        let resources = ResourceSet::new(resources, unlisted, self.templates)?;
        let completer = self.completer;
        let mut capabilities = capabilities(&tools, &prompts, &resources, completer.is_some());
        if !skills.is_empty() {
            capabilities["extensions"] = json!({ skills::EXTENSION: { "directoryRead": true } });
        }
        let mut modern_capabilities = capabilities.clone();
        if tools.has_tasks() {
            modern_capabilities["extensions"][tasks::EXTENSION] = json!({});
        }
        let core = Arc::new(Core {
            server_meta: server_meta(&self.info),
            capabilities,
            modern_capabilities,
            info: self.info,
            instructions: self.instructions,
            tools,
            prompts,
            resources,
            skills,
            completer,
            topics: self.topics.unwrap_or_default(),
            page_size: self.page_size,
            hints: self.hints,
            listen_queue: self.listen_queue,
            state_keys,
            state_ttl: self.state_ttl,
            tasks: Tasks::new(
                self.task_store
                    .unwrap_or_else(|| Arc::new(MemoryTasks::default())),
                self.task_ttl,
                self.task_poll,
                self.task_lease,
            ),
        });
        let methods = table(&core).map_err(|err| ConfigError::new("tools", err.to_string()))?;
        Ok(Mcp { core, methods })
    }
}

/// Returns what the server declares: logging always (the legacy `logging/setLevel` is served), the
/// rest where there is something to serve; every list may change, and resources be followed.
fn capabilities(
    tools: &ToolSet,
    prompts: &PromptSet,
    resources: &ResourceSet,
    completes: bool,
) -> Value {
    let mut capabilities = json!({ "logging": {} });
    if !tools.is_empty() {
        capabilities["tools"] = json!({ "listChanged": true });
    }
    if !prompts.is_empty() {
        capabilities["prompts"] = json!({ "listChanged": true });
    }
    if !resources.is_empty() {
        capabilities["resources"] = json!({ "subscribe": true, "listChanged": true });
    }
    if completes || !prompts.is_empty() {
        capabilities["completions"] = json!({});
    }
    capabilities
}

/// Builds the protocol table of `core`.
fn table(core: &Arc<Core>) -> Result<Methods, RegisterError> {
    let mut methods = Methods::new();
    // MCP has had no batches since 2025-06-18; a client of 2025-03-26 sends one call a POST.
    methods.batches(Batches::Refused);
    lifecycle::register(&mut methods, core)?;
    if !core.tools.is_empty() {
        tools::register(&mut methods, core)?;
    }
    if core.tools.has_tasks() {
        tasks::register(&mut methods, core)?;
    }
    if !core.prompts.is_empty() {
        prompts::register(&mut methods, core)?;
    }
    if !core.resources.is_empty() {
        resources::register(&mut methods, core)?;
    }
    if !core.skills.is_empty() {
        skills::register(&mut methods, core)?;
    }
    if core.completer.is_some() || !core.prompts.is_empty() {
        completion::register(&mut methods, core)?;
    }
    if !core.lists().is_empty() {
        changes::register(&mut methods, core)?;
    }
    Ok(methods)
}

/// Registers the protocol method `name`, answered by `handler` with the server's state, the raw
/// params and the context.
fn route<F, Fut, T>(
    methods: &mut Methods,
    core: &Arc<Core>,
    name: &str,
    handler: F,
) -> Result<(), RegisterError>
where
    F: Fn(Arc<Core>, Params, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, RpcError>> + Send + 'static,
    T: Serialize + 'static,
{
    let core = Arc::clone(core);
    methods.register(name, &[], move |params: Params, ctx: Context| {
        handler(Arc::clone(&core), params, ctx)
    })?;
    Ok(())
}

/// Decodes a protocol method's params (absent ones as `{}`).
///
/// # Errors
///
/// `-32602` with serde's reason.
fn decode<'a, T: Deserialize<'a>>(params: &'a Params) -> Result<T, RpcError> {
    serde_json::from_str(params.get().unwrap_or("{}"))
        .map_err(|err| RpcError::invalid_params(err.to_string()))
}

/// Checks that a count is at least one.
pub(crate) fn at_least_one(key: &'static str, n: usize) -> Result<(), ConfigError> {
    if n == 0 {
        return Err(ConfigError::new(key, "must be at least 1"));
    }
    Ok(())
}
