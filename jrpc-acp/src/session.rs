//! Speaks for one session: its updates, its calls to the client (the session's id filled in),
//! and, in a prompt turn, whether the client cancelled it.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, CreateTerminalRequest, KillTerminalRequest, PermissionOption,
    ReadTextFileRequest, ReleaseTerminalRequest, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, SessionNotification, SessionUpdate, TerminalExitStatus,
    TerminalId, TerminalOutputRequest, TerminalOutputResponse, ToolCallUpdate,
    WaitForTerminalExitRequest, WriteTextFileRequest,
};
use jrpc_runtime::Context;

use crate::client::Client;
use crate::error::AcpError;

/// Speaks for one session of a connection: what [`Agent::prompt`](crate::Agent::prompt) and the
/// other session methods get.
///
/// It sends the session's updates ([`say`](Self::say), [`update`](Self::update)) and calls the
/// client for it ([`request_permission`](Self::request_permission), the file and terminal
/// methods), the session's id filled in; [`client`](Self::client) has every method with its
/// whole request.
///
/// In a prompt turn it also tells of the turn's cancellation: when the client sends
/// `session/cancel`, the turn is dropped at the `.await` it waits on (the calls it was making to
/// the client are given up, each with a `$/cancel_request`) and answered `stopReason:
/// "cancelled"`. A turn that has something left to do first (a last update, closing a tool call)
/// asks for [`keep_running_when_cancelled`](Self::keep_running_when_cancelled) and watches
/// [`cancelled`](Self::cancelled) itself.
#[derive(Clone, Debug)]
pub struct Session {
    id: SessionId,
    client: Client,
    turn: Option<Turn>,
}

/// Holds a prompt turn's cancellation: the request's context, which session/cancel cancels, and
/// whether the turn runs on when it is.
#[derive(Clone, Debug)]
struct Turn {
    ctx: Context,
    keep_running: Arc<AtomicBool>,
}

impl Session {
    /// Returns the session `id` outside a prompt turn.
    pub(crate) fn new(id: SessionId, client: Client) -> Self {
        Self {
            id,
            client,
            turn: None,
        }
    }

    /// Returns the session of the prompt turn `ctx` runs, which `session/cancel` cancels.
    pub(crate) fn for_turn(id: SessionId, client: Client, ctx: Context) -> Self {
        let turn = Turn {
            ctx,
            keep_running: Arc::new(AtomicBool::new(false)),
        };
        Self {
            id,
            client,
            turn: Some(turn),
        }
    }

    /// Returns the session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Returns the client, with every method it offers.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Sends the update `update` of this session (`session/update`).
    ///
    /// # Errors
    ///
    /// [`AcpError::Call`] when the connection is closed.
    pub async fn update(&self, update: SessionUpdate) -> Result<(), AcpError> {
        let notification = SessionNotification::new(self.id.clone(), update);
        self.client.session_update(notification).await
    }

    /// Sends `text` as a chunk of the agent's message (an `agent_message_chunk` update).
    ///
    /// # Errors
    ///
    /// As [`update`](Self::update).
    pub async fn say(&self, text: impl Into<String>) -> Result<(), AcpError> {
        let chunk = ContentChunk::new(ContentBlock::from(text.into()));
        self.update(SessionUpdate::AgentMessageChunk(chunk)).await
    }

    /// Asks the user, through the client, for permission to run `tool_call`, offering `options`
    /// (`session/request_permission`); returns the outcome: the option chosen, or `Cancelled`.
    /// It waits as long as the user takes.
    ///
    /// # Errors
    ///
    /// [`AcpError::Call`] when the client answers an error or the connection fails.
    pub async fn request_permission(
        &self,
        tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<RequestPermissionOutcome, AcpError> {
        let request = RequestPermissionRequest::new(self.id.clone(), tool_call, options);
        Ok(self.client.request_permission(request).await?.outcome)
    }

    /// Reads the text file at `path` (absolute) through the client (`fs/read_text_file`), as the
    /// editor has it, unsaved changes included.
    ///
    /// # Errors
    ///
    /// [`AcpError::NotOffered`] when the client did not offer `fs.readTextFile`;
    /// [`AcpError::Call`] when it answers an error or the connection fails.
    pub async fn read_text_file(&self, path: impl Into<PathBuf>) -> Result<String, AcpError> {
        let request = ReadTextFileRequest::new(self.id.clone(), path);
        Ok(self.client.read_text_file(request).await?.content)
    }

    /// Writes `content` to the text file at `path` (absolute) through the client
    /// (`fs/write_text_file`).
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file), for `fs.writeTextFile`.
    pub async fn write_text_file(
        &self,
        path: impl Into<PathBuf>,
        content: impl Into<String>,
    ) -> Result<(), AcpError> {
        let request = WriteTextFileRequest::new(self.id.clone(), path, content);
        self.client.write_text_file(request).await?;
        Ok(())
    }

    /// Starts `command` with `args` in a terminal of the client (`terminal/create`), in the
    /// session's working directory; returns the terminal, to read, wait for, kill and release.
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file), for `terminal`.
    pub async fn create_terminal(
        &self,
        command: impl Into<String>,
        args: Vec<String>,
    ) -> Result<Terminal, AcpError> {
        let request = CreateTerminalRequest::new(self.id.clone(), command).args(args);
        let created = self.client.create_terminal(request).await?;
        Ok(Terminal {
            id: created.terminal_id,
            session: self.id.clone(),
            client: self.client.clone(),
        })
    }

    /// Resolves once the client has cancelled this prompt turn (`session/cancel`); outside a
    /// turn, never. It owns what it needs: hand it to the tasks the turn starts.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        let cancelled = self.turn.as_ref().map(|turn| turn.ctx.cancelled());
        async move {
            match cancelled {
                Some(cancelled) => cancelled.await,
                None => std::future::pending().await,
            }
        }
    }

    /// Returns whether the client has cancelled this prompt turn.
    pub fn is_cancelled(&self) -> bool {
        self.turn
            .as_ref()
            .is_some_and(|turn| turn.ctx.is_cancelled())
    }

    /// Keeps the turn running when the client cancels it, rather than dropping it at its next
    /// `.await`: [`cancelled`](Self::cancelled) resolves, and the turn ends when it is ready (ACP
    /// lets it send its last updates first). Whatever it answers then, the client is told
    /// `stopReason: "cancelled"`, as ACP asks (a failure included). Outside a turn it does
    /// nothing.
    pub fn keep_running_when_cancelled(&self) {
        if let Some(turn) = &self.turn {
            turn.keep_running.store(true, Ordering::Relaxed);
        }
    }

    /// Resolves when the turn is to be dropped: once cancelled, unless it keeps running.
    pub(crate) fn dropped_when_cancelled(&self) -> impl Future<Output = ()> + Send + 'static {
        let keep_running = self
            .turn
            .as_ref()
            .map(|turn| Arc::clone(&turn.keep_running));
        let cancelled = self.cancelled();
        async move {
            cancelled.await;
            if keep_running.is_none_or(|keep| keep.load(Ordering::Relaxed)) {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Stands for a terminal of the client that a session started
/// ([`Session::create_terminal`]): read its output, wait for its command, kill it, and release
/// it when done (ACP asks the agent to; the client keeps it until then).
#[derive(Clone, Debug)]
pub struct Terminal {
    id: TerminalId,
    session: SessionId,
    client: Client,
}

impl Terminal {
    /// Returns the terminal's id, for a tool call's content to show it.
    pub fn id(&self) -> &TerminalId {
        &self.id
    }

    /// Returns the output so far, and the exit status once the command has exited
    /// (`terminal/output`).
    ///
    /// # Errors
    ///
    /// [`AcpError::Call`] when the client answers an error or the connection fails.
    pub async fn output(&self) -> Result<TerminalOutputResponse, AcpError> {
        let request = TerminalOutputRequest::new(self.session.clone(), self.id.clone());
        self.client.terminal_output(request).await
    }

    /// Waits for the command to exit (`terminal/wait_for_exit`), as long as it runs.
    ///
    /// # Errors
    ///
    /// As [`output`](Self::output).
    pub async fn wait_for_exit(&self) -> Result<TerminalExitStatus, AcpError> {
        let request = WaitForTerminalExitRequest::new(self.session.clone(), self.id.clone());
        Ok(self
            .client
            .wait_for_terminal_exit(request)
            .await?
            .exit_status)
    }

    /// Kills the command, keeping the terminal and its output (`terminal/kill`).
    ///
    /// # Errors
    ///
    /// As [`output`](Self::output).
    pub async fn kill(&self) -> Result<(), AcpError> {
        let request = KillTerminalRequest::new(self.session.clone(), self.id.clone());
        self.client.kill_terminal(request).await?;
        Ok(())
    }

    /// Releases the terminal, killing its command if it still runs (`terminal/release`).
    ///
    /// # Errors
    ///
    /// As [`output`](Self::output).
    pub async fn release(self) -> Result<(), AcpError> {
        let request = ReleaseTerminalRequest::new(self.session, self.id);
        self.client.release_terminal(request).await?;
        Ok(())
    }
}
