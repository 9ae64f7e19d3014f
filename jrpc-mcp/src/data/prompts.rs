//! Serves prompts: the methods of a table, each a prompt whose string parameters (by name) are its
//! arguments, listed and got by name.
//!
//! | the method's result | the prompt's messages |
//! | --- | --- |
//! | [`PromptResult`](crate::PromptResult) | it, whole |
//! | `Vec<PromptMessage>` | those |
//! | a string | one, from the user, the text |
//!
//! An unknown prompt, and arguments that do not decode (a required one missing), are `-32602`.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::request::{McpRequest, NamedParams};
use super::result::{Listed, Turn, page};
use super::tools::ListParams;
use super::{Core, Params, decode, route};
use crate::protocol::prompt::{PROMPT_MESSAGE_SCHEMA, PROMPT_RESULT_SCHEMA};
use jrpc_runtime::wire::{ErrorCode, RpcError};
use jrpc_runtime::{ConfigError, RegisterError};
use jrpc_runtime::{Context, Methods};

/// Holds what the builder says of one prompt besides its method.
#[derive(Clone, Debug, Default)]
pub(crate) struct PromptOverride {
    pub(crate) title: Option<String>,
    /// Argument name to its description.
    pub(crate) arguments: HashMap<String, String>,
}

/// How a prompt's method's result becomes its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Whole,
    Messages,
    Text,
}

/// Holds the prompts, their listings, and how each answers.
pub(crate) struct PromptSet {
    methods: Methods,
    outputs: HashMap<String, Output>,
    names: Vec<String>,
    listed: Vec<Box<RawValue>>,
}

impl PromptSet {
    /// Returns the prompts of `methods`, in the order they were registered.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming a prompt whose result is none of the kinds above, or an override
    /// of no prompt.
    pub(crate) fn new(
        methods: Methods,
        mut overrides: HashMap<String, PromptOverride>,
    ) -> Result<Self, ConfigError> {
        let mut set = Self::empty();
        for (name, doc) in methods.descriptions() {
            let schema = doc.result_schema().unwrap_or_default();
            let title = schema.get("title").and_then(Value::as_str);
            let items = schema
                .pointer("/items/$ref")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let output = match (title, schema.get("type").and_then(Value::as_str)) {
                (Some(PROMPT_RESULT_SCHEMA), _) => Output::Whole,
                (_, Some("array")) if items.ends_with(PROMPT_MESSAGE_SCHEMA) => Output::Messages,
                (_, Some("string")) => Output::Text,
                _ => {
                    return Err(ConfigError::new(
                        "prompts",
                        format!(
                            "prompt `{name}` answers no PromptResult, Vec<PromptMessage> or String"
                        ),
                    ));
                }
            };
            let over = overrides.remove(name).unwrap_or_default();
            let mut prompt = Map::new();
            prompt.insert("name".into(), name.into());
            if let Some(title) = over.title {
                prompt.insert("title".into(), title.into());
            }
            if let Some(text) = super::tools::description(doc) {
                prompt.insert("description".into(), text.into());
            }
            let arguments: Vec<Value> = doc
                .params
                .iter()
                .map(|param| {
                    let mut argument = json!({ "name": param.name, "required": param.required });
                    if let Some(text) = over.arguments.get(&*param.name) {
                        argument["description"] = text.as_str().into();
                    }
                    argument
                })
                .collect();
            prompt.insert("arguments".into(), arguments.into());
            set.listed.push(
                serde_json::value::to_raw_value(&prompt)
                    .map_err(|err| ConfigError::new("prompts", err.to_string()))?,
            );
            set.outputs.insert(name.to_owned(), output);
            set.names.push(name.to_owned());
        }
        if let Some(name) = overrides.keys().next() {
            return Err(ConfigError::new(
                "prompt_title",
                format!("no prompt `{name}`"),
            ));
        }
        set.methods = methods;
        Ok(set)
    }

    /// Returns an empty set: no prompt.
    pub(crate) fn empty() -> Self {
        Self {
            methods: Methods::new(),
            outputs: HashMap::new(),
            names: Vec::new(),
            listed: Vec::new(),
        }
    }

    /// Returns whether there is no prompt.
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Returns whether a prompt of that name is served.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.outputs.contains_key(name)
    }
}

/// Registers `prompts/list` and `prompts/get`.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "prompts/list", list)?;
    route(methods, core, "prompts/get", get)
}

async fn list(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let ListParams { cursor, meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let page = page(&core.prompts.listed, cursor.as_deref(), core.page_size)?;
    let listed = Listed {
        name: "prompts",
        items: page.items.to_vec(),
        next: page.next,
    };
    Ok(req.stamp(listed, Some(core.hints.lists)))
}

/// A prompt's messages as they are written.
enum Got {
    Whole(Map<String, Value>),
    Messages(Box<RawValue>),
    Text(Box<RawValue>),
}

impl Serialize for Got {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Messages<T> {
            messages: T,
        }
        #[derive(Serialize)]
        struct Message<'a> {
            role: &'static str,
            content: Text<'a>,
        }
        #[derive(Serialize)]
        struct Text<'a> {
            r#type: &'static str,
            text: &'a RawValue,
        }
        match self {
            Self::Whole(map) => map.serialize(serializer),
            Self::Messages(raw) => Messages { messages: raw }.serialize(serializer),
            Self::Text(raw) => Messages {
                messages: [Message {
                    role: "user",
                    content: Text {
                        r#type: "text",
                        text: raw,
                    },
                }],
            }
            .serialize(serializer),
        }
    }
}

async fn get(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let mut named: NamedParams<'_> = decode(&params)?;
    let req = McpRequest::read(std::mem::take(&mut named.meta), &ctx, &core)?;
    let Some(output) = core.prompts.outputs.get(&named.name).copied() else {
        return Err(RpcError::new(
            ErrorCode::INVALID_PARAMS,
            format!("Unknown prompt: {}", named.name),
        )
        .with_data(&json!({ "prompts": core.prompts.names })));
    };
    let answered = req
        .run_named("prompts/get", &core.prompts.methods, named, ctx)
        .await?;
    let failed = answered.is_err();
    let body = || {
        let raw = answered?;
        Ok(match output {
            Output::Whole => {
                Got::Whole(serde_json::from_str(raw.get()).map_err(|_| RpcError::internal())?)
            }
            Output::Messages => Got::Messages(raw),
            Output::Text => Got::Text(raw),
        })
    };
    Turn::of(&req, failed, body, None)
}
