//! Holds the MCP server's settings: their defaults, the builder, and the checks `build` makes.

use std::sync::Arc;
use std::time::Duration;

use jrpc_runtime::http::{HttpServer, HttpServerBuilder, check_path};
use jrpc_runtime::server::OriginPolicy;
use jrpc_runtime::{ConfigError, Context};

use super::endpoint::McpEndpoint;
use super::protected::ProtectedResource;
use super::server::McpServer;
use crate::data::{Mcp, at_least_one};
use crate::protocol::version::LEGACY_HTTP_VERSIONS;
use crate::store::{MemorySessions, SessionStore, SharedSessions};

impl std::fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("path", &self.path)
            .field("stateless", &self.stateless)
            .finish_non_exhaustive()
    }
}

/// Builds an [`McpServer`]: its path, the origins it takes, sessions (or none), and the limits,
/// checked by [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::Methods;
/// use jrpc_mcp::McpServer;
///
/// let server = McpServer::builder(Methods::new())
///     .path("/mcp")
///     .allowed_origins(["localhost", "https://app.example"])
///     .max_sessions(100)
///     .session_idle_timeout(Duration::from_secs(600))
///     .http(|http| http.max_message_size(64 * 1024))
///     .replay_buffer(64 * 1024)
///     .build()?;
/// # drop(server);
/// # Ok::<(), jrpc_runtime::ConfigError>(())
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct McpServerBuilder {
    mcp: Mcp,
    http: HttpServerBuilder,
    path: String,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    sse_retry: Option<Duration>,
    keep_alive: Option<Duration>,
    stateless: bool,
    max_sessions: usize,
    session_idle_timeout: Duration,
    replay_buffer: usize,
    max_in_flight: usize,
    protected: Option<ProtectedResource>,
    store: Option<SharedSessions>,
    identity: Identity,
}

/// Says which identity a session is bound to: the one that opened it, as
/// [`session_identity`](McpServerBuilder::session_identity) reads it.
#[derive(Clone)]
pub(crate) enum Identity {
    /// The request's bearer token, by its digest.
    Token,
    /// What this function reads from a request's context.
    Of(Arc<ReadIdentity>),
}

/// Reads the identity of a request from its context.
pub(crate) type ReadIdentity = dyn Fn(&Context) -> Option<String> + Send + Sync;

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Token => f.write_str("Identity::Token"),
            Self::Of(_) => f.write_str("Identity::Of(..)"),
        }
    }
}

/// Holds the checked settings the endpoint runs with (the rest are the HTTP server's).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) sse_retry: Option<Duration>,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) protocol_versions: Vec<String>,
    pub(crate) stateless: bool,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) replay_buffer: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) store: SharedSessions,
    pub(crate) identity: Identity,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("stateless", &self.stateless)
            .field("shared_store", &self.store.is_shared())
            .finish_non_exhaustive()
    }
}

impl McpServerBuilder {
    pub(crate) fn new(mcp: Mcp) -> Self {
        Self {
            http: HttpServer::builder(mcp.methods().clone()),
            mcp,
            path: "/mcp".to_owned(),
            allowed_origins: ["localhost", "127.0.0.1", "[::1]"]
                .map(String::from)
                .to_vec(),
            allowed_hosts: ["localhost", "127.0.0.1", "[::1]"]
                .map(String::from)
                .to_vec(),
            sse_retry: Some(Duration::from_secs(3)),
            keep_alive: Some(Duration::from_secs(15)),
            stateless: false,
            max_sessions: 1000,
            session_idle_timeout: Duration::from_secs(30 * 60),
            replay_buffer: 128 * 1024,
            max_in_flight: 128,
            protected: None,
            store: None,
            identity: Identity::Token,
        }
    }

    /// Keeps the legacy sessions in `store` (default: a [`MemorySessions`] of this server's
    /// own): a store that replicas share (with `redis`, `RedisStore`) lets any replica serve
    /// any session's request. The replicas must share the server's
    /// [`topics`](crate::McpBuilder::topics) too (`Topics::redis`): what goes between the
    /// replicas serving one session (the client's answers to calls, what a handler sends on
    /// the GET stream, resumptions) travels on them.
    pub fn session_store(mut self, store: impl SessionStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Sets how the identity a session is bound to is read from a request: a session answers
    /// only requests of the identity that opened it, others get `404` as for an unknown id.
    /// `identity` reads it from the request's context (the identity a
    /// [`bearer_auth`](HttpServerBuilder::bearer_auth) verifier gave is an extension there);
    /// `None` is no identity, and a session opened without one answers anyone. By default the
    /// identity is the request's bearer token (a digest of it): a client whose token changes
    /// during a session (a refresh) needs this set to what the token names (a user, a client
    /// id).
    ///
    /// ```
    /// use jrpc_runtime::Methods;
    /// use jrpc_runtime::http::BearerAuth;
    /// use jrpc_mcp::McpServer;
    ///
    /// #[derive(Clone)]
    /// struct User(String);
    ///
    /// let server = McpServer::builder(Methods::new())
    ///     .http(|http| http.bearer_auth(BearerAuth::tokens([("t0ken", User("ann".into()))])))
    ///     .session_identity(|ctx| ctx.extension::<User>().map(|user| user.0.clone()))
    ///     .build()?;
    /// # drop(server);
    /// # Ok::<(), jrpc_runtime::ConfigError>(())
    /// ```
    pub fn session_identity<F>(mut self, identity: F) -> Self
    where
        F: Fn(&Context) -> Option<String> + Send + Sync + 'static,
    {
        self.identity = Identity::Of(Arc::new(identity));
        self
    }

    /// Sets the path of the MCP endpoint (default `/mcp`); it must start with `/` and hold no query
    /// or fragment. Other paths are answered `404`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets the origins whose pages may reach the server (default `localhost`, `127.0.0.1` and
    /// `[::1]`, any scheme and port): each a host, which allows it with any scheme and port, or a
    /// whole origin (`https://app.example`), which allows that one. A request with another
    /// `Origin` is answered `403`, so that a page of another site cannot reach a local server
    /// through DNS rebinding; a request without `Origin` (not from a browser) is taken.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the names a request's `Host` may carry (default `localhost`, `127.0.0.1` and `[::1]`,
    /// any port); a request with another is answered `403`, so that a page of another site
    /// whose name a resolver points at a local server (DNS rebinding) cannot reach it. A server
    /// reached by a public name must list it; an empty list checks no `Host` at all.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Sets how long a legacy client waits before it reconnects to a stream the server closed (the
    /// SSE `retry` of each stream's priming event; default 3 s; `None` sends none).
    pub fn sse_retry(mut self, wait: Option<Duration>) -> Self {
        self.sse_retry = wait;
        self
    }

    /// Sets how long a long-lived event stream (a legacy session's GET stream, a modern
    /// `subscriptions/listen` stream) may stay quiet before the server sends a comment
    /// (`: keep-alive`) on it (default 15 s; `None` sends none), so that a proxy or balancer that
    /// closes idle connections keeps it open. Clients ignore comments.
    pub fn keep_alive(mut self, every: Option<Duration>) -> Self {
        self.keep_alive = every;
        self
    }

    /// Serves without sessions (default `false`): no `Mcp-Session-Id` is issued or asked for,
    /// each POST stands alone, `GET` and `DELETE` are answered `405`: for servers behind a load
    /// balancer that sends each request to any instance. A handler's calls to its client still
    /// work on an SSE answer when the client's POST of the answer reaches the same instance.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Sets how many sessions may be open at once (default 1 000); at the cap, sessions idle past
    /// [`session_idle_timeout`](Self::session_idle_timeout) are ended to make room, and if none
    /// is, `initialize` is answered `503` (`-32000`) rather than ending a session in use.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// Sets how long a session lives without a request (default 30 min); then its id gets `404`. A
    /// session whose GET stream a client reads, or with a request running, does not expire.
    pub fn session_idle_timeout(mut self, limit: Duration) -> Self {
        self.session_idle_timeout = limit;
        self
    }

    /// Sets how many bytes of sent events a session keeps to replay to a client that reconnects
    /// with `Last-Event-ID` (default 128 KiB; at the `max_sessions` default, 125 MiB in all). Older
    /// events are dropped; a replay asked from before them ends at once, and an event larger
    /// than the buffer is not kept. Zero keeps none (and events carry no ids).
    pub fn replay_buffer(mut self, bytes: usize) -> Self {
        self.replay_buffer = bytes;
        self
    }

    /// Sets how many requests of one session may run at once (default 128); past it a request is
    /// answered `-32000` at once. A session's requests run on when their client goes (it may
    /// resume them), so this is what bounds them.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// Serves the endpoint's metadata as an OAuth protected resource (RFC 9728) at
    /// `/.well-known/oauth-protected-resource` and at that path followed by the resource's
    /// (`/.well-known/oauth-protected-resource/mcp` for `https://host/mcp`), to anyone, and names
    /// its URL in every `401` (`WWW-Authenticate: Bearer resource_metadata="<url>"`), so that a
    /// client finds the authorization server to get a token from. It needs a
    /// [`bearer_auth`](HttpServerBuilder::bearer_auth) set with [`http`](Self::http): the tokens
    /// are the verifier's to check.
    ///
    /// ```
    /// use jrpc_runtime::Methods;
    /// use jrpc_runtime::http::BearerAuth;
    /// use jrpc_mcp::{McpServer, ProtectedResource};
    ///
    /// let server = McpServer::builder(Methods::new())
    ///     .http(|http| http.bearer_auth(BearerAuth::verifier(|token| (token == "t0ken").then_some(()))))
    ///     .protected_resource(
    ///         ProtectedResource::new("https://mcp.example.com/mcp")
    ///             .authorization_server("https://auth.example.com"),
    ///     )
    ///     .build()?;
    /// # drop(server);
    /// # Ok::<(), jrpc_runtime::ConfigError>(())
    /// ```
    pub fn protected_resource(mut self, metadata: ProtectedResource) -> Self {
        self.protected = Some(metadata);
        self
    }

    /// Sets what the endpoint shares with [`HttpServer`]'s, each as
    /// [`HttpServerBuilder`] has it (its default, its check): the largest message
    /// (`max_message_size`, default 10 MiB); what one stream (a request's SSE answer, or a
    /// session's GET stream) may hold for its client, the watermark `max_buffered` (default
    /// 256 KiB) and `queue` messages (default 1 024), past which a push closes the stream's
    /// connection; the
    /// `write_timeout` (default 30 s); `call_timeout`, how long a handler's call to its client
    /// waits (default 60 s); `max_connections` (default 10 000); the header and body read
    /// timeouts; `handler_timeout` and `batches` of the table; `drain_timeout` (default 30 s),
    /// sessions ending when a shutdown begins. Its paths, WebSocket settings and `map_context`
    /// are not used.
    ///
    /// ```
    /// use jrpc_runtime::Methods;
    /// use jrpc_mcp::McpServer;
    ///
    /// let err = McpServer::builder(Methods::new())
    ///     .http(|http| http.max_buffered(0))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.key(), "max_buffered");
    /// ```
    pub fn http(mut self, settings: impl FnOnce(HttpServerBuilder) -> HttpServerBuilder) -> Self {
        self.http = settings(self.http);
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range: a `path` not starting with
    /// `/` or holding `?`, `#` or whitespace; an origin that is empty; a zero `max_sessions`,
    /// `session_idle_timeout` or `max_in_flight`; a zero `keep_alive`; `protected_resource` with an identifier that
    /// is not an absolute `http(s)://` URL without a fragment, or without a `bearer_auth`; an
    /// [`http`](Self::http) setting, for the reasons [`HttpServerBuilder::build`] gives.
    pub fn build(self) -> Result<McpServer, ConfigError> {
        check_path("path", &self.path)?;
        if self.allowed_origins.iter().any(|o| o.trim().is_empty()) {
            return Err(ConfigError::new("allowed_origins", "an origin is empty"));
        }
        if self.allowed_hosts.iter().any(|h| h.trim().is_empty()) {
            return Err(ConfigError::new("allowed_hosts", "a host is empty"));
        }
        at_least_one("max_sessions", self.max_sessions)?;
        if self.session_idle_timeout.is_zero() {
            return Err(ConfigError::new(
                "session_idle_timeout",
                "must be above zero",
            ));
        }
        at_least_one("max_in_flight", self.max_in_flight)?;
        if self.keep_alive.is_some_and(|every| every.is_zero()) {
            return Err(ConfigError::new("keep_alive", "must be above zero"));
        }
        let settings = Settings {
            sse_retry: self.sse_retry,
            keep_alive: self.keep_alive,
            protocol_versions: LEGACY_HTTP_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            stateless: self.stateless,
            max_sessions: self.max_sessions,
            session_idle_timeout: self.session_idle_timeout,
            replay_buffer: self.replay_buffer,
            max_in_flight: self.max_in_flight,
            store: self
                .store
                .unwrap_or_else(|| Arc::new(MemorySessions::new())),
            identity: self.identity,
        };
        // MCP's lists are exact: no same-origin rule, and no host beyond those listed (an
        // empty list checks none).
        let mut policy = OriginPolicy::new()
            .allow_same_origin(false)
            .allow_origins(self.allowed_origins);
        policy = match self.allowed_hosts.is_empty() {
            true => policy.allow_any_host(),
            false => policy.allow_hosts(self.allowed_hosts),
        };
        let endpoint = Arc::new(McpEndpoint::new(self.mcp, settings));
        let mut http = self
            .http
            .endpoints_only()
            .origin_policy(policy)
            .endpoint(self.path, Arc::clone(&endpoint));
        if let Some(protected) = &self.protected {
            let metadata = protected.served()?;
            let Some(auth) = http.get_bearer_auth() else {
                return Err(ConfigError::new(
                    "protected_resource",
                    "needs `bearer_auth` (set with `http`): the verifier checks the tokens",
                ));
            };
            let auth = auth.clone().resource_metadata(&metadata.url);
            let [well_known, own] = metadata.paths.clone();
            let metadata = Arc::new(metadata);
            http = http
                .bearer_auth(auth)
                .endpoint(well_known.clone(), Arc::clone(&metadata));
            if own != well_known {
                http = http.endpoint(own, metadata);
            }
        }
        Ok(McpServer::new(http.build()?, endpoint))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jrpc_runtime::Methods;

    fn key_of(builder: McpServerBuilder) -> &'static str {
        builder.build().map(drop).unwrap_err().key()
    }

    #[test]
    fn each_bad_setting_is_named() {
        let b = || McpServer::builder(Methods::new());
        assert_eq!(key_of(b().path("mcp")), "path");
        assert_eq!(key_of(b().allowed_origins([" "])), "allowed_origins");
        assert_eq!(key_of(b().allowed_hosts([""])), "allowed_hosts");
        assert_eq!(key_of(b().max_sessions(0)), "max_sessions");
        assert_eq!(
            key_of(b().session_idle_timeout(Duration::ZERO)),
            "session_idle_timeout"
        );
        assert_eq!(key_of(b().max_in_flight(0)), "max_in_flight");
        assert_eq!(key_of(b().keep_alive(Some(Duration::ZERO))), "keep_alive");
        assert!(b().keep_alive(None).build().is_ok());
        assert!(b().replay_buffer(10).build().is_ok());
        assert!(b().build().is_ok());
        assert_eq!(key_of(b().http(|h| h.max_buffered(0))), "max_buffered");
        assert_eq!(key_of(b().http(|h| h.queue(0))), "queue");
        assert_eq!(
            key_of(b().http(|h| h.call_timeout(Some(Duration::ZERO)))),
            "call_timeout"
        );
        assert_eq!(
            key_of(b().http(|h| h.max_connections(0))),
            "max_connections"
        );
        assert!(b().replay_buffer(0).stateless(true).build().is_ok());
    }
}
