//! Serves tools: the methods of a table (from `#[rpc_service(schema)]`), listed with their schemas
//! and called by name with their arguments.
//!
//! How a method's result becomes a tool's result is decided once per tool, at build, from the
//! schema of the method's result, so that a call does no guessing:
//!
//! | the method's result | the tool's result |
//! | --- | --- |
//! | a string | one text block, the string |
//! | [`Content`](crate::Content) or `Vec<Content>` | those blocks |
//! | [`ToolResult`](crate::ToolResult) | it, whole |
//! | `()` | no block |
//! | an object (a struct) | `structuredContent`, its JSON as a text block, and the schema as `outputSchema` |
//! | anything else (a number, a list...) | its JSON as a text block; in the modern era also `structuredContent` and `outputSchema` |
//! | described by no schema | a string as text, anything else as its JSON |
//! | an error | a result with `isError: true`, the error's message (and its data, when a string) as text |

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::request::{McpRequest, NamedParams};
use super::result::{Listed, Stamped, Turn, page};
use super::tasks::{self, Started, TaskSupport, ToolTask};
use super::{Core, Params, decode, route};
use crate::protocol::content::{CONTENT_SCHEMA, TOOL_RESULT_SCHEMA};
use crate::protocol::era::RequestMeta;
use crate::protocol::types::Era;
use jrpc_runtime::wire::{ErrorCode, RpcError};
use jrpc_runtime::{ConfigError, RegisterError};
use jrpc_runtime::{Context, MethodDoc, Methods};

/// Holds what the builder says of one tool besides its method.
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolOverride {
    pub(crate) title: Option<String>,
    pub(crate) input_schema: Option<Value>,
    pub(crate) annotations: Option<Value>,
    pub(crate) task: Option<ToolTask>,
}

/// How a tool's method's result becomes the tool's result (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Text,
    Content,
    Contents,
    Whole,
    Empty,
    Structured,
    Json,
    Unknown,
}

/// Names an argument of a tool that an HTTP header mirrors (`"x-mcp-header": "Region"` on its
/// property: `Mcp-Param-Region`).
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP checks them"))]
pub(crate) struct ParamHeader {
    /// The argument.
    pub(crate) param: String,
    /// The header's name after `Mcp-Param-`.
    pub(crate) header: String,
}

/// Holds the tools, their listings (one per era: the legacy era takes only object output schemas),
/// and how each answers.
pub(crate) struct ToolSet {
    pub(crate) methods: Methods,
    outputs: HashMap<String, Output>,
    headers: HashMap<String, Vec<ParamHeader>>,
    /// The tools that run as tasks, and how.
    tasks: HashMap<String, ToolTask>,
    names: Vec<String>,
    legacy: Vec<Box<RawValue>>,
    modern: Vec<Box<RawValue>>,
}

impl ToolSet {
    /// Returns the tools of `methods`, in the order they were registered.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming a tool whose name MCP does not allow (1 to 64 of `A-Z a-z 0-9 _ .
    /// / -`) or whose input schema is not an object's, or an override of no tool.
    pub(crate) fn new(
        methods: Methods,
        mut overrides: HashMap<String, ToolOverride>,
    ) -> Result<ToolSet, ConfigError> {
        let mut set = ToolSet::empty();
        // A subscription's methods are no tools: a tool answers once, and its result is all.
        let unsubscribes: Vec<String> = methods
            .descriptions()
            .into_iter()
            .filter_map(|(_, doc)| Some(doc.subscription.as_ref()?.unsubscribe.to_string()))
            .collect();
        for (name, doc) in methods.descriptions() {
            if doc.subscription.is_some() || unsubscribes.iter().any(|u| u == name) {
                continue;
            }
            let over = overrides.remove(name).unwrap_or_default();
            set.add(name, doc, over)?;
        }
        if let Some(name) = overrides.keys().next() {
            return Err(ConfigError::new(
                "tool_schema",
                format!("no tool `{name}` to describe"),
            ));
        }
        set.methods = methods;
        Ok(set)
    }

    /// Returns an empty set: no tool.
    pub(crate) fn empty() -> ToolSet {
        ToolSet {
            methods: Methods::new(),
            outputs: HashMap::new(),
            headers: HashMap::new(),
            tasks: HashMap::new(),
            names: Vec::new(),
            legacy: Vec::new(),
            modern: Vec::new(),
        }
    }

    fn add(&mut self, name: &str, doc: &MethodDoc, over: ToolOverride) -> Result<(), ConfigError> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
        if name.is_empty() || name.len() > 64 || !name.chars().all(allowed) {
            return Err(ConfigError::new(
                "tools",
                format!("`{name}` is not a tool name: 1 to 64 of A-Z a-z 0-9 _ . / -"),
            ));
        }
        let input = over.input_schema.unwrap_or_else(|| doc.params_schema());
        if input.get("type").and_then(Value::as_str) != Some("object") {
            return Err(ConfigError::new(
                "tools",
                format!(
                    "tool `{name}`: its arguments are not an object (`inputSchema` must be one)"
                ),
            ));
        }
        let headers = param_headers(&input);
        if !headers.is_empty() {
            self.headers.insert(name.to_owned(), headers);
        }
        let (output, schema) = classify(doc.result_schema());
        let mut tool = Map::new();
        tool.insert("name".into(), name.into());
        if let Some(title) = over.title {
            tool.insert("title".into(), title.into());
        }
        if let Some(description) = description(doc) {
            tool.insert("description".into(), description.into());
        }
        tool.insert("inputSchema".into(), input);
        if let Some(annotations) = over.annotations {
            tool.insert("annotations".into(), annotations);
        }
        let legacy_schema = schema.as_ref().filter(|_| output == Output::Structured);
        self.legacy.push(listing(&tool, legacy_schema)?);
        if let Some(task) = over
            .task
            .filter(|task| task.support != TaskSupport::Forbidden)
        {
            // Tasks are the modern era's (SEP-2663): a legacy client is not told of them.
            tool.insert(
                "execution".into(),
                json!({ "taskSupport": task.support.as_str() }),
            );
            self.tasks.insert(name.to_owned(), task);
        }
        self.modern.push(listing(&tool, schema.as_ref())?);
        self.outputs.insert(name.to_owned(), output);
        self.names.push(name.to_owned());
        Ok(())
    }

    /// Returns whether there is no tool.
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Returns whether a tool runs as a task.
    pub(crate) fn has_tasks(&self) -> bool {
        !self.tasks.is_empty()
    }

    /// Returns the arguments of the tool `name` that headers mirror.
    pub(crate) fn param_headers(&self, name: &str) -> &[ParamHeader] {
        self.headers.get(name).map_or(&[], Vec::as_slice)
    }
}

/// Returns the properties of an input schema marked `x-mcp-header` (primitive ones at its top).
fn param_headers(schema: &Value) -> Vec<ParamHeader> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter_map(|(param, property)| {
            let header = property.get("x-mcp-header")?.as_str()?;
            Some(ParamHeader {
                param: param.clone(),
                header: header.to_owned(),
            })
        })
        .collect()
}

/// Builds a tool's listing: `tool`, with `outputSchema` when given.
fn listing(
    tool: &Map<String, Value>,
    output: Option<&Value>,
) -> Result<Box<RawValue>, ConfigError> {
    let mut tool = tool.clone();
    if let Some(schema) = output {
        tool.insert("outputSchema".into(), schema.clone());
    }
    serde_json::value::to_raw_value(&tool)
        .map_err(|err| ConfigError::new("tools", format!("a tool's listing: {err}")))
}

/// Returns a tool's (or a prompt's) description: its method's whole doc comment.
pub(crate) fn description(doc: &MethodDoc) -> Option<String> {
    match (&doc.summary, &doc.description) {
        (Some(summary), Some(rest)) => Some(format!("{summary}\n\n{rest}")),
        (Some(one), None) | (None, Some(one)) => Some(one.to_string()),
        (None, None) => None,
    }
}

/// How a result of this schema answers, and the output schema to list.
fn classify(schema: Option<Value>) -> (Output, Option<Value>) {
    let Some(schema) = schema else {
        return (Output::Empty, None);
    };
    let title = schema.get("title").and_then(Value::as_str);
    let kind = schema.get("type").and_then(Value::as_str);
    let items_ref = schema
        .pointer("/items/$ref")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let output = match (title, kind) {
        (Some(CONTENT_SCHEMA), _) => Output::Content,
        (Some(TOOL_RESULT_SCHEMA), _) => Output::Whole,
        (_, Some("array")) if items_ref.ends_with(&format!("/{CONTENT_SCHEMA}")) => {
            Output::Contents
        }
        (_, Some("string")) => Output::Text,
        (_, Some("null")) => Output::Empty,
        (_, Some("object")) => Output::Structured,
        _ if schema.as_object().is_some_and(Map::is_empty) => Output::Unknown,
        _ => Output::Json,
    };
    let listed = matches!(output, Output::Structured | Output::Json).then_some(schema);
    (output, listed)
}

/// Registers `tools/list` and `tools/call`.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "tools/list", list)?;
    route(methods, core, "tools/call", call)
}

/// Holds the params of the list methods.
#[derive(Deserialize)]
pub(crate) struct ListParams {
    #[serde(default)]
    pub(crate) cursor: Option<String>,
    #[serde(rename = "_meta", default)]
    pub(crate) meta: RequestMeta,
}

async fn list(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let ListParams { cursor, meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let tools = match req.era() {
        Era::Legacy => &core.tools.legacy,
        _ => &core.tools.modern,
    };
    let page = page(tools, cursor.as_deref(), core.page_size)?;
    let listed = Listed {
        name: "tools",
        items: page.items.to_vec(),
        next: page.next,
    };
    Ok(req.stamp(listed, Some(core.hints.lists)))
}

async fn call(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let mut named: NamedParams<'_> = decode(&params)?;
    let req = McpRequest::read(std::mem::take(&mut named.meta), &ctx, &core)?;
    let Some(output) = core.tools.outputs.get(&named.name).copied() else {
        return Err(RpcError::new(
            ErrorCode::INVALID_PARAMS,
            format!("Unknown tool: {}", named.name),
        )
        .with_data(&json!({ "tools": core.tools.names })));
    };
    let era = req.era();
    let answered = match core.tools.tasks.get(&named.name).copied() {
        Some(task) if req.takes_tasks() => {
            let finish = move |answered: Result<Box<RawValue>, RpcError>| {
                let built = match answered {
                    Ok(raw) => answer(raw, output, era)?,
                    Err(err) => ToolAnswer::Built(failure(&err)),
                };
                serde_json::to_value(built).map_err(|_| RpcError::internal())
            };
            let (name, arguments) = req.open_named("tools/call", named)?;
            match tasks::call(&core, &req, task, (name, arguments), ctx, finish).await? {
                Started::Task(task) => return Ok(CallAnswer::Task(task)),
                Started::Plain(answered) => answered,
            }
        }
        Some(task) if task.support == TaskSupport::Required => return Err(tasks::needs_tasks()),
        _ => {
            req.run_named("tools/call", &core.tools.methods, named, ctx)
                .await?
        }
    };
    let failed = answered.is_err();
    Turn::of(
        &req,
        failed,
        || match answered {
            Ok(raw) => answer(raw, output, era),
            Err(err) => Ok(ToolAnswer::Built(failure(&err))),
        },
        None,
    )
    .map(CallAnswer::Now)
}

/// Says how a `tools/call` is answered: the tool's result (or the questions left), or its task.
enum CallAnswer {
    Now(Turn<ToolAnswer>),
    Task(Stamped<Map<String, Value>>),
}

impl Serialize for CallAnswer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Now(now) => now.serialize(serializer),
            Self::Task(task) => task.serialize(serializer),
        }
    }
}

/// Holds a tool's result as it is written.
enum ToolAnswer {
    Built(CallToolResult),
    Whole(Map<String, Value>),
}

impl Serialize for ToolAnswer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Built(result) => result.serialize(serializer),
            Self::Whole(map) => map.serialize(serializer),
        }
    }
}

/// `CallToolResult`, its blocks as the method's raw JSON wherever it can be spliced in.
#[derive(Serialize)]
struct CallToolResult {
    content: Blocks,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured: Option<Box<RawValue>>,
    #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// Holds a result's `content`.
enum Blocks {
    /// One text block: a JSON string, raw.
    RawText(Box<RawValue>),
    /// One text block.
    Text(String),
    /// One block, raw.
    One(Box<RawValue>),
    /// An array of blocks, raw.
    Many(Box<RawValue>),
    /// No block.
    None,
}

impl Serialize for Blocks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct TextBlock<'a, T: Serialize> {
            r#type: &'static str,
            text: &'a T,
        }
        match self {
            Self::RawText(raw) => [TextBlock {
                r#type: "text",
                text: raw,
            }]
            .serialize(serializer),
            Self::Text(text) => [TextBlock {
                r#type: "text",
                text,
            }]
            .serialize(serializer),
            Self::One(raw) => [raw].serialize(serializer),
            Self::Many(raw) => raw.serialize(serializer),
            Self::None => serializer.collect_seq(std::iter::empty::<()>()),
        }
    }
}

/// Returns the tool's result for its method's result `raw`.
fn answer(raw: Box<RawValue>, output: Output, era: Era) -> Result<ToolAnswer, RpcError> {
    let built = |content, structured| {
        Ok(ToolAnswer::Built(CallToolResult {
            content,
            structured,
            is_error: false,
        }))
    };
    match output {
        Output::Text => built(Blocks::RawText(raw), None),
        Output::Content => built(Blocks::One(raw), None),
        Output::Contents => built(Blocks::Many(raw), None),
        Output::Empty => built(Blocks::None, None),
        Output::Whole => serde_json::from_str(raw.get())
            .map(ToolAnswer::Whole)
            .map_err(|_| RpcError::internal()),
        Output::Structured => built(Blocks::Text(raw.get().to_owned()), Some(raw)),
        Output::Json if era == Era::Legacy => built(Blocks::Text(raw.get().to_owned()), None),
        Output::Json => built(Blocks::Text(raw.get().to_owned()), Some(raw)),
        Output::Unknown if raw.get().starts_with('"') => built(Blocks::RawText(raw), None),
        Output::Unknown => built(Blocks::Text(raw.get().to_owned()), None),
    }
}

/// Returns a result with `isError`, saying why: the error's message, and its data when a string.
fn failure(err: &RpcError) -> CallToolResult {
    let detail = err
        .data()
        .and_then(|data| serde_json::from_str::<String>(data.get()).ok());
    let text = match detail {
        Some(detail) => format!("{}: {detail}", err.message()),
        None => err.message().to_owned(),
    };
    CallToolResult {
        content: Blocks::Text(text),
        structured: None,
        is_error: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriptions_methods_are_no_tools() {
        let mut methods = Methods::new();
        methods
            .register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move {
                Ok::<_, RpcError>(a + b)
            })
            .unwrap();
        methods
            .register_subscription("watch", &[], "item", "unwatch", |(): (), _ctx| async {
                Ok::<_, RpcError>(jrpc_runtime::Items::new(futures_util::stream::iter([1u8])))
            })
            .unwrap();
        let set = ToolSet::new(methods, HashMap::new()).unwrap();
        assert_eq!(set.names, ["add"]);
    }

    #[test]
    fn results_are_classified_by_their_schema() {
        let of = |schema: Value| classify(Some(schema)).0;
        assert_eq!(
            of(json!({ "type": "string", "title": "String" })),
            Output::Text
        );
        assert_eq!(
            of(json!({ "title": "McpContent", "type": "object" })),
            Output::Content
        );
        assert_eq!(
            of(json!({ "type": "array", "items": { "$ref": "#/$defs/McpContent" } })),
            Output::Contents
        );
        assert_eq!(of(json!({ "title": "McpToolResult" })), Output::Whole);
        assert_eq!(of(json!({ "type": "null" })), Output::Empty);
        assert_eq!(
            of(json!({ "type": "object", "properties": {} })),
            Output::Structured
        );
        assert_eq!(of(json!({ "type": "integer" })), Output::Json);
        assert_eq!(of(json!({})), Output::Unknown);
        assert_eq!(classify(None).0, Output::Empty);
        assert_eq!(
            classify(Some(json!({ "type": "integer" }))).1,
            Some(json!({ "type": "integer" }))
        );
    }

    #[test]
    fn results_are_written_without_reading_the_methods_json() {
        let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
        let written = |answer: ToolAnswer| serde_json::to_value(answer).unwrap();
        assert_eq!(
            written(answer(raw(r#""5""#), Output::Text, Era::Legacy).unwrap()),
            json!({ "content": [{ "type": "text", "text": "5" }] })
        );
        assert_eq!(
            written(answer(raw("[1]"), Output::Json, Era::Modern).unwrap()),
            json!({ "content": [{ "type": "text", "text": "[1]" }], "structuredContent": [1] })
        );
        assert_eq!(
            written(answer(raw("null"), Output::Empty, Era::Legacy).unwrap()),
            json!({ "content": [] })
        );
        let failed = failure(&RpcError::invalid_params("parameter \"a\": missing"));
        assert_eq!(
            serde_json::to_value(failed).unwrap(),
            json!({ "content": [{ "type": "text", "text": "Invalid params: parameter \"a\": missing" }],
                    "isError": true })
        );
    }
}
