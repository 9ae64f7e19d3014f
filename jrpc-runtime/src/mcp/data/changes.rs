//! Changes: a server tells its clients that a list changed or a resource was updated, through
//! its [`Topics`](crate::server::Topics) (so across replicas too, on Redis).
//!
//! | what changed | topic | legacy clients | modern clients |
//! | --- | --- | --- | --- |
//! | the tools, prompts or resources | `mcp/tools`, `mcp/prompts`, `mcp/resources` | every session (its GET stream) and stdio connection that initialized | listen streams that asked |
//! | the resource `URI` | `mcp/resource/URI` | sessions and connections that subscribed to it (`resources/subscribe`) | listen streams that named it |

use std::sync::Arc;

use serde_json::json;

use super::request::McpRequest;
use super::{Core, Mcp};
use crate::error::ClientError;
use crate::peer::Peer;

/// The topic of the tool list.
pub(crate) const TOOLS: &str = "mcp/tools";
/// The topic of the prompt list.
pub(crate) const PROMPTS: &str = "mcp/prompts";
/// The topic of the resource list.
pub(crate) const RESOURCES: &str = "mcp/resources";

/// The topic of one resource's updates.
pub(crate) fn resource_topic(uri: &str) -> String {
    format!("mcp/resource/{uri}")
}

/// A list that changes, and how it is told.
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
    /// The lists this server serves, each of which may change.
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

/// What a server tells its clients of its own changes: methods of [`Mcp`] (and of
/// [`McpRequest`](super::McpRequest), for a handler). Each reaches the legacy sessions and stdio
/// connections of every replica that share its topics, and the modern listen streams that asked;
/// each gives how many connections of this process it reached.
///
/// # Errors
///
/// On topics shared through Redis, as [`Topics::publish`](crate::server::Topics::publish).
impl Mcp {
    /// The tool list changed (`notifications/tools/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_tools_changed(&self) -> Result<usize, ClientError> {
        self.core.changed(List::Tools)
    }

    /// The prompt list changed (`notifications/prompts/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_prompts_changed(&self) -> Result<usize, ClientError> {
        self.core.changed(List::Prompts)
    }

    /// The resource list changed (`notifications/resources/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_resources_changed(&self) -> Result<usize, ClientError> {
        self.core.changed(List::Resources)
    }

    /// The resource `uri` was updated (`notifications/resources/updated`), for the clients that
    /// follow it.
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_resource_updated(&self, uri: &str) -> Result<usize, ClientError> {
        self.core.updated(uri)
    }
}

/// The same, from inside a handler (a tool that changes what the server serves).
impl McpRequest {
    /// [`Mcp::notify_tools_changed`].
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_tools_changed(&self) -> Result<usize, ClientError> {
        self.inner.core.changed(List::Tools)
    }

    /// [`Mcp::notify_prompts_changed`].
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_prompts_changed(&self) -> Result<usize, ClientError> {
        self.inner.core.changed(List::Prompts)
    }

    /// [`Mcp::notify_resources_changed`].
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_resources_changed(&self) -> Result<usize, ClientError> {
        self.inner.core.changed(List::Resources)
    }

    /// [`Mcp::notify_resource_updated`].
    ///
    /// # Errors
    ///
    /// As [`Topics::publish`](crate::server::Topics::publish).
    pub fn notify_resource_updated(&self, uri: &str) -> Result<usize, ClientError> {
        self.inner.core.updated(uri)
    }
}
