//! Serves resources: fixed ones, ones read when asked, and templates (RFC 6570 `{name}` variables,
//! one path segment each); their lists, `resources/read`, and the legacy era's subscriptions.
//!
//! | request | answer |
//! | --- | --- |
//! | `resources/list`, `resources/templates/list` | a page of each (`cursor`, `nextCursor`) |
//! | `resources/read` of a resource's URI | its contents |
//! | `resources/read` of a URI a template matches (the first, in the order given) | what its reader answers, given the variables |
//! | `resources/read` of any other URI | not found: legacy `-32002`, modern `-32602`, `data` `{"uri": URI}` |
//! | `resources/subscribe`, `resources/unsubscribe` (legacy only) | `{}`; its updates reach the session's GET stream (or the stdio connection) |

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::lifecycle::MetaOnly;
use super::request::{Binding, LegacyState, McpRequest};
use super::result::{Listed, Turn, page};
use super::{Core, Params, decode, route};
use crate::protocol::content::ResourceContents;
use crate::protocol::era::{RESOURCE_NOT_FOUND, RequestMeta};
use crate::protocol::types::Era;
use jrpc_runtime::BoxFuture;
use jrpc_runtime::wire::{ErrorCode, RpcError};
use jrpc_runtime::{ConfigError, RegisterError};
use jrpc_runtime::{Context, Methods};

/// Reads a resource: given the request, returns the contents (never none).
type Reader = Arc<
    dyn Fn(ResourceRequest, Context) -> BoxFuture<'static, Result<Vec<ResourceContents>, RpcError>>
        + Send
        + Sync,
>;

/// Describes a resource a server offers: its URI and name (and what else a client lists), and its
/// contents, fixed or read when asked.
///
/// ```
/// use jrpc_mcp::{Resource, ResourceContents};
///
/// let fixed = Resource::text("test://static-text", "static-text", "Hello").mime("text/plain");
/// let live = Resource::new("test://clock", "clock")
///     .description("The server's time")
///     .read(|req, _ctx| async move {
///         Ok(vec![ResourceContents::text(req.uri(), format!("{:?}", std::time::SystemTime::now()))])
///     });
/// # let _ = (fixed, live);
/// ```
#[derive(Clone)]
pub struct Resource {
    listing: Map<String, Value>,
    reader: Option<Reader>,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("listing", &self.listing)
            .finish_non_exhaustive()
    }
}

/// Returns the members every listing has, in a resource and a template.
fn listing(key: &str, uri: String, name: String) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.to_owned(), uri.into());
    map.insert("name".to_owned(), name.into());
    map
}

impl Resource {
    /// Returns the resource `uri` named `name`, with no contents yet: give it a reader
    /// ([`read`](Self::read)).
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            listing: listing("uri", uri.into(), name.into()),
            reader: None,
        }
    }

    /// Returns the resource `uri` named `name` whose contents are `text`.
    pub fn text(uri: impl Into<String>, name: impl Into<String>, text: impl Into<String>) -> Self {
        let uri = uri.into();
        let contents = ResourceContents::text(uri.clone(), text);
        Self::new(uri, name).fixed(contents)
    }

    /// Returns the resource `uri` named `name` whose contents are the bytes `base64` (in base64).
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        let uri = uri.into();
        let contents = ResourceContents::blob(uri.clone(), base64);
        Self::new(uri, name).fixed(contents)
    }

    fn fixed(self, contents: ResourceContents) -> Self {
        let listing_mime = self
            .listing
            .get("mimeType")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let contents = match listing_mime {
            Some(mime) => contents.mime(mime),
            None => contents,
        };
        self.read(move |_, _| std::future::ready(Ok(vec![contents.clone()])))
    }

    /// Sets its contents, read by `reader` when asked (each time).
    #[must_use]
    pub fn read<F, Fut>(mut self, reader: F) -> Self
    where
        F: Fn(ResourceRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
    {
        self.reader = Some(Arc::new(move |req, ctx| Box::pin(reader(req, ctx))));
        self
    }

    /// Sets a name for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.listing.insert("title".into(), title.into().into());
        self
    }

    /// Sets its description: what it is.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.listing
            .insert("description".into(), description.into().into());
        self
    }

    /// Sets its MIME type, listed (and given to fixed contents that have none).
    #[must_use]
    pub fn mime(mut self, mime_type: impl Into<String>) -> Self {
        let mime_type = mime_type.into();
        self.listing
            .insert("mimeType".into(), mime_type.clone().into());
        if let Some(reader) = self.reader.take() {
            self.reader = Some(Arc::new(move |req, ctx| {
                let read = reader(req, ctx);
                let mime_type = mime_type.clone();
                Box::pin(async move {
                    let contents = read.await?;
                    Ok(contents
                        .into_iter()
                        .map(|c| match c.mime_type() {
                            Some(_) => c,
                            None => c.mime(mime_type.clone()),
                        })
                        .collect())
                })
            }));
        }
        self
    }

    /// Sets its size in bytes.
    #[must_use]
    pub fn size(mut self, bytes: u64) -> Self {
        self.listing.insert("size".into(), bytes.into());
        self
    }

    fn uri(&self) -> &str {
        self.listing
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// Describes resources made when asked, their URIs those a template matches (RFC 6570 level 1: each
/// `{name}` one path segment, no `/`): the reader gets the variables' values.
///
/// ```
/// use jrpc_mcp::{ResourceContents, ResourceTemplate};
///
/// let template = ResourceTemplate::new("test://template/{id}/data", "template")
///     .mime("application/json")
///     .read(|req, _ctx| async move {
///         let id = req.var("id").unwrap_or_default();
///         Ok(vec![ResourceContents::text(req.uri(), format!(r#"{{"id":"{id}"}}"#))])
///     });
/// # let _ = template;
/// ```
#[derive(Clone)]
pub struct ResourceTemplate {
    listing: Map<String, Value>,
    reader: Option<Reader>,
    parts: Vec<Part>,
}

impl std::fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("listing", &self.listing)
            .finish_non_exhaustive()
    }
}

/// Names a piece of a URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

impl ResourceTemplate {
    /// Returns the resources whose URIs `uri_template` matches, named `name`; give it a reader
    /// ([`read`](Self::read)).
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        let template = uri_template.into();
        let parts = parse_template(&template);
        Self {
            listing: listing("uriTemplate", template, name.into()),
            reader: None,
            parts,
        }
    }

    /// Sets its contents, read by `reader` for each URI asked.
    #[must_use]
    pub fn read<F, Fut>(mut self, reader: F) -> Self
    where
        F: Fn(ResourceRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, RpcError>> + Send + 'static,
    {
        self.reader = Some(Arc::new(move |req, ctx| Box::pin(reader(req, ctx))));
        self
    }

    /// Sets a name for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.listing.insert("title".into(), title.into().into());
        self
    }

    /// Sets their description: what they are.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.listing
            .insert("description".into(), description.into().into());
        self
    }

    /// Sets their MIME type, listed.
    #[must_use]
    pub fn mime(mut self, mime_type: impl Into<String>) -> Self {
        self.listing
            .insert("mimeType".into(), mime_type.into().into());
        self
    }

    /// Returns the variables of `uri`, when this template matches it.
    fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Var(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

/// Returns the literal and `{variable}` pieces of a URI template.
fn parse_template(template: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_owned()));
        }
        parts.push(Part::Var(rest[open + 1..open + close].to_owned()));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest.to_owned()));
    }
    parts
}

/// Holds what a resource's reader is asked: the URI, and for a template the values of its
/// variables.
#[derive(Clone, Debug)]
pub struct ResourceRequest {
    uri: String,
    vars: BTreeMap<String, String>,
}

impl ResourceRequest {
    /// Returns the URI asked for.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Returns the value of a template's variable `name` in the URI.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

/// Holds the resources and templates, their listings, and their readers.
pub(crate) struct ResourceSet {
    fixed: Vec<(String, Reader)>,
    templates: Vec<(ResourceTemplate, Reader)>,
    listed: Vec<Box<RawValue>>,
    templates_listed: Vec<Box<RawValue>>,
}

impl ResourceSet {
    /// Returns the resources and templates given, in that order, and the `unlisted` resources
    /// (read, not listed: a skill's files).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming one without a reader, or two resources of one URI.
    pub(crate) fn new(
        resources: Vec<Resource>,
        unlisted: Vec<Resource>,
        templates: Vec<ResourceTemplate>,
    ) -> Result<Self, ConfigError> {
        let mut set = Self::empty();
        let count = resources.len();
        for (n, resource) in resources.into_iter().chain(unlisted).enumerate() {
            let uri = resource.uri().to_owned();
            let Some(reader) = resource.reader.clone() else {
                return Err(ConfigError::new(
                    "resource",
                    format!("`{uri}` has no reader"),
                ));
            };
            if set.fixed.iter().any(|(known, _)| *known == uri) {
                return Err(ConfigError::new(
                    "resource",
                    format!("`{uri}` is given twice"),
                ));
            }
            if n < count {
                set.listed.push(raw(&resource.listing)?);
            }
            set.fixed.push((uri, reader));
        }
        for template in templates {
            let Some(reader) = template.reader.clone() else {
                let name = &template.listing["uriTemplate"];
                return Err(ConfigError::new(
                    "resource_template",
                    format!("{name} has no reader"),
                ));
            };
            set.templates_listed.push(raw(&template.listing)?);
            set.templates.push((template, reader));
        }
        Ok(set)
    }

    /// Returns an empty set: nothing.
    pub(crate) fn empty() -> Self {
        Self {
            fixed: Vec::new(),
            templates: Vec::new(),
            listed: Vec::new(),
            templates_listed: Vec::new(),
        }
    }

    /// Returns whether there is nothing to list or read.
    pub(crate) fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.templates.is_empty()
    }

    /// Finds the reader of `uri`, and what it is to be told.
    fn find(&self, uri: &str) -> Option<(&Reader, ResourceRequest)> {
        let request = |vars| ResourceRequest {
            uri: uri.to_owned(),
            vars,
        };
        if let Some((_, reader)) = self.fixed.iter().find(|(known, _)| known == uri) {
            return Some((reader, request(BTreeMap::new())));
        }
        self.templates
            .iter()
            .find_map(|(template, reader)| Some((reader, request(template.matches(uri)?))))
    }
}

fn raw(listing: &Map<String, Value>) -> Result<Box<RawValue>, ConfigError> {
    serde_json::value::to_raw_value(listing)
        .map_err(|err| ConfigError::new("resource", err.to_string()))
}

/// Registers the resource methods.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "resources/list", |core, params, ctx| {
        list(core, params, ctx, "resources")
    })?;
    route(
        methods,
        core,
        "resources/templates/list",
        |core, params, ctx| list(core, params, ctx, "resourceTemplates"),
    )?;
    route(methods, core, "resources/read", read)?;
    route(methods, core, "resources/subscribe", |core, params, ctx| {
        follow(core, params, ctx, true)
    })?;
    route(
        methods,
        core,
        "resources/unsubscribe",
        |core, params, ctx| follow(core, params, ctx, false),
    )
}

async fn list(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
    name: &'static str,
) -> Result<impl Serialize, RpcError> {
    let super::tools::ListParams { cursor, meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let items = match name {
        "resources" => &core.resources.listed,
        _ => &core.resources.templates_listed,
    };
    let page = page(items, cursor.as_deref(), core.page_size)?;
    let listed = Listed {
        name,
        items: page.items.to_vec(),
        next: page.next,
    };
    Ok(req.stamp(listed, Some(core.hints.lists)))
}

/// Holds the params that name a resource.
#[derive(Deserialize)]
struct UriParams {
    uri: String,
    #[serde(rename = "_meta", default)]
    meta: RequestMeta,
    #[serde(rename = "inputResponses", default)]
    responses: Option<Value>,
    #[serde(rename = "requestState", default)]
    state: Option<String>,
}

/// `resources/read`'s result body.
#[derive(Serialize)]
struct Read {
    contents: Vec<ResourceContents>,
}

async fn read(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let UriParams {
        uri,
        meta,
        responses,
        state,
    } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let Some((reader, request)) = core.resources.find(&uri) else {
        return Err(not_found(&uri, req.era()));
    };
    let binding = Binding {
        method: "resources/read",
        name: uri.clone(),
        arguments: None,
    };
    req.open_asks(binding, responses, state.as_deref())?;
    let read = reader(request, ctx.with_extension(req.clone())).await;
    let failed = read.is_err();
    let body = || {
        let contents = read?;
        if contents.is_empty() {
            // An empty `contents` is no answer (the modern era forbids it): nothing was found.
            return Err(not_found(&uri, req.era()));
        }
        Ok(Read { contents })
    };
    Turn::of(&req, failed, body, Some(core.hints.reads))
}

/// Not found, as `era` says it.
fn not_found(uri: &str, era: Era) -> RpcError {
    let code = match era {
        Era::Legacy => RESOURCE_NOT_FOUND,
        _ => ErrorCode::INVALID_PARAMS,
    };
    RpcError::new(code, "Resource not found").with_data(&json!({ "uri": uri }))
}

/// `resources/subscribe` (`on`) and `resources/unsubscribe`: the session's GET stream (or the
/// stdio connection) follows the resource's updates, or stops.
async fn follow(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
    on: bool,
) -> Result<Map<String, Value>, RpcError> {
    let method = if on {
        "resources/subscribe"
    } else {
        "resources/unsubscribe"
    };
    let MetaOnly { meta } = decode(&params)?;
    McpRequest::read(meta, &ctx, &core)?.legacy_only(method)?;
    let UriParams { uri, .. } = decode(&params)?;
    let state = ctx.extension::<Arc<LegacyState>>();
    if let Some(hooks) = state.and_then(|state| state.hooks()) {
        // The store keeps it, and has the GET stream follow it wherever it is.
        hooks
            .changed(crate::store::SessionChange::Follow(uri, on))
            .await?;
        return Ok(Map::new());
    }
    let push = state.and_then(|state| state.push()).ok_or_else(|| {
        RpcError::new(ErrorCode::SERVER_ERROR, "Subscription failed")
            .with_data("no session or connection to send updates on")
    })?;
    super::changes::follow_resource(&core, &push, &uri, on);
    Ok(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_one_segment_a_variable() {
        let template = ResourceTemplate::new("test://template/{id}/data", "t");
        let vars = template.matches("test://template/123/data").unwrap();
        assert_eq!(vars["id"], "123");
        for other in [
            "test://template//data",
            "test://template/1/2/data",
            "test://template/123/data/more",
            "test://other/123/data",
        ] {
            assert_eq!(template.matches(other), None, "{other}");
        }
        let tail = ResourceTemplate::new("file:///{dir}/{name}", "f");
        let vars = tail.matches("file:///src/main.rs").unwrap();
        assert_eq!(
            (vars["dir"].as_str(), vars["name"].as_str()),
            ("src", "main.rs")
        );
    }
}
