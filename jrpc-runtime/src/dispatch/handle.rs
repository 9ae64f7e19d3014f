//! Answering a body: one request, a notification or a batch in, the answer's text out.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;

use futures_util::StreamExt as _;
use tracing::Instrument as _;

use super::methods::{BoxCall, Element, Failure, NotStarted, OnePass, Output};
use super::{Batches, Context, ErrorReport, Methods, Observation, Outcome, Params};
use crate::wire::write::WriteId;
use crate::wire::{RawId, Rejection, Request, id_of, incoming, write};

use crate::dispatch::FromParams as _;
use crate::wire::{Id, RpcError};

impl Methods {
    /// Answers one body (a request, a notification or a batch) as an in-process call: the
    /// answer's text, or `None` when nothing is to be sent back.
    pub async fn handle(&self, body: &str) -> Option<String> {
        let answer = self.handle_bytes(body, &self.inner.in_process).await;
        answer.map(write::text)
    }

    /// Answers one body arriving with `ctx` (its transport, headers, peer...); each request gets
    /// a clone of `ctx` stamped with its id.
    pub async fn handle_in(&self, body: &str, ctx: &Context) -> Option<String> {
        self.handle_bytes(body, ctx).await.map(write::text)
    }

    /// [`handle_in`](Self::handle_in), the answer left as the bytes written: for a transport
    /// that sends bytes, so that they are not checked again for UTF-8.
    pub(crate) async fn handle_bytes(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
        if incoming::is_batch(body) {
            // Boxed: a batch's future is larger than a request's, and every caller's future
            // would carry it (a request's future is moved and allocated whole).
            return Box::pin(self.handle_batch(body, ctx)).await;
        }
        let begun = match self.begin_body(body, ctx, None) {
            Some(begun) => begun,
            None => match incoming::parse_request(body) {
                Ok(req) => self.begin(req, ctx),
                Err(rejection) => return Some(rejection.answer()),
            },
        };
        self.finish(begun, ctx, self.deadline()).await
    }

    #[inline]
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.inner.handler_timeout.map(crate::time::after)
    }

    async fn handle_batch(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
        if let Some(answer) = self.batch_in_one_pass(body, ctx).await {
            return answer;
        }
        // `[` starts it, so it is JSON only if it is an array: anything else is a parse error.
        let Some(elements) = incoming::parse_batch(body) else {
            return Some(Rejection::Unparsable.answer());
        };
        let refused = match self.inner.batches {
            _ if elements.is_empty() => Some(RpcError::invalid_request()),
            Batches::Refused => {
                Some(RpcError::invalid_request().with_data("batches are not accepted"))
            }
            Batches::UpTo(max) if elements.len() > max => {
                let reason = format!("a batch of {} exceeds the limit of {max}", elements.len());
                Some(RpcError::invalid_request().with_data(&reason))
            }
            Batches::UpTo(_) => None,
        };
        if let Some(err) = refused {
            return Some(write::error_bytes(&err, &None::<&Id>));
        }
        let deadline = self.deadline();
        let cap = self.inner.batch_concurrency.get();
        if elements.len() <= cap {
            let elements = elements.into_iter().map(Element::from).collect();
            return self.all_at_once(elements, ctx, deadline).await;
        }
        // At most `cap` running, started in order as earlier ones finish; answers in order.
        // (The futures are made first: a stream mapping with a closure here would not be
        // provably `Send` for every lifetime of the body.)
        let pending: Vec<_> = elements
            .into_iter()
            .map(|element| self.element(element, ctx, deadline))
            .collect();
        let answers: Vec<Option<Vec<u8>>> = futures_util::stream::iter(pending)
            .buffered(cap)
            .collect()
            .await;
        write::batch(answers.iter().flatten())
    }

    /// The answer to a batch whose elements naming the method its first one names are read
    /// with their params in one pass (`Some(None)` when it is all notifications): when the
    /// batch is all valid requests, is taken (not refused, no larger than the limit) and may
    /// run all at once. `None`, with nothing run, when it is to be read as usual.
    async fn batch_in_one_pass(&self, body: &str, ctx: &Context) -> Option<Option<Vec<u8>>> {
        let Batches::UpTo(max) = self.inner.batches else {
            return None;
        };
        let method = incoming::peek_batch_method(body)?;
        let handler = &*self.inner.table.get(method)?.handler;
        let max = max.min(self.inner.batch_concurrency.get());
        let deadline = self.deadline();
        let mut run = AllAtOnce::default();
        let taken = std::future::poll_fn(|cx| {
            let mut each = |element, count| {
                run.count = count;
                self.take(element, ctx, cx, &mut run);
            };
            std::task::Poll::Ready(handler.start_batch(body, method, ctx, max, &mut each))
        })
        .await;
        if !taken {
            return None;
        }
        Some(self.join(run, ctx, deadline).await)
    }

    /// Answers a batch's elements all at once, in one task: each element is begun and polled
    /// once where it stands, and only those that wait are joined (most handlers finish in
    /// their first poll). The answers in order.
    async fn all_at_once(
        &self,
        elements: Vec<Element<'_>>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let mut run = AllAtOnce {
            count: elements.len(),
            ..AllAtOnce::default()
        };
        let mut elements = elements.into_iter();
        std::future::poll_fn(|cx| {
            for element in elements.by_ref() {
                self.take(element, ctx, cx, &mut run);
            }
            std::task::Poll::Ready(())
        })
        .await;
        self.join(run, ctx, deadline).await
    }

    /// Begins a batch's element and polls its handler once with `cx`: answered, or left to
    /// [`join`](Self::join).
    #[inline]
    fn take<'a>(
        &self,
        element: Element<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
        run: &mut AllAtOnce<'a>,
    ) {
        let begun = match element {
            Element::Started(read) => self.begun(read),
            Element::Request(req) => self.begin(req, ctx),
            Element::Rejected(rejection) => {
                run.rejected(rejection.answer());
                return;
            }
        };
        if !run.waiting.is_empty() {
            // After one that waits, each answer is kept apart, to be written in order.
            match self.answer_apart(begun, ctx, cx) {
                AtOnce::Answered(answer) => run.rest.push(answer),
                AtOnce::Waiting(begun, span) => run.wait(begun, span),
            }
            return;
        }
        // Until one waits, each answer is written straight into the batch's.
        if begun.raw_id.is_some() {
            run.make_room();
        }
        let mark = write::open_element(&mut run.out);
        match self.answer_if_ready(begun, ctx, cx, &mut run.out) {
            AtOnce::Answered(()) if run.out.len() > mark + 1 => {}
            AtOnce::Answered(()) => run.out.truncate(mark),
            AtOnce::Waiting(begun, span) => {
                run.out.truncate(mark);
                run.wait(begun, span);
            }
        }
    }

    /// The answer to a batch run all at once, those that waited joined under the deadline.
    async fn join(
        &self,
        run: AllAtOnce<'_>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let AllAtOnce {
            mut out,
            mut rest,
            waiting,
            count: _,
        } = run;
        if !waiting.is_empty() {
            let finished = futures_util::future::join_all(waiting.into_iter().map(
                |(at, begun, span)| async move {
                    (at, self.finish_in(begun, span, ctx, deadline).await)
                },
            ))
            .await;
            for (at, answer) in finished {
                rest[at] = answer;
            }
        }
        for answer in rest.iter().flatten() {
            write::batch_element(&mut out, answer);
        }
        write::end_batch(out)
    }

    /// One element of a batch: dispatched, or answered with its rejection.
    async fn element(
        &self,
        element: Result<Request<'_>, Rejection<'_>>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        match element {
            Ok(req) => self.dispatch(req, ctx, deadline).await,
            Err(rejection) => Some(rejection.answer()),
        }
    }

    async fn dispatch(
        &self,
        req: Request<'_>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let begun = self.begin(req, ctx);
        self.finish(begun, ctx, deadline).await
    }

    /// Whether the request's DEBUG line is on, and when it began if anyone is to be told.
    #[inline]
    fn clock(&self) -> (bool, Option<std::time::Instant>) {
        // The per-request line is at DEBUG; while that is off, it costs one cached check.
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        let started = (logged || self.inner.observer.is_some()).then(std::time::Instant::now);
        (logged, started)
    }

    /// A request read already: its handler found and started, or its answer when there is none
    /// to run (bad params, an unknown method, a panic).
    #[inline]
    pub(crate) fn begin<'a>(&self, req: Request<'a>, ctx: &Context) -> Begun<'a> {
        let (logged, started) = self.clock();
        let id = req.id.map(id_of);
        let state = 'done: {
            let ctx = ctx.for_request(id.clone());
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
                            break 'done Start::Done(answer, outcome);
                        }
                    }
                }
                None => match &self.inner.fallback {
                    _ if self.serves_discover(&req.method) => match self.discover(req.params) {
                        Ok(fut) => fut,
                        Err(err) => {
                            break 'done Start::Done(
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
                        break 'done Start::Done(answer(req.id, &err), Outcome::Error(err.code()));
                    }
                },
            };
            Start::Running(fut)
        };
        Begun {
            method: req.method,
            raw_id: req.id.map(RawId::from),
            id,
            logged,
            started,
            state,
        }
    }

    /// A request read from `body` with its params in one pass, its handler started; `None` when
    /// it is not read so, and must be read as usual, and for a request naming `except` (a peer's
    /// cancellation notice, which never reaches a handler).
    #[inline]
    pub(crate) fn begin_body<'a>(
        &self,
        body: &'a str,
        ctx: &Context,
        except: Option<&str>,
    ) -> Option<Begun<'a>> {
        let method = incoming::peek_method(body)?;
        if except == Some(method) {
            return None;
        }
        let entry = self.inner.table.get(method)?;
        let (logged, started) = self.clock();
        let read = entry.handler.start_body(body, method, ctx)?;
        Some(self.begun_at(read, logged, started))
    }

    /// A request read and started, as [`begin`](Self::begin) makes it.
    fn begun<'a>(&self, read: OnePass<'a>) -> Begun<'a> {
        let (logged, started) = self.clock();
        self.begun_at(read, logged, started)
    }

    #[inline]
    fn begun_at<'a>(
        &self,
        read: OnePass<'a>,
        logged: bool,
        started: Option<std::time::Instant>,
    ) -> Begun<'a> {
        let state = match read.started {
            Ok(fut) => Start::Running(fut),
            Err(NotStarted::Panicked(panic)) => {
                let reason = panicked(&*panic);
                let (answer, outcome) =
                    self.internal(read.method, read.id.as_ref(), read.raw_id.as_ref(), &reason);
                Start::Done(answer, outcome)
            }
            Err(NotStarted::Refused(err)) => refused(read.method, read.raw_id.as_ref(), &err),
        };
        Begun {
            method: Cow::Borrowed(read.method),
            raw_id: read.raw_id,
            id: read.id,
            logged,
            started,
            state,
        }
    }

    /// Runs a request begun, under the deadline, and writes its answer; logs and observes it.
    #[inline]
    pub(crate) fn finish<'s>(
        &'s self,
        begun: Begun<'s>,
        ctx: &'s Context,
        deadline: Option<tokio::time::Instant>,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send + 's {
        self.finish_in(begun, None, ctx, deadline)
    }

    /// [`finish`](Self::finish), in `span` when [`answer_at_once`](Self::answer_at_once) made
    /// it already (a request has one span).
    ///
    /// Not an `async fn`: its future keeps the request begun once, in place (an `async fn`'s
    /// arguments are moved into locals of its own, and kept twice).
    pub(crate) fn finish_in<'s>(
        &'s self,
        begun: Begun<'s>,
        span: Option<tracing::Span>,
        ctx: &'s Context,
        deadline: Option<tokio::time::Instant>,
    ) -> impl Future<Output = Option<Vec<u8>>> + Send + 's {
        let mut begun = begun;
        async move {
            let span = span.unwrap_or_else(|| begun.span(ctx));
            let (answer, outcome) = match &mut begun.state {
                Start::Done(answer, outcome) => (answer.take(), *outcome),
                Start::Running(_) => {
                    let mut out = Vec::new();
                    // Entering a disabled span on every poll is measurable on the hot path.
                    let output = if span.is_disabled() {
                        run(&mut begun.state, &mut out, deadline).await
                    } else {
                        run(&mut begun.state, &mut out, deadline)
                            .instrument(span.clone())
                            .await
                    };
                    let outcome = self.written(output, &mut out, 0, &begun);
                    (begun.raw_id.is_some().then_some(out), outcome)
                }
            };
            self.settle(&begun, &span, ctx, outcome);
            answer
        }
    }

    /// Answers a request begun at once when its handler finishes in its first poll and nothing
    /// is to be logged in its span: what a peer's loop tries before it gives a call a task of
    /// its own. The request comes back, its handler polled once, when it has to wait.
    pub(crate) fn answer_at_once<'a>(&self, begun: Begun<'a>, ctx: &Context) -> AtOnce<'a> {
        let mut noop = std::task::Context::from_waker(std::task::Waker::noop());
        self.answer_apart(begun, ctx, &mut noop)
    }

    /// [`answer_if_ready`](Self::answer_if_ready), its answer (if any) in a buffer of its own.
    #[inline]
    fn answer_apart<'a>(
        &self,
        begun: Begun<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
    ) -> AtOnce<'a> {
        let mut out = Vec::new();
        match self.answer_if_ready(begun, ctx, cx, &mut out) {
            AtOnce::Answered(()) => AtOnce::Answered((!out.is_empty()).then_some(out)),
            AtOnce::Waiting(begun, span) => AtOnce::Waiting(begun, span),
        }
    }

    /// [`answer_at_once`](Self::answer_at_once), its handler polled with `cx`, so that a handler
    /// that waits is woken through it, and its answer (if any) appended to `out`: how a batch's
    /// elements are first run.
    #[inline]
    fn answer_if_ready<'a>(
        &self,
        mut begun: Begun<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> AtOnce<'a, ()> {
        let span = begun.span(ctx);
        if !span.is_disabled() {
            return AtOnce::Waiting(begun, Some(span));
        }
        let outcome = match &mut begun.state {
            Start::Done(answer, outcome) => {
                if let Some(answer) = answer.take() {
                    if out.is_empty() {
                        *out = answer;
                    } else {
                        out.extend_from_slice(&answer);
                    }
                }
                *outcome
            }
            Start::Running(_) => {
                let start = out.len();
                let output = match begun.state.poll_once(cx, out) {
                    std::task::Poll::Ready(output) => output,
                    std::task::Poll::Pending => return AtOnce::Waiting(begun, None),
                };
                self.written(output, out, start, &begun)
            }
        };
        self.settle(&begun, &span, ctx, outcome);
        AtOnce::Answered(())
    }

    /// Records in its span, logs and tells the observer how a request begun went: the one exit
    /// of every request, so that the observer and the log see every way out.
    #[inline]
    fn settle(&self, begun: &Begun<'_>, span: &tracing::Span, ctx: &Context, outcome: Outcome) {
        let (method, id) = (&*begun.method, begun.id.as_ref());
        if !span.is_disabled() {
            span.record("outcome", tracing::field::display(outcome));
        }
        if let Some(started) = begun.started {
            let elapsed = started.elapsed();
            if begun.logged {
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

    /// Completes the answer the call of a request begun wrote from `out[start..]` (its result,
    /// or nothing when it failed): the result closed with the id, an error in its place, or
    /// nothing at all for a notification. Its outcome.
    fn written(
        &self,
        output: Output,
        out: &mut Vec<u8>,
        start: usize,
        begun: &Begun<'_>,
    ) -> Outcome {
        let raw_id = begun.raw_id.as_ref();
        let err = match output {
            Ok(()) => {
                match raw_id {
                    Some(raw_id) => write::end_result(out, raw_id),
                    None => out.truncate(start),
                }
                return Outcome::Success;
            }
            Err(Failure::Rpc(err)) if err.code().is_reserved() => {
                let reason = format!("handler answered the reserved code {}: {err}", err.code());
                self.report(&begun.method, begun.id.as_ref(), &reason);
                RpcError::internal()
            }
            Err(Failure::Rpc(err)) => err,
            Err(Failure::Internal(reason)) => {
                self.report(&begun.method, begun.id.as_ref(), &reason);
                RpcError::internal()
            }
        };
        // A panic while the result was written may have left part of it.
        out.truncate(start);
        if let Some(raw_id) = raw_id {
            write::error(out, &err, raw_id);
        }
        Outcome::Error(err.code())
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
    fn report(&self, method: &str, id: Option<&Id>, reason: &str) {
        tracing::error!(method, id = ?id, reason, "request failed");
        if let Some(hook) = &self.inner.on_error {
            hook(&ErrorReport { method, id, reason });
        }
    }
}

/// A request whose handler was found and started, or that was answered without one.
pub(crate) struct Begun<'a> {
    method: Cow<'a, str>,
    /// `None` for a notification.
    raw_id: Option<RawId<'a>>,
    id: Option<Id>,
    /// Whether its DEBUG line is on.
    logged: bool,
    /// When it began, if it is to be logged or observed.
    started: Option<std::time::Instant>,
    state: Start,
}

impl<'a> Begun<'a> {
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
    pub(crate) fn into_owned(self) -> Begun<'static> {
        Begun {
            method: Cow::Owned(self.method.into_owned()),
            raw_id: self.raw_id.map(RawId::into_owned),
            id: self.id,
            logged: self.logged,
            started: self.started,
            state: self.state,
        }
    }
}

/// A batch run all at once: its answer so far, and the requests that wait.
#[derive(Default)]
struct AllAtOnce<'a> {
    /// The answers, each written straight into it as it comes, until one waits.
    out: Vec<u8>,
    /// The answers from the first that waits on, in order (`None` for those not answered yet).
    rest: Vec<Option<Vec<u8>>>,
    /// The requests that wait, with the place of their answers in `rest`.
    waiting: Vec<(usize, Begun<'a>, Option<tracing::Span>)>,
    /// How many elements the batch has.
    count: usize,
}

impl<'a> AllAtOnce<'a> {
    /// An element whose handler waits, its answer's place kept.
    fn wait(&mut self, begun: Begun<'a>, span: Option<tracing::Span>) {
        self.waiting.push((self.rest.len(), begun, span));
        self.rest.push(None);
    }

    /// An element that is not a valid request, answered with its rejection.
    #[inline]
    fn rejected(&mut self, answer: Vec<u8>) {
        if !self.waiting.is_empty() {
            self.rest.push(Some(answer));
            return;
        }
        self.make_room();
        write::batch_element(&mut self.out, &answer);
    }

    /// Before the first answer is written into the batch's: room for as many answers of a
    /// small result, the brackets and the commas.
    #[inline]
    fn make_room(&mut self) {
        if self.out.is_empty() {
            self.out.reserve(48 * self.count + 1);
        }
    }
}

/// What [`Methods::answer_at_once`] did with a request begun.
pub(crate) enum AtOnce<'a, A = Option<Vec<u8>>> {
    /// It is answered (with nothing, for a notification).
    Answered(A),
    /// Its handler waits, or its span is recorded (and all of it is to run in that span): the
    /// request, and the span once made, to be finished in a task of its own or joined with the
    /// rest of its batch.
    Waiting(Begun<'a>, Option<tracing::Span>),
}

/// Where a request stands once begun.
enum Start {
    /// Its handler's call, to run.
    Running(BoxCall),
    /// Answered already (with nothing, for a notification), with this outcome.
    Done(Option<Vec<u8>>, Outcome),
}

impl Start {
    /// Polls a running call once, with panics contained, its result written to `out` (`Ready`
    /// at once, with nothing written, for a request answered already). A call that is done is
    /// dropped there, so that a panic in its drop is contained as one in its poll is.
    #[inline]
    fn poll_once(
        &mut self,
        cx: &mut std::task::Context<'_>,
        out: &mut Vec<u8>,
    ) -> std::task::Poll<Output> {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let Start::Running(call) = self else {
                return std::task::Poll::Ready(Ok(()));
            };
            let polled = call.as_mut().poll_into(cx, out);
            if polled.is_ready() {
                *self = Start::Done(None, Outcome::Success);
            }
            polled
        }));
        polled.unwrap_or_else(|panic| {
            std::task::Poll::Ready(Err(Failure::Internal(panicked(&*panic))))
        })
    }
}

/// Runs a request's call with panics contained and the deadline applied, its result written to
/// `out`.
async fn run(
    state: &mut Start,
    out: &mut Vec<u8>,
    deadline: Option<tokio::time::Instant>,
) -> Output {
    let polled = std::future::poll_fn(|cx| state.poll_once(cx, out));
    match deadline {
        None => polled.await,
        Some(deadline) => match tokio::time::timeout_at(deadline, polled).await {
            Ok(output) => output,
            Err(_) => Err(Failure::Internal("handler timed out".into())),
        },
    }
}

/// Why a handler that panicked failed, for the log and the error hook.
fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
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
fn refused(method: &str, raw_id: Option<&(impl WriteId + ?Sized)>, err: &RpcError) -> Start {
    if raw_id.is_none() {
        // Nobody hears about a notification's bad params unless it is logged.
        tracing::warn!(method = %method, error = %err, "notification params did not decode");
    }
    Start::Done(answer(raw_id, err), Outcome::Error(err.code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Methods {
        let mut methods = Methods::new();
        methods
            .register("add", &["a", "b"], |(a, b): (i64, Option<i64>), _| async move {
                Ok::<_, RpcError>(a + b.unwrap_or(0))
            })
            .unwrap();
        methods
            .register("sub", &["a", "b"], |(a, b): (i64, i64), _| async move {
                Ok::<_, RpcError>(a - b)
            })
            .unwrap();
        methods
            .register("boom", &["a"], |(_a,): (i64,), _| async move {
                if true {
                    panic!("boom");
                }
                Ok::<_, RpcError>(0)
            })
            .unwrap();
        methods
    }

    /// A batch's elements that finish in their first poll, panics included, are answered where
    /// they stand, in order with those that wait.
    #[tokio::test]
    async fn a_batch_answers_what_finishes_at_once_in_order_with_what_waits() {
        let mut methods = table();
        methods
            .register("later", &["a"], |(a,): (i64,), _| async move {
                tokio::task::yield_now().await;
                Ok::<_, RpcError>(a)
            })
            .unwrap();
        let body = r#"[
            {"jsonrpc":"2.0","method":"later","params":[7],"id":1},
            {"jsonrpc":"2.0","method":"boom","params":[1],"id":2},
            {"jsonrpc":"2.0","method":"add","params":[2,3],"id":3},
            {"jsonrpc":"2.0","method":"add","params":[1]},
            {"jsonrpc":"2.0","method":"later","params":[8],"id":4}
        ]"#;
        let answer = methods.handle(body).await.unwrap();
        assert_eq!(
            answer,
            concat!(
                r#"[{"jsonrpc":"2.0","result":7,"id":1},"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":2},"#,
                r#"{"jsonrpc":"2.0","result":5,"id":3},"#,
                r#"{"jsonrpc":"2.0","result":8,"id":4}]"#,
            )
        );
        // Answered at once before one that waits, and after it.
        let body = r#"[
            {"jsonrpc":"2.0","method":"add","params":[1,1],"id":0},
            {"jsonrpc":"2.0","method":"later","params":[7],"id":1},
            {"jsonrpc":"2.0","method":"add","params":[2,3],"id":2}
        ]"#;
        let answer = methods.handle(body).await.unwrap();
        assert_eq!(
            answer,
            concat!(
                r#"[{"jsonrpc":"2.0","result":2,"id":0},"#,
                r#"{"jsonrpc":"2.0","result":7,"id":1},"#,
                r#"{"jsonrpc":"2.0","result":5,"id":2}]"#,
            )
        );
    }

    /// A result half written when it fails (it cannot be encoded, or its `Serialize` panics) is
    /// taken back whole: in a batch, whose answers are written into one buffer, the elements
    /// around it are answered as they would be alone.
    #[tokio::test]
    async fn a_result_that_fails_half_written_leaves_nothing_of_itself() {
        /// Writes a member, then panics.
        struct Panics;
        impl Serialize for Panics {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("half", &1)?;
                panic!("half way");
            }
        }
        use serde::Serialize;
        let mut methods = table();
        methods
            .register("unencodable", &[], |(): (), _| async move {
                // A map with keys that are not strings has no JSON form.
                Ok::<_, RpcError>(std::collections::BTreeMap::from([((1, 2), 3)]))
            })
            .unwrap()
            .register("panics", &[], |(): (), _| async move {
                Ok::<_, RpcError>(Panics)
            })
            .unwrap();
        let internal =
            r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":"#;
        for method in ["unencodable", "panics"] {
            let call = format!(r#"{{"jsonrpc":"2.0","method":"{method}","id":2}}"#);
            assert_eq!(
                methods.handle(&call).await,
                Some(format!("{internal}2}}")),
                "{method}"
            );
            let notification = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
            assert_eq!(methods.handle(&notification).await, None, "{method}");
            let batch = format!(
                r#"[{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}},{call},{notification},
                {{"jsonrpc":"2.0","method":"add","params":[3,4],"id":3}}]"#
            );
            assert_eq!(
                methods.handle(&batch).await.unwrap(),
                format!(
                    r#"[{{"jsonrpc":"2.0","result":3,"id":1}},{internal}2}},{{"jsonrpc":"2.0","result":7,"id":3}}]"#
                ),
                "{method}"
            );
        }
    }

    /// A handler's future that panics as it is dropped, once finished, is answered as one that
    /// panics in its poll: `-32603`, alone and in a batch, and the table keeps serving.
    #[tokio::test]
    async fn a_future_that_panics_in_its_drop_is_answered_internal_error() {
        /// Finishes at once, and panics when it is dropped.
        struct Bomb;
        impl Future for Bomb {
            type Output = Result<i64, RpcError>;
            fn poll(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Self::Output> {
                std::task::Poll::Ready(Ok(1))
            }
        }
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("dropped");
            }
        }
        let mut methods = table();
        methods.register("bomb", &[], |(): (), _| Bomb).unwrap();
        let internal =
            r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":2}"#;
        let call = r#"{"jsonrpc":"2.0","method":"bomb","id":2}"#;
        assert_eq!(methods.handle(call).await.as_deref(), Some(internal));
        let batch = format!(
            r#"[{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}},{call},{{"jsonrpc":"2.0","method":"bomb"}}]"#
        );
        assert_eq!(
            methods.handle(&batch).await.unwrap(),
            format!(r#"[{{"jsonrpc":"2.0","result":3,"id":1}},{internal}]"#)
        );
        let ctx = &methods.inner.in_process;
        let Ok(req) = incoming::parse_request(call) else {
            panic!("a valid request");
        };
        let begun = methods.begin(req, ctx);
        match methods.answer_at_once(begun, ctx) {
            AtOnce::Answered(answer) => assert_eq!(answer.as_deref(), Some(internal.as_bytes())),
            AtOnce::Waiting(..) => panic!("it finished in its first poll"),
        }
    }

    /// The answer as a request read the usual way gets it, never in one pass.
    async fn read_as_usual(methods: &Methods, body: &str) -> Option<String> {
        let ctx = &methods.inner.in_process;
        let answer = match incoming::parse_request(body) {
            Ok(req) => methods.dispatch(req, ctx, None).await,
            Err(rejection) => Some(rejection.answer()),
        };
        answer.map(write::text)
    }

    /// Reading a request with its params in one pass answers every body as reading it the usual
    /// way does: the one pass only ever declines.
    #[tokio::test]
    async fn one_pass_answers_as_the_usual_read() {
        let methods = table();
        let bodies = [
            r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":{"b":3,"a":2,"c":[{}]},"id":"x"}"#,
            r#" { "jsonrpc" : "2.0" , "method" : "add" , "params" : [2] , "id" : 1.0 } "#,
            r#"{"id":12345678901234567890,"jsonrpc":"2.0","method":"add","params":[2,3]}"#,
            r#"{"params":[2,3],"jsonrpc":"2.0","method":"add","id":1}"#,
            r#"{"params":3,"jsonrpc":"2.0","method":"add","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"sub","params":"x","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"sub","params":[3,1],"id":[]}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[2,3]}"#,
            r#"{"jsonrpc":"2.0","method":"add","id":null}"#,
            r#"{"jsonrpc":"2.0","method":"sub","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,"x"],"params":[1,2],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"params":[1,"x"],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"id":2}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"method":"sub"}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"1.0","method":"add","params":[1,2],"id":1}"#,
            r#"{"jsonrpc":"2\u002e0","method":"add","params":[1,2],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"a\u0064d","params":[1,2],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1,"result":3}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{}}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":true}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":null,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":3,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2,3],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":["x"],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":{"b":1},"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1} x"#,
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1"#,
            r#"{"x":"\"method\":\"sub\"","jsonrpc":"2.0","method":"add","params":[5,1],"id":1}"#,
            r#"{"jsonrpc":"2.0","x":{"method":"sub"},"method":"add","params":[5,1],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"nope","params":[1,2],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"boom","params":[1],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"boom","params":["x"],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"add""#,
            r#"{"jsonrpc":"2.0","method":"add"}"#,
            "",
            "1",
        ];
        for body in bodies {
            let usual = read_as_usual(&methods, body).await;
            assert_eq!(methods.handle(body).await, usual, "{body}");
        }
        // And the one pass is what answers a plain call.
        let body = r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}"#;
        assert!(
            methods
                .begin_body(body, &methods.inner.in_process, None)
                .is_some()
        );
        // In a batch too, before or after any other element, alone or not.
        let plain = body;
        for body in bodies {
            for batch in [
                format!("[{plain},{body}]"),
                format!("[{body},{plain}]"),
                format!("[{body}]"),
                format!(" [ {plain} , {body} , {plain} ] "),
            ] {
                let usual = batch_as_usual(&methods, &batch).await;
                assert_eq!(methods.handle(&batch).await, usual, "{batch}");
            }
        }
        let ctx = &methods.inner.in_process;
        let batch = format!("[{plain},{plain}]");
        assert!(methods.batch_in_one_pass(&batch, ctx).await.is_some());
    }

    /// Requests put together from the parts the compact reader matches, and from parts that
    /// break its form, are answered as when they are read the usual way; alone and in batches.
    mod compact_or_not {
        use super::*;
        use proptest::prelude::*;

        fn pick(parts: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
            proptest::sample::select(parts)
        }

        /// Mostly what the compact reader takes, now and then what it must leave alone.
        fn mostly(
            good: &'static [&'static str],
            bad: &'static [&'static str],
        ) -> impl Strategy<Value = String> {
            prop_oneof![4 => pick(good), 1 => pick(bad)].prop_map(str::to_owned)
        }

        fn id() -> impl Strategy<Value = String> {
            mostly(
                &[
                    "1",
                    "0",
                    "-7",
                    r#""x""#,
                    r#""a\"b""#,
                    r#""é""#,
                    r#""\u00e9""#,
                    "1.0",
                    "-0",
                    "1e3",
                    "12345678901234567890",
                    "null",
                ],
                &["01", "true", "[]", "{}", r#""x"#, "1 ", "+1", r#""\x""#],
            )
        }

        fn params() -> impl Strategy<Value = String> {
            // Nested as deep as serde_json takes params, and deeper.
            let deep = |n: usize| format!("[{}{}]", "[".repeat(n), "]".repeat(n));
            prop_oneof![
                8 => mostly(
                    &[
                        "[2,3]", "[2]", r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1,"c":"}]\"["}"#,
                        "[-0,1e2]", r#"[1,{"x":[]}]"#,
                    ],
                    &[
                        "[]", r#"[1,"x"]"#, "3", "null", "[1,2,3]", "[2,3]]", r#"["\"]"#,
                        "[2,3", "[2,]", r#"{"a":1,"a":2}"#, "[ 2 , 3 ]", "[2,3}",
                    ],
                ),
                1 => (124..130usize).prop_map(deep),
            ]
        }

        fn member() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => params().prop_map(|p| format!(r#","params":{p}"#)),
                4 => id().prop_map(|id| format!(r#","id":{id}"#)),
                1 => pick(&[
                    r#","jsonrpc":"2.0""#, r#","x":1"#, r#", "id":1"#, r#","method":"add""#,
                    r#","result":1"#, ",", r#","params" :[1]"#,
                ])
                .prop_map(str::to_owned),
            ]
        }

        fn body() -> impl Strategy<Value = String> {
            let start = prop_oneof![
                3 => Just(r#"{"jsonrpc":"2.0","#.to_owned()),
                3 => id().prop_map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"#)),
                1 => pick(&[r#" {"jsonrpc":"2.0","#, r#"{"jsonrpc":"1.0","#, r#"{"jsonrpc":"2.0" ,"#])
                    .prop_map(str::to_owned),
            ];
            let method = mostly(
                &[
                    r#""method":"add""#,
                    r#""method":"add""#,
                    r#""method":"echo""#,
                ],
                &[
                    r#""method":"a\u0064d""#,
                    r#""method":"nope""#,
                    r#""method":1"#,
                ],
            );
            let end = mostly(&["}", "}", "} "], &["}x", "", "}}", "]"]);
            (
                start,
                method,
                proptest::collection::vec(member(), 0..3),
                end,
            )
                .prop_map(|(start, method, members, end)| {
                    format!("{start}{method}{}{end}", members.concat())
                })
        }

        fn table() -> Methods {
            let mut methods = super::table();
            methods
                .register("echo", &["v"], |(v,): (serde_json::Value,), _| async move {
                    Ok::<_, RpcError>(v)
                })
                .unwrap();
            methods
        }

        proptest! {
            #[test]
            fn answers_as_the_usual_read(bodies in proptest::collection::vec(body(), 1..4)) {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                let methods = table();
                for body in &bodies {
                    let usual = rt.block_on(read_as_usual(&methods, body));
                    prop_assert_eq!(rt.block_on(methods.handle(body)), usual, "{}", body);
                }
                for batch in [format!("[{}]", bodies.join(",")), format!(" [{}] ", bodies.join(","))] {
                    let usual = rt.block_on(batch_as_usual(&methods, &batch));
                    prop_assert_eq!(rt.block_on(methods.handle(&batch)), usual, "{}", batch);
                }
            }
        }
    }

    /// The answer as a batch read the usual way gets it, never in one pass.
    async fn batch_as_usual(methods: &Methods, body: &str) -> Option<String> {
        let Some(elements) = incoming::parse_batch(body) else {
            return Some(write::text(Rejection::Unparsable.answer()));
        };
        if elements.is_empty() {
            let err = RpcError::invalid_request();
            return Some(write::text(write::error_bytes(&err, &None::<&Id>)));
        }
        let elements = elements.into_iter().map(Element::from).collect();
        let answer = methods.all_at_once(elements, &methods.inner.in_process, None);
        answer.await.map(write::text)
    }
}
