//! The HTTP client: JSON-RPC calls as `POST`s over a pool of keep-alive connections.

use std::collections::HashMap;
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

use crate::error::check;
use crate::wire::write::call_text;
use crate::{Caller, ClientError, ConfigError, Id, Message};

/// A JSON-RPC client over HTTP: each call is a `POST` of one request to the URL, over a pool of
/// keep-alive connections; it implements [`Caller`], so generated stubs run over it.
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
/// Only `http://` URLs are taken: there is no TLS in this crate; put a TLS-terminating proxy in
/// front, or use a client of your own through [`Caller`].
///
/// Cloning is cheap: clones share the pool.
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client<HttpConnector, Full<Bytes>>,
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
    /// The time a call (or a notification, or a whole batch) may take, from sending to the end
    /// of the answer (default 60 s); `None` waits forever.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }

    /// The largest answer body taken (default 10 MiB, as the server's default cap); a larger
    /// one fails the call with [`ClientError::TooLong`].
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long an idle connection stays in the pool (default 20 s, under the 30 s after which
    /// a jrpc server, and hyper's default, closes an idle connection, so that the client seldom
    /// picks a connection the server is closing); `None` keeps it until the server closes it.
    pub fn pool_idle_timeout(mut self, limit: Option<Duration>) -> Self {
        self.pool_idle_timeout = limit;
        self
    }

    /// Adds a header to every request (`authorization`, a tenant, a trace header...).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Adds `authorization: Bearer <token>` to every request.
    pub fn bearer_token(self, token: &str) -> Self {
        self.header("authorization", format!("Bearer {token}"))
    }

    /// Checks the settings and builds the client. It needs no runtime to be built; calls need a
    /// Tokio runtime with the time driver.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the bad setting: `url` (not an `http://` URL with a host),
    /// `call_timeout` (zero: use `None` for no limit), `max_message_size` (zero),
    /// `pool_idle_timeout` (zero: use `None`), `header` (a name or value that HTTP does not
    /// allow).
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
        Some("https") => {
            return Err(ConfigError::new(
                "url",
                "`https` is not supported (no TLS); use `http` behind a TLS proxy",
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

/// One element of a [`batch`](HttpClient::batch): a call or a notification.
#[derive(Clone, Debug)]
pub struct BatchCall {
    method: String,
    params: Option<Box<RawValue>>,
    notification: bool,
}

impl BatchCall {
    /// A call, answered in the batch's results.
    pub fn call(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Self {
            method: method.into(),
            params,
            notification: false,
        }
    }

    /// A notification: sent, never answered, and given no entry in the batch's results.
    pub fn notification(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Self {
            method: method.into(),
            params,
            notification: true,
        }
    }
}

/// A status the client did not expect, with a body that is not a JSON-RPC error: what
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
    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The start of the body (at most 256 bytes), for logs.
    pub fn body(&self) -> &str {
        &self.body
    }
}

/// A request that could not be sent or answered, with the URL for context.
#[derive(Debug)]
struct RequestFailed {
    uri: Uri,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl fmt::Display for RequestFailed {
    /// The whole chain: hyper's own messages ("client error (Connect)") say little alone.
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
    /// A client of the server at `url` (`http://host:port/path`), with every setting at its
    /// default.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] (key `url`) when `url` is not an `http://` URL with a host.
    pub fn new(url: &str) -> Result<Self, ConfigError> {
        Self::builder(url).build()
    }

    /// A builder for a client of the server at `url`.
    pub fn builder(url: impl Into<String>) -> HttpClientBuilder {
        HttpClientBuilder {
            url: url.into(),
            call_timeout: Some(Duration::from_secs(60)),
            max_message_size: 10 * 1024 * 1024,
            pool_idle_timeout: Some(Duration::from_secs(20)),
            headers: Vec::new(),
        }
    }

    /// The URL requests go to.
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
    pub async fn batch(
        &self,
        calls: Vec<BatchCall>,
    ) -> Result<Vec<Result<Box<RawValue>, ClientError>>, ClientError> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids = Vec::new();
        let mut body = String::from("[");
        for (n, entry) in calls.into_iter().enumerate() {
            if n > 0 {
                body.push(',');
            }
            let id = (!entry.notification).then(|| self.next_id());
            body.push_str(&call_text(
                id.as_ref(),
                &entry.method,
                entry.params.as_deref(),
            ));
            ids.extend(id);
        }
        body.push(']');
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
        if !text.trim_start().starts_with('[') {
            // One error object for the whole batch: refused, too large, or not read.
            return Err(match Message::parse(text) {
                Ok(Message::ErrorResponse { error, .. }) => ClientError::Failed(error),
                Ok(_) => ClientError::Malformed("a batch was answered with one response".into()),
                Err(_) if text.trim().is_empty() => {
                    ClientError::Malformed(format!("no answer to a {label}"))
                }
                Err(err) => err,
            });
        }
        let mut answers: HashMap<Id, Message> = HashMap::new();
        for message in Message::parse_many(text)? {
            match &message {
                Message::Response { id, .. } | Message::ErrorResponse { id, .. } => {
                    answers.insert(id.clone(), message);
                }
                _ => {
                    return Err(ClientError::Malformed(
                        "a batch answer holds a request".into(),
                    ));
                }
            }
        }
        Ok(ids
            .into_iter()
            .map(|id| match answers.remove(&id) {
                Some(message) => message.into_result(),
                None => Err(ClientError::Malformed(format!(
                    "the batch answer has nothing for id {id}"
                ))),
            })
            .collect())
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

    /// A transport failure: [`ClientError::Closed`] when the connection closed under the request,
    /// [`ClientError::Transport`] otherwise.
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
        ClientError::Transport(Box::new(RequestFailed {
            uri: self.inner.uri.clone(),
            source: Box::new(err),
        }))
    }
}

/// The error for an unexpected status: the server's JSON-RPC error when the body is one.
fn status_failure(status: StatusCode, body: &[u8]) -> ClientError {
    let text = String::from_utf8_lossy(body);
    if let Ok(Message::ErrorResponse { error, .. }) = Message::parse(&text) {
        return ClientError::Failed(error);
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
                Err(ClientError::Failed(error))
            }
            Message::Response { id: got, .. } | Message::ErrorResponse { id: got, .. } => Err(
                ClientError::Malformed(format!("an answer for id {got}, not {id}")),
            ),
            _ => Err(ClientError::Malformed("expected a response".into())),
        }
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
}
