//! Lists what a handler does for its MCP client through its [`Context`]: the methods of
//! [`McpContext`], which `Context` implements.

use std::future::Future;

use jrpc_runtime::Context;
use serde::Serialize;

use crate::data::{Ask, Elicited, Form, McpError, McpRequest, Root, SampledMessage, Sampling};
use crate::data::{ask, request};
use crate::protocol::types::LogLevel;

/// Sends an MCP client progress and logs, and asks it questions, from a handler's [`Context`].
/// Each method is a no-op outside an MCP request (a tool called in process), so that tools stay
/// testable. Bring it into scope with `use jrpc_mcp::McpContext as _;`.
///
/// ```
/// use jrpc_mcp::McpContext as _;
/// use jrpc_runtime::{Context, RpcError};
///
/// async fn count(ctx: &Context, n: u64) -> Result<String, RpcError> {
///     for i in 1..=n {
///         ctx.progress(i as f64, Some(n as f64), None).await?;
///     }
///     Ok(n.to_string())
/// }
/// ```
pub trait McpContext {
    /// Returns the MCP request this handler serves; `None` outside one.
    fn mcp(&self) -> Option<&McpRequest>;

    /// Reports progress (`notifications/progress`) on the request's own stream (its SSE answer
    /// over HTTP, the pipe over stdio), when the request asked for progress (it carries a
    /// `progressToken`) and has a stream; else does nothing. Progress must increase: a value not
    /// above the last one sent is not sent.
    ///
    /// # Errors
    ///
    /// [`McpError::NotSent`] when the stream is closed.
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> impl Future<Output = Result<(), McpError>> + Send;

    /// Ends the event stream this request answers on, for the client to poll for the rest
    /// (SEP-1699): in the legacy era over Streamable HTTP, the stream ends after its priming
    /// event (and what was sent); the request runs on, what it sends waits in the session, and
    /// the client reconnects (`GET` with `Last-Event-ID`) after the stream's `retry`. Returns
    /// `true` when a stream was ended; elsewhere it does nothing.
    fn close_stream_for_polling(&self) -> bool;

    /// Sends a log message (`notifications/message`) on the request's own stream, if the client
    /// wants that level: in the legacy era, at or above the level `logging/setLevel` set on its
    /// session or connection (every level before one is set); in the modern era, only when the
    /// request's `_meta` asks for logs (`io.modelcontextprotocol/logLevel`), at or above that
    /// level. Else, and outside an MCP request, it does nothing. The logger is the server's name.
    ///
    /// # Errors
    ///
    /// [`McpError::NotSent`] when the stream is closed.
    fn log(
        &self,
        level: LogLevel,
        data: impl Serialize + Send,
    ) -> impl Future<Output = Result<(), McpError>> + Send;

    /// Starts several questions to the client at once (see the [guide](crate::guide) for how
    /// each era asks them).
    ///
    /// ```
    /// use jrpc_mcp::{Form, McpContext as _, Sampling};
    /// use jrpc_runtime::{Context, RpcError};
    ///
    /// async fn plan(ctx: &Context) -> Result<String, RpcError> {
    ///     let mut answers = ctx
    ///         .ask()
    ///         .elicit("who", Form::string("What is your name?", "name"))
    ///         .sample("idea", Sampling::user_text("Suggest a trip").max_tokens(50))
    ///         .roots("roots")
    ///         .send()
    ///         .await?;
    ///     let name: String = answers.elicited("who")?.take("name")?;
    ///     let idea = answers.sampled("idea")?.text().unwrap_or_default().to_owned();
    ///     Ok(format!("{name}: {idea} ({} roots)", answers.roots("roots")?.len()))
    /// }
    /// ```
    fn ask(&self) -> Ask<'_>;

    /// Asks the user to fill in `form` (elicitation); `key` names the question.
    ///
    /// # Errors
    ///
    /// As [`Ask::send`].
    fn elicit(
        &self,
        key: &str,
        form: Form,
    ) -> impl Future<Output = Result<Elicited, McpError>> + Send;

    /// Asks the client's model (sampling); `key` names the question.
    ///
    /// # Errors
    ///
    /// As [`Ask::send`].
    fn sample(
        &self,
        key: &str,
        sampling: Sampling,
    ) -> impl Future<Output = Result<SampledMessage, McpError>> + Send;

    /// Asks the client for its roots; `key` names the question.
    ///
    /// # Errors
    ///
    /// As [`Ask::send`].
    fn roots(&self, key: &str) -> impl Future<Output = Result<Vec<Root>, McpError>> + Send;
}

impl McpContext for Context {
    fn mcp(&self) -> Option<&McpRequest> {
        request::mcp(self)
    }

    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> impl Future<Output = Result<(), McpError>> + Send {
        request::progress(self, progress, total, message)
    }

    fn close_stream_for_polling(&self) -> bool {
        request::close_stream_for_polling(self)
    }

    fn log(
        &self,
        level: LogLevel,
        data: impl Serialize + Send,
    ) -> impl Future<Output = Result<(), McpError>> + Send {
        request::log(self, level, data)
    }

    fn ask(&self) -> Ask<'_> {
        ask::ask(self)
    }

    fn elicit(
        &self,
        key: &str,
        form: Form,
    ) -> impl Future<Output = Result<Elicited, McpError>> + Send {
        ask::elicit(self, key, form)
    }

    fn sample(
        &self,
        key: &str,
        sampling: Sampling,
    ) -> impl Future<Output = Result<SampledMessage, McpError>> + Send {
        ask::sample(self, key, sampling)
    }

    fn roots(&self, key: &str) -> impl Future<Output = Result<Vec<Root>, McpError>> + Send {
        ask::roots(self, key)
    }
}
