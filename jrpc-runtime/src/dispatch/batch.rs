//! Answers a batch: its elements read, refused as a whole or taken, run all at once in one
//! task where they fit the concurrency cap (most handlers finish in their first poll), or
//! buffered up to the cap; the answers in request order.

use futures_util::StreamExt as _;

use super::context::Context;
use super::handle::{FirstPoll, Started};
use super::methods::Element;
use super::methods::{Batches, Methods};
use crate::wire::{Id, Rejection, Request, RpcError, incoming, write};

impl Methods {
    pub(super) async fn handle_batch(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
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
            return self.run_batch(elements, ctx, deadline).await;
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

    /// Returns the answer to a batch whose elements naming the method its first one names are read
    /// with their params in one pass (`Some(None)` when it is all notifications): when the
    /// batch is all valid requests, is taken (not refused, no larger than the limit) and may
    /// run all at once. `None`, with nothing run, when it is to be read as usual.
    pub(super) async fn batch_in_one_pass(
        &self,
        body: &str,
        ctx: &Context,
    ) -> Option<Option<Vec<u8>>> {
        let Batches::UpTo(max) = self.inner.batches else {
            return None;
        };
        // Call layers see each element's raw params: the elements are read as usual.
        if self.inner.layers.is_some() {
            return None;
        }
        let method = incoming::peek_batch_method(body)?;
        let handler = &*self.inner.table.get(method)?.handler;
        let max = max.min(self.inner.batch_concurrency.get());
        let deadline = self.deadline();
        let mut run = BatchRun::default();
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

    /// Answers a batch's elements all at once, in one task: each element is started and polled
    /// once where it stands, and only those that wait are joined (most handlers finish in
    /// their first poll). The answers in order.
    pub(super) async fn run_batch(
        &self,
        elements: Vec<Element<'_>>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let mut run = BatchRun {
            count: elements.len(),
            ..BatchRun::default()
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

    /// Starts a batch's element and polls its handler once with `cx`: answered, or left to
    /// [`join`](Self::join).
    #[inline]
    fn take<'a>(
        &self,
        element: Element<'a>,
        ctx: &Context,
        cx: &mut std::task::Context<'_>,
        run: &mut BatchRun<'a>,
    ) {
        let started = match element {
            Element::Started(read) => self.start_one_pass(read),
            Element::Request(req) => self.start(req, ctx),
            Element::Rejected(rejection) => match self.reconsider(rejection) {
                Ok(req) => self.start(req, ctx),
                Err(rejection) => {
                    run.rejected(rejection.answer());
                    return;
                }
            },
        };
        if !run.waiting.is_empty() {
            // After one that waits, each answer is kept apart, to be written in order.
            match self.run_once_apart(started, ctx, cx) {
                FirstPoll::Answered(answer) => run.rest.push(answer),
                FirstPoll::Waiting(started, span) => run.wait(started, span),
            }
            return;
        }
        // Until one waits, each answer is written straight into the batch's.
        if started.raw_id.is_some() {
            run.make_room();
        }
        let mark = write::open_element(&mut run.out);
        match self.run_once_into(started, ctx, cx, &mut run.out) {
            FirstPoll::Answered(()) if run.out.len() > mark + 1 => {}
            FirstPoll::Answered(()) => run.out.truncate(mark),
            FirstPoll::Waiting(started, span) => {
                run.out.truncate(mark);
                run.wait(started, span);
            }
        }
    }

    /// Returns the answer to a batch run all at once, those that waited joined under the deadline.
    async fn join(
        &self,
        run: BatchRun<'_>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let BatchRun {
            mut out,
            mut rest,
            waiting,
            count: _,
        } = run;
        if !waiting.is_empty() {
            let finished = futures_util::future::join_all(waiting.into_iter().map(
                |(at, started, span)| async move {
                    (at, self.run_in(started, span, ctx, deadline).await)
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
        match element.or_else(|rejection| self.reconsider(rejection)) {
            Ok(req) => self.dispatch(req, ctx, deadline).await,
            Err(rejection) => Some(rejection.answer()),
        }
    }

    pub(super) async fn dispatch(
        &self,
        req: Request<'_>,
        ctx: &Context,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Vec<u8>> {
        let started = self.start(req, ctx);
        self.run(started, ctx, deadline).await
    }
}

/// Runs a batch all at once: its answer so far, and the requests that wait.
#[derive(Default)]
struct BatchRun<'a> {
    /// The answers, each written straight into it as it comes, until one waits.
    out: Vec<u8>,
    /// The answers from the first that waits on, in order (`None` for those not answered yet).
    rest: Vec<Option<Vec<u8>>>,
    /// The requests that wait, with the place of their answers in `rest`.
    waiting: Vec<(usize, Started<'a>, Option<tracing::Span>)>,
    /// How many elements the batch has.
    count: usize,
}

impl<'a> BatchRun<'a> {
    /// Records an element whose handler waits, its answer's place kept.
    fn wait(&mut self, started: Started<'a>, span: Option<tracing::Span>) {
        self.waiting.push((self.rest.len(), started, span));
        self.rest.push(None);
    }

    /// Records an element that is not a valid request, answered with its rejection.
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
