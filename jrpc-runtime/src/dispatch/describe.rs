//! Holds what a method says of itself: its parameters, its result, its documentation. Every method
//! in a [`Methods`] table has a description; the OpenRPC document and `rpc.discover` are built from
//! them, and so can be anything else that lists methods (an MCP server's tools).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::schema::Renderer;
use crate::dispatch::schema::SchemaDoc;

/// Holds the description of one method, as an OpenRPC document gives it.
///
/// Every registration gives its method one: [`Methods::register`] lists the parameters by their
/// wire names, each required unless its type accepts a missing value (`Option<T>`), with `{}`
/// schemas and a `{}` result; [`Methods::register_notification`] gives no result;
/// `#[rpc_service]` adds the doc comment, `#[deprecated]` and, for a service with `schema`, the
/// JSON Schemas of the types. [`Methods::describe`] replaces it with one of your own.
///
/// [`Methods::register`]: super::methods::Methods::register
/// [`Methods::register_notification`]: super::methods::Methods::register_notification
/// [`Methods::describe`]: super::methods::Methods::describe
///
/// ```
/// use jrpc_runtime::{MethodDoc, Methods, ParamDoc, RpcError, SchemaDoc};
/// use serde_json::json;
///
/// let mut methods = Methods::new();
/// methods.register("neg", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(-x) }).unwrap();
/// let integer = || SchemaDoc::json(json!({ "type": "integer" }));
/// let mut doc = MethodDoc::new().with_doc_comment("Negates.\n\nAnswers `-x`.");
/// doc.params.push(ParamDoc::new("x", integer()));
/// doc.result = Some(integer());
/// methods.describe("neg", doc).unwrap();
/// assert_eq!(methods.description("neg").unwrap().summary.as_deref(), Some("Negates."));
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct MethodDoc {
    /// A short summary: the first paragraph of the doc comment.
    pub summary: Option<Cow<'static, str>>,
    /// The rest of the doc comment.
    pub description: Option<Cow<'static, str>>,
    /// Whether the method is deprecated (`#[deprecated]`).
    pub deprecated: bool,
    /// How `params` is read: as a list of parameters (by position or by name), or as one value
    /// (`params = whole`).
    pub structure: ParamStructure,
    /// The parameters, in order; with [`ParamStructure::Whole`], the one that is the whole value.
    pub params: Vec<ParamDoc>,
    /// The result's schema; `None` for a notification, which answers nothing.
    pub result: Option<SchemaDoc>,
    /// The subscription a subscribe method opens (its result is then the subscription's id);
    /// `None` for any other method.
    pub subscription: Option<SubscriptionDoc>,
}

/// Describes the subscription a subscribe method opens: where its items go, what they are, and
/// what ends it. [`Methods::register_subscription`] gives one to the subscribe method (with a `{}`
/// item); `#[rpc_service]` adds the item's schema for a service with `schema`.
///
/// In the OpenRPC document it is the subscribe method's `x-subscription` member, an extension the
/// document declares in its `x-extensions` (see [`Methods::openrpc`]).
///
/// [`Methods::register_subscription`]: super::methods::Methods::register_subscription
/// [`Methods::openrpc`]: super::methods::Methods::openrpc
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubscriptionDoc {
    /// The method of the notifications that carry the items: `{"subscription": ID, "result":
    /// ITEM}`.
    pub notification: Cow<'static, str>,
    /// The method that ends a subscription, given its id.
    pub unsubscribe: Cow<'static, str>,
    /// The schema of one item.
    pub item: SchemaDoc,
}

impl SubscriptionDoc {
    /// Returns the description of a subscription whose items go out as `notification` and which
    /// `unsubscribe` ends, with a `{}` item.
    pub fn new(
        notification: impl Into<Cow<'static, str>>,
        unsubscribe: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            notification: notification.into(),
            unsubscribe: unsubscribe.into(),
            item: SchemaDoc::any(),
        }
    }

    /// Returns the same, with the item's schema.
    #[must_use]
    pub fn with_item(mut self, item: SchemaDoc) -> Self {
        self.item = item;
        self
    }
}

/// Says how a method reads its `params`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamStructure {
    /// An array by position or an object by name, one member per parameter (OpenRPC's `either`).
    #[default]
    Either,
    /// The whole `params` value is the one parameter (`#[rpc(params = whole)]`).
    Whole,
}

/// Describes one parameter of a [`MethodDoc`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ParamDoc {
    /// The wire name.
    pub name: Cow<'static, str>,
    /// Whether a call must give it; `Option<T>` parameters may be left out.
    pub required: bool,
    /// Its JSON Schema.
    pub schema: SchemaDoc,
}

impl ParamDoc {
    /// Returns a required parameter.
    pub fn new(name: impl Into<Cow<'static, str>>, schema: SchemaDoc) -> Self {
        Self {
            name: name.into(),
            required: true,
            schema,
        }
    }

    /// Returns the same parameter, optional.
    #[must_use]
    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }
}

impl MethodDoc {
    /// Returns the description of a call with no parameters, no documentation and a `{}` result.
    pub fn new() -> Self {
        Self {
            result: Some(SchemaDoc::any()),
            ..Self::default()
        }
    }

    /// Returns the description of a method whose `params` is the one value `param` describes
    /// (`params = whole`).
    pub fn whole(param: ParamDoc) -> Self {
        Self {
            structure: ParamStructure::Whole,
            params: vec![param],
            ..Self::new()
        }
    }

    /// Sets the summary and description from the text of a doc comment: the first paragraph (its
    /// lines joined) is the summary, the paragraphs after it the description. Indentation common to
    /// every line is taken off, as rustdoc does.
    #[must_use]
    pub fn with_doc_comment(mut self, text: &str) -> Self {
        let (summary, description) = split_doc(text);
        self.summary = summary.map(Cow::Owned);
        self.description = description.map(Cow::Owned);
        self
    }

    /// Returns the JSON Schema of the whole `params` value on its own (definitions in `$defs`): the
    /// one parameter's schema for [`ParamStructure::Whole`], else an object with a property per
    /// parameter and the required ones in `required`. This is what an MCP tool's `inputSchema`
    /// is.
    pub fn params_schema(&self) -> Value {
        let mut renderer = Renderer::standalone();
        if let (ParamStructure::Whole, [param]) = (self.structure, self.params.as_slice()) {
            return renderer.render_root(&param.schema);
        }
        let mut properties = Map::new();
        let mut required = Vec::new();
        for param in &self.params {
            properties.insert(param.name.to_string(), renderer.render(&param.schema));
            if param.required {
                required.push(Value::from(&*param.name));
            }
        }
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        let definitions = renderer.definitions();
        if !definitions.is_empty() {
            schema.insert("$defs".into(), Value::Object(definitions));
        }
        Value::Object(schema)
    }

    /// Returns the JSON Schema of the result on its own (definitions in `$defs`); `None` for a
    /// notification.
    pub fn result_schema(&self) -> Option<Value> {
        let result = self.result.as_ref()?;
        Some(Renderer::standalone().render_root(result))
    }

    /// Gives each parameter in turn the schema of `schemas`, for those that have one.
    pub(crate) fn set_schemas(&mut self, schemas: impl IntoIterator<Item = SchemaDoc>) {
        for (param, schema) in self.params.iter_mut().zip(schemas) {
            if !schema.is_any() {
                param.schema = schema;
            }
        }
    }
}

/// Summary (the first paragraph) and description (the rest) of a doc comment's text.
fn split_doc(text: &str) -> (Option<String>, Option<String>) {
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.get(indent..).unwrap_or("").trim_end())
        .collect();
    let mut paragraphs = lines
        .split(|line| line.is_empty())
        .filter(|p| !p.is_empty());
    let summary = paragraphs.next().map(|p| p.join(" "));
    let rest: Vec<String> = paragraphs.map(|p| p.join("\n")).collect();
    let description = (!rest.is_empty()).then(|| rest.join("\n\n"));
    (summary, description)
}

/// Holds what an OpenRPC document says of the service itself (its `info` object).
///
/// ```
/// use jrpc_runtime::ServiceInfo;
///
/// let info = ServiceInfo::new("calculator", "1.0.0").with_description("Integer arithmetic.");
/// # let _ = info;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServiceInfo {
    /// The service's name.
    pub title: Cow<'static, str>,
    /// The version of the service's API (not of OpenRPC).
    pub version: Cow<'static, str>,
    /// A description of the service.
    pub description: Option<Cow<'static, str>>,
}

impl ServiceInfo {
    /// Returns the info of a service with `title` and `version`.
    pub fn new(title: impl Into<Cow<'static, str>>, version: impl Into<Cow<'static, str>>) -> Self {
        Self {
            title: title.into(),
            version: version.into(),
            description: None,
        }
    }

    /// Returns the same, with a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::split_doc;

    #[test]
    fn a_doc_comment_splits_into_summary_and_description() {
        assert_eq!(split_doc(""), (None, None));
        assert_eq!(
            split_doc(" Adds two\n integers."),
            (Some("Adds two integers.".into()), None)
        );
        assert_eq!(
            split_doc(" Sums.\n\n First `a`,\n   then `b`.\n\n\n Done."),
            (
                Some("Sums.".into()),
                Some("First `a`,\n  then `b`.\n\nDone.".into())
            )
        );
    }
}
