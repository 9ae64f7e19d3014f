//! Sends the client what a server pushes (diagnostics, messages, progress) and asks it what a
//! server asks (configuration, capability registrations, a message's answer), typed by
//! `lsp-types`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jrpc_runtime::{Caller as _, ClientError, Context, Peer};
use lsp_types::notification::{
    LogMessage, Notification, Progress, PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{
    RegisterCapability, Request, ShowMessageRequest, WorkDoneProgressCreate, WorkspaceConfiguration,
};
use lsp_types::{
    ConfigurationItem, ConfigurationParams, Diagnostic, LogMessageParams, MessageActionItem,
    MessageType, NumberOrString, ProgressParams, ProgressParamsValue, ProgressToken,
    PublishDiagnosticsParams, Registration, RegistrationParams, ShowMessageParams,
    ShowMessageRequestParams, Uri, WorkDoneProgress, WorkDoneProgressCreateParams,
};
use serde_json::Value;

/// Talks to the editor: typed notifications and requests over the connection a request came
/// on. Get it from a handler's context ([`LspContext::client`](crate::LspContext::client)); it
/// is cheap to clone, and a clone may be kept (a task that publishes diagnostics later).
///
/// Outside a connection (a handler called in process, in a test) every send fails with
/// [`ClientError::Closed`].
///
/// ```
/// use jrpc_lsp::LspContext as _;
/// use jrpc_lsp::lsp_types::{ConfigurationItem, MessageType};
/// use jrpc_runtime::{ClientError, Context};
///
/// async fn greet(ctx: &Context) -> Result<(), ClientError> {
///     let client = ctx.client();
///     client.log_message(MessageType::INFO, "ready").await?;
///     let item = ConfigurationItem { scope_uri: None, section: Some("example".into()) };
///     let settings = client.configuration(vec![item]).await?;
///     client.log_message(MessageType::INFO, format!("settings: {settings:?}")).await
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    peer: Option<Peer>,
}

impl Client {
    /// Returns the client on the other side of `peer`.
    pub fn new(peer: Peer) -> Self {
        Self { peer: Some(peer) }
    }

    /// Returns the client of the connection `ctx`'s request came on.
    pub(crate) fn of(ctx: &Context) -> Self {
        Self {
            peer: ctx.peer().cloned(),
        }
    }

    /// Returns the connection's handle, for what this type does not wrap (a method of an
    /// extension to the protocol); `None` outside a connection.
    pub fn peer(&self) -> Option<&Peer> {
        self.peer.as_ref()
    }

    /// Returns this client with another time limit on its requests (`None` waits forever); the
    /// connection's `call_timeout` (60 s unless set) applies otherwise.
    #[must_use]
    pub fn with_timeout(&self, limit: Option<Duration>) -> Self {
        Self {
            peer: self.peer.as_ref().map(|peer| peer.with_timeout(limit)),
        }
    }

    /// Sends the notification `N` (any of `lsp_types::notification`, or one of your own).
    ///
    /// # Errors
    ///
    /// [`ClientError::Closed`] when the connection is closed (or there is none), and what a
    /// [`Peer`]'s `notify` fails with.
    pub async fn notify<N: Notification>(&self, params: N::Params) -> Result<(), ClientError> {
        self.connection(N::METHOD)?.notify(N::METHOD, params).await
    }

    /// Sends the request `R` (any of `lsp_types::request`, or one of your own) and returns its
    /// typed result.
    ///
    /// # Errors
    ///
    /// [`ClientError::Failed`] with the client's error, [`ClientError::TimedOut`],
    /// [`ClientError::Closed`], or [`ClientError::Malformed`] when the result does not decode.
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result, ClientError> {
        self.connection(R::METHOD)?
            .call::<R::Result>(R::METHOD, params)
            .await
    }

    /// Publishes a document's diagnostics (`textDocument/publishDiagnostics`), replacing those
    /// published for it before; an empty list clears them.
    ///
    /// # Errors
    ///
    /// As [`notify`](Self::notify).
    pub async fn publish_diagnostics(
        &self,
        uri: Uri,
        diagnostics: Vec<Diagnostic>,
        version: Option<i32>,
    ) -> Result<(), ClientError> {
        self.notify::<PublishDiagnostics>(PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        })
        .await
    }

    /// Logs a message in the client's output (`window/logMessage`).
    ///
    /// # Errors
    ///
    /// As [`notify`](Self::notify).
    pub async fn log_message(
        &self,
        kind: MessageType,
        message: impl Into<String>,
    ) -> Result<(), ClientError> {
        self.notify::<LogMessage>(LogMessageParams {
            typ: kind,
            message: message.into(),
        })
        .await
    }

    /// Shows a message to the user (`window/showMessage`).
    ///
    /// # Errors
    ///
    /// As [`notify`](Self::notify).
    pub async fn show_message(
        &self,
        kind: MessageType,
        message: impl Into<String>,
    ) -> Result<(), ClientError> {
        self.notify::<ShowMessage>(ShowMessageParams {
            typ: kind,
            message: message.into(),
        })
        .await
    }

    /// Shows a message with actions and returns the one the user chose
    /// (`window/showMessageRequest`); `None` when the message was dismissed.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    pub async fn show_message_request(
        &self,
        kind: MessageType,
        message: impl Into<String>,
        actions: Vec<MessageActionItem>,
    ) -> Result<Option<MessageActionItem>, ClientError> {
        self.request::<ShowMessageRequest>(ShowMessageRequestParams {
            typ: kind,
            message: message.into(),
            actions: Some(actions),
        })
        .await
    }

    /// Asks the client for configuration (`workspace/configuration`): one value per item, in
    /// order, `null` for a section it does not have. Ask only a client whose capabilities say
    /// `workspace.configuration`.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    pub async fn configuration(
        &self,
        items: Vec<ConfigurationItem>,
    ) -> Result<Vec<Value>, ClientError> {
        self.request::<WorkspaceConfiguration>(ConfigurationParams { items })
            .await
    }

    /// Registers capabilities dynamically (`client/registerCapability`).
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    pub async fn register_capability(
        &self,
        registrations: Vec<Registration>,
    ) -> Result<(), ClientError> {
        self.request::<RegisterCapability>(RegistrationParams { registrations })
            .await
    }

    /// Asks the client to create a work-done progress (`window/workDoneProgress/create`) and
    /// returns its new token, for a [`WorkDone`](crate::WorkDone) the server starts itself (when
    /// the request carried no `workDoneToken`). Ask only a client whose capabilities say
    /// `window.workDoneProgress`.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    pub async fn create_work_done_progress(&self) -> Result<ProgressToken, ClientError> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let token =
            NumberOrString::String(format!("jrpc-lsp/{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        self.request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
            token: token.clone(),
        })
        .await?;
        Ok(token)
    }

    /// Sends one work-done progress notification (`$/progress`): begin, report or end.
    /// [`WorkDone`](crate::WorkDone) sends them in order for a request; this is for progress
    /// that is no request's.
    ///
    /// # Errors
    ///
    /// As [`notify`](Self::notify).
    pub async fn progress(
        &self,
        token: ProgressToken,
        value: WorkDoneProgress,
    ) -> Result<(), ClientError> {
        self.notify::<Progress>(ProgressParams {
            token,
            value: ProgressParamsValue::WorkDone(value),
        })
        .await
    }

    fn connection(&self, method: &str) -> Result<&Peer, ClientError> {
        self.peer.as_ref().ok_or_else(|| ClientError::Closed {
            method: method.to_owned(),
        })
    }
}
