//! Defines a prompt's result: its messages, each a role and a block of content.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::content::{Content, Role};

/// Holds what `prompts/get` answers: the messages (and, optionally, a
/// description of them).
///
/// ```
/// use jrpc_mcp::{Content, PromptMessage, PromptResult};
///
/// let result = PromptResult::new([
///     PromptMessage::user(Content::image("AA==", "image/png")),
///     PromptMessage::user(Content::text("Please analyze the image above.")),
/// ]);
/// assert_eq!(result.messages().len(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// Returns a result of these messages.
    pub fn new(messages: impl IntoIterator<Item = PromptMessage>) -> Self {
        Self {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }

    /// Returns one message from the user, of `content`.
    pub fn user(content: Content) -> Self {
        Self::new([PromptMessage::user(content)])
    }

    /// Returns the same, with a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Returns its messages.
    pub fn messages(&self) -> &[PromptMessage] {
        &self.messages
    }
}

/// Holds a message of a prompt: who says it, and what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    role: Role,
    content: Content,
}

impl PromptMessage {
    /// Returns `content`, said by `role`.
    pub fn new(role: Role, content: Content) -> Self {
        Self { role, content }
    }

    /// Returns `content`, said by the user.
    pub fn user(content: Content) -> Self {
        Self::new(Role::User, content)
    }

    /// Returns `content`, said by the model.
    pub fn assistant(content: Content) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// Returns who says it.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Returns what is said.
    pub fn content(&self) -> &Content {
        &self.content
    }
}

/// Names the schema of [`PromptResult`].
pub(crate) const PROMPT_RESULT_SCHEMA: &str = "McpPromptResult";
/// Names the schema of [`PromptMessage`].
pub(crate) const PROMPT_MESSAGE_SCHEMA: &str = "McpPromptMessage";

impl schemars::JsonSchema for PromptResult {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(PROMPT_RESULT_SCHEMA)
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "An MCP prompt's messages",
            "properties": { "messages": { "type": "array" } },
            "required": ["messages"],
        })
    }
}

impl schemars::JsonSchema for PromptMessage {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(PROMPT_MESSAGE_SCHEMA)
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "An MCP prompt message",
            "required": ["role", "content"],
        })
    }
}
