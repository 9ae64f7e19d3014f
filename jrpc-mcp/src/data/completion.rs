//! Completes arguments: the values a prompt's argument (or a resource template's variable) may
//! take, from what the user typed so far, answered by the server's completer.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::request::McpRequest;
use super::{Core, Params, decode, route};
use crate::protocol::era::RequestMeta;
use jrpc_runtime::BoxFuture;
use jrpc_runtime::RegisterError;
use jrpc_runtime::wire::RpcError;
use jrpc_runtime::{Context, Methods};

/// The most values one answer holds (the protocol's limit).
const MAX_VALUES: usize = 100;

/// Says what the completer is: given the request, the values.
pub(crate) type Completer = Arc<
    dyn Fn(CompleteRequest, Context) -> BoxFuture<'static, Result<Completion, RpcError>>
        + Send
        + Sync,
>;

/// Makes a completer of a function.
pub(crate) fn completer<F, Fut>(complete: F) -> Completer
where
    F: Fn(CompleteRequest, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, RpcError>> + Send + 'static,
{
    Arc::new(move |req, ctx| Box::pin(complete(req, ctx)))
}

/// Says what is to be completed: an argument of a prompt, or a variable of a resource template.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionRef {
    /// The prompt of that name.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// Its name.
        name: String,
    },
    /// The resource template (or resource) of that URI.
    #[serde(rename = "ref/resource")]
    Resource {
        /// Its URI template.
        uri: String,
    },
}

/// Holds what `completion/complete` asks: which argument of what, what the user typed so far, and
/// the values of the other arguments given already.
#[derive(Clone, Debug, Deserialize)]
pub struct CompleteRequest {
    #[serde(rename = "ref")]
    target: CompletionRef,
    argument: Argument,
    #[serde(default)]
    context: Option<Given>,
}

#[derive(Clone, Debug, Deserialize)]
struct Argument {
    name: String,
    value: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct Given {
    #[serde(default)]
    arguments: BTreeMap<String, String>,
}

impl CompleteRequest {
    /// Returns what is completed.
    pub fn target(&self) -> &CompletionRef {
        &self.target
    }

    /// Returns the argument's name.
    pub fn argument(&self) -> &str {
        &self.argument.name
    }

    /// Returns what the user typed so far.
    pub fn value(&self) -> &str {
        &self.argument.value
    }

    /// Returns the value of another argument given already.
    pub fn given(&self, name: &str) -> Option<&str> {
        self.context
            .as_ref()
            .and_then(|given| given.arguments.get(name))
            .map(String::as_str)
    }
}

/// Holds the values a completer offers, best first: at most 100 are sent, with the total and
/// whether there are more when the list is longer.
///
/// ```
/// use jrpc_mcp::Completion;
///
/// let typed = "py";
/// let languages = ["python", "pytorch", "rust"];
/// let completion = Completion::new(languages.iter().filter(|l| l.starts_with(typed)).map(|l| l.to_string()));
/// assert_eq!(completion.values(), ["python", "pytorch"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Completion {
    values: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<usize>,
    #[serde(rename = "hasMore", skip_serializing_if = "Option::is_none")]
    has_more: Option<bool>,
}

impl Completion {
    /// Returns a completion of these values (the first 100 of them).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values.into_iter().collect();
        let total = values.len();
        let more = total > MAX_VALUES;
        values.truncate(MAX_VALUES);
        Self {
            values,
            total: Some(total),
            has_more: Some(more),
        }
    }

    /// Returns the values sent.
    pub fn values(&self) -> &[String] {
        &self.values
    }
}

/// Registers `completion/complete`.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "completion/complete", complete)
}

/// `completion/complete`'s params.
#[derive(Deserialize)]
struct CompleteParams {
    #[serde(flatten)]
    request: CompleteRequest,
    #[serde(rename = "_meta", default)]
    meta: RequestMeta,
}

/// `completion/complete`'s result body.
#[derive(Serialize)]
struct Completed {
    completion: Completion,
}

async fn complete(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
) -> Result<impl Serialize, RpcError> {
    let CompleteParams { request, meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    if let CompletionRef::Prompt { name } = request.target()
        && !core.prompts.contains(name)
    {
        return Err(RpcError::invalid_params(format!("no prompt `{name}`")));
    }
    let completion = match &core.completer {
        Some(completer) => completer(request, ctx.with_extension(req.clone())).await?,
        None => Completion::default(),
    };
    Ok(req.stamp(Completed { completion }, None))
}
