//! Holds the server's settings: their defaults, the builder, and the checks `build` makes.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use super::auth::BearerAuth;
use super::endpoint::{Endpoint, mounted};
use super::layer::ServerLayer;
use super::server::{HttpServer, Mount, Settings};
use super::service::{Admission, ContextHook, RpcService};
use super::sse::stream_config;
use crate::dispatch::{Batches, Context, Methods};
use crate::error::ConfigError;
use crate::error::check;
use crate::limits::ServerBudget;
use crate::limits::{Limits, limit_setters};
use crate::peer::PeerConfig;
#[cfg(feature = "tls")]
use crate::server::ServerTls;
#[cfg(feature = "ws")]
use crate::server::ShutdownHandle;
#[cfg(feature = "ws")]
use crate::server::Topics;
use crate::server::{ConnectionCap, OriginPolicy, Shutdown};
#[cfg(feature = "ws")]
use crate::ws::{WsServer, WsSettings};

/// Sets how long the headers and the body of a request may each take by default: see
/// [`HttpServerBuilder::header_read_timeout`].
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Sets how long a connection stays idle before it frees its buffers by default: see
/// [`HttpServerBuilder::free_idle_after`].
const FREE_IDLE_AFTER: Duration = Duration::from_millis(50);

/// Builds an [`HttpServer`]: paths, limits, the drain budget, and the WebSocket path's settings
/// and topics registry, checked by [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use jrpc_runtime::{Batches, Methods};
/// use jrpc_runtime::http::HttpServer;
///
/// let server = HttpServer::builder(Methods::new())
///     .rpc_path("/api")
///     .max_message_size(1024 * 1024)
///     .max_buffered(4 * 1024 * 1024)
///     .write_timeout(Some(Duration::from_secs(10)))
///     .handler_timeout(Some(Duration::from_secs(10)))
///     .batches(Batches::UpTo(50))
///     .build()
///     .expect("valid settings");
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct HttpServerBuilder {
    methods: Methods,
    rpc_path: String,
    #[cfg(feature = "ws")]
    ws_path: String,
    /// The limits of each connection: its `POST`s, SSE answers and WebSocket path.
    limits: Limits,
    /// The server's byte budget, in bytes (`None`: the default).
    server_budget: Option<usize>,
    max_connections: usize,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    free_idle_after: Option<Duration>,
    /// `None`: leave the table's own setting.
    handler_timeout: Option<Option<Duration>>,
    /// `None`: leave the table's own setting.
    batches: Option<Batches>,
    /// `None`: leave the table's own setting.
    batch_concurrency: Option<usize>,
    drain_timeout: Duration,
    context_hook: Option<ContextHook>,
    auth: Option<BearerAuth>,
    policy: OriginPolicy,
    always_send_request_id: bool,
    #[cfg(feature = "ws")]
    websocket: WsSettings,
    #[cfg(feature = "ws")]
    topics: Option<Topics>,
    #[cfg(feature = "tls")]
    tls: Option<ServerTls>,
    /// The protocols' endpoints mounted beside the JSON-RPC and WebSocket paths.
    endpoints: Vec<Mount>,
    /// Whether the JSON-RPC and WebSocket paths are served.
    own_paths: bool,
    /// The tower layer every request goes through.
    layer: Option<ServerLayer>,
}

impl HttpServer {
    /// Returns a builder serving `methods`, with every setting at its default.
    pub fn builder(methods: Methods) -> HttpServerBuilder {
        HttpServerBuilder::new(methods)
    }
}

impl HttpServerBuilder {
    fn new(methods: Methods) -> Self {
        Self {
            methods,
            rpc_path: "/rpc".to_owned(),
            #[cfg(feature = "ws")]
            ws_path: "/ws".to_owned(),
            limits: Limits::DEFAULT,
            server_budget: None,
            max_connections: 10_000,
            header_read_timeout: READ_TIMEOUT,
            body_read_timeout: READ_TIMEOUT,
            free_idle_after: Some(FREE_IDLE_AFTER),
            handler_timeout: None,
            batches: None,
            batch_concurrency: None,
            drain_timeout: Duration::from_secs(30),
            context_hook: None,
            auth: None,
            policy: OriginPolicy::new(),
            always_send_request_id: false,
            #[cfg(feature = "ws")]
            websocket: WsSettings::default(),
            #[cfg(feature = "ws")]
            topics: None,
            #[cfg(feature = "tls")]
            tls: None,
            endpoints: Vec::new(),
            own_paths: true,
            layer: None,
        }
    }

    /// Sets the server's layer (see [`layer`](Self::layer)).
    pub(super) fn set_layer(mut self, layer: ServerLayer) -> Self {
        self.layer = Some(layer);
        self
    }

    /// Mounts `endpoint` at `path` (which must start with `/` and hold no query or fragment,
    /// and differ from every other path the server serves): a protocol carried over HTTP,
    /// served beside the JSON-RPC and WebSocket paths with the server's limits, budget, bearer
    /// authentication and shutdown ([`Endpoint`]). The same endpoint may be mounted at several
    /// paths.
    pub fn endpoint(mut self, path: impl Into<String>, endpoint: impl Endpoint) -> Self {
        self.endpoints.push(Mount {
            path: path.into().into(),
            endpoint: mounted(endpoint),
        });
        self
    }

    /// Serves the mounted [`endpoint`](Self::endpoint)s alone: no JSON-RPC path and no
    /// WebSocket path (`404` there, as on any other path); for a protocol's own server, such as
    /// MCP's, built on this one.
    pub fn endpoints_only(mut self) -> Self {
        self.own_paths = false;
        self
    }

    /// Sets the path that takes JSON-RPC `POST`s (default `/rpc`). It must
    /// start with `/` and hold no query or fragment.
    ///
    /// Only [`HttpServer::serve`] routes by path; an [`RpcService`](super::RpcService) mounted in
    /// another router answers whatever path the router sends it.
    pub fn rpc_path(mut self, path: impl Into<String>) -> Self {
        self.rpc_path = path.into();
        self
    }

    /// Sets the path of WebSocket upgrades (default `/ws`), on the same listener. It may equal
    /// [`rpc_path`](Self::rpc_path): requests are then told apart by method (`GET` upgrades,
    /// `POST` calls).
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn ws_path(mut self, path: impl Into<String>) -> Self {
        self.ws_path = path.into();
        self
    }

    limit_setters!(limits);

    /// Sets how many bytes the server may hold for all its clients together (default: a quarter of
    /// the machine's memory, at least 64 MiB and at most 1 GiB): request bodies being read, and
    /// answers and pushes not yet written, on every connection. When it is spent, new bodies
    /// and messages wait (their sockets are not read) until clients take what waits for them or
    /// are cut at `write_timeout`; nothing is refused for it. Calls already running finish, so
    /// the server holds at most this plus their answers. Its WebSocket path shares it. See the
    /// [`server`](crate::server) module docs, "Memory".
    pub fn server_budget(mut self, bytes: usize) -> Self {
        self.server_budget = Some(bytes);
        self
    }

    /// Sets how many connections are served at once (default 10 000). At the cap the server stops
    /// accepting until a connection closes; new clients wait in the kernel's backlog rather
    /// than being refused.
    ///
    /// The cap exists so that a flood of connections turns into a queue in the kernel's accept
    /// backlog instead of memory growth and `EMFILE` failures inside the process. 10 000 is well
    /// above what one instance holds in normal service (browsers open at most six connections
    /// per origin, proxies and clients pool theirs), while a cap of 100 or so, as some frameworks
    /// ship, is hit by an ordinary load balancer's pool and then stalls healthy clients. Raise
    /// the process's descriptor limit (`ulimit -n`) above the cap.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// Sets how long a client may take to send a request's headers (default 30 s); past it the
    /// connection is closed. This bounds slow-header ("slowloris") clients. Between two requests
    /// of a kept HTTP/1.1 connection it runs from the end of the first as the connection's timer
    /// sees it, which may be up to a quarter of this (at most a second) after the end itself.
    pub fn header_read_timeout(mut self, limit: Duration) -> Self {
        self.header_read_timeout = limit;
        self
    }

    /// Sets how long an HTTP/1.1 keep-alive connection stays idle between two requests before it
    /// frees its buffers (default 50 ms; `None` keeps them for as long as the connection is
    /// open). Freed, it holds its socket and its task, about 2 KiB, where hyper keeps 16 KiB of
    /// buffers and more; the client's next request builds them again, a few microseconds of CPU.
    /// A connection busier than that never frees them, and pays nothing for the setting: the
    /// connection's timer looks at it a few times a second at most. The idle time is measured by
    /// that timer, so a connection is freed between once and about twice this long after it
    /// went idle (after a busy stretch, up to a second more: the timer then looks less often).
    /// HTTP/2 connections keep their buffers.
    pub fn free_idle_after(mut self, idle: Option<Duration>) -> Self {
        self.free_idle_after = idle;
        self
    }

    /// Sets how long a client may take to send a request's body once its headers are in (default
    /// 30 s); past it the request is answered `408` and the
    /// connection closed. This bounds slow-body clients, which would otherwise hold a connection
    /// slot (and delay a shutdown's drain) for as long as they trickle.
    pub fn body_read_timeout(mut self, limit: Duration) -> Self {
        self.body_read_timeout = limit;
        self
    }

    /// Sets the table's handler timeout ([`Methods::handler_timeout`]): a request (a whole batch shares
    /// one deadline) running longer is answered `-32603`. `None` lets handlers run as long as they
    /// take. Left unset, the table keeps its own setting (none, unless it was given one).
    pub fn handler_timeout(mut self, limit: Option<Duration>) -> Self {
        self.handler_timeout = Some(limit);
        self
    }

    /// Sets the table's batch policy ([`Methods::batches`]). Left unset, the table keeps its own
    /// setting (batches of up to 1 000, unless it was given another).
    pub fn batches(mut self, batches: Batches) -> Self {
        self.batches = Some(batches);
        self
    }

    /// Sets how many elements of one batch run at once ([`Methods::batch_concurrency`]): a
    /// batch no larger runs all together, a larger one starts each next element as an earlier one
    /// finishes. Left unset, the table keeps its own setting (128, unless it was given another).
    pub fn batch_concurrency(mut self, max: usize) -> Self {
        self.batch_concurrency = Some(max);
        self
    }

    /// Sets how long [`ShutdownHandle::shutdown`] waits for in-flight calls and open connections
    /// (default 30 s, the grace period most orchestrators, Kubernetes and systemd among them,
    /// give a process between `SIGTERM` and `SIGKILL`). Zero stops at once.
    pub fn drain_timeout(mut self, budget: Duration) -> Self {
        self.drain_timeout = budget;
        self
    }

    /// Lets the application add to each request's [`Context`] from the HTTP request, typically
    /// what an authentication layer in front (axum or tower middleware) left in the request's
    /// extensions:
    ///
    /// ```
    /// use jrpc_runtime::Methods;
    /// use jrpc_runtime::http::HttpServer;
    ///
    /// #[derive(Clone)]
    /// struct User(String);
    ///
    /// let server = HttpServer::builder(Methods::new())
    ///     .map_context(|req, ctx| match req.extensions.get::<User>() {
    ///         Some(user) => ctx.with_extension(user.clone()),
    ///         None => ctx,
    ///     })
    ///     .build();
    /// # assert!(server.is_ok());
    /// ```
    ///
    /// It runs once per request, after the body is read, with a context that already has the
    /// transport, the peer's address and the request tag; the headers are added after it (read
    /// them from `req.headers`). For a WebSocket it runs
    /// once, on the upgrade request, and what it returns is the context of every call on that
    /// connection.
    pub fn map_context<F>(mut self, hook: F) -> Self
    where
        F: Fn(&::http::request::Parts, Context) -> Context + Send + Sync + 'static,
    {
        self.context_hook = Some(ContextHook(Arc::new(hook)));
        self
    }

    /// Asks every request on the RPC path (`POST`s, SSE answers) and every WebSocket upgrade for
    /// a bearer token that `auth` takes (default: none asked): without one, a request is
    /// answered `401` with `WWW-Authenticate: Bearer` before its body is read, and the identity
    /// the token gives goes in the request's [`Context`] (over WebSocket, the connection's), before
    /// [`map_context`](Self::map_context) runs. See [`BearerAuth`]; per-method rights are a call
    /// layer's ([`Authorize`](crate::layers::Authorize)). An [`RpcService`] mounted in another
    /// router asks for it too.
    pub fn bearer_auth(mut self, auth: BearerAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Decides which browser pages and `Host` names may reach the server (default
    /// [`OriginPolicy::new`]: pages of the server's own origin; on a server bound to a loopback
    /// address, loopback `Host` names only). A request it refuses (on the JSON-RPC path, the
    /// WebSocket path or an endpoint that is not [`public`](super::Endpoint::public)) is
    /// answered `403` before its body is read and before its bearer token is looked at; a client
    /// that sends no `Origin` (not a browser) is not refused for it. A server that pages of
    /// other origins call lists them ([`OriginPolicy::allow_origins`]); the same list is the
    /// one to give a CORS layer ([`layer`](Self::layer)).
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Returns the bearer authentication set with [`bearer_auth`](Self::bearer_auth), if any:
    /// what a protocol's builder on this one looks at.
    pub fn get_bearer_auth(&self) -> Option<&BearerAuth> {
        self.auth.as_ref()
    }

    /// Sets whether every reply carries an `x-request-id` (default `false`). Each request is
    /// tagged: with its own `x-request-id` when it has a sensible one, else with 16 hex digits made
    /// up here; the tag is in the request's [`Context`] and `tracing` span either way. A reply
    /// carries the request's own tag back; with `true`, a made-up one too, so that a client that
    /// sends none can still quote the tag the server's logs know its request by.
    ///
    /// Off by default, as in proxies that make up request ids (Envoy's
    /// `always_set_request_id_in_response`): a tag the client did not ask for is news to few
    /// clients, and setting one is a noticeable part of a small call's cost.
    pub fn always_send_request_id(mut self, always: bool) -> Self {
        self.always_send_request_id = always;
        self
    }

    /// Sets each connection's settings on the WebSocket path (default: [`WsSettings::default`]);
    /// the drain budget is this builder's [`drain_timeout`](Self::drain_timeout).
    ///
    /// ```
    /// use jrpc_runtime::Methods;
    /// use jrpc_runtime::http::HttpServer;
    /// use jrpc_runtime::ws::WsSettings;
    ///
    /// let err = HttpServer::builder(Methods::new())
    ///     .websocket(WsSettings::new().queue(0))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.key(), "queue");
    /// ```
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn websocket(mut self, settings: WsSettings) -> Self {
        self.websocket = settings;
        self
    }

    /// Sets the registry that WebSocket connections subscribe to (see [`Topics`]); share one
    /// between the server and the code that publishes. Left unset, the server makes its own
    /// ([`HttpServer::topics`]).
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn topics(mut self, topics: Topics) -> Self {
        self.topics = Some(topics);
        self
    }

    /// Serves TLS (default: none, plain HTTP): `https://` on the RPC path and `wss://` on the
    /// WebSocket path, HTTP/2 or HTTP/1.1 as ALPN chooses. PEM files are read and checked by
    /// [`build`](Self::build); see [`ServerTls`].
    ///
    /// ```no_run
    /// use jrpc_runtime::Methods;
    /// use jrpc_runtime::http::HttpServer;
    /// use jrpc_runtime::server::ServerTls;
    ///
    /// let err = HttpServer::builder(Methods::new())
    ///     .tls(ServerTls::pem_files("missing.pem", "missing-key.pem"))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.key(), "tls");
    /// ```
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Checks the settings and builds the server.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting that is out of range: a path not starting with
    /// `/` or holding `?`, `#` or whitespace; a zero `max_message_size`, `header_read_timeout`
    /// or `body_read_timeout`; a zero `free_idle_after` (use `None` to keep the buffers); a
    /// `max_buffered` below twice `max_message_size`; a
    /// `max_connections` of zero or above what a semaphore holds; a `queue` of zero or above
    /// what a Tokio channel holds; a zero `handler_timeout`, `call_timeout` or `write_timeout`
    /// (use `None` for no limit); `batches` of `Batches::UpTo(0)` (use
    /// `Batches::Refused`); a zero `batch_concurrency`; a [`websocket`](Self::websocket) setting, named as its
    /// [`WsSettings`] method, for the reasons given there; `tls` when a TLS file cannot be read
    /// or its certificate and key are refused.
    pub fn build(self) -> Result<HttpServer, ConfigError> {
        check_path("rpc_path", &self.rpc_path)?;
        #[cfg(feature = "ws")]
        check_path("ws_path", &self.ws_path)?;
        self.check_endpoints()?;
        let parts = self.checked()?;
        let builder = *parts.rest;
        // A handshake is bounded as the headers after it are.
        #[cfg(feature = "tls")]
        let tls = builder
            .tls
            .as_ref()
            .map(|tls| tls.acceptor(parts.header_read_timeout))
            .transpose()?;
        let methods = parts.methods;
        let shutdown = Shutdown::new(parts.drain_timeout);
        // One shutdown for both: the WebSocket side drains on the same budget, at the same time.
        #[cfg(feature = "ws")]
        let ws = WsServer::builder(methods.clone())
            .settings(builder.websocket)
            .base_limits(builder.limits)
            .budget_with(Arc::clone(&parts.budget))
            .topics(builder.topics.unwrap_or_default())
            .shutdown_with(&ShutdownHandle::new(Arc::clone(&shutdown)))
            .build()?;
        let endpoint = RpcService::new(
            methods,
            parts.max_message_size,
            parts.budget,
            parts.body_read_timeout,
            shutdown,
            Admission {
                auth: parts.auth,
                context_hook: builder.context_hook,
                always_send_request_id: builder.always_send_request_id,
                policy: builder.policy,
            },
            parts.streams,
        );
        let own = builder.own_paths;
        let settings = Settings {
            rpc_path: own.then(|| builder.rpc_path.into()),
            #[cfg(feature = "ws")]
            ws_path: own.then(|| builder.ws_path.into()),
            endpoints: builder.endpoints.into(),
            layer: builder.layer,
            header_read_timeout: parts.header_read_timeout,
            free_idle_after: parts.free_idle_after,
            write_timeout: parts.write_timeout,
        };
        Ok(HttpServer::new(
            endpoint,
            settings,
            ConnectionCap::new(parts.max_connections),
            #[cfg(feature = "ws")]
            ws,
            #[cfg(feature = "tls")]
            tls,
        ))
    }
}

impl HttpServerBuilder {
    /// Checks the endpoints' paths: each a path, none served twice.
    fn check_endpoints(&self) -> Result<(), ConfigError> {
        let mut taken: Vec<&str> = Vec::new();
        if self.own_paths {
            taken.push(&self.rpc_path);
            #[cfg(feature = "ws")]
            taken.push(&self.ws_path);
        }
        for mount in &self.endpoints {
            check_path("endpoint", &mount.path)?;
            if taken.contains(&&*mount.path) {
                return Err(ConfigError::new(
                    "endpoint",
                    format!("`{}` is served twice", mount.path),
                ));
            }
            taken.push(&mount.path);
        }
        Ok(())
    }
}

/// Holds the settings every server on HTTP runs with, checked, and the builder's others.
pub(crate) struct Checked {
    /// The table, its handler timeout and batch policy set.
    pub(crate) methods: Methods,
    pub(crate) max_message_size: usize,
    pub(crate) write_timeout: Option<Duration>,
    /// The byte budget the server's connections share.
    pub(crate) budget: Arc<ServerBudget>,
    /// The connection settings of an SSE answer.
    pub(crate) streams: PeerConfig,
    pub(crate) max_connections: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) body_read_timeout: Duration,
    pub(crate) free_idle_after: Option<Duration>,
    pub(crate) drain_timeout: Duration,
    /// What every request must carry, when set.
    pub(crate) auth: Option<BearerAuth>,
    /// The builder, for what only the HTTP server reads (paths, WebSocket, `map_context`).
    rest: Box<HttpServerBuilder>,
}

impl HttpServerBuilder {
    /// Checks every setting but the paths and the WebSocket's (those [`build`](Self::build)
    /// checks), naming the first out of range as `build` does.
    pub(crate) fn checked(mut self) -> Result<Checked, ConfigError> {
        let limits = self.limits;
        limits.check()?;
        let budget_bytes = self
            .server_budget
            .unwrap_or_else(ServerBudget::default_limit);
        check::at_least_one("server_budget", budget_bytes)?;
        let budget = ServerBudget::new(budget_bytes);
        let mut streams = stream_config(limits)?;
        streams.server_budget = Some(Arc::clone(&budget));
        check::permits("max_connections", self.max_connections)?;
        check::limit("header_read_timeout", self.header_read_timeout)?;
        check::limit("body_read_timeout", self.body_read_timeout)?;
        check::optional_limit("free_idle_after", self.free_idle_after)?;
        check::optional_limit("handler_timeout", self.handler_timeout.flatten())?;
        if self.batches == Some(Batches::UpTo(0)) {
            return Err(ConfigError::new(
                "batches",
                "`Batches::UpTo(0)` takes no batch; use `Batches::Refused`",
            ));
        }
        if let Some(max) = self.batch_concurrency {
            check::at_least_one("batch_concurrency", max)?;
        }
        let mut methods = std::mem::take(&mut self.methods);
        if let Some(max) = self.batch_concurrency.and_then(NonZeroUsize::new) {
            methods.batch_concurrency(max);
        }
        if let Some(limit) = self.handler_timeout {
            methods.handler_timeout(limit);
        }
        if let Some(batches) = self.batches {
            methods.batches(batches);
        }
        Ok(Checked {
            methods,
            max_message_size: limits.get_max_message_size(),
            write_timeout: limits.get_write_timeout(),
            budget,
            streams,
            max_connections: self.max_connections,
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            free_idle_after: self.free_idle_after,
            drain_timeout: self.drain_timeout,
            auth: self.auth.take(),
            rest: Box::new(self),
        })
    }
}

/// Checks that `path` is one a server can route by (it is compared byte for byte with the
/// request's, so it must look like one): it starts with `/` and holds no query, fragment,
/// whitespace or control character.
///
/// # Errors
///
/// [`ConfigError`] naming `key`.
pub fn check_path(key: &'static str, path: &str) -> Result<(), ConfigError> {
    if !path.starts_with('/') {
        return Err(ConfigError::new(
            key,
            format!("`{path}` must start with `/`"),
        ));
    }
    if path.contains(|c: char| c == '?' || c == '#' || c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::new(
            key,
            format!("`{path}` must be a bare path, without query, fragment or whitespace"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(builder: HttpServerBuilder) -> &'static str {
        builder.build().map(drop).unwrap_err().key()
    }

    #[test]
    fn each_bad_setting_is_named() {
        let b = || HttpServer::builder(Methods::new());
        assert_eq!(key_of(b().rpc_path("rpc")), "rpc_path");
        assert_eq!(key_of(b().ws_path("/ws?x")), "ws_path");
        assert_eq!(key_of(b().max_message_size(0)), "max_message_size");
        assert_eq!(key_of(b().max_buffered(0)), "max_buffered");
        assert_eq!(
            key_of(b().write_timeout(Some(Duration::ZERO))),
            "write_timeout"
        );
        assert_eq!(key_of(b().max_connections(0)), "max_connections");
        assert_eq!(key_of(b().queue(0)), "queue");
        assert_eq!(
            key_of(b().call_timeout(Some(Duration::ZERO))),
            "call_timeout"
        );
        assert_eq!(
            key_of(b().header_read_timeout(Duration::ZERO)),
            "header_read_timeout"
        );
        assert_eq!(
            key_of(b().free_idle_after(Some(Duration::ZERO))),
            "free_idle_after"
        );
        assert_eq!(
            key_of(b().handler_timeout(Some(Duration::ZERO))),
            "handler_timeout"
        );
        assert_eq!(key_of(b().batches(Batches::UpTo(0))), "batches");
        assert_eq!(key_of(b().batch_concurrency(0)), "batch_concurrency");
        let ws = WsSettings::new;
        assert_eq!(
            key_of(b().websocket(ws().max_in_flight(0))),
            "max_in_flight"
        );
        assert_eq!(
            key_of(b().websocket(ws().idle_timeout(Some(Duration::from_secs(1))))),
            "idle_timeout"
        );
        assert!(
            b().handler_timeout(None)
                .batches(Batches::Refused)
                .batch_concurrency(1)
                .drain_timeout(Duration::ZERO)
                .build()
                .is_ok()
        );
    }
}
