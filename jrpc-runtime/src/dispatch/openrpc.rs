//! Implements service discovery: the OpenRPC 1.3 document of a table, and `rpc.discover`, which
//! answers it.
//!
//! The document is built from the descriptions of the methods in the table at the time it is
//! asked for, so a merged table is described whole and `rpc.discover` never goes stale.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::describe::{MethodDoc, ParamStructure, ServiceInfo, SubscriptionDoc};
use super::methods::BoxCall;
use super::methods::Methods;
use super::schema::Renderer;
use crate::dispatch::params::FromParams as _;
use crate::wire::RpcError;

/// Names the version of OpenRPC the documents follow.
const OPENRPC: &str = "1.3.2";

/// Names the method that answers the document: the one `rpc.` name a table serves.
const DISCOVER: &str = "rpc.discover";

/// Names the extension member that describes a subscription, on its subscribe method.
const SUBSCRIPTION: &str = "x-subscription";

impl Methods {
    /// Returns the OpenRPC 1.3 document of every method in the table, in the order they were
    /// registered: name, summary and description, `deprecated`, the parameters (each `required`
    /// unless it may be left out), the result (none for a notification) and the JSON Schemas of
    /// their types, the named ones once in `components/schemas`.
    ///
    /// A `params = whole` method whose value is an object of known properties (a struct, with
    /// the `schema` feature) is described by name, one parameter per property
    /// (`"paramStructure": "by-name"`); any other whole value is one parameter that stands for
    /// the whole `params`, marked `"x-jrpc-params": "whole"`, as OpenRPC has no word for it.
    ///
    /// OpenRPC has no word for a subscription either (its `methods` are what a client calls). A
    /// subscription's subscribe and unsubscribe methods are listed as the methods they are: the
    /// subscribe method with its parameters and the subscription's id as its result (named
    /// `subscription`), the unsubscribe method with the parameter `subscription` and a boolean
    /// result. The notification is not a method the server serves, so it is not in `methods`:
    /// the subscribe method carries it, in an `x-subscription` member, `{"notification": NAME,
    /// "unsubscribe": NAME, "item": DESCRIPTOR}`, `item` a content descriptor (named `result`,
    /// the notification's member that carries it) with the item's schema. A document with a
    /// subscription declares that member in its `x-extensions`, as an OpenRPC Specification
    /// Extension with its JSON Schema, so that a validator that reads them (such as
    /// `@open-rpc/schema-utils-js`) checks it too.
    ///
    /// ```
    /// use jrpc_runtime::{Methods, RpcError, ServiceInfo};
    ///
    /// let mut methods = Methods::new();
    /// methods.register("add", &["a", "b"], |(a, b): (i64, i64), _| async move { Ok::<_, RpcError>(a + b) }).unwrap();
    /// let doc = methods.openrpc(&ServiceInfo::new("calculator", "1.0.0"));
    /// assert_eq!(doc["openrpc"], "1.3.2");
    /// assert_eq!(doc["methods"][0]["name"], "add");
    /// assert_eq!(doc["methods"][0]["params"][1]["name"], "b");
    /// assert_eq!(doc["methods"][0]["params"][1]["required"], true);
    /// ```
    pub fn openrpc(&self, info: &ServiceInfo) -> Value {
        let mut renderer = Renderer::openrpc();
        let descriptions = self.descriptions();
        let subscriptions = descriptions
            .iter()
            .any(|(_, doc)| doc.subscription.is_some());
        let methods: Vec<Value> = descriptions
            .into_iter()
            .map(|(name, doc)| method_object(name, doc, &mut renderer))
            .collect();
        let mut info_object = Map::new();
        info_object.insert("title".into(), Value::from(&*info.title));
        if let Some(description) = &info.description {
            info_object.insert("description".into(), Value::from(&**description));
        }
        info_object.insert("version".into(), Value::from(&*info.version));
        let mut document = Map::new();
        document.insert("openrpc".into(), OPENRPC.into());
        document.insert("info".into(), Value::Object(info_object));
        document.insert("methods".into(), Value::Array(methods));
        if subscriptions {
            document.insert(
                "x-extensions".into(),
                Value::Array(vec![subscription_extension()]),
            );
        }
        let schemas = renderer.definitions();
        if !schemas.is_empty() {
            let mut components = Map::new();
            components.insert("schemas".into(), Value::Object(schemas));
            document.insert("components".into(), Value::Object(components));
        }
        Value::Object(document)
    }

    /// Serves `rpc.discover`, OpenRPC's discovery method, on every transport the table is served
    /// on: it answers [`openrpc`](Methods::openrpc) with `info`, built from the table as it is
    /// when asked (so it lists the service's own methods, merged ones included, and not
    /// `rpc.discover` itself). It takes no parameters. A method of one's own cannot have the
    /// name: `rpc.` names stay reserved.
    ///
    /// ```
    /// use jrpc_runtime::{Methods, ServiceInfo};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut methods = Methods::new();
    /// methods.discovery(ServiceInfo::new("empty", "0.1.0"));
    /// let answer = methods.handle(r#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#).await.unwrap();
    /// assert!(answer.contains(r#""openrpc":"1.3.2""#));
    /// # });
    /// ```
    pub fn discovery(&mut self, info: ServiceInfo) -> &mut Self {
        self.inner_mut().discovery = Some(Arc::new(info));
        self
    }

    /// Returns whether `method` is `rpc.discover` and this table serves it.
    pub(super) fn serves_discover(&self, method: &str) -> bool {
        self.inner.discovery.is_some() && method == DISCOVER
    }

    /// Answers `rpc.discover`: no params (an empty array or object is fine), the document.
    pub(super) fn discover(&self, params: Option<&RawValue>) -> Result<BoxCall, RpcError> {
        <()>::from_params(params, &[])?;
        let document = match &self.inner.discovery {
            Some(info) => self.openrpc(info),
            None => Value::Null,
        };
        Ok(Box::pin(std::future::ready(Ok::<_, RpcError>(document))))
    }
}

/// One method's object in the document.
fn method_object(name: &str, doc: &MethodDoc, renderer: &mut Renderer) -> Value {
    let mut method = Map::new();
    method.insert("name".into(), name.into());
    if let Some(summary) = &doc.summary {
        method.insert("summary".into(), Value::from(&**summary));
    }
    if let Some(description) = &doc.description {
        method.insert("description".into(), Value::from(&**description));
    }
    let params = match (doc.structure, doc.params.as_slice()) {
        (ParamStructure::Whole, [whole]) => {
            let schema = renderer.render(&whole.schema);
            match by_name(renderer.resolve(&schema), whole.required) {
                Some(params) => {
                    method.insert("paramStructure".into(), "by-name".into());
                    params
                }
                None => {
                    method.insert("x-jrpc-params".into(), "whole".into());
                    vec![descriptor(&whole.name, whole.required, schema)]
                }
            }
        }
        (_, params) => params
            .iter()
            .map(|param| {
                let schema = renderer.render(&param.schema);
                descriptor(&param.name, param.required, schema)
            })
            .collect(),
    };
    method.insert("params".into(), Value::Array(params));
    if let Some(result) = &doc.result {
        let schema = renderer.render(result);
        // A subscribe method answers the subscription's id, which its unsubscribe method and
        // each notification name `subscription`.
        let name = match doc.subscription {
            Some(_) => "subscription",
            None => "result",
        };
        method.insert("result".into(), descriptor(name, false, schema));
    }
    if doc.deprecated {
        method.insert("deprecated".into(), true.into());
    }
    if let Some(subscription) = &doc.subscription {
        method.insert(
            SUBSCRIPTION.into(),
            subscription_object(subscription, renderer),
        );
    }
    Value::Object(method)
}

/// Returns a subscribe method's `x-subscription` member.
fn subscription_object(subscription: &SubscriptionDoc, renderer: &mut Renderer) -> Value {
    let mut object = Map::new();
    object.insert(
        "notification".into(),
        Value::from(&*subscription.notification),
    );
    object.insert(
        "unsubscribe".into(),
        Value::from(&*subscription.unsubscribe),
    );
    let item = renderer.render(&subscription.item);
    object.insert("item".into(), descriptor("result", false, item));
    Value::Object(object)
}

/// Returns the declaration of `x-subscription`, as an OpenRPC Specification Extension (the form
/// `@open-rpc/specification-extension-spec` defines, which validators apply to the objects it
/// names).
fn subscription_extension() -> Value {
    serde_json::json!({
        "openrpcExtension": "0.0.0-development",
        "name": SUBSCRIPTION,
        "version": "1.0.0",
        "summary": "A subscription the method opens",
        "description": "The method answers the id of a subscription. Then each item goes out as \
            a notification of the method `notification`, with params `{\"subscription\": ID, \
            \"result\": ITEM}`, until the client calls `unsubscribe` with the id (answered \
            `true` for a live subscription of the caller's own connection, else `false`), the \
            server ends it (a last notification with `error` in place of `result`) or the \
            connection closes. `item` describes one item.",
        "restricted": ["methodObject"],
        "schema": {
            "type": "object",
            "required": ["notification", "unsubscribe", "item"],
            "additionalProperties": false,
            "properties": {
                "notification": { "type": "string", "minLength": 1 },
                "unsubscribe": { "type": "string", "minLength": 1 },
                "item": {
                    "type": "object",
                    "required": ["name", "schema"],
                    "properties": {
                        "name": { "type": "string", "minLength": 1 },
                        "schema": { "type": ["object", "boolean"] }
                    }
                }
            }
        }
    })
}

/// Returns the parameters by name of a whole value whose schema is an object of known properties:
/// each required when the object requires it and the value itself is required.
fn by_name(schema: &Value, whole_required: bool) -> Option<Vec<Value>> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Some(
        properties
            .iter()
            .map(|(name, property)| {
                let required = whole_required && required.contains(&name.as_str());
                let mut param = descriptor(name, required, property.clone());
                if let (Some(description), Some(object)) =
                    (property.get("description"), param.as_object_mut())
                {
                    object.insert("description".into(), description.clone());
                }
                param
            })
            .collect(),
    )
}

/// Builds a content descriptor: a parameter or the result.
fn descriptor(name: &str, required: bool, schema: Value) -> Value {
    let mut object = Map::new();
    object.insert("name".into(), name.into());
    if required {
        object.insert("required".into(), true.into());
    }
    object.insert("schema".into(), schema);
    Value::Object(object)
}
