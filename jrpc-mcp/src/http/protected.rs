//! Serves the protected resource's metadata (RFC 9728): where an MCP client learns which
//! authorization servers issue the tokens the endpoint asks for.

use ::http::header::ALLOW;
use ::http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Bytes;
use jrpc_runtime::ConfigError;
use jrpc_runtime::http::reply::{self, ResponseBody, json, refusal};
use jrpc_runtime::http::{Endpoint, EndpointRequest, RequestBody};

/// The well-known path of the metadata (RFC 9728, section 3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Describes an MCP server as an OAuth protected resource (RFC 9728), for
/// [`McpServerBuilder::protected_resource`](super::McpServerBuilder::protected_resource): its
/// identifier (the endpoint's URL as clients reach it) and the authorization servers whose tokens
/// it takes. Tokens are checked by the [`BearerAuth`](jrpc_runtime::http::BearerAuth) verifier given to
/// `http(|h| h.bearer_auth(..))`.
///
/// ```
/// use jrpc_mcp::ProtectedResource;
///
/// let metadata = ProtectedResource::new("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes(["tools:read", "tools:call"]);
/// # drop(metadata);
/// ```
#[derive(Clone, Debug)]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
    name: Option<String>,
    documentation: Option<String>,
}

impl ProtectedResource {
    /// Returns the metadata of the resource whose identifier is `resource`: the endpoint's absolute
    /// URL (`https://host/mcp`), without a fragment.
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes: Vec::new(),
            name: None,
            documentation: None,
        }
    }

    /// Adds an authorization server (its issuer URL) whose tokens the resource takes
    /// (`authorization_servers`).
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Sets the scopes a client may ask for (`scopes_supported`).
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets a name for people to read (`resource_name`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the URL of its documentation for developers (`resource_documentation`).
    #[must_use]
    pub fn documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// Checks the identifier and makes the document, the paths it is served at and its URL.
    pub(crate) fn served(&self) -> Result<Metadata, ConfigError> {
        let invalid = |why: &str| {
            Err(ConfigError::new(
                "protected_resource",
                format!("`{}` {why}", self.resource),
            ))
        };
        let Some((scheme, rest)) = self.resource.split_once("://") else {
            return invalid("is not an absolute URL (`https://host/path`)");
        };
        if !matches!(scheme, "https" | "http") || rest.is_empty() {
            return invalid("is not an `https://` (or `http://`) URL");
        }
        if rest.contains('#') {
            return invalid("has a fragment");
        }
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = path.trim_end_matches('/');
        // Inserted between the host and the path, as RFC 9728 (section 3.1) has it.
        let own = format!("{WELL_KNOWN}{path}");
        let url = format!("{scheme}://{authority}{own}");
        let mut document = serde_json::json!({
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
        });
        if !self.authorization_servers.is_empty() {
            document["authorization_servers"] = self.authorization_servers.clone().into();
        }
        if !self.scopes.is_empty() {
            document["scopes_supported"] = self.scopes.clone().into();
        }
        if let Some(name) = &self.name {
            document["resource_name"] = name.clone().into();
        }
        if let Some(documentation) = &self.documentation {
            document["resource_documentation"] = documentation.clone().into();
        }
        Ok(Metadata {
            paths: [WELL_KNOWN.into(), own.into()],
            url,
            document: Bytes::from(document.to_string()),
        })
    }
}

/// Holds the metadata as it is served: to anyone, without a token (a client reads it to learn where
/// to get one), at both its paths.
#[derive(Clone, Debug)]
pub(crate) struct Metadata {
    /// The well-known path, and the one with the resource's path after it (the same when the
    /// resource has none): a client may ask either.
    pub(crate) paths: [Box<str>; 2],
    /// The URL the challenges name (`resource_metadata`).
    pub(crate) url: String,
    document: Bytes,
}

impl Endpoint for Metadata {
    fn serve<B: RequestBody>(
        &self,
        req: Request<B>,
        _request: EndpointRequest,
    ) -> impl Future<Output = Response<ResponseBody>> + Send + 'static {
        let method = req.method();
        let res = if method != Method::GET && method != Method::HEAD {
            let mut res = refusal(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("`{method}` is not allowed here; allowed: GET"),
            );
            res.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET"));
            reply::unread(&req, res)
        } else {
            json(StatusCode::OK, self.document.clone())
        };
        std::future::ready(res)
    }

    fn public(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_puts_the_well_known_path_before_the_resource_path() {
        let served = ProtectedResource::new("https://api.example:8443/v1/mcp/")
            .served()
            .unwrap();
        assert_eq!(
            served.url,
            "https://api.example:8443/.well-known/oauth-protected-resource/v1/mcp"
        );
        assert_eq!(
            served.paths.each_ref().map(|p| &**p),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/v1/mcp"
            ]
        );
        let root = ProtectedResource::new("https://api.example")
            .served()
            .unwrap();
        assert_eq!(
            root.url,
            "https://api.example/.well-known/oauth-protected-resource"
        );
        for bad in [
            "api.example/mcp",
            "ftp://api.example",
            "https://a/mcp#x",
            "https://",
        ] {
            let err = ProtectedResource::new(bad).served().unwrap_err();
            assert_eq!(err.key(), "protected_resource", "{bad}");
        }
    }
}
