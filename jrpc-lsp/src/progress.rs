//! Runs a request's work under a work-done progress: `begin`, the work's reports, then `end`,
//! in that order on the wire and before the request's answer, however the work ends.
//!
//! The `end` must follow the work even when the request is cancelled, and precede the answer.
//! Dropping the handler's future cannot do that without a task of its own racing the `-32800`
//! the connection sends; so the request asks to be told of its cancellation instead
//! ([`Context::told_when_cancelled`]): the work's future is dropped here, `end` is sent (awaited,
//! so it is queued), and the handler answers `-32800` itself, after it.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use jrpc_runtime::{Context, RpcError};
use lsp_types::{
    ProgressToken, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressEnd,
    WorkDoneProgressReport,
};

use crate::client::Client;
use crate::codes;
use crate::session::Session;

/// Runs a request's work under a work-done progress (`$/progress` begin, reports, end), for the
/// token the request carried (`params.work_done_progress_params.work_done_token`) or one made
/// with [`Client::create_work_done_progress`]. Make one with
/// [`LspContext::work_done`](crate::LspContext::work_done).
///
/// `end` is sent when the work finishes, fails (its message the error's), panics, or is
/// cancelled (its message `cancelled`): by `$/cancelRequest`, or by the user's cancel button
/// (`window/workDoneProgress/cancel`, when [`cancellable`](Self::cancellable)). A cancelled
/// request is answered `-32800` after its `end`. Without a token the work runs alone, and a
/// cancellation drops it as any request's.
///
/// ```
/// use jrpc_lsp::LspContext as _;
/// use jrpc_lsp::lsp_types::WorkDoneProgressParams;
/// use jrpc_runtime::{Context, RpcError};
///
/// async fn index(ctx: &Context, params: WorkDoneProgressParams) -> Result<u32, RpcError> {
///     ctx.work_done(params.work_done_token, "Indexing")
///         .cancellable(true)
///         .run(|progress| async move {
///             for file in 1..=3 {
///                 progress.report(Some(&format!("{file}/3")), Some(file * 33)).await;
///             }
///             Ok(3)
///         })
///         .await
/// }
/// ```
#[derive(Debug)]
#[must_use = "nothing is sent until `run` is awaited"]
pub struct WorkDone<'a> {
    ctx: &'a Context,
    token: Option<ProgressToken>,
    begin: WorkDoneProgressBegin,
}

impl<'a> WorkDone<'a> {
    /// Returns a progress titled `title` for the request of `ctx`, reported on `token`.
    pub fn new(ctx: &'a Context, token: Option<ProgressToken>, title: impl Into<String>) -> Self {
        Self {
            ctx,
            token,
            begin: WorkDoneProgressBegin {
                title: title.into(),
                ..WorkDoneProgressBegin::default()
            },
        }
    }

    /// Sets whether the client shows a cancel button (default: it does not). Pressing it cancels
    /// the request.
    pub fn cancellable(mut self, cancellable: bool) -> Self {
        self.begin.cancellable = Some(cancellable);
        self
    }

    /// Sets the message `begin` carries.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.begin.message = Some(message.into());
        self
    }

    /// Sets the percentage `begin` carries (0 to 100); without one the client shows progress
    /// without a measure.
    pub fn percentage(mut self, percentage: u32) -> Self {
        self.begin.percentage = Some(percentage);
        self
    }

    /// Sends `begin`, runs `work` with the [`Progress`] to report on, sends `end`, and returns
    /// what the work returned.
    ///
    /// # Errors
    ///
    /// The work's error; `-32800` (RequestCancelled) when the request was cancelled.
    ///
    /// # Panics
    ///
    /// When the work panics, after `end` is sent: the panic goes on to the dispatcher, which
    /// answers `-32603` as for any handler's.
    pub async fn run<T, F, Fut>(self, work: F) -> Result<T, RpcError>
    where
        F: FnOnce(Progress) -> Fut,
        Fut: Future<Output = Result<T, RpcError>> + Send,
    {
        let client = Client::of(self.ctx);
        let Some(token) = self.token else {
            return work(Progress {
                client,
                token: None,
            })
            .await;
        };
        // Told rather than dropped when cancelled, while the guards live.
        let _told = self.ctx.told_when_cancelled();
        let _tracked = match (Session::of(self.ctx), self.ctx.id()) {
            (Some(session), Some(id)) => Some(session.track(&token, id)),
            _ => None,
        };
        let cancelled = self.ctx.cancelled();
        let progress = Progress {
            client: client.clone(),
            token: Some(token.clone()),
        };
        progress.send(WorkDoneProgress::Begin(self.begin)).await;
        let work = AssertUnwindSafe(work(progress.clone())).catch_unwind();
        let outcome = tokio::select! {
            biased;
            () = cancelled => None,
            done = work => Some(done),
        };
        let message = match &outcome {
            None => Some("cancelled".to_owned()),
            Some(Ok(Err(err))) => Some(err.message().to_owned()),
            Some(Ok(Ok(_)) | Err(_)) => None,
        };
        progress
            .send(WorkDoneProgress::End(WorkDoneProgressEnd { message }))
            .await;
        match outcome {
            None => Err(RpcError::new(codes::REQUEST_CANCELLED, "Request cancelled")),
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        }
    }
}

/// Reports a running [`WorkDone`]'s progress; cheap to clone. Without a token it sends
/// nothing.
#[derive(Clone, Debug)]
pub struct Progress {
    client: Client,
    token: Option<ProgressToken>,
}

impl Progress {
    /// Returns the token reported on; `None` when the request had none.
    pub fn token(&self) -> Option<&ProgressToken> {
        self.token.as_ref()
    }

    /// Sends a `report`: a message, a percentage (0 to 100, rising), either or both. A report
    /// that cannot be sent (the connection closed) is dropped: the request's own answer could
    /// not be sent either.
    pub async fn report(&self, message: Option<&str>, percentage: Option<u32>) {
        self.send(WorkDoneProgress::Report(WorkDoneProgressReport {
            cancellable: None,
            message: message.map(str::to_owned),
            percentage,
        }))
        .await;
    }

    async fn send(&self, value: WorkDoneProgress) {
        let Some(token) = &self.token else {
            return;
        };
        if let Err(err) = self.client.progress(token.clone(), value).await {
            tracing::debug!(error = %err, "work-done progress not sent");
        }
    }
}
