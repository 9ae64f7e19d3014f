//! Answering a body: one request, a notification or a batch in, the answer's text out.

use std::panic::AssertUnwindSafe;

use futures_util::{FutureExt as _, StreamExt as _};
use tracing::Instrument as _;

use super::methods::{BoxFuture, Failure, Output};
use super::{Batches, Context, ErrorReport, Methods, Observation, Outcome, Params};
use crate::wire::{Rejection, Request, id_of, incoming, write};
use crate::{FromParams as _, Id, RpcError};

impl Methods {
    /// Answers one body (a request, a notification or a batch) as an in-process call: the
    /// answer's text, or `None` when nothing is to be sent back.
    pub async fn handle(&self, body: &str) -> Option<String> {
        self.handle_in(body, &self.inner.in_process).await
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
            self.handle_batch(body, ctx).await
        } else {
            match incoming::parse_request(body) {
                Ok(req) => self.dispatch(req, ctx, self.deadline()).await,
                Err(rejection) => Some(rejection.answer()),
            }
        }
    }

    /// Answers one request that was already read (a peer reads each message itself, to tell
    /// calls from answers): its answer, `None` for a notification.
    pub(crate) async fn handle_request(&self, req: Request<'_>, ctx: &Context) -> Option<String> {
        self.dispatch(req, ctx, self.deadline())
            .await
            .map(write::text)
    }

    fn deadline(&self) -> Option<tokio::time::Instant> {
        self.inner.handler_timeout.map(crate::time::after)
    }

    async fn handle_batch(&self, body: &str, ctx: &Context) -> Option<Vec<u8>> {
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
        let answers: Vec<Option<Vec<u8>>> = if elements.len() <= cap {
            // All at once, in one task: no queue to keep.
            futures_util::future::join_all(
                elements
                    .into_iter()
                    .map(|element| self.element(element, ctx, deadline)),
            )
            .await
        } else {
            // At most `cap` running, started in order as earlier ones finish; answers in order.
            // (The futures are made first: a stream mapping with a closure here would not be
            // provably `Send` for every lifetime of the body.)
            let pending: Vec<_> = elements
                .into_iter()
                .map(|element| self.element(element, ctx, deadline))
                .collect();
            futures_util::stream::iter(pending)
                .buffered(cap)
                .collect()
                .await
        };
        write::batch(answers.iter().flatten())
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
        // The per-request line is at DEBUG; while that is off, it costs one cached check.
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        let started = (logged || self.inner.observer.is_some()).then(std::time::Instant::now);
        let id = req.id.map(id_of);
        let span = tracing::debug_span!(
            "rpc",
            method = %req.method,
            id = tracing::field::Empty,
            transport = %ctx.transport(),
            outcome = tracing::field::Empty,
        );
        if let (false, Some(id)) = (span.is_disabled(), &id) {
            span.record("id", tracing::field::display(id));
        }
        // One block with one exit, so that the observer and the log see every way out (and
        // cost nothing while unset: no second future wraps this one).
        let (answer, outcome) = 'done: {
            let ctx = ctx.for_request(id.clone());
            let fut = match self.inner.table.get(&*req.method) {
                Some(entry) => {
                    let handler = &entry.handler;
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
                    _ if self.serves_discover(&req.method) => match self.discover(req.params) {
                        Ok(fut) => fut,
                        Err(err) => {
                            break 'done (answer(req.id, &err), Outcome::Error(err.code()));
                        }
                    },
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
                run(fut, deadline).instrument(span.clone()).await
            };
            match output {
                Ok(mut out) => match req.id {
                    Some(raw_id) => {
                        write::end_result(&mut out, raw_id);
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
        if !span.is_disabled() {
            span.record("outcome", tracing::field::display(outcome));
        }
        if let Some(started) = started {
            let elapsed = started.elapsed();
            if logged {
                // A notification has no id: `none`, which no id's JSON text can be.
                let shown: &dyn std::fmt::Display = match &id {
                    Some(id) => id,
                    None => &"none",
                };
                tracing::debug!(
                    method = %req.method,
                    id = %shown,
                    transport = %ctx.transport(),
                    ?elapsed,
                    %outcome,
                    "request",
                );
            }
            if let Some(observer) = &self.inner.observer {
                observer(&Observation {
                    method: &req.method,
                    id: id.as_ref(),
                    transport: ctx.transport(),
                    elapsed,
                    outcome,
                });
            }
        }
        answer
    }

    /// Reports an internal failure and answers `-32603` with no detail.
    #[cold]
    fn internal(
        &self,
        method: &str,
        id: Option<&Id>,
        raw_id: Option<&serde_json::value::RawValue>,
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

/// An error answer for a call; nothing for a notification.
fn answer(raw_id: Option<&serde_json::value::RawValue>, err: &RpcError) -> Option<Vec<u8>> {
    raw_id.map(|id| write::error_bytes(err, id))
}
