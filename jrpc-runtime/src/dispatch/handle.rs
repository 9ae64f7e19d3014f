//! Answers a body: one request or a notification in (a batch goes to [`batch`](super::batch)),
//! the answer's text out; a request's life from its handler started to its answer written.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::Poll;

use futures_util::future::Either;
use serde_json::value::RawValue;

use super::context::Context;
use super::limit::too_large;
use super::methods::Methods;
use super::methods::{Failure, NotStarted, OnePass, Output};
use super::observe::{ErrorReport, Observation, Outcome};
use super::params::{FromParams as _, Params};
use super::stage::{Stage, cancel_call, panicked, run_call};
use super::trace::TraceContext;
use crate::wire::write::WriteId;
use crate::wire::{Id, RawId, Request, RpcError, id_of, incoming, write};

impl Methods {
    /// Answers one body (a request, a notification or a batch) as an in-process call: the
    /// answer's text, or `None` when nothing is to be sent back.
    pub async fn handle(&self, body: &str) -> Option<String> {
        // The table's own context carries no trace: nothing to serve.
        let answer = self.answer(body, &self.inner.in_process).await;
        answer.map(write::text)
    }

    /// Answers one body arriving with `ctx` (its transport, headers, peer...); each request gets
    /// a clone of `ctx` stamped with its id.
    pub async fn handle_in(&self, body: &str, ctx: &Context) -> Option<String> {
        self.handle_bytes(body, ctx).await.map(write::text)
    }

    /// Does what [`handle_in`](Self::handle_in) does, the answer left as the bytes written: for a
    /// transport that sends bytes, so that they are not checked again for UTF-8. The calls its
    /// handlers make carry the trace of `ctx`, if it has one.
    ///
    /// The request is started and its handler polled once in the first poll of this future
    /// ([`answer_now`](Self::answer_now)), so that the future holds no room for a running
    /// request: only a handler that waits is given a box of its own, to run on in. A transport
    /// that moves its futures whole (hyper moves each HTTP/1.1 request's into its place) moves
    /// this small one.
    pub(crate) async fn handle_bytes(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
        let now = std::future::poll_fn(|cx| Poll::Ready(self.answer_now(body, ctx, cx)));
        match now.await {
            Ok(answer) => answer,
            Err(later) => later.await,
        }
    }

    /// Runs [`handle_bytes`](Self::handle_bytes)'s first poll: the request started and its handler
    /// polled once with `cx`: its answer (`None` when there is none to send), unless the handler
    /// waits (or the body is a batch, or carries a trace): then the future that makes it, boxed.
    /// For a caller that polls it in its own future, with no `async fn` around it.
    pub(crate) fn answer_now<'a>(
        &'a self,
        body: &'a str,
        ctx: &'a Context,
        cx: &mut std::task::Context<'_>,
    ) -> Result<Option<Vec<u8>>, Answering<'a>> {
        if let Some(trace) = ctx.trace() {
            return Err(self.traced(body, ctx, trace));
        }
        if incoming::is_batch(body) {
            return Err(Box::pin(self.handle_batch(body, ctx)));
        }
        let started = match self.start_body(body, ctx, None) {
            Some(started) => started,
            None => match incoming::parse_request(body).or_else(|r| self.reconsider(r)) {
                Ok(req) => self.start(req, ctx),
                Err(rejection) => return Ok(Some(rejection.answer())),
            },
        };
        // From the start, as for a request run whole.
        let deadline = self.deadline();
        match self.run_once_apart(started, ctx, cx) {
            FirstPoll::Answered(answer) => Ok(answer),
            FirstPoll::Waiting(started, span) => {
                Err(Box::pin(self.run_in(started, span, ctx, deadline)))
            }
        }
    }

    /// [`answer`](Self::answer) with `trace` served. Boxed: every request's future would
    /// otherwise carry the room for a trace.
    #[cold]
    fn traced<'a>(
        &'a self,
        body: &'a str,
        ctx: &'a Context,
        trace: &TraceContext,
    ) -> Answering<'a> {
        Box::pin(super::trace::serving(trace, self.answer(body, ctx)))
    }

    /// [`handle_bytes`](Self::handle_bytes), with no trace served.
    async fn answer(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
        if incoming::is_batch(body) {
            // Boxed: a batch's future is larger than a request's, and every caller's future
            // would carry it (a request's future is moved and allocated whole).
            return Box::pin(self.handle_batch(body, ctx)).await;
        }
        let started = match self.start_body(body, ctx, None) {
            Some(started) => started,
            None => match incoming::parse_request(body).or_else(|r| self.reconsider(r)) {
                Ok(req) => self.start(req, ctx),
                Err(rejection) => return Some(rejection.answer()),
            },
        };
        if let Stage::Done(..) = started.state {
            // Answered already (an unknown method, bad params): nothing to run.
            return self.ended(started, ctx);
        }
        self.run(started, ctx, self.deadline()).await
    }

    /// Calls the method `method` with `params` and `ctx` (the request it serves keeps its id),
    /// and gives its result as JSON: no request is written or read, so a layer that serves
    /// this table's methods under a protocol of its own (an MCP `tools/call`) calls them as
    /// they are. The params are decoded and the handler run as for any request, under the
    /// table's deadline with panics contained; the observer and the request's log line are the
    /// outer request's.
    ///
    /// ```
    /// use jrpc_runtime::{Context, Methods, RpcError, Transport};
    /// use serde_json::value::RawValue;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut methods = Methods::new();
    /// methods.register("add", &["a", "b"], |(a, b): (i64, i64), _| async move { Ok::<_, RpcError>(a + b) }).unwrap();
    /// let params = RawValue::from_string(r#"{"a":2,"b":3}"#.into()).unwrap();
    /// let ctx = Context::new(Transport::InProcess);
    /// let sum = methods.invoke("add", Some(&params), &ctx).await.unwrap();
    /// assert_eq!(sum.get(), "5");
    /// let err = methods.invoke("add", None, &ctx).await.unwrap_err();
    /// assert_eq!(err.code().code(), -32602);
    /// # });
    /// ```
    ///
    /// # Errors
    ///
    /// On a table with call layers ([`layer`](Self::layer)) the call goes through them, as a
    /// request's would.
    ///
    /// `-32601` for a method not in the table (the fallback is not asked), `-32602` for params
    /// that do not decode, the handler's own error as it gave it, and `-32603` (its reason
    /// reported as for any request) for a panic, a timeout or a result that could not be
    /// encoded.
    pub async fn invoke(
        &self,
        method: &str,
        params: Option<&RawValue>,
        ctx: &Context,
    ) -> Result<Box<RawValue>, RpcError> {
        let entry = self
            .inner
            .table
            .get(method)
            .ok_or_else(RpcError::method_not_found)?;
        let call = if let Some(layers) = &self.inner.layers {
            self.layered(layers, method, params, ctx.clone())
        } else {
            let handler = &*entry.handler;
            let started =
                std::panic::catch_unwind(AssertUnwindSafe(|| handler.start(params, ctx.clone())));
            match started {
                Ok(started) => started?,
                Err(panic) => return Err(self.invoke_failed(method, ctx, &panicked(&*panic))),
            }
        };
        let mut state = Stage::Running(call);
        let mut out = Vec::new();
        match run_call(&mut state, &mut out, self.deadline()).await {
            Ok(()) => {
                let json = out.split_off(write::RESULT_PREFIX.len());
                String::from_utf8(json)
                    .ok()
                    .and_then(|text| RawValue::from_string(text).ok())
                    .ok_or_else(|| self.invoke_failed(method, ctx, "result is not JSON text"))
            }
            Err(Failure::Rpc(err) | Failure::Answered(err) | Failure::Reported(err)) => Err(err),
            Err(Failure::Internal(reason)) => Err(self.invoke_failed(method, ctx, &reason)),
            Err(Failure::TooLarge(limit)) => Err(too_large(Some(method), None, limit)),
        }
    }

    /// Reports why an [`invoke`](Self::invoke) failed inside, and gives `-32603`.
    #[cold]
    fn invoke_failed(&self, method: &str, ctx: &Context, reason: &str) -> RpcError {
        self.report(method, ctx.id(), reason);
        RpcError::internal()
    }

    /// Ends a request answered as it started, and gives its answer.
    #[inline(never)]
    fn ended(&self, mut started: Started<'_>, ctx: &Context) -> Option<Vec<u8>> {
        let span = started.span(ctx);
        let Stage::Done(answer, outcome) = &mut started.state else {
            return None;
        };
        let (answer, outcome) = (answer.take(), *outcome);
        self.end(&started, &span, ctx, outcome);
        answer
    }

    #[inline]
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.inner.handler_timeout.map(crate::time::after)
    }

    /// Returns whether the request's DEBUG line is on, and when it began if anyone is to be told.
    #[inline]
    fn clock(&self) -> (bool, Option<std::time::Instant>) {
        // The per-request line is at DEBUG; while that is off, it costs one cached check.
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        let started_at = (logged || self.inner.observer.is_some()).then(std::time::Instant::now);
        (logged, started_at)
    }

    /// Starts a request read already: its handler found and started, or its answer when there is
    /// none to run (bad params, an unknown method, a panic).
    #[inline]
    pub(crate) fn start<'a>(&self, req: Request<'a>, ctx: &Context) -> Started<'a> {
        let (logged, started_at) = self.clock();
        let id = req.id.map(id_of);
        let state = 'done: {
            // Made only for a handler: a request answered at once has no use for it.
            let ctx = || ctx.for_request(id.clone());
            if let Some(layers) = &self.inner.layers {
                break 'done Stage::Running(self.layered(layers, &req.method, req.params, ctx()));
            }
            let fut = match self.inner.table.get(&*req.method) {
                Some(entry) => {
                    let handler = &*entry.handler;
                    match std::panic::catch_unwind(AssertUnwindSafe(|| {
                        handler.start(req.params, ctx())
                    })) {
                        Ok(Ok(fut)) => fut,
                        Ok(Err(err)) => break 'done refused(self, &req.method, req.id, &err),
                        Err(panic) => {
                            let reason = panicked(&*panic);
                            let (answer, outcome) =
                                self.internal(&req.method, id.as_ref(), req.id, &reason);
                            break 'done Stage::Done(answer, outcome);
                        }
                    }
                }
                None => match &self.inner.fallback {
                    _ if self.serves_discover(&req.method) => match self.discover(req.params) {
                        Ok(fut) => fut,
                        Err(err) => {
                            break 'done Stage::Done(
                                answer(req.id, &err),
                                Outcome::Error(err.code()),
                            );
                        }
                    },
                    Some(fallback) => {
                        let params = Params::from_params(req.params, &[]).unwrap_or_default();
                        fallback(req.method.clone().into_owned(), params, ctx())
                    }
                    None => {
                        let err = RpcError::method_not_found();
                        break 'done refused(self, &req.method, req.id, &err);
                    }
                },
            };
            Stage::Running(fut)
        };
        Started {
            method: req.method,
            raw_id: req.id.map(RawId::from),
            id,
            logged,
            started_at,
            state,
        }
    }

    /// Reads a request from `body` with its params in one pass and starts its handler; `None` when
    /// it is not read so, and must be read as usual, and for a request naming `except` (a peer's
    /// cancellation notice, which never reaches a handler). On a table with call layers (which
    /// see the raw params) the request is read as usual here, and goes through them.
    #[inline]
    pub(crate) fn start_body<'a>(
        &self,
        body: &'a str,
        ctx: &Context,
        except: Option<&str>,
    ) -> Option<Started<'a>> {
        if self.inner.layers.is_some() {
            return self.start_body_layered(body, ctx, except);
        }
        let method = incoming::peek_method(body)?;
        if except == Some(method) {
            return None;
        }
        let entry = self.inner.table.get(method)?;
        let (logged, started_at) = self.clock();
        let read = entry.handler.start_body(body, method, ctx)?;
        Some(self.start_one_pass_at(read, logged, started_at))
    }

    /// Returns a request read and started, as [`start`](Self::start) makes it.
    pub(super) fn start_one_pass<'a>(&self, read: OnePass<'a>) -> Started<'a> {
        let (logged, started_at) = self.clock();
        self.start_one_pass_at(read, logged, started_at)
    }

    #[inline(always)]
    fn start_one_pass_at<'a>(
        &self,
        read: OnePass<'a>,
        logged: bool,
        started_at: Option<std::time::Instant>,
    ) -> Started<'a> {
        let state = match read.started {
            Ok(fut) => Stage::Running(fut),
            Err(NotStarted::Panicked(panic)) => {
                let reason = panicked(&*panic);
                let (answer, outcome) =
                    self.internal(read.method, read.id.as_ref(), read.raw_id.as_ref(), &reason);
                Stage::Done(answer, outcome)
            }
            Err(NotStarted::Refused(err)) => refused(self, read.method, read.raw_id.as_ref(), &err),
        };
        Started {
            method: Cow::Borrowed(read.method),
            raw_id: read.raw_id,
            id: read.id,
            logged,
            started_at,
            state,
        }
    }

    /// Runs a started request under the deadline, and writes its answer; logs and observes it.
    #[inline]
    pub(crate) fn run<'s>(
        &'s self,
        started: Started<'s>,
        ctx: &'s Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Running<'s> {
        self.run_in(started, None, ctx, deadline)
    }

    /// Does what [`run`](Self::run) does, in `span` when [`run_once`](Self::run_once) made
    /// it already (a request has one span).
    pub(crate) fn run_in<'s>(
        &'s self,
        started: Started<'s>,
        span: Option<tracing::Span>,
        ctx: &'s Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Running<'s> {
        Running {
            methods: self,
            ctx,
            started,
            span,
            out: Vec::new(),
            deadline,
        }
    }

    /// Does what [`run_in`](Self::run_in) does, for a request that runs in a task of its own: the
    /// calls its handler makes carry the trace of `ctx`, if it has one.
    pub(crate) fn run_apart<'s>(
        &'s self,
        started: Started<'s>,
        span: Option<tracing::Span>,
        ctx: &'s Context,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send + 's {
        let running = self.run_in(started, span, ctx, self.deadline());
        match ctx.trace() {
            None => Either::Left(running),
            Some(trace) => Either::Right(super::trace::serving(trace, running)),
        }
    }

    /// Answers a started request at once when its handler finishes in its first poll (run in
    /// the request's span when a subscriber records it): what a peer's loop tries before it
    /// gives a call a task of its own. The request comes back, its handler polled once, when it
    /// has to wait, with its span when that is recorded.
    pub(crate) fn run_once<'a>(&self, started: Started<'a>, ctx: &Context) -> FirstPoll<'a> {
        // The calls its handler makes carry the caller's trace: all of it runs in `run_apart`.
        if ctx.trace().is_some() && matches!(started.state, Stage::Running(_)) {
            return FirstPoll::Waiting(started, None);
        }
        let mut noop = std::task::Context::from_waker(std::task::Waker::noop());
        self.run_once_apart(started, ctx, &mut noop)
    }

    /// Does what [`run_once_into`](Self::run_once_into) does, its answer (if any) in a buffer of
    /// its own.
    #[inline]
    pub(super) fn run_once_apart<'a>(
        &self,
        started: Started<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
    ) -> FirstPoll<'a> {
        let mut out = Vec::new();
        match self.run_once_into(started, ctx, cx, &mut out) {
            FirstPoll::Answered(()) => FirstPoll::Answered((!out.is_empty()).then_some(out)),
            FirstPoll::Waiting(started, span) => FirstPoll::Waiting(started, span),
        }
    }

    /// Does what [`run_once`](Self::run_once) does, its handler polled with `cx`, so that a handler
    /// that waits is woken through it, and its answer (if any) appended to `out`: how a batch's
    /// elements are first run.
    #[inline]
    pub(super) fn run_once_into<'a>(
        &self,
        mut started: Started<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> FirstPoll<'a, ()> {
        let span = started.span(ctx);
        let outcome = match &mut started.state {
            Stage::Done(answer, outcome) => {
                if let Some(answer) = answer.take() {
                    if out.is_empty() {
                        *out = answer;
                    } else {
                        out.extend_from_slice(&answer);
                    }
                }
                *outcome
            }
            Stage::Running(_) => {
                let start = out.len();
                let limit = ctx.answer_limit();
                // Under a subscriber that records the span, the first poll runs in it as the
                // later ones do: whether a call is answered at once (and so never counted in
                // flight) does not depend on logging.
                let polled = if span.is_disabled() {
                    started.state.poll_once(cx, out, limit)
                } else {
                    span.in_scope(|| started.state.poll_once(cx, out, limit))
                };
                let output = match polled {
                    std::task::Poll::Ready(output) => output,
                    std::task::Poll::Pending => {
                        let span = (!span.is_disabled()).then_some(span);
                        return FirstPoll::Waiting(started, span);
                    }
                };
                self.written(output, out, start, &started)
            }
        };
        self.end(&started, &span, ctx, outcome);
        FirstPoll::Answered(())
    }

    /// Records in its span, logs and tells the observer how a started request went: the one exit
    /// of every request, so that the observer and the log see every way out.
    #[inline(always)]
    fn end(&self, started: &Started<'_>, span: &tracing::Span, ctx: &Context, outcome: Outcome) {
        let (method, id) = (&*started.method, started.id.as_ref());
        if !span.is_disabled() {
            span.record("outcome", tracing::field::display(outcome));
        }
        if let Some(started_at) = started.started_at {
            let elapsed = started_at.elapsed();
            if started.logged {
                // A notification has no id: `none`, which no id's JSON text can be.
                let shown: &dyn std::fmt::Display = match id {
                    Some(id) => id,
                    None => &"none",
                };
                match ctx.trace() {
                    None => tracing::debug!(
                        method = %method,
                        id = %shown,
                        transport = %ctx.transport(),
                        ?elapsed,
                        %outcome,
                        "request",
                    ),
                    Some(trace) => tracing::debug!(
                        method = %method,
                        id = %shown,
                        transport = %ctx.transport(),
                        trace_id = %trace.trace_id(),
                        ?elapsed,
                        %outcome,
                        "request",
                    ),
                }
            }
            if let Some(observer) = &self.inner.observer {
                observer(&Observation {
                    method,
                    id,
                    transport: ctx.transport(),
                    elapsed,
                    outcome,
                });
            }
        }
    }

    /// Completes the answer the call of a request started wrote from `out[start..]` (its result,
    /// or nothing when it failed): the result closed with the id, an error in its place, or
    /// nothing at all for a notification. Its outcome.
    fn written(
        &self,
        output: Output,
        out: &mut Vec<u8>,
        start: usize,
        started: &Started<'_>,
    ) -> Outcome {
        let raw_id = started.raw_id.as_ref();
        let err = match output {
            Ok(()) => {
                match raw_id {
                    Some(raw_id) => write::end_result(out, raw_id),
                    None => out.truncate(start),
                }
                return Outcome::Success;
            }
            // A notification's result is not sent: too large or not.
            Err(Failure::TooLarge(_)) if raw_id.is_none() => {
                out.truncate(start);
                return Outcome::Success;
            }
            Err(failure) => self.failed(failure, &started.method, started.id.as_ref()),
        };
        // A panic while the result was written may have left part of it.
        out.truncate(start);
        if let Some(raw_id) = raw_id {
            write::error(out, &err, raw_id);
        }
        Outcome::Error(err.code())
    }

    /// Returns the error a failed call is answered with: the handler's own, unless its code is
    /// reserved; a layer's as it is; `-32603` for anything internal, whose reason is reported.
    #[cold]
    pub(super) fn failed(&self, failure: Failure, method: &str, id: Option<&Id>) -> RpcError {
        match failure {
            Failure::Rpc(err) if err.code().is_reserved() && !err.is_by_runtime() => {
                let reason = format!("handler answered the reserved code {}: {err}", err.code());
                self.report(method, id, &reason);
                RpcError::internal()
            }
            Failure::Rpc(err) | Failure::Answered(err) => {
                if id.is_none() {
                    self.notification_failed(method, &err);
                }
                err
            }
            Failure::Internal(reason) => {
                self.report(method, id, &reason);
                RpcError::internal()
            }
            Failure::TooLarge(limit) => too_large(Some(method), None, limit),
            Failure::Reported(err) => err,
        }
    }

    /// Reports a notification that failed (its params did not decode, its method is unknown, its
    /// handler failed): no answer tells anyone, so it is logged at WARN and told to the error
    /// hook.
    #[cold]
    pub(super) fn notification_failed(&self, method: &str, err: &RpcError) {
        // A string `data` (the `-32602` reason) reads better unquoted.
        let reason = match err.data_as::<String>() {
            Some(Ok(data)) => format!("error {}: {}: {data}", err.code(), err.message()),
            _ => err.to_string(),
        };
        tracing::warn!(method, error = %reason, "notification failed: no answer tells anyone");
        if let Some(hook) = &self.inner.on_error {
            hook(&ErrorReport {
                method,
                id: None,
                reason: &reason,
            });
        }
    }

    /// Reports an internal failure and answers `-32603` with no detail.
    #[cold]
    fn internal(
        &self,
        method: &str,
        id: Option<&Id>,
        raw_id: Option<&(impl WriteId + ?Sized)>,
        reason: &str,
    ) -> (Option<Vec<u8>>, Outcome) {
        self.report(method, id, reason);
        let err = RpcError::internal();
        (answer(raw_id, &err), Outcome::Error(err.code()))
    }

    /// Logs an internal failure and tells the error hook.
    #[cold]
    pub(super) fn report(&self, method: &str, id: Option<&Id>, reason: &str) {
        tracing::error!(method, id = ?id, reason, "request failed");
        if let Some(hook) = &self.inner.on_error {
            hook(&ErrorReport { method, id, reason });
        }
    }
}

/// Holds a request whose handler was found and started, or that was answered without one.
pub(crate) struct Started<'a> {
    method: Cow<'a, str>,
    /// `None` for a notification.
    pub(super) raw_id: Option<RawId<'a>>,
    id: Option<Id>,
    /// Whether its DEBUG line is on.
    logged: bool,
    /// When it began, if it is to be logged or observed.
    started_at: Option<std::time::Instant>,
    state: Stage,
}

impl<'a> Started<'a> {
    /// Returns the request's span (disabled, and all but free, without a subscriber that wants it).
    fn span(&self, ctx: &Context) -> tracing::Span {
        let span = tracing::debug_span!(
            "rpc",
            method = %self.method,
            id = tracing::field::Empty,
            transport = %ctx.transport(),
            trace_id = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        if !span.is_disabled() {
            if let Some(id) = &self.id {
                span.record("id", tracing::field::display(id));
            }
            if let Some(trace) = ctx.trace() {
                super::trace::parent(&span, trace);
            }
        }
        span
    }

    /// Returns the method the request names.
    pub(crate) fn method(&self) -> Cow<'a, str> {
        self.method.clone()
    }

    /// Returns the request's id; `None` for a notification.
    pub(crate) fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// Returns the same request, owning what it borrowed from the text it was read from.
    pub(crate) fn into_owned(self) -> Started<'static> {
        Started {
            method: Cow::Owned(self.method.into_owned()),
            raw_id: self.raw_id.map(RawId::into_owned),
            id: self.id,
            logged: self.logged,
            started_at: self.started_at,
            state: self.state,
        }
    }
}

/// Boxes the future that makes a body's answer (`None` when there is none to send).
pub(crate) type Answering<'a> = Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send + 'a>>;

/// Says where a started request stands after its handler's first poll ([`Methods::run_once`]):
/// answered, or waiting.
pub(crate) enum FirstPoll<'a, A = Option<Vec<u8>>> {
    /// It is answered (with nothing, for a notification).
    Answered(A),
    /// Its handler waits: the request, and its span when a subscriber records it (a request
    /// has one span), to be run in a task of its own or joined with the rest of its batch.
    Waiting(Started<'a>, Option<tracing::Span>),
}

/// Runs a started request to its answer under its deadline, with panics contained, in its
/// span: the future of [`Methods::run_in`], written out so that it holds the request once, in
/// place, and ends it however it ends.
///
/// Dropped before it ended (its caller went away, a cancel notice, the drain budget spent), it
/// ends the request as [`Outcome::Cancelled`], and drops its handler's call as cancelled (see
/// [`cancel`](super::cancel)): as one whose deadline passed or that panicked is too.
pub(crate) struct Running<'s> {
    methods: &'s Methods,
    ctx: &'s Context,
    started: Started<'s>,
    /// Its span, once made (at the first poll, unless given).
    span: Option<tracing::Span>,
    /// Where its result is written.
    out: Vec<u8>,
    /// Its deadline, until its call is given it (when the call first waits).
    deadline: Option<tokio::time::Instant>,
}

impl Future for Running<'_> {
    type Output = Option<Vec<u8>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let span = match &this.span {
            Some(span) => span,
            None => this.span.insert(this.started.span(this.ctx)),
        };
        let (answer, outcome) = match &mut this.started.state {
            Stage::Done(answer, outcome) => (answer.take(), *outcome),
            Stage::Running(_) => {
                let limit = this.ctx.answer_limit();
                // Entering a disabled span on every poll is measurable on the hot path.
                let polled = if span.is_disabled() {
                    this.started.state.poll_once(cx, &mut this.out, limit)
                } else {
                    let _entered = span.enter();
                    this.started.state.poll_once(cx, &mut this.out, limit)
                };
                let output = match polled {
                    Poll::Ready(output) => output,
                    Poll::Pending => {
                        if let Some(deadline) = this.deadline.take() {
                            this.started.state.time(deadline, cx);
                        }
                        return Poll::Pending;
                    }
                };
                let outcome = this
                    .methods
                    .written(output, &mut this.out, 0, &this.started);
                let out = std::mem::take(&mut this.out);
                (this.started.raw_id.is_some().then_some(out), outcome)
            }
        };
        this.methods.end(&this.started, span, this.ctx, outcome);
        Poll::Ready(answer)
    }
}

/// Ends here a request whose call did not finish (or did not start: its stage is still
/// `Running`); one that ended has its stage `Done`, its call gone.
impl Drop for Running<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Stage::Running(_) = self.started.state {
            self.cancelled();
        }
    }
}

impl Running<'_> {
    /// Ends a request dropped before it ended.
    #[cold]
    fn cancelled(&mut self) {
        let span = match self.span.take() {
            Some(span) => span,
            None => self.started.span(self.ctx),
        };
        self.methods
            .end(&self.started, &span, self.ctx, Outcome::Cancelled);
        cancel_call(&mut self.started.state);
    }
}

/// Returns an error answer for a call; nothing for a notification.
fn answer(raw_id: Option<&(impl WriteId + ?Sized)>, err: &RpcError) -> Option<Vec<u8>> {
    raw_id.map(|id| write::error_bytes(err, id))
}

/// Answers a request whose params did not decode, saying why.
fn refused(
    methods: &Methods,
    method: &str,
    raw_id: Option<&(impl WriteId + ?Sized)>,
    err: &RpcError,
) -> Stage {
    if raw_id.is_none() {
        methods.notification_failed(method, err);
    }
    Stage::Done(answer(raw_id, err), Outcome::Error(err.code()))
}

/// Holds a started request handed to a task of its own (a peer's call that waits): ended as
/// cancelled (logged, observed, its call dropped as cancelled) if the task is dropped before it
/// first runs it, as a cancel notice that arrives at once may do.
pub(crate) struct Handed {
    started: Option<Started<'static>>,
    span: Option<tracing::Span>,
    methods: Methods,
    ctx: Context,
}

impl Handed {
    /// Hands `started` (with its span, if made already) over, to be run with `methods` in `ctx`.
    pub(crate) fn new(
        started: Started<'static>,
        span: Option<tracing::Span>,
        methods: Methods,
        ctx: Context,
    ) -> Self {
        Self {
            started: Some(started),
            span,
            methods,
            ctx,
        }
    }

    /// Runs the request to its answer (see [`Methods::run_apart`]).
    pub(crate) async fn run(mut self) -> Option<Vec<u8>> {
        let started = self.started.take()?;
        let span = self.span.take();
        self.methods.run_apart(started, span, &self.ctx).await
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        if let Some(started) = self.started.take() {
            // A request future dropped unpolled ends as cancelled.
            drop(
                self.methods
                    .run_in(started, self.span.take(), &self.ctx, None),
            );
        }
    }
}
#[cfg(test)]
mod tests;
