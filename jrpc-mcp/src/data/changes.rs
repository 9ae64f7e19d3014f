//! Announces changes: a server tells its clients that a list changed or a resource was updated,
//! through its [`Topics`](jrpc_runtime::server::Topics) (so across replicas too, on Redis).
//!
//! | what changed | topic | legacy clients | modern clients |
//! | --- | --- | --- | --- |
//! | the tools, prompts or resources | `mcp/tools`, `mcp/prompts`, `mcp/resources` | every session (its GET stream) and stdio connection that initialized | listen streams that asked |
//! | the resource `URI` | `mcp/resource/URI` | sessions and connections that subscribed to it (`resources/subscribe`) | listen streams that named it |
//! | the task `ID` (`notifications/tasks`) | `mcp/task/ID` | none | listen streams that named it (`taskIds`) |
//!
//! A modern client listens with `subscriptions/listen {notifications}`: the server honors what
//! it serves of what is asked (the `notifications/subscriptions/acknowledged` that comes first
//! says which), then sends each change on that stream, its `_meta` naming the listen request's
//! id. Across replicas the acknowledgement waits until the topics' Redis channels are subscribed,
//! so that what another replica publishes after it arrives.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::lifecycle::MetaOnly;
use super::request::{McpError, McpRequest};
use super::{Core, Mcp, Params, decode, route};
use crate::protocol::era::SUBSCRIPTION_ID;
use crate::protocol::types::Era;
use jrpc_runtime::Caller as _;
use jrpc_runtime::Peer;
use jrpc_runtime::wire::{ErrorCode, RpcError};
use jrpc_runtime::{ClientError, RegisterError};
use jrpc_runtime::{Context, Methods};

/// Names the topic of the tool list.
pub(crate) const TOOLS: &str = "mcp/tools";
/// Names the topic of the prompt list.
pub(crate) const PROMPTS: &str = "mcp/prompts";
/// Names the topic of the resource list.
pub(crate) const RESOURCES: &str = "mcp/resources";

/// Returns the topic of one resource's updates.
pub(crate) fn resource_topic(uri: &str) -> String {
    format!("mcp/resource/{uri}")
}

/// Names a list that changes, and how it is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum List {
    Tools,
    Prompts,
    Resources,
}

impl List {
    pub(crate) fn topic(self) -> &'static str {
        match self {
            Self::Tools => TOOLS,
            Self::Prompts => PROMPTS,
            Self::Resources => RESOURCES,
        }
    }

    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::Tools => "notifications/tools/list_changed",
            Self::Prompts => "notifications/prompts/list_changed",
            Self::Resources => "notifications/resources/list_changed",
        }
    }
}

impl Core {
    /// Returns the lists this server serves, each of which may change.
    pub(crate) fn lists(&self) -> Vec<List> {
        let mut lists = Vec::new();
        if !self.tools.is_empty() {
            lists.push(List::Tools);
        }
        if !self.prompts.is_empty() {
            lists.push(List::Prompts);
        }
        if !self.resources.is_empty() {
            lists.push(List::Resources);
        }
        lists
    }

    /// Tells the clients that `list` changed; how many connections of this process it reached.
    pub(crate) fn changed(&self, list: List) -> Result<usize, ClientError> {
        self.topics.publish(list.topic(), list.method(), json!({}))
    }

    /// Tells the clients that follow `uri` that it was updated.
    pub(crate) fn updated(&self, uri: &str) -> Result<usize, ClientError> {
        self.topics.publish(
            &resource_topic(uri),
            "notifications/resources/updated",
            json!({ "uri": uri }),
        )
    }
}

/// Has a legacy session's (or connection's) `push` follow every list the server serves.
pub(crate) fn follow_lists(core: &Arc<Core>, push: &Peer) {
    for list in core.lists() {
        core.topics.subscribe_peer(push, list.topic());
    }
}

/// Has `push` stop following the lists.
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's replicas"))]
pub(crate) fn unfollow_lists(core: &Arc<Core>, push: &Peer) {
    for list in core.lists() {
        core.topics.unsubscribe_peer(push, list.topic());
    }
}

/// Has `push` follow (`on`) the updates of the resource `uri`, or stop.
pub(crate) fn follow_resource(core: &Core, push: &Peer, uri: &str, on: bool) {
    let topic = resource_topic(uri);
    if on {
        core.topics.subscribe_peer(push, &topic);
    } else {
        core.topics.unsubscribe_peer(push, &topic);
    }
}

/// Tells a server's clients of its own changes: methods of [`Mcp`] (and of
/// [`McpRequest`](super::McpRequest), for a handler). Each reaches the legacy sessions and stdio
/// connections of every replica that share its topics, and the modern listen streams that asked;
/// each gives how many connections of this process it reached.
///
/// # Errors
///
/// On topics shared through Redis, as [`Topics::publish`](jrpc_runtime::server::Topics::publish).
impl Mcp {
    /// Tells the clients that the tool list changed (`notifications/tools/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_tools_changed(&self) -> Result<usize, ClientError> {
        self.core.changed(List::Tools)
    }

    /// Tells the clients that the prompt list changed (`notifications/prompts/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_prompts_changed(&self) -> Result<usize, ClientError> {
        self.core.changed(List::Prompts)
    }

    /// Tells the clients that the resource list changed (`notifications/resources/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_resources_changed(&self) -> Result<usize, ClientError> {
        self.core.changed(List::Resources)
    }

    /// Tells the clients that follow the resource `uri` that it was updated
    /// (`notifications/resources/updated`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_resource_updated(&self, uri: &str) -> Result<usize, ClientError> {
        self.core.updated(uri)
    }
}

/// Tells them the same from inside a handler (a tool that changes what the server serves).
impl McpRequest {
    /// Does what [`Mcp::notify_tools_changed`] does.
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_tools_changed(&self) -> Result<usize, ClientError> {
        self.inner.core.changed(List::Tools)
    }

    /// Does what [`Mcp::notify_prompts_changed`] does.
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_prompts_changed(&self) -> Result<usize, ClientError> {
        self.inner.core.changed(List::Prompts)
    }

    /// Does what [`Mcp::notify_resources_changed`] does.
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_resources_changed(&self) -> Result<usize, ClientError> {
        self.inner.core.changed(List::Resources)
    }

    /// Does what [`Mcp::notify_resource_updated`] does.
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](jrpc_runtime::server::Topics::publish).
    pub fn notify_resource_updated(&self, uri: &str) -> Result<usize, ClientError> {
        self.inner.core.updated(uri)
    }
}

/// Ends a listen stream gracefully (its server's shutdown), put in its request's context by
/// the transport; a stream without one ends when its client goes.
#[derive(Clone, Debug)]
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "HTTP's shutdown ends them")
)]
pub(crate) struct ListenEnd(pub(crate) CancellationToken);

/// `subscriptions/listen`'s `notifications`: what the client wants to hear of.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    tools_list_changed: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    prompts_list_changed: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    resources_list_changed: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resource_subscriptions: Vec<String>,
    /// The tasks whose changes it hears (`notifications/tasks`), with the tasks extension.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    task_ids: Vec<String>,
}

/// `subscriptions/listen`'s params.
#[derive(Deserialize)]
struct ListenParams {
    notifications: Filter,
}

/// Caps the resources one listen stream follows.
const MAX_FOLLOWED: usize = 1024;

impl Filter {
    /// Returns what of `self` the server serves, and the topics that carry it.
    fn honored(self, core: &Core) -> (Filter, Vec<String>) {
        let lists = core.lists();
        let serves = |list| lists.contains(&list);
        let mut honored = Filter {
            tools_list_changed: self.tools_list_changed && serves(List::Tools),
            prompts_list_changed: self.prompts_list_changed && serves(List::Prompts),
            resources_list_changed: self.resources_list_changed && serves(List::Resources),
            resource_subscriptions: Vec::new(),
            task_ids: Vec::new(),
        };
        if serves(List::Resources) {
            honored.resource_subscriptions = self.resource_subscriptions;
            honored.resource_subscriptions.truncate(MAX_FOLLOWED);
        }
        let mut topics = Vec::new();
        for (wanted, list) in [
            (honored.tools_list_changed, List::Tools),
            (honored.prompts_list_changed, List::Prompts),
            (honored.resources_list_changed, List::Resources),
        ] {
            if wanted {
                topics.push(list.topic().to_owned());
            }
        }
        topics.extend(
            honored
                .resource_subscriptions
                .iter()
                .map(|uri| resource_topic(uri)),
        );
        if core.tools.has_tasks() {
            honored.task_ids = self.task_ids;
            honored.task_ids.truncate(MAX_FOLLOWED);
            topics.extend(honored.task_ids.iter().map(|id| super::tasks::topic(id)));
        }
        (honored, topics)
    }
}

/// Registers `subscriptions/listen`.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "subscriptions/listen", listen)
}

/// `subscriptions/listen` (modern): the acknowledgement first, then each change the client asked
/// for, tagged with this request's id, until the client goes (closing the stream, or
/// `notifications/cancelled` over stdio) or the server shuts down (then the result).
async fn listen(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
) -> Result<Map<String, Value>, RpcError> {
    let MetaOnly { meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    if req.era() == Era::Legacy {
        return Err(super::lifecycle::removed(
            "subscriptions/listen",
            req.protocol_version(),
        ));
    }
    let ListenParams { notifications } = decode(&params)?;
    let peer = ctx.peer().ok_or_else(|| {
        RpcError::new(ErrorCode::SERVER_ERROR, "Cannot listen")
            .with_data("a listen stream needs a request that accepts an event stream")
    })?;
    let id = json!(ctx.id());
    let (honored, topics) = notifications.honored(&core);
    if !honored.task_ids.is_empty() {
        // This replica then sweeps for tasks lost with theirs, and announces them.
        super::tasks::start(&core).await;
    }
    let mut watch = core.topics.watch(topics, core.listen_queue);
    for topic in watch.topics() {
        core.topics.ready(topic).await;
    }
    let ack = json!({ "_meta": { SUBSCRIPTION_ID: id }, "notifications": honored });
    peer.notify("notifications/subscriptions/acknowledged", ack)
        .await
        .map_err(McpError::from)?;
    let ending = ctx.extension::<ListenEnd>().map(|end| end.0.clone());
    let ended = async {
        match ending {
            Some(token) => token.cancelled_owned().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(ended);
    loop {
        let published = tokio::select! {
            published = watch.recv() => published,
            () = &mut ended => None,
        };
        let Some(published) = published else {
            break;
        };
        let params = tagged(published.params.as_deref(), &id);
        if peer.notify(&published.method, params).await.is_err() {
            break;
        }
    }
    let mut result = Map::new();
    result.insert("resultType".into(), "complete".into());
    let mut meta: Map<String, Value> =
        serde_json::from_str(core.server_meta.get()).unwrap_or_default();
    meta.insert(SUBSCRIPTION_ID.into(), id);
    result.insert("_meta".into(), Value::Object(meta));
    Ok(result)
}

/// `params` with `_meta.io.modelcontextprotocol/subscriptionId` set to `id`.
fn tagged(params: Option<&RawValue>, id: &Value) -> Value {
    let mut params: Map<String, Value> = params
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(SUBSCRIPTION_ID.into(), id.clone());
    }
    Value::Object(params)
}
