//! Answering a body: one request or a notification in (a batch goes to [`batch`](super::batch)),
//! the answer's text out; a request's life from its handler started to its answer written.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;

use tracing::Instrument as _;

use super::limit::{AnswerLimit, KnownLimit, Unlimited, too_large};
use super::methods::{BoxCall, Failure, NotStarted, OnePass, Output};
use super::{Context, ErrorReport, FromParams as _, Methods, Observation, Outcome, Params};
use crate::wire::write::WriteId;
use crate::wire::{Id, RawId, Request, RpcError, id_of, incoming, write};

impl Methods {
    /// Answers one body (a request, a notification or a batch) as an in-process call: the
    /// answer's text, or `None` when nothing is to be sent back.
    pub async fn handle(&self, body: &str) -> Option<String> {
        let answer = self
            .handle_bytes(body, &self.inner.in_process, Unlimited)
            .await;
        answer.map(write::text)
    }

    /// Answers one body arriving with `ctx` (its transport, headers, peer...); each request gets
    /// a clone of `ctx` stamped with its id.
    pub async fn handle_in(&self, body: &str, ctx: &Context) -> Option<String> {
        self.handle_bytes(body, ctx, Unlimited)
            .await
            .map(write::text)
    }

    /// [`handle_in`](Self::handle_in), the answer left as the bytes written: for a transport
    /// that sends bytes, so that they are not checked again for UTF-8. A request's answer stops
    /// being written past `limit` (a batch's is not: the transport checks it whole).
    pub(crate) async fn handle_bytes(
        &self,
        body: &str,
        ctx: &Context,
        limit: impl AnswerLimit,
    ) -> Option<Vec<u8>> {
        if incoming::is_batch(body) {
            // Boxed: a batch's future is larger than a request's, and every caller's future
            // would carry it (a request's future is moved and allocated whole).
            return Box::pin(self.handle_batch(body, ctx)).await;
        }
        let started = match self.start_body(body, ctx, None) {
            Some(started) => started,
            None => match incoming::parse_request(body) {
                Ok(req) => self.start(req, ctx),
                Err(rejection) => return Some(rejection.answer()),
            },
        };
        self.run(started, ctx, self.deadline(), limit).await
    }

    #[inline]
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.inner.handler_timeout.map(crate::time::after)
    }

    /// Whether the request's DEBUG line is on, and when it began if anyone is to be told.
    #[inline]
    fn clock(&self) -> (bool, Option<std::time::Instant>) {
        // The per-request line is at DEBUG; while that is off, it costs one cached check.
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        let started_at = (logged || self.inner.observer.is_some()).then(std::time::Instant::now);
        (logged, started_at)
    }

    /// A request read already: its handler found and started, or its answer when there is none
    /// to run (bad params, an unknown method, a panic).
    #[inline]
    pub(crate) fn start<'a>(&self, req: Request<'a>, ctx: &Context) -> Started<'a> {
        let (logged, started_at) = self.clock();
        let id = req.id.map(id_of);
        let state = 'done: {
            let ctx = ctx.for_request(id.clone());
            if let Some(layers) = &self.inner.layers {
                break 'done Stage::Running(self.layered(layers, &req.method, req.params, ctx));
            }
            let fut = match self.inner.table.get(&*req.method) {
                Some(entry) => {
                    let handler = &*entry.handler;
                    match std::panic::catch_unwind(AssertUnwindSafe(|| {
                        handler.start(req.params, ctx)
                    })) {
                        Ok(Ok(fut)) => fut,
                        Ok(Err(err)) => break 'done refused(&req.method, req.id, &err),
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
                        fallback(req.method.clone().into_owned(), params, ctx)
                    }
                    None => {
                        let err = RpcError::method_not_found();
                        break 'done Stage::Done(answer(req.id, &err), Outcome::Error(err.code()));
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

    /// A request read from `body` with its params in one pass, its handler started; `None` when
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

    /// A request read and started, as [`start`](Self::start) makes it.
    pub(super) fn start_one_pass<'a>(&self, read: OnePass<'a>) -> Started<'a> {
        let (logged, started_at) = self.clock();
        self.start_one_pass_at(read, logged, started_at)
    }

    #[inline]
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
            Err(NotStarted::Refused(err)) => refused(read.method, read.raw_id.as_ref(), &err),
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

    /// Runs a started request under the deadline, and writes its answer within `limit`; logs and
    /// observes it.
    #[inline]
    pub(crate) fn run<'s>(
        &'s self,
        started: Started<'s>,
        ctx: &'s Context,
        deadline: Option<tokio::time::Instant>,
        limit: impl AnswerLimit,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send + 's {
        self.run_in(started, None, ctx, deadline, limit)
    }

    /// [`run`](Self::run), in `span` when [`run_once`](Self::run_once) made
    /// it already (a request has one span).
    ///
    /// Not an `async fn`: its future keeps the request started once, in place (an `async fn`'s
    /// arguments are moved into locals of its own, and kept twice).
    pub(crate) fn run_in<'s>(
        &'s self,
        started: Started<'s>,
        span: Option<tracing::Span>,
        ctx: &'s Context,
        deadline: Option<tokio::time::Instant>,
        limit: impl AnswerLimit,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send + 's {
        let mut started = started;
        async move {
            let span = span.unwrap_or_else(|| started.span(ctx));
            let (answer, outcome) = match &mut started.state {
                Stage::Done(answer, outcome) => (answer.take(), *outcome),
                Stage::Running(_) => {
                    let mut out = Vec::new();
                    let limit = limit.of(ctx);
                    // Entering a disabled span on every poll is measurable on the hot path.
                    let output = if span.is_disabled() {
                        run_call(&mut started.state, &mut out, deadline, limit).await
                    } else {
                        run_call(&mut started.state, &mut out, deadline, limit)
                            .instrument(span.clone())
                            .await
                    };
                    let outcome = self.written(output, &mut out, 0, &started);
                    (started.raw_id.is_some().then_some(out), outcome)
                }
            };
            self.end(&started, &span, ctx, outcome);
            answer
        }
    }

    /// Answers a started request at once when its handler finishes in its first poll (run in
    /// the request's span when a subscriber records it): what a peer's loop tries before it
    /// gives a call a task of its own. The request comes back, its handler polled once, when it
    /// has to wait, with its span when that is recorded.
    pub(crate) fn run_once<'a>(
        &self,
        started: Started<'a>,
        ctx: &Context,
        limit: impl AnswerLimit,
    ) -> FirstPoll<'a> {
        let mut noop = std::task::Context::from_waker(std::task::Waker::noop());
        self.run_once_apart(started, ctx, &mut noop, limit)
    }

    /// [`run_once_into`](Self::run_once_into), its answer (if any) in a buffer of its own.
    #[inline]
    pub(super) fn run_once_apart<'a>(
        &self,
        started: Started<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
        limit: impl AnswerLimit,
    ) -> FirstPoll<'a> {
        let mut out = Vec::new();
        match self.run_once_into(started, ctx, cx, &mut out, limit) {
            FirstPoll::Answered(()) => FirstPoll::Answered((!out.is_empty()).then_some(out)),
            FirstPoll::Waiting(started, span) => FirstPoll::Waiting(started, span),
        }
    }

    /// [`run_once`](Self::run_once), its handler polled with `cx`, so that a handler
    /// that waits is woken through it, and its answer (if any) appended to `out`: how a batch's
    /// elements are first run.
    #[inline]
    pub(super) fn run_once_into<'a>(
        &self,
        mut started: Started<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
        limit: impl AnswerLimit,
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
                let limit = limit.of(ctx);
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
    #[inline]
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
                tracing::debug!(
                    method = %method,
                    id = %shown,
                    transport = %ctx.transport(),
                    ?elapsed,
                    %outcome,
                    "request",
                );
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

    /// The error a failed call is answered with: the handler's own, unless its code is reserved;
    /// a layer's as it is; `-32603` for anything internal, whose reason is reported.
    #[cold]
    pub(super) fn failed(&self, failure: Failure, method: &str, id: Option<&Id>) -> RpcError {
        match failure {
            Failure::Rpc(err) if err.code().is_reserved() => {
                let reason = format!("handler answered the reserved code {}: {err}", err.code());
                self.report(method, id, &reason);
                RpcError::internal()
            }
            Failure::Rpc(err) | Failure::Answered(err) => err,
            Failure::Internal(reason) => {
                self.report(method, id, &reason);
                RpcError::internal()
            }
            Failure::TooLarge(limit) => too_large(method, limit),
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

/// A request whose handler was found and started, or that was answered without one.
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
    /// The request's span (disabled, and all but free, without a subscriber that wants it).
    fn span(&self, ctx: &Context) -> tracing::Span {
        let span = tracing::debug_span!(
            "rpc",
            method = %self.method,
            id = tracing::field::Empty,
            transport = %ctx.transport(),
            outcome = tracing::field::Empty,
        );
        if let (false, Some(id)) = (span.is_disabled(), &self.id) {
            span.record("id", tracing::field::display(id));
        }
        span
    }

    /// The method the request names.
    pub(crate) fn method(&self) -> Cow<'a, str> {
        self.method.clone()
    }

    /// The request's id; `None` for a notification.
    pub(crate) fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// The same request, owning what it borrowed from the text it was read from.
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

/// A request started, after its handler's first poll ([`Methods::run_once`]): answered, or
/// waiting.
pub(crate) enum FirstPoll<'a, A = Option<Vec<u8>>> {
    /// It is answered (with nothing, for a notification).
    Answered(A),
    /// Its handler waits: the request, and its span when a subscriber records it (a request
    /// has one span), to be run in a task of its own or joined with the rest of its batch.
    Waiting(Started<'a>, Option<tracing::Span>),
}

/// Where a request stands once started.
pub(super) enum Stage {
    /// Its handler's call, to run.
    Running(BoxCall),
    /// Answered already (with nothing, for a notification), with this outcome.
    Done(Option<Vec<u8>>, Outcome),
}

impl Stage {
    /// Polls a running call once, with panics contained, its result written to `out` within
    /// `limit` (`Ready` at once, with nothing written, for a request answered already). A call
    /// that is done is dropped there, so that a panic in its drop is contained as one in its
    /// poll is.
    #[inline]
    fn poll_once(
        &mut self,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
        limit: impl KnownLimit,
    ) -> std::task::Poll<Output> {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let Stage::Running(call) = self else {
                return std::task::Poll::Ready(Ok(()));
            };
            let polled = limit.poll(call.as_mut(), cx, out);
            if polled.is_ready() {
                *self = Stage::Done(None, Outcome::Success);
            }
            polled
        }));
        polled.unwrap_or_else(|panic| {
            std::task::Poll::Ready(Err(Failure::Internal(panicked(&*panic))))
        })
    }
}

/// Runs a request's call with panics contained and the deadline applied, its result written to
/// `out` within `limit`.
pub(super) async fn run_call(
    state: &mut Stage,
    out: &mut Vec<u8>,
    deadline: Option<tokio::time::Instant>,
    limit: impl KnownLimit,
) -> Output {
    let polled = std::future::poll_fn(|cx| state.poll_once(cx, out, limit));
    match deadline {
        None => polled.await,
        Some(deadline) => match tokio::time::timeout_at(deadline, polled).await {
            Ok(output) => output,
            Err(_) => Err(Failure::Internal("handler timed out".into())),
        },
    }
}

/// Why a handler that panicked failed, for the log and the error hook.
pub(super) fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    format!("handler panicked: {}", panic_message(panic))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload")
}

/// An error answer for a call; nothing for a notification.
fn answer(raw_id: Option<&(impl WriteId + ?Sized)>, err: &RpcError) -> Option<Vec<u8>> {
    raw_id.map(|id| write::error_bytes(err, id))
}

/// A request whose params did not decode, answered why.
fn refused(method: &str, raw_id: Option<&(impl WriteId + ?Sized)>, err: &RpcError) -> Stage {
    if raw_id.is_none() {
        // Nobody hears about a notification's bad params unless it is logged.
        tracing::warn!(method = %method, error = %err, "notification params did not decode");
    }
    Stage::Done(answer(raw_id, err), Outcome::Error(err.code()))
}

#[cfg(test)]
mod tests;
