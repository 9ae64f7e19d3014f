//! Declares what an agent implements: the agent's side of ACP, one method a protocol method.

use std::future::Future;

use agent_client_protocol_schema::v1::{
    AuthenticateRequest, AuthenticateResponse, CloseSessionRequest, CloseSessionResponse, Error,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ResumeSessionRequest, ResumeSessionResponse, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};

use crate::client::Client;
use crate::session::Session;

/// Implements an agent: the methods an ACP client calls, with the schema's requests and answers.
///
/// Two are required, [`new_session`](Self::new_session) and [`prompt`](Self::prompt); the others
/// answer `-32601` (method not found) unless implemented, and an agent implements those its
/// capabilities offer ([`AcpBuilder::capabilities`](crate::AcpBuilder::capabilities): `loadSession`
/// for [`load_session`](Self::load_session), `sessionCapabilities.resume` for
/// [`resume_session`](Self::resume_session)...). What the protocol asks of every agent is done
/// around them, by [`Acp`](crate::Acp): `initialize` and the version, the sessions each
/// connection opened (a request naming another is answered `-32002`, resource not found),
/// `session/cancel` ending the running turn `cancelled`.
///
/// Methods may be written `async fn`; their futures must be `Send`. Each gets the client or the
/// session it concerns, to send updates and call the client's methods.
///
/// ```
/// use jrpc_acp::schema::{Error, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, StopReason};
/// use jrpc_acp::{Agent, Client, Session};
///
/// struct Echo;
///
/// impl Agent for Echo {
///     async fn new_session(&self, _: NewSessionRequest, _: Client) -> Result<NewSessionResponse, Error> {
///         Ok(NewSessionResponse::new("the-session"))
///     }
///
///     async fn prompt(&self, request: PromptRequest, session: Session) -> Result<PromptResponse, Error> {
///         session.say(jrpc_acp::text_of(&request.prompt)).await?;
///         Ok(PromptResponse::new(StopReason::EndTurn))
///     }
/// }
/// ```
pub trait Agent: Send + Sync + 'static {
    /// Opens a session (`session/new`) and answers its id, which must be new: the session is then
    /// the connection's, for its prompts.
    fn new_session(
        &self,
        request: NewSessionRequest,
        client: Client,
    ) -> impl Future<Output = Result<NewSessionResponse, Error>> + Send;

    /// Runs a prompt turn of `session` (`session/prompt`): sends what the agent does as the
    /// session's updates, and answers why the turn stopped. A turn the client cancels is dropped
    /// at its next `.await` and answered `cancelled` (see [`Session`] to run on instead).
    fn prompt(
        &self,
        request: PromptRequest,
        session: Session,
    ) -> impl Future<Output = Result<PromptResponse, Error>> + Send;

    /// Authenticates the client with one of the methods `initialize` offered (`authenticate`).
    fn authenticate(
        &self,
        request: AuthenticateRequest,
    ) -> impl Future<Output = Result<AuthenticateResponse, Error>> + Send {
        let _ = request;
        async { Err(Error::method_not_found()) }
    }

    /// Loads a session the agent kept (`session/load`, capability `loadSession`): replays its
    /// conversation as `session`'s updates, then answers. The session is then the connection's.
    fn load_session(
        &self,
        request: LoadSessionRequest,
        session: Session,
    ) -> impl Future<Output = Result<LoadSessionResponse, Error>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found()) }
    }

    /// Resumes a session the agent kept without replaying it (`session/resume`, capability
    /// `sessionCapabilities.resume`). The session is then the connection's.
    fn resume_session(
        &self,
        request: ResumeSessionRequest,
        session: Session,
    ) -> impl Future<Output = Result<ResumeSessionResponse, Error>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found()) }
    }

    /// Closes a session of the connection (`session/close`, capability
    /// `sessionCapabilities.close`), after its running turn was cancelled: frees what the agent
    /// keeps for it. The connection forgets the session whatever this answers; by default it
    /// answers `{}`.
    fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> impl Future<Output = Result<CloseSessionResponse, Error>> + Send {
        let _ = request;
        async { Ok(CloseSessionResponse::new()) }
    }

    /// Switches a session of the connection to another mode (`session/set_mode`).
    fn set_session_mode(
        &self,
        request: SetSessionModeRequest,
        session: Session,
    ) -> impl Future<Output = Result<SetSessionModeResponse, Error>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found()) }
    }

    /// Sets a configuration option of a session of the connection (`session/set_config_option`).
    fn set_session_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        session: Session,
    ) -> impl Future<Output = Result<SetSessionConfigOptionResponse, Error>> + Send {
        let _ = (request, session);
        async { Err(Error::method_not_found()) }
    }
}
