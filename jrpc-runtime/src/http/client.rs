//! Provides the HTTP client: JSON-RPC calls as `POST`s over a pool of keep-alive connections.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use ::http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE};
use ::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde_json::value::RawValue;

use crate::caller::BatchResults;
use crate::caller::{BatchCall, Caller};
use crate::context::trace_headers;
use crate::dispatch::TraceContext;
use crate::error::check;
use crate::error::{ClientError, ConfigError};
#[cfg(feature = "tls")]
use crate::tls::ClientTls;
use crate::transport::Transport;
use crate::wire::write::call_text;
use crate::wire::{Id, Message};

/// Opens connections: plain TCP, or (with `tls`) TCP with TLS for `https://` URLs, whose
/// ALPN choice (HTTP/2 or HTTP/1.1) the pool follows.
#[cfg(feature = "tls")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "tls"))]
type Connector = HttpConnector;

/// Calls a JSON-RPC server over HTTP: each call is a `POST` of one request to the URL, over a pool
/// of keep-alive connections; it implements [`Caller`], so generated stubs run over it.
///
/// ```no_run
/// use jrpc_runtime::Caller;
/// use jrpc_runtime::http::HttpClient;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = HttpClient::new("http://127.0.0.1:8080/rpc")?;
/// let sum = client.call_raw("add", serde_json::value::to_raw_value(&[2, 3]).ok()).await?;
/// assert_eq!(sum.get(), "5");
/// # Ok(()) }
/// ```
///
/// It takes what other servers do, within reason:
///
/// | the server answers | a call gets | a notification gets |
/// | --- | --- | --- |
/// | `2xx` with a response for the call's id | its result, or [`ClientError::Failed`] | `Ok(())` |
/// | `2xx` with an error response of id `null` | [`ClientError::Failed`] | `Ok(())` |
/// | `2xx` with no body (`204`) | [`ClientError::Malformed`] | `Ok(())` |
/// | `2xx` with anything else (`null`, `{}`, text) | [`ClientError::Malformed`] | `Ok(())` |
/// | another status with a JSON-RPC error body | [`ClientError::Failed`] | [`ClientError::Failed`] |
/// | another status with any other body | [`ClientError::Transport`] holding a [`StatusError`] | the same |
/// | nothing before the timeout | [`ClientError::TimedOut`] | the same |
/// | a body over `max_message_size` | [`ClientError::TooLong`] | the same |
/// | a closed connection mid-answer | [`ClientError::Closed`] | the same |
///
/// `https://` URLs need the `tls` feature: trust is the system's roots plus what
/// [`HttpClientBuilder::tls`] adds, and HTTP/2 is used when the server's ALPN picks it (else
/// HTTP/1.1). A certificate the client does not trust fails the call with
/// [`ClientError::Transport`], saying so. Plain `http://` is HTTP/1.1.
///
/// Cloning is cheap: clones share the pool.
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client<Connector, Full<Bytes>>,
    uri: Uri,
    headers: HeaderMap,
    call_timeout: Option<Duration>,
    max_message_size: usize,
    next_id: AtomicI64,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Headers are left out: they often carry credentials.
        f.debug_struct("HttpClient")
            .field("uri", &self.uri)
            .field("call_timeout", &self.call_timeout)
            .field("max_message_size", &self.max_message_size)
            .finish_non_exhaustive()
    }
}

/// Builds an [`HttpClient`]; [`build`](Self::build) checks the settings.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct HttpClientBuilder {
    url: String,
    call_timeout: Option<Duration>,
    max_message_size: usize,
    pool_idle_timeout: Option<Duration>,
    headers: Vec<(String, String)>,
    #[cfg(feature = "tls")]
    tls: ClientTls,
}

impl fmt::Debug for HttpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientBuilder")
            .field("url", &self.url)
            .field("call_timeout", &self.call_timeout)
            .field("max_message_size", &self.max_message_size)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .finish_non_exhaustive()
    }
}

impl HttpClientBuilder {
    /// Sets the time a call (or a notification, or a whole batch) may take, from sending to the end
    /// of the answer (default 60 s); `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }

    /// Sets the largest answer body taken (default 10 MiB, as the server's default cap); a larger
    /// one fails the call with [`ClientError::TooLong`].
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Sets how long an idle connection stays in the pool (default 20 s, under the 30 s after which
    /// a jrpc server, and hyper's default, closes an idle connection, so that the client seldom
    /// picks a connection the server is closing); `None` keeps it until the server closes it.
    pub fn pool_idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.pool_idle_timeout = limit;
        self
    }

    /// Adds a header to every request (`authorization`, a tenant...). A call made while a traced
    /// request is served (see [`TraceContext::outgoing`]) carries that trace's `traceparent` and
    /// `tracestate` instead of any set here.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Adds `authorization: Bearer <token>` to every request.
    pub fn bearer_token(self, token: &str) -> Self {
        self.header("authorization", format!("Bearer {token}"))
    }

    /// Sets what an `https://` URL's server is trusted by (default [`ClientTls::new`]: the system's
    /// roots); read and checked by [`build`](Self::build).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.tls = tls;
        self
    }

    /// Checks the settings and builds the client. It needs no runtime to be built; calls need a
    /// Tokio runtime with the time driver.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the bad setting: `url` (not an `http://` URL with a host, or
    /// `https://` without the `tls` feature), `call_timeout` (zero: use `None` for no limit),
    /// `max_message_size` (zero), `pool_idle_timeout` (zero: use `None`), `header` (a name or
    /// value that HTTP does not allow), `tls` (a CA file that cannot be read, for an `https://`
    /// URL).
    pub fn build(self) -> Result<HttpClient, ConfigError> {
        let uri = parse_url(&self.url)?;
        check::optional_limit("call_timeout", self.call_timeout)?;
        check::at_least_one("max_message_size", self.max_message_size)?;
        check::optional_limit("pool_idle_timeout", self.pool_idle_timeout)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        for (name, value) in &self.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ConfigError::new("header", format!("`{name}` is not a valid header name"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                ConfigError::new(
                    "header",
                    format!("the value of `{name}` is not a valid header value"),
                )
            })?;
            headers.append(name, value);
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        #[cfg(feature = "tls")]
        let connector = {
            // Roots are read only for an `https` URL; a plain one never starts a handshake.
            let config = if uri.scheme_str() == Some("https") {
                self.tls.client_config(&[])?
            } else {
                crate::tls::unused_config()?
            };
            connector.enforce_http(false);
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(Arc::unwrap_or_clone(config))
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(connector)
        };
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(self.pool_idle_timeout)
            .build(connector);
        Ok(HttpClient {
            inner: Arc::new(Inner {
                client,
                uri,
                headers,
                call_timeout: self.call_timeout,
                max_message_size: self.max_message_size,
                next_id: AtomicI64::new(1),
            }),
        })
    }
}

fn parse_url(url: &str) -> Result<Uri, ConfigError> {
    let uri: Uri = url
        .parse()
        .map_err(|err| ConfigError::new("url", format!("`{url}` is not a URL: {err}")))?;
    match uri.scheme_str() {
        Some("http") => {}
        #[cfg(feature = "tls")]
        Some("https") => {}
        #[cfg(not(feature = "tls"))]
        Some("https") => {
            return Err(ConfigError::new(
                "url",
                "`https` needs the `tls` feature of jrpc-runtime",
            ));
        }
        Some("ws" | "wss") => {
            return Err(ConfigError::new(
                "url",
                "a `ws` URL needs the WebSocket client",
            ));
        }
        _ => {
            return Err(ConfigError::new(
                "url",
                format!("`{url}` is not an `http://` URL"),
            ));
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(ConfigError::new("url", format!("`{url}` has no host")));
    }
    Ok(uri)
}

/// Reports a status the client did not expect, with a body that is not a JSON-RPC error: what
/// [`ClientError::Transport`] holds then (reach it with `downcast_ref`).
#[derive(Clone, Debug, thiserror::Error)]
#[error("HTTP status {status}{}", snippet(body))]
pub struct StatusError {
    status: StatusCode,
    body: String,
}

fn snippet(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

impl StatusError {
    /// Returns the status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Returns the start of the body (at most 256 bytes), for logs.
    pub fn body(&self) -> &str {
        &self.body
    }
}

/// Reports a request that could not be sent or answered, with the URL for context.
#[derive(Debug)]
struct RequestFailed {
    uri: Uri,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl fmt::Display for RequestFailed {
    /// Writes the whole chain: hyper's own messages ("client error (Connect)") say little alone.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "POST {}: {}", self.uri, self.source)?;
        let mut cause = self.source.source();
        while let Some(err) = cause {
            write!(f, ": {err}")?;
            cause = err.source();
        }
        Ok(())
    }
}

impl std::error::Error for RequestFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

impl HttpClient {
    /// Returns a client of the server at `url` (`http://host:port/path`), with every setting at its
    /// default.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] (key `url`) when `url` is not an `http://` URL with a host.
    pub fn new(url: &str) -> Result<Self, ConfigError> {
        Self::builder(url).build()
    }

    /// Returns a builder for a client of the server at `url`.
    pub fn builder(url: impl Into<String>) -> HttpClientBuilder {
        HttpClientBuilder {
            url: url.into(),
            call_timeout: Some(Duration::from_secs(60)),
            max_message_size: 10 * 1024 * 1024,
            pool_idle_timeout: Some(Duration::from_secs(20)),
            headers: Vec::new(),
            #[cfg(feature = "tls")]
            tls: ClientTls::new(),
        }
    }

    /// Returns the URL requests go to.
    pub fn url(&self) -> &Uri {
        &self.inner.uri
    }

    fn next_id(&self) -> Id {
        Id::from(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends several calls and notifications in one request, and returns one result per **call**
    /// (notifications have none), in the order the calls were given, whatever order the server
    /// answered in: answers are matched by id. The timeout covers the whole batch.
    ///
    /// An empty batch sends nothing and returns an empty list; a batch of notifications only
    /// returns an empty list once the server took it.
    ///
    /// # Errors
    ///
    /// The whole batch fails when the exchange does (as a call would: [`ClientError::TimedOut`],
    /// [`ClientError::Transport`]...), when the server answers the batch with one error object
    /// (batches refused, or over its size cap: [`ClientError::Failed`]), or when the answer is not
    /// a list of responses ([`ClientError::Malformed`]). A call the answer leaves out gets
    /// [`ClientError::Malformed`] in its own entry.
    pub async fn batch(&self, calls: Vec<BatchCall>) -> Result<BatchResults, ClientError> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let (body, ids) = crate::caller::batch_body(&calls, || self.next_id());
        let label = format!("batch of {} calls", ids.len());
        let (status, answer) = self.exchange(&label, body).await?;
        if !status.is_success() {
            return Err(status_failure(status, &answer));
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let text = std::str::from_utf8(&answer)
            .map_err(|_| ClientError::Malformed("the answer is not UTF-8".into()))?;
        crate::caller::match_answers(ids, text)
    }

    /// Posts `body` and reads the answer, within the timeout.
    async fn exchange(
        &self,
        method: &str,
        body: String,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let exchange = self.post(method, body);
        match self.inner.call_timeout {
            None => exchange.await,
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or_else(|_| {
                    Err(ClientError::TimedOut {
                        method: method.to_owned(),
                        limit,
                    })
                }),
        }
    }

    async fn post(&self, method: &str, body: String) -> Result<(StatusCode, Bytes), ClientError> {
        let inner = &*self.inner;
        let mut req = Request::new(Full::new(Bytes::from(body)));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = inner.uri.clone();
        *req.headers_mut() = inner.headers.clone();
        if let Some(trace) = TraceContext::outgoing() {
            trace_headers(req.headers_mut(), &trace);
        }
        let res = inner
            .client
            .request(req)
            .await
            .map_err(|err| self.failed(method, err))?;
        let status = res.status();
        let limit = inner.max_message_size;
        let declared = res
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if let Some(got) = declared.filter(|len| *len > limit) {
            return Err(ClientError::TooLong { limit, got });
        }
        let body = self.read_body(method, res.into_body(), limit).await?;
        Ok((status, body))
    }

    /// Reads a body frame by frame, stopping as soon as it passes `limit`.
    async fn read_body(
        &self,
        method: &str,
        mut body: Incoming,
        limit: usize,
    ) -> Result<Bytes, ClientError> {
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|err| self.failed(method, err))?;
            if let Ok(data) = frame.into_data() {
                if out.len() + data.len() > limit {
                    return Err(ClientError::TooLong {
                        limit,
                        got: out.len() + data.len(),
                    });
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(Bytes::from(out))
    }

    /// Returns a transport failure: [`ClientError::Closed`] when the connection closed under the
    /// request, [`ClientError::Transport`] otherwise.
    fn failed(
        &self,
        method: &str,
        err: impl std::error::Error + Send + Sync + 'static,
    ) -> ClientError {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&err);
        while let Some(current) = cause {
            if let Some(hyper_err) = current.downcast_ref::<hyper::Error>()
                && (hyper_err.is_incomplete_message()
                    || hyper_err.is_canceled()
                    || hyper_err.is_closed())
            {
                return ClientError::Closed {
                    method: method.to_owned(),
                };
            }
            cause = current.source();
        }
        #[cfg(feature = "tls")]
        if let Some(failed) = crate::tls::failure(&self.inner.uri.to_string(), &err) {
            return ClientError::Transport(Box::new(failed));
        }
        ClientError::Transport(Box::new(RequestFailed {
            uri: self.inner.uri.clone(),
            source: Box::new(err),
        }))
    }
}

/// Returns the error for an unexpected status: the server's JSON-RPC error when the body is one.
fn status_failure(status: StatusCode, body: &[u8]) -> ClientError {
    let text = String::from_utf8_lossy(body);
    if let Ok(Message::ErrorResponse { error, .. }) = Message::parse(&text) {
        return ClientError::from(error);
    }
    let mut end = text.len().min(256);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    ClientError::Transport(Box::new(StatusError {
        status,
        body: text[..end].to_owned(),
    }))
}

impl Caller for HttpClient {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = self.next_id();
        crate::caller::traced(
            method,
            &id,
            Transport::Http,
            self.call(id.clone(), method, params),
        )
        .await
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let body = call_text(None::<&Id>, method, params.as_deref());
        let (status, answer) = self.exchange(method, body).await?;
        // Servers differ: 204, 202, or 200 with `null`, `{}` or an empty body. Any success will do.
        if status.is_success() {
            Ok(())
        } else {
            Err(status_failure(status, &answer))
        }
    }

    /// Sends one JSON-RPC batch in one request: [`HttpClient::batch`].
    async fn batch_raw(&self, calls: Vec<BatchCall>) -> Result<BatchResults, ClientError> {
        self.batch(calls).await
    }
}

impl HttpClient {
    async fn call(
        &self,
        id: Id,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let body = call_text(Some(&id), method, params.as_deref());
        let (status, answer) = self.exchange(method, body).await?;
        if !status.is_success() {
            return Err(status_failure(status, &answer));
        }
        let text = std::str::from_utf8(&answer)
            .map_err(|_| ClientError::Malformed("the answer is not UTF-8".into()))?;
        if text.trim().is_empty() {
            return Err(ClientError::Malformed(format!(
                "no answer to `{method}` (status {status})"
            )));
        }
        match Message::parse(text)? {
            Message::Response { id: got, result } if got == id => Ok(result),
            Message::ErrorResponse { id: got, error } if got == id || got.is_null() => {
                Err(ClientError::from(error))
            }
            Message::Response { id: got, .. } | Message::ErrorResponse { id: got, .. } => Err(
                ClientError::Malformed(format!("an answer for id {got}, not {id}")),
            ),
            _ => Err(ClientError::Malformed("expected a response".into())),
        }
    }
}
