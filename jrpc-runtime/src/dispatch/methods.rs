//! Holds the method table: registration, merging, the hooks and the settings the dispatcher runs
//! with.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::marker::PhantomData;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;

use super::context::Context;
use super::describe::{MethodDoc, ServiceInfo};
use super::extensions::Extensions;
use super::limit::Capped;
use super::observe::{ErrorReport, Observation};
use super::params::ParamsSeed;
use super::params::{FromParams, Params};
use crate::error::RegisterError;
use crate::transport::Transport;
use crate::wire::{Id, RpcError};
use crate::wire::{RawId, Rejection, Request, incoming, write};

/// Drives a handler's work, once started: polled until it is done, its result then written where
/// the answer goes (so that a batch's answers are written into the batch's buffer, none in a buffer
/// of its own).
pub(crate) trait Work: Send {
    /// Polls the handler; once it is done, appends [`RESULT_PREFIX`](write::RESULT_PREFIX) and
    /// its result to `out`, or gives why it failed (what it wrote of the result is then the
    /// caller's to take back).
    fn poll_into(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<Output>;

    /// Does what [`poll_into`](Self::poll_into) does, the result's writing given up
    /// ([`Failure::TooLarge`]) once `out` would pass `limit` bytes. Unless a kind of work writes
    /// its result as it goes (a handler's does), the result is looked at once written (a call
    /// layer's answer is made whole by the layers).
    fn poll_capped(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Poll<Output> {
        self.poll_into(cx, out).map(|output| match output {
            Ok(()) if out.len() > limit => Err(Failure::TooLarge(limit)),
            output => output,
        })
    }
}

/// Every handler's future is [`Work`]: its result is encoded as it finishes.
impl<Fut, T, E> Work for Fut
where
    Fut: Future<Output = Result<T, E>> + Send,
    T: RpcResult,
    E: IntoRpcError,
{
    #[inline]
    fn poll_into(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<Output> {
        self.poll(cx).map(|result| encode(result, out))
    }

    fn poll_capped(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Poll<Output> {
        self.poll(cx)
            .map(|result| encode_capped(result, out, limit))
    }
}

/// Marks a handler's success value, as the table writes it: any `Serialize` type.
///
/// The `#[rpc_service]` expansion names this trait and [`IntoRpcError`] rather than serde's, so
/// that an unmet bound is reported once, at the user's type, in jrpc's words: neither has a
/// supertrait (rustc would report a missing one as a bound of the trait, with a note into the
/// runtime).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a jrpc method result",
    label = "this type does not implement `serde::Serialize`",
    note = "results are encoded into the response: derive `serde::Serialize` for `{Self}`"
)]
pub trait RpcResult {
    /// Writes the value as JSON.
    ///
    /// # Errors
    ///
    /// serde's, when the value cannot be encoded.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;

    /// Does what [`write_json`](Self::write_json) does, given up with an I/O error once `out` would
    /// pass `limit` bytes: a transport's `max_message_size`, so that a too-large answer is not
    /// written whole. Unless a type writes as it goes, it is looked at once written.
    #[doc(hidden)]
    #[inline]
    fn write_json_within(&self, out: &mut Vec<u8>, limit: usize) -> serde_json::Result<()> {
        self.write_json(out)?;
        if out.len() > limit {
            return Err(serde_json::Error::io(
                std::io::ErrorKind::FileTooLarge.into(),
            ));
        }
        Ok(())
    }

    /// Runs the check the expansion makes first, at the success type as written: rustc reports the
    /// trait there with no note, and leaves out a registration helper's same bound at the same
    /// place.
    #[inline]
    fn check(_ok: PhantomData<Self>)
    where
        Self: Sized,
    {
    }
}
#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> RpcResult for T {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }

    #[inline]
    fn write_json_within(&self, out: &mut Vec<u8>, limit: usize) -> serde_json::Result<()> {
        serde_json::to_writer(Capped { out, limit }, self)
    }
}

/// Marks a handler's error, as the table answers it: any type that converts into an [`RpcError`]
/// (see [`RpcResult`] for why a trait of its own).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a jrpc method error",
    label = "this type does not implement `Into<jrpc_runtime::RpcError>`",
    note = "for an error type of your crate, implement `From<{Self}> for jrpc_runtime::RpcError` to say which code and message each error answers",
    note = "for a type of another crate (the orphan rule forbids that impl), return `Result<T, RpcError>` and convert with `.map_err(...)`, or wrap it in an error type of your crate"
)]
pub trait IntoRpcError: Sized {
    /// Returns the error object answered.
    fn into_rpc_error(self) -> RpcError;

    /// Runs the check the expansion makes first, at the error type as written (as
    /// [`RpcResult::check`]).
    #[inline]
    fn check(_err: PhantomData<Self>) {}
}
#[diagnostic::do_not_recommend]
impl<E: Into<RpcError>> IntoRpcError for E {
    #[inline]
    fn into_rpc_error(self) -> RpcError {
        self.into()
    }
}

/// Names a handler's call, its type erased.
pub(super) type BoxCall = Pin<Box<dyn Work>>;

/// Says what a handler's call ends with: its result written, or why it failed.
pub(crate) type Output = Result<(), Failure>;

/// Runs a registered handler, its types erased.
pub(super) trait Handler: Send + Sync {
    /// Decodes the params (synchronously, so a decoding failure is `-32602` before anything
    /// runs), then returns the call that does the work.
    fn start(&self, params: Option<&RawValue>, ctx: Context) -> Result<BoxCall, RpcError>;

    /// Reads `body`, a request naming this handler's `method`, with its params in the same pass,
    /// and starts the handler with `ctx` stamped with the request's id. `None` when the body is
    /// not read so (its params' type is not decoded in one pass, or anything about the body or
    /// its params is amiss, a panic included): it is then read as usual, and its answer says why.
    /// A request without params, for params that cannot be left out, is read and answered so.
    fn start_body<'a>(&self, body: &'a str, method: &str, ctx: &Context) -> Option<OnePass<'a>>;

    /// Reads `body`, a batch of 1 to `max` requests, those naming this handler's `method` with
    /// their params in the same pass; once all of it is read, gives `each` its elements in
    /// order with their number, starting the handler for each of those as it comes (so that one
    /// that finishes at once is gone before the next starts). `false`, with `each` never
    /// called, when the batch is not read so (as for [`start_body`](Self::start_body), or an
    /// element that is not a valid request): it is then read as usual.
    fn start_batch<'a>(
        &self,
        body: &'a str,
        method: &str,
        ctx: &Context,
        max: usize,
        each: &mut dyn FnMut(Element<'a>, usize),
    ) -> bool;
}

/// Holds an element of a batch read by [`Handler::start_batch`], or by the usual reader.
pub(super) enum Element<'a> {
    /// A request read and started.
    Started(OnePass<'a>),
    /// A request read, its handler to be found and started.
    Request(incoming::Request<'a>),
    /// Not a valid request: answered with this.
    Rejected(incoming::Rejection<'a>),
}

impl<'a> From<Result<incoming::Request<'a>, incoming::Rejection<'a>>> for Element<'a> {
    fn from(read: Result<incoming::Request<'a>, incoming::Rejection<'a>>) -> Self {
        match read {
            Ok(req) => Self::Request(req),
            Err(rejection) => Self::Rejected(rejection),
        }
    }
}

/// Holds a request read and started by [`Handler::start_body`].
pub(super) struct OnePass<'a> {
    pub(super) method: &'a str,
    /// `None` for a notification.
    pub(super) raw_id: Option<RawId<'a>>,
    pub(super) id: Option<Id>,
    /// The handler's call, or why there is none.
    pub(super) started: Result<BoxCall, NotStarted>,
}

/// Says why a request read by [`Handler::start_body`] or [`Handler::start_batch`] has no call.
pub(super) enum NotStarted {
    /// The handler panicked as it started: the payload.
    Panicked(Box<dyn std::any::Any + Send>),
    /// It has no params, and the handler's params cannot be left out.
    Refused(RpcError),
}

/// Holds a handler registered with [`Methods::register`]: params of type `P` for `run`, which makes
/// the future.
struct Registered<P, F> {
    names: &'static [&'static str],
    run: F,
    marker: PhantomData<fn() -> P>,
}

impl<P, F> Handler for Registered<P, F>
where
    P: FromParams,
    F: Fn(P, Context) -> BoxCall + Send + Sync,
{
    fn start(&self, params: Option<&RawValue>, ctx: Context) -> Result<BoxCall, RpcError> {
        let params = P::from_params(params, self.names)?;
        Ok((self.run)(params, ctx))
    }

    #[inline]
    fn start_body<'a>(&self, body: &'a str, method: &str, ctx: &Context) -> Option<OnePass<'a>> {
        if !P::ONE_PASS {
            return None;
        }
        let seed = ParamsSeed::<P>::new(self.names);
        let read = catch_unwind(AssertUnwindSafe(|| {
            incoming::parse_request_with(body, method, seed)
        }))
        .ok()??;
        Some(self.started(read, ctx))
    }

    fn start_batch<'a>(
        &self,
        body: &'a str,
        method: &str,
        ctx: &Context,
        max: usize,
        each: &mut dyn FnMut(Element<'a>, usize),
    ) -> bool {
        if !P::ONE_PASS {
            return false;
        }
        let seed = ParamsSeed::<P>::new(self.names);
        let read = catch_unwind(AssertUnwindSafe(|| {
            incoming::parse_batch_with(body, method, seed)
        }));
        let Ok(Some(read)) = read else {
            return false;
        };
        if read.is_empty() || read.len() > max {
            return false;
        }
        let count = read.len();
        for element in read {
            let element = match element {
                incoming::Element::Decoded(decoded) => Element::Started(self.started(decoded, ctx)),
                incoming::Element::Request(req) => Element::Request(req),
            };
            each(element, count);
        }
        true
    }
}

impl<P, F> Registered<P, F>
where
    P: FromParams,
    F: Fn(P, Context) -> BoxCall,
{
    /// Starts the handler on a request read with its params (or with none, when its params
    /// type can be left out; else it is answered why).
    #[inline(always)]
    fn started<'a>(&self, read: incoming::Decoded<'a, P>, ctx: &Context) -> OnePass<'a> {
        let id = read.id.as_ref().map(RawId::id);
        let params = match read.params {
            Some(params) => Ok(params),
            None => P::from_params(None, self.names),
        };
        let started = match params {
            Ok(params) => {
                let ctx = ctx.for_request(id.clone());
                catch_unwind(AssertUnwindSafe(|| (self.run)(params, ctx)))
                    .map_err(NotStarted::Panicked)
            }
            Err(err) => Err(NotStarted::Refused(err)),
        };
        OnePass {
            method: read.method,
            raw_id: read.id,
            id,
            started,
        }
    }
}

type Fallback = dyn Fn(String, Params, Context) -> BoxCall + Send + Sync;

type ErrorHook = dyn Fn(&ErrorReport<'_>) + Send + Sync;

type Observer = dyn Fn(&Observation<'_>) + Send + Sync;

pub(crate) enum Failure {
    /// The handler answered an error.
    Rpc(RpcError),
    /// Something the client must not see the details of: answered `-32603`, reported to the hook.
    Internal(String),
    /// The answer would pass this limit, in bytes: answered `-32008`.
    TooLarge(usize),
    /// An error a call layer answered, or the dispatch's own below the layers: sent as it is,
    /// whatever its code.
    Answered(RpcError),
    /// The answer of the table below its call layers, whose failure was reported there (a
    /// notification's to the error hook, an internal one's reason): sent as it is, and not
    /// reported a second time when the layered answer is written.
    Reported(RpcError),
}

/// Elements of one batch running at once, unless set: as many calls as a connection runs at once
/// by default (`max_in_flight`), far above what clients send in one body.
const DEFAULT_BATCH_CONCURRENCY: NonZeroUsize = NonZeroUsize::MIN.saturating_add(127);

/// Says what a table makes of a request with `"params": null`.
///
/// The specification allows only an array, an object or no `params`, so `null` is `-32600` by
/// default, as for any invalid request: a client that sends it is told so. But editors' clients
/// send it (lsp4j, behind Eclipse and IntelliJ; Eglot; Vim9's LSP plugin send `shutdown` and
/// `exit` with `"params": null`), and a server for them must take it; the LSP and ACP crates
/// set [`Absent`](Self::Absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum NullParams {
    /// `-32600`, the request not run (the default).
    #[default]
    Invalid,
    /// Read as absent: the request runs as one without `params`.
    Absent,
}

/// Says whether a server takes batches, and how large.
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

/// Dispatches calls to their handlers: register handlers, then answer bodies with
/// [`handle`](Methods::handle) or serve the table over a transport.
///
/// Registration methods are named for what they add: [`register`](Methods::register) (params
/// decoded into a tuple of Rust types), [`register_raw`](Methods::register_raw) (the raw
/// [`Params`]) and [`register_notification`](Methods::register_notification) (a handler that
/// answers nothing). Sending is the [`Caller`](crate::caller::Caller)'s business, never a `Methods` method's.
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
    pub(super) inner: Arc<Inner>,
}

#[derive(Clone)]
pub(super) struct Inner {
    pub(super) table: HashMap<Box<str>, Entry, BuildHasherDefault<Fnv>>,
    /// The `seq` the next registration gets.
    next_seq: u64,
    /// What `rpc.discover` says of the service; `None` while it is not served.
    pub(super) discovery: Option<Arc<ServiceInfo>>,
    pub(super) fallback: Option<Arc<Fallback>>,
    pub(super) on_error: Option<Arc<ErrorHook>>,
    pub(super) observer: Option<Arc<Observer>>,
    pub(super) batches: Batches,
    pub(super) null_params: NullParams,
    pub(super) batch_concurrency: NonZeroUsize,
    pub(super) handler_timeout: Option<Duration>,
    pub(super) in_process: Context,
    /// The call layers every request goes through; `None` while there are none.
    pub(super) layers: Option<super::layer::Stack>,
    /// What the layers above keep with the table (the subscriptions' unsubscribe methods and
    /// id provider), one value per type.
    pub(super) extensions: Extensions,
}

/// Holds one method of the table.
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) handler: Arc<dyn Handler>,
    pub(super) doc: Arc<MethodDoc>,
    /// Registration order, which descriptions are listed in.
    pub(super) seq: u64,
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
            .field("batch_concurrency", &self.inner.batch_concurrency)
            .field("handler_timeout", &self.inner.handler_timeout)
            .finish_non_exhaustive()
    }
}

impl Methods {
    /// Returns an empty table: batches of up to 1 000, no handler timeout.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                table: HashMap::default(),
                next_seq: 0,
                discovery: None,
                fallback: None,
                on_error: None,
                observer: None,
                batches: Batches::default(),
                null_params: NullParams::Invalid,
                batch_concurrency: DEFAULT_BATCH_CONCURRENCY,
                handler_timeout: None,
                in_process: Context::new(Transport::InProcess),
                extensions: Extensions::default(),
                layers: None,
            }),
        }
    }

    pub(super) fn inner_mut(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    /// Returns the table's value of type `T` (a handle, cheap to clone), made with `Default` if
    /// it has none: what a layer above keeps with the table.
    pub(crate) fn extension<T: Clone + Default + Send + Sync + 'static>(&mut self) -> T {
        if let Some(value) = self.inner.extensions.get::<T>() {
            return value.clone();
        }
        let value = T::default();
        self.inner_mut().extensions.insert(value.clone());
        value
    }

    fn insert(
        &mut self,
        name: &str,
        handler: Arc<dyn Handler>,
        doc: MethodDoc,
    ) -> Result<&mut Self, RegisterError> {
        if name.starts_with("rpc.") {
            return Err(RegisterError::Reserved(name.to_owned()));
        }
        if self.inner.table.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_owned()));
        }
        let inner = self.inner_mut();
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let doc = Arc::new(doc);
        inner.table.insert(name.into(), Entry { handler, doc, seq });
        Ok(self)
    }

    /// Registers a method whose params decode into `P` (a tuple of parameter types, by position or
    /// by the wire `names`; see [`FromParams`]) and whose future answers a result or an error.
    ///
    /// Its description ([`description`](Methods::description)) lists the parameters as `P` says,
    /// with `{}` schemas; [`describe`](Methods::describe) says more.
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
        T: RpcResult,
        E: IntoRpcError,
    {
        let run = move |params: P, ctx: Context| Box::pin(handler(params, ctx)) as BoxCall;
        let registered = Registered {
            names,
            run,
            marker: PhantomData,
        };
        self.insert(name, Arc::new(registered), P::describe(names))
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
    pub fn register_notification<P: FromParams, Fut: Future<Output = ()> + Send + 'static>(
        &mut self,
        name: &str,
        names: &'static [&'static str],
        handler: impl Fn(P, Context) -> Fut + Send + Sync + 'static,
    ) -> Result<&mut Self, RegisterError> {
        self.register(name, names, move |params: P, ctx| {
            let fut = handler(params, ctx);
            async move {
                fut.await;
                Ok::<(), RpcError>(())
            }
        })?;
        let inner = self.inner_mut();
        if let Some(entry) = inner.table.get_mut(name) {
            Arc::make_mut(&mut entry.doc).result = None;
        }
        Ok(self)
    }

    /// Adds every method of `other`, with its description (after the methods already here, in
    /// `other`'s order). The settings of `other` (hooks, fallback, batches, timeout, discovery)
    /// are not taken: `self`'s apply.
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
        let inner = self.inner_mut();
        let base = inner.next_seq;
        for (name, entry) in &other.inner.table {
            let mut entry = entry.clone();
            entry.seq += base;
            inner.table.insert(name.clone(), entry);
        }
        inner.next_seq = base + other.inner.next_seq;
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
            Box::pin(handler(method, params, ctx)) as BoxCall
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

    /// Tells the observer that a message was dropped with its connection, which could not hold
    /// it for a peer that does not read (see [`Outcome::Overflowed`]).
    pub(crate) fn observe_overflow(
        &self,
        method: &str,
        id: Option<&crate::wire::Id>,
        transport: Transport,
    ) {
        if let Some(observer) = &self.inner.observer {
            observer(&Observation {
                method,
                id,
                transport,
                elapsed: Duration::ZERO,
                outcome: super::Outcome::Overflowed,
            });
        }
    }

    /// Sets how batches are taken (default: up to 1 000 elements).
    pub fn batches(&mut self, batches: Batches) -> &mut Self {
        self.inner_mut().batches = batches;
        self
    }

    /// Sets how many elements of one batch run at once (default 128, as many as a connection's
    /// `max_in_flight` by default). A batch no larger runs all its elements together; a larger
    /// one starts the next element as an earlier one finishes, and is still answered in order
    /// under the one deadline. It bounds the handlers one body can start, for batches the
    /// [`batches`](Self::batches) limit lets in.
    pub fn batch_concurrency(&mut self, max: NonZeroUsize) -> &mut Self {
        self.inner_mut().batch_concurrency = max;
        self
    }

    /// Gives every request (a whole batch shares one deadline) at most `limit`; past it the call
    /// is answered `-32603` and its handler dropped. `None` (the default) waits as long as the
    /// handler takes. Needs a Tokio runtime with the time driver.
    pub fn handler_timeout(&mut self, limit: Option<Duration>) -> &mut Self {
        self.inner_mut().handler_timeout = limit;
        self
    }

    /// Returns the batch policy.
    pub fn batch_policy(&self) -> Batches {
        self.inner.batches
    }

    /// Sets what a request with `"params": null` is (default [`NullParams::Invalid`]: `-32600`);
    /// see [`NullParams`].
    pub fn null_params(&mut self, null: NullParams) -> &mut Self {
        self.inner_mut().null_params = null;
        self
    }

    /// Returns the request a rejection holds when the table takes it (`"params": null` read as
    /// absent), or the rejection.
    #[cold]
    pub(crate) fn reconsider<'a>(
        &self,
        rejection: Rejection<'a>,
    ) -> Result<Request<'a>, Rejection<'a>> {
        match rejection {
            Rejection::NullParams(req) if self.inner.null_params == NullParams::Absent => Ok(req),
            other => Err(other),
        }
    }

    /// Returns whether a method of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.inner.table.contains_key(name)
    }

    /// Returns the registered names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.table.keys().map(|name| &**name)
    }
}

/// Appends [`RESULT_PREFIX`](write::RESULT_PREFIX) and a handler's result to `out` (on a failure,
/// what was written of it is for the caller to take back).
fn encode<T: RpcResult, E: IntoRpcError>(result: Result<T, E>, out: &mut Vec<u8>) -> Output {
    let value = result.map_err(|err| Failure::Rpc(err.into_rpc_error()))?;
    if out.capacity() == 0 {
        // Room for most answers whole, their id included (made anew: `reserve` on an empty
        // buffer takes the slower path of growing one).
        *out = Vec::with_capacity(64);
    }
    out.extend_from_slice(write::RESULT_PREFIX);
    value
        .write_json(out)
        .map_err(|err| Failure::Internal(format!("result could not be encoded: {err}")))
}

/// [`encode`], the result's writing given up once the answer would pass `limit` bytes.
#[inline]
fn encode_capped<T: RpcResult, E: IntoRpcError>(
    result: Result<T, E>,
    out: &mut Vec<u8>,
    limit: usize,
) -> Output {
    let value = result.map_err(|err| Failure::Rpc(err.into_rpc_error()))?;
    if out.capacity() == 0 {
        *out = Vec::with_capacity(64);
    }
    out.extend_from_slice(write::RESULT_PREFIX);
    match value.write_json_within(out, limit) {
        Ok(()) => Ok(()),
        // The writer's only failure: the limit.
        Err(err) if err.is_io() => Err(Failure::TooLarge(limit)),
        Err(err) => Err(Failure::Internal(format!(
            "result could not be encoded: {err}"
        ))),
    }
}

/// Hashes with FNV-1a: method names are short and chosen by the server, so a keyed hash buys
/// nothing here.
#[derive(Default)]
pub(super) struct Fnv(u64);

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
impl Methods {
    /// Replaces the description of the registered method `name`.
    ///
    /// # Errors
    ///
    /// [`RegisterError::Unknown`] when no method of that name is registered.
    pub fn describe(&mut self, name: &str, doc: MethodDoc) -> Result<&mut Self, RegisterError> {
        match self.inner_mut().table.get_mut(name) {
            Some(entry) => {
                entry.doc = std::sync::Arc::new(doc);
                Ok(self)
            }
            None => Err(RegisterError::Unknown(name.to_owned())),
        }
    }

    /// Returns the description of the method `name`, when it is registered.
    pub fn description(&self, name: &str) -> Option<&MethodDoc> {
        self.inner.table.get(name).map(|entry| &*entry.doc)
    }

    /// Returns every method with its description, in the order they were registered (a merged
    /// table's after the methods that were there).
    pub fn descriptions(&self) -> Vec<(&str, &MethodDoc)> {
        let mut all: Vec<_> = self.inner.table.iter().collect();
        all.sort_unstable_by_key(|(_, entry)| entry.seq);
        all.into_iter()
            .map(|(name, entry)| (&**name, &*entry.doc))
            .collect()
    }
}
