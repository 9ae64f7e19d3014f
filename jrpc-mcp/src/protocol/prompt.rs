//! A prompt's result: its messages, each a role and a block of content.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::content::{Content, Role};

/// What `prompts/get` answers: the messages (and, optionally, a description of them).
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
    /// A result of these messages.
    pub fn new(messages: impl IntoIterator<Item = PromptMessage>) -> Self {
        Self {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }

    /// One message from the user, of `content`.
    pub fn user(content: Content) -> Self {
        Self::new([PromptMessage::user(content)])
    }

    /// The same, with a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its messages.
    pub fn messages(&self) -> &[PromptMessage] {
        &self.messages
    }
}

/// A message of a prompt: who says it, and what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    role: Role,
    content: Content,
}

impl PromptMessage {
    /// `content`, said by `role`.
    pub fn new(role: Role, content: Content) -> Self {
        Self { role, content }
    }

    /// `content`, said by the user.
    pub fn user(content: Content) -> Self {
        Self::new(Role::User, content)
    }

    /// `content`, said by the model.
    pub fn assistant(content: Content) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// Who says it.
    pub fn role(&self) -> Role {
        self.role
    }

    /// What is said.
    pub fn content(&self) -> &Content {
        &self.content
    }
}

/// The schema name of [`PromptResult`].
pub(crate) const PROMPT_RESULT_SCHEMA: &str = "McpPromptResult";
/// The schema name of [`PromptMessage`].
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
