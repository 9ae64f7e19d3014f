//! Calls the client: its methods typed with the schema's requests and answers, each checked
//! against what the client offered in `initialize`.

use std::fmt;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    CLIENT_METHOD_NAMES, ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse,
    Implementation, KillTerminalRequest, KillTerminalResponse, ReadTextFileRequest,
    ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use jrpc_runtime::{Caller as _, Peer};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::connection::Connection;
use crate::error::AcpError;

/// Calls the client of one connection: the handle a handler gets ([`Session::client`](crate::Session::client)
/// in a session, or in [`Agent::new_session`](crate::Agent::new_session)).
///
/// Each method is the client method of the same name, its request and answer the schema's. The
/// file and terminal methods are sent only when the client offered them in `initialize`
/// (`fs.readTextFile`, `fs.writeTextFile`, `terminal`): otherwise they fail with
/// [`AcpError::NotOffered`] at once, as ACP forbids calling them.
///
/// Calls wait for their answer as long as the connection's call timeout (60 s by default), except
/// `session/request_permission` and `terminal/wait_for_exit`, which wait for a person or a command
/// and are given no limit: a turn that is cancelled gives them up (and sends `$/cancel_request`
/// for them).
#[derive(Clone)]
pub struct Client {
    peer: Peer,
    connection: Arc<Connection>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("peer", &self.peer)
            .field("capabilities", &self.capabilities())
            .finish()
    }
}

impl Client {
    pub(crate) fn new(peer: Peer, connection: Arc<Connection>) -> Self {
        Self { peer, connection }
    }

    /// Returns the connection to the client, to call or notify it with methods of its own
    /// (extensions, whose names start with `_`).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Returns what the client offered in `initialize` (nothing before it: ACP takes a capability
    /// not declared as unsupported).
    pub fn capabilities(&self) -> ClientCapabilities {
        self.connection.client().capabilities.clone()
    }

    /// Returns the client's name and version, when its `initialize` said them.
    pub fn info(&self) -> Option<Implementation> {
        self.connection.client().info.clone()
    }

    /// Sends `session/update`.
    ///
    /// # Errors
    ///
    /// [`AcpError::Call`] when the connection is closed.
    pub async fn session_update(&self, notification: SessionNotification) -> Result<(), AcpError> {
        self.peer
            .notify(CLIENT_METHOD_NAMES.session_update, notification)
            .await?;
        Ok(())
    }

    /// Calls `session/request_permission`, with no time limit: a person answers.
    ///
    /// # Errors
    ///
    /// [`AcpError::Call`] when the client answers an error or the connection fails.
    pub async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, AcpError> {
        let method = CLIENT_METHOD_NAMES.session_request_permission;
        Ok(self.peer.with_timeout(None).call(method, request).await?)
    }

    /// Calls `fs/read_text_file`, if the client offers it (`fs.readTextFile`).
    ///
    /// # Errors
    ///
    /// [`AcpError::NotOffered`], or [`AcpError::Call`] when the client answers an error or the
    /// connection fails.
    pub async fn read_text_file(
        &self,
        request: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, AcpError> {
        let offered = self.capabilities().fs.read_text_file;
        self.offered(offered, CLIENT_METHOD_NAMES.fs_read_text_file, request)
            .await
    }

    /// Calls `fs/write_text_file`, if the client offers it (`fs.writeTextFile`).
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file).
    pub async fn write_text_file(
        &self,
        request: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, AcpError> {
        let offered = self.capabilities().fs.write_text_file;
        self.offered(offered, CLIENT_METHOD_NAMES.fs_write_text_file, request)
            .await
    }

    /// Calls `terminal/create`, if the client offers terminals (`terminal`).
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file).
    pub async fn create_terminal(
        &self,
        request: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, AcpError> {
        let offered = self.capabilities().terminal;
        self.offered(offered, CLIENT_METHOD_NAMES.terminal_create, request)
            .await
    }

    /// Calls `terminal/output`, if the client offers terminals.
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file).
    pub async fn terminal_output(
        &self,
        request: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, AcpError> {
        let offered = self.capabilities().terminal;
        self.offered(offered, CLIENT_METHOD_NAMES.terminal_output, request)
            .await
    }

    /// Calls `terminal/wait_for_exit`, if the client offers terminals, with no time limit: the
    /// command runs as long as it runs.
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file).
    pub async fn wait_for_terminal_exit(
        &self,
        request: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, AcpError> {
        let method = CLIENT_METHOD_NAMES.terminal_wait_for_exit;
        if !self.capabilities().terminal {
            return Err(AcpError::NotOffered(method));
        }
        Ok(self.peer.with_timeout(None).call(method, request).await?)
    }

    /// Calls `terminal/kill`, if the client offers terminals.
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file).
    pub async fn kill_terminal(
        &self,
        request: KillTerminalRequest,
    ) -> Result<KillTerminalResponse, AcpError> {
        let offered = self.capabilities().terminal;
        self.offered(offered, CLIENT_METHOD_NAMES.terminal_kill, request)
            .await
    }

    /// Calls `terminal/release`, if the client offers terminals.
    ///
    /// # Errors
    ///
    /// As [`read_text_file`](Self::read_text_file).
    pub async fn release_terminal(
        &self,
        request: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, AcpError> {
        let offered = self.capabilities().terminal;
        self.offered(offered, CLIENT_METHOD_NAMES.terminal_release, request)
            .await
    }

    /// Calls `method` when the client offers it, under the connection's call timeout.
    async fn offered<R: DeserializeOwned>(
        &self,
        offered: bool,
        method: &'static str,
        request: impl Serialize + Send,
    ) -> Result<R, AcpError> {
        if !offered {
            return Err(AcpError::NotOffered(method));
        }
        Ok(self.peer.call(method, request).await?)
    }
}
