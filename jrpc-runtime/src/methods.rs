//! The method table and the dispatcher: one body in, one body out.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write as _;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde::Serialize;
use serde_json::value::RawValue;
use tracing::Instrument as _;

use crate::params::{FromParams, Params};
use crate::request::{self, Rejection, Request};
use crate::{Context, ErrorCode, Id, RegisterError, RpcError, Transport};

/// The first bytes of every successful answer; handlers write their result right after them.
pub(crate) const RESULT_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","result":"#;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a handler's future ends with: the answer's bytes up to the result, or why it failed.
type Output = Result<Vec<u8>, Failure>;

/// A registered handler with its types erased: decodes the params (synchronously, so a decoding
/// failure is `-32602` before anything runs), then returns the future that does the work.
type Erased =
    dyn Fn(Option<&RawValue>, Context) -> Result<BoxFuture<Output>, RpcError> + Send + Sync;

type Fallback = dyn Fn(String, Params, Context) -> BoxFuture<Output> + Send + Sync;

type ErrorHook = dyn Fn(&ErrorReport<'_>) + Send + Sync;

type Observer = dyn Fn(&Observation<'_>) + Send + Sync;

pub(crate) enum Failure {
    /// The handler answered an error.
    Rpc(RpcError),
    /// Something the client must not see the details of: answered `-32603`, reported to the hook.
    Internal(String),
}

/// A failure that was answered `-32603 Internal error` (or not answered, for a notification),
/// given to the [`Methods::on_error`] hook with the reason the client does not see.
#[derive(Debug)]
#[non_exhaustive]
pub struct ErrorReport<'a> {
    /// The method called.
    pub method: &'a str,
    /// The request id; `None` for a notification.
    pub id: Option<&'a Id>,
    /// What went wrong: a panic message, a timeout, an encoding error, a reserved code.
    pub reason: &'a str,
}

/// How a request went, as [`Methods::observe`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The handler answered a result (or, for a notification, finished).
    Success,
    /// The request failed with this code: the handler's error, bad params (`-32602`), an unknown
    /// method (`-32601`), or an internal failure (`-32603`).
    Error(ErrorCode),
}

/// One request handled, given to the [`Methods::observe`] hook: for metrics and access logs.
#[derive(Debug)]
#[non_exhaustive]
pub struct Observation<'a> {
    /// The method called.
    pub method: &'a str,
    /// The request id; `None` for a notification.
    pub id: Option<&'a Id>,
    /// The transport the request arrived on.
    pub transport: Transport,
    /// From reading the request to its answer (parsing excluded).
    pub elapsed: Duration,
    /// How it went.
    pub outcome: Outcome,
}

/// Whether a server takes batches, and how large.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Batches {
    /// Batches of at most this many elements; a larger one is answered `-32600`.
    UpTo(usize),
    /// Every batch is answered `-32600` (MCP and ACP have no batches).
    Refused,
}

impl Default for Batches {
    /// Up to 1 000 elements: far above what clients send, low enough that one body cannot queue
    /// unbounded work.
    fn default() -> Self {
        Self::UpTo(1000)
    }
}

/// The method table: register handlers, then answer bodies with [`handle`](Methods::handle) or
/// serve the table over a transport.
///
/// Registration methods are named for what they add: [`register`](Methods::register) (params
/// decoded into a tuple of Rust types), [`register_raw`](Methods::register_raw) (the raw
/// [`Params`]) and [`register_notification`](Methods::register_notification) (a handler that
/// answers nothing). Sending is the [`Caller`](crate::Caller)'s business, never a `Methods` method's.
///
/// `Methods` is cheap to clone: clones share the table (a registration after cloning copies it).
///
/// ```
/// use jrpc_runtime::{Methods, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut methods = Methods::new();
/// methods
///     .register("add", &["a", "b"], |(a, b): (i64, i64), _ctx| async move { Ok::<_, RpcError>(a + b) })
///     .unwrap();
/// let answer = methods.handle(r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#).await;
/// assert_eq!(answer.as_deref(), Some(r#"{"jsonrpc":"2.0","result":5,"id":1}"#));
/// # });
/// ```
#[derive(Clone)]
pub struct Methods {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    table: HashMap<Box<str>, Arc<Erased>, BuildHasherDefault<Fnv>>,
    fallback: Option<Arc<Fallback>>,
    on_error: Option<Arc<ErrorHook>>,
    observer: Option<Arc<Observer>>,
    batches: Batches,
    timeout: Option<Duration>,
    in_process: Context,
}

impl Default for Methods {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Methods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.inner.table.keys().map(|k| &**k).collect();
        names.sort_unstable();
        f.debug_struct("Methods")
            .field("methods", &names)
            .field("batches", &self.inner.batches)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

impl Methods {
    /// An empty table: batches of up to 1 000, no handler timeout.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                table: HashMap::default(),
                fallback: None,
                on_error: None,
                observer: None,
                batches: Batches::default(),
                timeout: None,
                in_process: Context::new(Transport::InProcess),
            }),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    fn insert(&mut self, name: &str, handler: Arc<Erased>) -> Result<&mut Self, RegisterError> {
        if name.starts_with("rpc.") {
            return Err(RegisterError::Reserved(name.to_owned()));
        }
        let table = &mut self.inner_mut().table;
        if table.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_owned()));
        }
        table.insert(name.into(), handler);
        Ok(self)
    }

    /// Registers a method whose params decode into `P` (a tuple of parameter types, by position or
    /// by the wire `names`; see [`FromParams`]) and whose future answers a result or an error.
    ///
    /// # Errors
    ///
    /// [`RegisterError`] when the name is taken or starts with `rpc.`.
    pub fn register<P, F, Fut, T, E>(
        &mut self,
        name: &str,
        names: &'static [&'static str],
        handler: F,
    ) -> Result<&mut Self, RegisterError>
    where
        P: FromParams,
        F: Fn(P, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize + 'static,
        E: Into<RpcError> + 'static,
    {
        let erased = move |params: Option<&RawValue>, ctx: Context| {
            let params = P::from_params(params, names)?;
            let fut = handler(params, ctx);
            Ok(Box::pin(async move { encode(fut.await) }) as BoxFuture<Output>)
        };
        self.insert(name, Arc::new(erased))
    }

    /// Registers a method that reads its raw [`Params`] itself.
    ///
    /// # Errors
    ///
    /// [`RegisterError`] when the name is taken or starts with `rpc.`.
    pub fn register_raw<F, Fut, T, E>(
        &mut self,
        name: &str,
        handler: F,
    ) -> Result<&mut Self, RegisterError>
    where
        F: Fn(Params, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize + 'static,
        E: Into<RpcError> + 'static,
    {
        self.register(name, &[], handler)
    }

    /// Registers a notification handler. A notification is never answered; a call (with an id)
    /// to it runs it and is answered `null`.
    ///
    /// # Errors
    ///
    /// [`RegisterError`] when the name is taken or starts with `rpc.`.
    pub fn register_notification<P, F, Fut>(
        &mut self,
        name: &str,
        names: &'static [&'static str],
        handler: F,
    ) -> Result<&mut Self, RegisterError>
    where
        P: FromParams,
        F: Fn(P, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.register(name, names, move |params: P, ctx| {
            let fut = handler(params, ctx);
            async move {
                fut.await;
                Ok::<(), RpcError>(())
            }
        })
    }

    /// Adds every method of `other`.
    ///
    /// # Errors
    ///
    /// [`RegisterError::Duplicate`] naming the first method both tables have; `self` is then left
    /// unchanged.
    pub fn merge(&mut self, other: Methods) -> Result<&mut Self, RegisterError> {
        if let Some(name) = other
            .inner
            .table
            .keys()
            .find(|name| self.inner.table.contains_key(*name))
        {
            return Err(RegisterError::Duplicate(name.to_string()));
        }
        let table = &mut self.inner_mut().table;
        for (name, handler) in &other.inner.table {
            table.insert(name.clone(), Arc::clone(handler));
        }
        Ok(self)
    }

    /// Answers methods that are not in the table (instead of `-32601`); it gets the method name.
    pub fn fallback<F, Fut, T, E>(&mut self, handler: F) -> &mut Self
    where
        F: Fn(String, Params, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize + 'static,
        E: Into<RpcError> + 'static,
    {
        let erased = move |method: String, params: Params, ctx: Context| {
            let fut = handler(method, params, ctx);
            Box::pin(async move { encode(fut.await) }) as BoxFuture<Output>
        };
        self.inner_mut().fallback = Some(Arc::new(erased));
        self
    }

    /// Calls `hook` for every failure answered `-32603` (a panic, a timeout, a result that could
    /// not be encoded, a handler error with a reserved code), with the reason the client does not
    /// see. Each is also logged with `tracing` at `error` level.
    pub fn on_error<F>(&mut self, hook: F) -> &mut Self
    where
        F: Fn(&ErrorReport<'_>) + Send + Sync + 'static,
    {
        self.inner_mut().on_error = Some(Arc::new(hook));
        self
    }

    /// Calls `hook` once per request handled (each batch element counts), with its method, id,
    /// transport, duration and outcome: the place for metrics. Costs nothing while unset.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use jrpc_runtime::{Methods, Outcome, RpcError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&seen);
    /// let mut methods = Methods::new();
    /// methods.register("one", &[], |(): (), _| async { Ok::<_, RpcError>(1) }).unwrap();
    /// methods.observe(move |o| sink.lock().unwrap().push((o.method.to_owned(), o.outcome)));
    /// methods.handle(r#"[{"jsonrpc":"2.0","method":"one","id":1},{"jsonrpc":"2.0","method":"two","id":2}]"#).await;
    /// assert_eq!(*seen.lock().unwrap(), [
    ///     ("one".to_owned(), Outcome::Success),
    ///     ("two".to_owned(), Outcome::Error(jrpc_runtime::ErrorCode::METHOD_NOT_FOUND)),
    /// ]);
    /// # });
    /// ```
    pub fn observe<F>(&mut self, hook: F) -> &mut Self
    where
        F: Fn(&Observation<'_>) + Send + Sync + 'static,
    {
        self.inner_mut().observer = Some(Arc::new(hook));
        self
    }

    /// Sets how batches are taken (default: up to 1 000 elements).
    pub fn batches(&mut self, batches: Batches) -> &mut Self {
        self.inner_mut().batches = batches;
        self
    }

    /// Gives every request (a whole batch shares one deadline) at most `limit`; past it the call
    /// is answered `-32603` and its handler dropped. `None` (the default) waits as long as the
    /// handler takes. Needs a Tokio runtime with the time driver.
    pub fn timeout(&mut self, limit: Option<Duration>) -> &mut Self {
        self.inner_mut().timeout = limit;
        self
    }

    /// The batch policy.
    pub fn batch_policy(&self) -> Batches {
        self.inner.batches
    }

    /// Whether a method of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.inner.table.contains_key(name)
    }

    /// The registered names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.table.keys().map(|name| &**name)
    }

    /// Answers one body (a request, a notification or a batch) as an in-process call: the
    /// answer's text, or `None` when nothing is to be sent back.
    pub async fn handle(&self, body: &str) -> Option<String> {
        self.handle_in(body, &self.inner.in_process).await
    }

    /// Answers one body arriving with `ctx` (its transport, headers, peer...); each request gets
    /// a clone of `ctx` stamped with its id.
    pub async fn handle_in(&self, body: &str, ctx: &Context) -> Option<String> {
        let bytes = if request::is_batch(body) {
            self.handle_batch(body, ctx).await?
        } else {
            let deadline = self.deadline();
            match request::parse(body) {
                Ok(req) => self.dispatch(req, ctx, deadline).await?,
                Err(rejection) => rejected(&rejection),
            }
        };
        String::from_utf8(bytes).ok()
    }

    fn deadline(&self) -> Option<tokio::time::Instant> {
        self.inner.timeout.map(crate::time::after)
    }

    async fn handle_batch(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
        // `[` starts it, so it is JSON only if it is an array: anything else is a parse error.
        let elements = match request::parse_batch(body) {
            Ok(elements) => elements,
            Err(rejection) => return Some(rejected(&rejection)),
        };
        if elements.is_empty() {
            return Some(rejected(&Rejection::Invalid { id: None }));
        }
        match self.inner.batches {
            Batches::Refused => {
                return Some(error_bytes(
                    &RpcError::invalid_request().with_data("batches are not accepted"),
                    None,
                ));
            }
            Batches::UpTo(max) if elements.len() > max => {
                let reason = format!("a batch of {} exceeds the limit of {max}", elements.len());
                return Some(error_bytes(
                    &RpcError::invalid_request().with_data(&reason),
                    None,
                ));
            }
            Batches::UpTo(_) => {}
        }
        let deadline = self.deadline();
        let answers =
            futures_util::future::join_all(elements.into_iter().map(|element| async move {
                match element {
                    Ok(req) => self.dispatch(req, ctx, deadline).await,
                    Err(rejection) => Some(rejected(&rejection)),
                }
            }))
            .await;
        let mut out = Vec::new();
        for answer in answers.into_iter().flatten() {
            out.push(if out.is_empty() { b'[' } else { b',' });
            out.extend_from_slice(&answer);
        }
        if out.is_empty() {
            return None;
        }
        out.push(b']');
        Some(out)
    }

    async fn dispatch(
        &self,
        req: Request<'_>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let started = self
            .inner
            .observer
            .as_ref()
            .map(|_| std::time::Instant::now());
        let id = req.id.map(request::id_of);
        // One block with one exit, so that the observer sees every way out (and costs nothing
        // while unset: no second future wraps this one).
        let (answer, outcome) = 'done: {
            let ctx = ctx.for_request(id.clone());
            let span = tracing::debug_span!(
                "rpc",
                method = %req.method,
                id = tracing::field::Empty,
                transport = ctx.transport().as_str(),
            );
            if let (false, Some(id)) = (span.is_disabled(), &id) {
                span.record("id", tracing::field::display(id));
            }
            let fut = match self.inner.table.get(&*req.method) {
                Some(handler) => {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| handler(req.params, ctx))) {
                        Ok(Ok(fut)) => fut,
                        Ok(Err(err)) => {
                            if req.id.is_none() {
                                // Nobody hears about a notification's bad params unless it is logged.
                                tracing::warn!(method = %req.method, error = %err, "notification params did not decode");
                            }
                            break 'done (answer(req.id, &err), Outcome::Error(err.code()));
                        }
                        Err(panic) => {
                            let reason = format!("handler panicked: {}", panic_message(&*panic));
                            break 'done self.internal(&req.method, id.as_ref(), req.id, &reason);
                        }
                    }
                }
                None => match &self.inner.fallback {
                    Some(fallback) => {
                        let params = Params::from_params(req.params, &[]).unwrap_or_default();
                        fallback(req.method.clone().into_owned(), params, ctx)
                    }
                    None => {
                        let err = RpcError::method_not_found();
                        break 'done (answer(req.id, &err), Outcome::Error(err.code()));
                    }
                },
            };
            // Entering a disabled span on every poll is measurable on the hot path.
            let output = if span.is_disabled() {
                run(fut, deadline).await
            } else {
                run(fut, deadline).instrument(span).await
            };
            match output {
                Ok(mut out) => match req.id {
                    Some(raw_id) => {
                        out.extend_from_slice(br#","id":"#);
                        out.extend_from_slice(raw_id.get().as_bytes());
                        out.push(b'}');
                        (Some(out), Outcome::Success)
                    }
                    None => (None, Outcome::Success),
                },
                Err(Failure::Rpc(err)) if err.code().is_reserved() => {
                    let reason =
                        format!("handler answered the reserved code {}: {err}", err.code());
                    self.internal(&req.method, id.as_ref(), req.id, &reason)
                }
                Err(Failure::Rpc(err)) => (answer(req.id, &err), Outcome::Error(err.code())),
                Err(Failure::Internal(reason)) => {
                    self.internal(&req.method, id.as_ref(), req.id, &reason)
                }
            }
        };
        if let (Some(observer), Some(started)) = (&self.inner.observer, started) {
            observer(&Observation {
                method: &req.method,
                id: id.as_ref(),
                transport: ctx.transport(),
                elapsed: started.elapsed(),
                outcome,
            });
        }
        answer
    }

    /// Reports an internal failure and answers `-32603` with no detail.
    #[cold]
    fn internal(
        &self,
        method: &str,
        id: Option<&Id>,
        raw_id: Option<&RawValue>,
        reason: &str,
    ) -> (Option<Vec<u8>>, Outcome) {
        tracing::error!(method, id = ?id, reason, "request failed");
        if let Some(hook) = &self.inner.on_error {
            hook(&ErrorReport { method, id, reason });
        }
        let err = RpcError::internal();
        (answer(raw_id, &err), Outcome::Error(err.code()))
    }
}

/// Runs a handler's future with panics contained and the deadline applied.
async fn run(fut: BoxFuture<Output>, deadline: Option<tokio::time::Instant>) -> Output {
    let guarded = AssertUnwindSafe(fut).catch_unwind();
    let caught = match deadline {
        None => guarded.await,
        Some(deadline) => match tokio::time::timeout_at(deadline, guarded).await {
            Ok(caught) => caught,
            Err(_) => return Err(Failure::Internal("handler timed out".into())),
        },
    };
    caught.unwrap_or_else(|panic| {
        Err(Failure::Internal(format!(
            "handler panicked: {}",
            panic_message(&*panic)
        )))
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload")
}

/// Encodes a handler's result after [`RESULT_PREFIX`].
fn encode<T: Serialize, E: Into<RpcError>>(result: Result<T, E>) -> Output {
    let value = result.map_err(|err| Failure::Rpc(err.into()))?;
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(RESULT_PREFIX);
    match serde_json::to_writer(&mut out, &value) {
        Ok(()) => Ok(out),
        Err(err) => Err(Failure::Internal(format!(
            "result could not be encoded: {err}"
        ))),
    }
}

/// An error answer for a call; nothing for a notification.
fn answer(raw_id: Option<&RawValue>, err: &RpcError) -> Option<Vec<u8>> {
    raw_id.map(|id| error_bytes(err, Some(id)))
}

/// The answer to something that is not a valid request: always sent, even without an id.
pub(crate) fn rejected(rejection: &Rejection<'_>) -> Vec<u8> {
    match rejection {
        Rejection::Parse => error_bytes(&RpcError::parse_error(), None),
        Rejection::Invalid { id } => error_bytes(&RpcError::invalid_request(), *id),
    }
}

pub(crate) fn error_bytes(err: &RpcError, id: Option<&RawValue>) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","error":"#);
    // Writing into a Vec cannot fail, and an RpcError always encodes.
    let _ = serde_json::to_writer(&mut out, err);
    let _ = write!(out, r#","id":{}}}"#, id.map_or("null", RawValue::get));
    out
}

/// FNV-1a: method names are short and chosen by the server, so a keyed hash buys nothing here.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}
