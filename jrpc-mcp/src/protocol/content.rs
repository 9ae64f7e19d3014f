//! Defines content: the blocks a tool answers and a prompt's messages hold (text, image, audio, an
//! embedded resource, a link to one), their annotations, and a tool's whole result.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::base64;

/// Holds a block of content, as a tool answers it and a prompt's messages hold it: text, an image,
/// audio, an embedded resource or a link to one, each with optional [`Annotations`].
///
/// A tool whose method returns `Content` (or `Vec<Content>`) answers those blocks as they are:
///
/// ```
/// use jrpc_mcp::{Annotations, Content, ResourceContents, Role};
///
/// let blocks = vec![
///     Content::text("Here is the chart."),
///     Content::image_bytes(&[0x89, b'P', b'N', b'G'], "image/png"),
///     Content::resource(ResourceContents::text("file:///notes.md", "# Notes").mime("text/markdown")),
///     Content::link("file:///main.rs", "main.rs").mime("text/x-rust").description("The entry point"),
/// ];
/// let first = Content::text("Only for you").annotate(Annotations::new().audience([Role::User]));
/// assert_eq!(
///     serde_json::to_value(&first).unwrap(),
///     serde_json::json!({ "type": "text", "text": "Only for you", "annotations": { "audience": ["user"] } })
/// );
/// assert_eq!(blocks[1].kind(), "image");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Content(Kind);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum Kind {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    Image {
        data: String,
        mime_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    Audio {
        data: String,
        mime_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    Resource {
        resource: ResourceContents,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

impl Content {
    /// Returns a text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self(Kind::Text {
            text: text.into(),
            annotations: None,
        })
    }

    /// Returns an image, `data` its bytes in base64, `mime_type` its type (`image/png`).
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self(Kind::Image {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
        })
    }

    /// Returns an image of these bytes (encoded in base64 here).
    pub fn image_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::image(base64::encode(bytes), mime_type)
    }

    /// Returns audio, `data` its bytes in base64, `mime_type` its type (`audio/wav`).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self(Kind::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
        })
    }

    /// Returns audio of these bytes (encoded in base64 here).
    pub fn audio_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::audio(base64::encode(bytes), mime_type)
    }

    /// Returns a resource embedded whole.
    pub fn resource(resource: ResourceContents) -> Self {
        Self(Kind::Resource {
            resource,
            annotations: None,
        })
    }

    /// Returns a link to the resource `uri` named `name`, for the client to read if it wants.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self(Kind::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        })
    }

    /// Returns this block with `annotations`.
    #[must_use]
    pub fn annotate(mut self, annotations: Annotations) -> Self {
        let slot = match &mut self.0 {
            Kind::Text { annotations, .. }
            | Kind::Image { annotations, .. }
            | Kind::Audio { annotations, .. }
            | Kind::Resource { annotations, .. }
            | Kind::ResourceLink { annotations, .. } => annotations,
        };
        *slot = Some(annotations);
        self
    }

    /// Sets a link's MIME type; other blocks are left as they are.
    #[must_use]
    pub fn mime(mut self, mime_type: impl Into<String>) -> Self {
        if let Kind::ResourceLink {
            mime_type: slot, ..
        } = &mut self.0
        {
            *slot = Some(mime_type.into());
        }
        self
    }

    /// Sets a link's description; other blocks are left as they are.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        if let Kind::ResourceLink {
            description: slot, ..
        } = &mut self.0
        {
            *slot = Some(description.into());
        }
        self
    }

    /// Sets a link's title (a name for people); other blocks are left as they are.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        if let Kind::ResourceLink { title: slot, .. } = &mut self.0 {
            *slot = Some(title.into());
        }
        self
    }

    /// Sets a link's size in bytes; other blocks are left as they are.
    #[must_use]
    pub fn size(mut self, bytes: u64) -> Self {
        if let Kind::ResourceLink { size: slot, .. } = &mut self.0 {
            *slot = Some(bytes);
        }
        self
    }

    /// Returns the block's `type`: `"text"`, `"image"`, `"audio"`, `"resource"` or
    /// `"resource_link"`.
    pub fn kind(&self) -> &'static str {
        match self.0 {
            Kind::Text { .. } => "text",
            Kind::Image { .. } => "image",
            Kind::Audio { .. } => "audio",
            Kind::Resource { .. } => "resource",
            Kind::ResourceLink { .. } => "resource_link",
        }
    }

    /// Returns the text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match &self.0 {
            Kind::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

impl schemars::JsonSchema for Content {
    fn schema_name() -> Cow<'static, str> {
        // The name the tool layer knows a content result by (see `ToolSet`).
        Cow::Borrowed(CONTENT_SCHEMA)
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "An MCP content block: text, image, audio, resource or resource_link",
            "properties": { "type": { "enum": ["text", "image", "audio", "resource", "resource_link"] } },
            "required": ["type"],
        })
    }
}

/// Names the schema of [`Content`].
pub(crate) const CONTENT_SCHEMA: &str = "McpContent";
/// Names the schema of [`ToolResult`].
pub(crate) const TOOL_RESULT_SCHEMA: &str = "McpToolResult";

/// Says who a block is for, and how much it matters.
///
/// ```
/// use jrpc_mcp::{Annotations, Role};
///
/// let annotations = Annotations::new()
///     .audience([Role::User, Role::Assistant])
///     .priority(0.9)
///     .last_modified("2025-05-03T14:30:00Z");
/// # let _ = annotations;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Whom it is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How much it matters, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// Returns no annotations yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets whom it is meant for.
    #[must_use]
    pub fn audience(mut self, roles: impl IntoIterator<Item = Role>) -> Self {
        self.audience = Some(roles.into_iter().collect());
        self
    }

    /// Sets how much it matters, from 0 (least) to 1 (most).
    #[must_use]
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Sets when it last changed (ISO 8601).
    #[must_use]
    pub fn last_modified(mut self, when: impl Into<String>) -> Self {
        self.last_modified = Some(when.into());
        self
    }
}

/// Names a side of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The model.
    Assistant,
}

/// Holds a resource's contents, as `resources/read` answers them and an embedded resource
/// carries them: its text, or its bytes in base64 (a blob).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
}

impl ResourceContents {
    /// Returns the text of the resource `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: Some(text.into()),
            blob: None,
        }
    }

    /// Returns the bytes of the resource `uri`, in base64.
    pub fn blob(uri: impl Into<String>, base64: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: None,
            blob: Some(base64.into()),
        }
    }

    /// Returns the bytes of the resource `uri` (encoded in base64 here).
    pub fn bytes(uri: impl Into<String>, bytes: &[u8]) -> Self {
        Self::blob(uri, base64::encode(bytes))
    }

    /// Returns the same, with its MIME type.
    #[must_use]
    pub fn mime(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Returns its URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Returns its MIME type.
    pub fn mime_type(&self) -> Option<&str> {
        self.mime_type.as_deref()
    }

    /// Returns its text, for a text resource.
    pub fn as_text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// Returns its bytes in base64, for a blob.
    pub fn as_blob(&self) -> Option<&str> {
        self.blob.as_deref()
    }
}

/// Holds a tool's whole result, for a tool that says more than its content: structured content
/// beside it, or that it failed (`isError`, a failure the model can read and act on).
///
/// ```
/// use jrpc_mcp::{Content, ToolResult};
///
/// let result = ToolResult::new([Content::text("22.5 °C")])
///     .structured(serde_json::json!({ "celsius": 22.5 }));
/// let failed = ToolResult::new([Content::text("no such city")]).error(true);
/// assert!(failed.is_error());
/// # let _ = result;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

impl ToolResult {
    /// Returns a result of these blocks.
    pub fn new(content: impl IntoIterator<Item = Content>) -> Self {
        Self {
            content: content.into_iter().collect(),
            structured_content: None,
            is_error: false,
        }
    }

    /// Returns the same, with structured content (an object, for clients of the legacy era).
    #[must_use]
    pub fn structured(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// Returns the same, marked as a failure (or not).
    #[must_use]
    pub fn error(mut self, failed: bool) -> Self {
        self.is_error = failed;
        self
    }

    /// Returns its blocks.
    pub fn content(&self) -> &[Content] {
        &self.content
    }

    /// Returns whether it is a failure.
    pub fn is_error(&self) -> bool {
        self.is_error
    }
}

impl schemars::JsonSchema for ToolResult {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(TOOL_RESULT_SCHEMA)
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "An MCP tool's whole result",
            "properties": { "content": { "type": "array" }, "isError": { "type": "boolean" } },
            "required": ["content"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_are_written_as_the_protocol_has_them() {
        let cases = [
            (Content::text("hi"), json!({ "type": "text", "text": "hi" })),
            (
                Content::image_bytes(b"fo", "image/png"),
                json!({ "type": "image", "data": "Zm8=", "mimeType": "image/png" }),
            ),
            (
                Content::resource(ResourceContents::blob("test://b", "AA==").mime("image/png")),
                json!({ "type": "resource", "resource": { "uri": "test://b", "mimeType": "image/png", "blob": "AA==" } }),
            ),
            (
                Content::link("file:///a", "a")
                    .mime("text/plain")
                    .size(3)
                    .title("A"),
                json!({ "type": "resource_link", "uri": "file:///a", "name": "a", "title": "A",
                        "mimeType": "text/plain", "size": 3 }),
            ),
        ];
        for (content, expected) in cases {
            let written = serde_json::to_value(&content).unwrap();
            assert_eq!(written, expected);
            assert_eq!(serde_json::from_value::<Content>(written).unwrap(), content);
        }
        let result = ToolResult::new([Content::text("x")]).error(true);
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({ "content": [{ "type": "text", "text": "x" }], "isError": true })
        );
    }
}
